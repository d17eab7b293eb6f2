/* 2-D max pooling and its gradient on float32 NCHW batches with regular windows: out[n, c, oy, ox] = the max of
 * x over the window at (oy * sh - ph, ox * sw - pw), kh x kw, positions outside the image counting as -inf, a NaN
 * anywhere in a window giving NaN (as NumPy's maximum). The NumPy kernels (ops/pool.py, grad/vision.py) pad a
 * copy with -inf and make one pass over the whole batch per kernel offset, and the gradient three; here each
 * (image, channel) plane is done at once, planes shared out over `threads` threads (pool.c). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kc_native.h"
#include "pool.h"

typedef struct {
    const float *x, *out, *g;
    float *y, *dx;
    int64_t h, w, oh, ow, kh, kw, sh, sw, ph, pw;
} pool_args;

/* grad_planes' rule, output by output (where the row mask could not be allocated) */
static void grad_planes_per_output(const pool_args *a, int64_t first, int64_t last) {
    for (int64_t q = first; q < last; q++) {
        const float *x = a->x + q * a->h * a->w, *out = a->out + q * a->oh * a->ow, *g = a->g + q * a->oh * a->ow;
        float *dx = a->dx + q * a->h * a->w;
        memset(dx, 0, sizeof(float) * (size_t)(a->h * a->w));
        for (int64_t oy = 0; oy < a->oh; oy++) {
            for (int64_t ox = 0; ox < a->ow; ox++) {
                const float m = out[oy * a->ow + ox];
                int found = 0;
                for (int64_t ky = 0; ky < a->kh && !found; ky++) {
                    const int64_t iy = oy * a->sh - a->ph + ky;
                    for (int64_t kx = 0; kx < a->kw; kx++) {
                        const int64_t ix = ox * a->sw - a->pw + kx;
                        const int inside = iy >= 0 && iy < a->h && ix >= 0 && ix < a->w;
                        const float v = inside ? x[iy * a->w + ix] : -INFINITY;
                        if (v == m) {
                            if (inside) dx[iy * a->w + ix] += g[oy * a->ow + ox];
                            found = 1;
                            break;
                        }
                    }
                }
            }
        }
    }
}

/* the output columns [*lo, *hi) whose input column ox * sw - pw + kx lies in [0, w) */
static void valid_columns(const pool_args *a, int64_t kx, int64_t *lo, int64_t *hi) {
    const int64_t off = kx - a->pw;
    int64_t b = a->w - off <= 0 ? 0 : (a->w - off + a->sw - 1) / a->sw;
    const int64_t first = off >= 0 ? 0 : (-off + a->sw - 1) / a->sw;
    if (b > a->ow) b = a->ow;
    *lo = first < a->ow ? first : a->ow;
    *hi = b > *lo ? b : *lo;
}

static inline float max_nan(float m, float v) { /* NumPy's maximum: a NaN on either side wins */
    return (m != m) ? m : ((v > m || v != v) ? v : m);
}

/* a row of outputs at a time, one kernel offset after another along it (vectorised over the row); NaN-aware max
 * is order-free, so the result is the per-window one */
static void forward_planes(void *p, int64_t first, int64_t last) {
    const pool_args *a = p;
    for (int64_t q = first; q < last; q++) {
        const float *x = a->x + q * a->h * a->w;
        float *y = a->y + q * a->oh * a->ow;
        for (int64_t oy = 0; oy < a->oh; oy++) {
            float *yrow = y + oy * a->ow;
            for (int64_t ox = 0; ox < a->ow; ox++) yrow[ox] = -INFINITY;
            for (int64_t ky = 0; ky < a->kh; ky++) {
                const int64_t iy = oy * a->sh - a->ph + ky;
                if (iy < 0 || iy >= a->h) continue;
                const float *xrow = x + iy * a->w;
                for (int64_t kx = 0; kx < a->kw; kx++) {
                    const int64_t off = kx - a->pw;
                    int64_t lo, hi;
                    valid_columns(a, kx, &lo, &hi);
                    if (a->sw == 1) {
                        const float *src = xrow + off;
#pragma omp simd
                        for (int64_t ox = lo; ox < hi; ox++) yrow[ox] = max_nan(yrow[ox], src[ox]);
                    } else {
                        for (int64_t ox = lo; ox < hi; ox++) yrow[ox] = max_nan(yrow[ox], xrow[ox * a->sw + off]);
                    }
                }
            }
        }
    }
}

/* each output's gradient goes to the first input of its window, in row-major order, equal to its max (a
 * position outside the image counts as -inf: when it comes first, the gradient goes nowhere), as the NumPy
 * kernel and Paddle's do. A row of outputs at a time, kernel offset after offset, `todo` marking the outputs
 * whose max has not been met yet. */
static void grad_planes(void *p, int64_t first, int64_t last) {
    const pool_args *a = p;
    unsigned char *todo = malloc((size_t)(a->ow > 0 ? a->ow : 1));
    if (!todo) { /* no memory for the row mask: output by output */
        grad_planes_per_output(a, first, last);
        return;
    }
    for (int64_t q = first; q < last; q++) {
        const float *x = a->x + q * a->h * a->w, *out = a->out + q * a->oh * a->ow, *g = a->g + q * a->oh * a->ow;
        float *dx = a->dx + q * a->h * a->w;
        memset(dx, 0, sizeof(float) * (size_t)(a->h * a->w));
        for (int64_t oy = 0; oy < a->oh; oy++) {
            const float *mrow = out + oy * a->ow, *grow = g + oy * a->ow;
            memset(todo, 1, (size_t)a->ow);
            for (int64_t ky = 0; ky < a->kh; ky++) {
                const int64_t iy = oy * a->sh - a->ph + ky;
                const int row_inside = iy >= 0 && iy < a->h;
                for (int64_t kx = 0; kx < a->kw; kx++) {
                    int64_t lo = 0, hi = 0;
                    if (row_inside) valid_columns(a, kx, &lo, &hi);
                    /* outside the image: -inf, a hit only for a max of -inf, which then takes no gradient */
                    for (int64_t ox = 0; ox < lo; ox++) todo[ox] &= !(mrow[ox] == -INFINITY);
                    for (int64_t ox = hi; ox < a->ow; ox++) todo[ox] &= !(mrow[ox] == -INFINITY);
                    if (hi <= lo) continue;
                    float *drow = dx + iy * a->w;
                    const float *xrow = x + iy * a->w;
                    const int64_t off = kx - a->pw;
                    /* branch-free: ties (the zeros after a ReLU) make the branch unpredictable */
                    if (a->sw == 1) {
                        float *dst = drow + off;
                        const float *src = xrow + off;
#pragma omp simd
                        for (int64_t ox = lo; ox < hi; ox++) {
                            const unsigned char hit = todo[ox] & (unsigned char)(src[ox] == mrow[ox]);
                            dst[ox] += hit ? grow[ox] : 0.0f;
                            todo[ox] &= (unsigned char)!hit;
                        }
                    } else {
                        for (int64_t ox = lo; ox < hi; ox++) {
                            const int64_t ix = ox * a->sw + off;
                            const unsigned char hit = todo[ox] & (unsigned char)(xrow[ix] == mrow[ox]);
                            drow[ix] += hit ? grow[ox] : 0.0f;
                            todo[ox] &= (unsigned char)!hit;
                        }
                    }
                }
            }
        }
    }
    free(todo);
}

/* dims: h, w, oh, ow, kh, kw, sh, sw, ph, pw */
KC_EXPORT void kc_max_pool2d_f32(const float *x, float *y, int64_t planes, const int64_t *dims, int threads) {
    pool_args a = {x, NULL, NULL, y, NULL, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5],
                   dims[6], dims[7], dims[8], dims[9]};
    kc_parallel_for(planes, threads, forward_planes, &a);
}

KC_EXPORT void kc_max_pool2d_grad_f32(const float *x, const float *out, const float *g, float *dx, int64_t planes,
                                      const int64_t *dims, int threads) {
    pool_args a = {x, out, g, NULL, dx, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5],
                   dims[6], dims[7], dims[8], dims[9]};
    kc_parallel_for(planes, threads, grad_planes, &a);
}

/* depthwise_conv2d and its gradients on float32 NCHW batches with one filter per channel (groups == channels,
 * no channel multiplier): out[n, c, oy, ox] = sum over taps (ky, kx) of w[c, ky, kx] *
 * x[n, c, oy * sh - ph + ky * dh, ox * sw - pw + kx * dw], zero outside the image. NumPy has no op for this: its
 * kernels (ops/conv.py, grad/vision.py) build per-channel columns or make one multiply-add pass per tap over the
 * whole batch. Here each (image, channel) plane is done while it is in cache, a row at a time, the padding never
 * materialised; planes (or, for the filter's gradient, channels) are shared out over `threads` threads (pool.c). */
#include <stdint.h>
#include <string.h>

#include "kc_native.h"
#include "pool.h"

typedef struct {
    int64_t h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, n;
} geometry;

/* the output columns [*lo, *hi) whose input column ox * sw - pw + kx * dw lies in [0, w) */
static inline void valid_columns(const geometry *g, int64_t kx, int64_t *lo, int64_t *hi) {
    const int64_t off = kx * g->dw - g->pw;  /* input column of output column 0 */
    int64_t a = off >= 0 ? 0 : (-off + g->sw - 1) / g->sw;
    int64_t b = g->w - off <= 0 ? 0 : (g->w - off + g->sw - 1) / g->sw;
    if (b > g->ow) b = g->ow;
    *lo = a;
    *hi = b > a ? b : a;
}

static void plane_forward(const geometry *g, const float *x, const float *wt, float *out) {
    for (int64_t oy = 0; oy < g->oh; oy++) {
        float *orow = out + oy * g->ow;
        memset(orow, 0, sizeof(float) * (size_t)g->ow);
        for (int64_t ky = 0; ky < g->kh; ky++) {
            const int64_t iy = oy * g->sh - g->ph + ky * g->dh;
            if (iy < 0 || iy >= g->h) continue;
            const float *irow = x + iy * g->w;
            for (int64_t kx = 0; kx < g->kw; kx++) {
                const float wv = wt[ky * g->kw + kx];
                const int64_t off = kx * g->dw - g->pw;
                int64_t lo, hi;
                valid_columns(g, kx, &lo, &hi);
                if (g->sw == 1) {
                    const float *src = irow + off;
#pragma omp simd
                    for (int64_t ox = lo; ox < hi; ox++) orow[ox] += wv * src[ox];
                } else {
                    for (int64_t ox = lo; ox < hi; ox++) orow[ox] += wv * irow[ox * g->sw + off];
                }
            }
        }
    }
}

/* Input@GRAD of one plane: each output gradient scattered back to the inputs its taps read */
static void plane_input_grad(const geometry *g, const float *gout, const float *wt, float *dx) {
    memset(dx, 0, sizeof(float) * (size_t)(g->h * g->w));
    for (int64_t oy = 0; oy < g->oh; oy++) {
        const float *grow = gout + oy * g->ow;
        for (int64_t ky = 0; ky < g->kh; ky++) {
            const int64_t iy = oy * g->sh - g->ph + ky * g->dh;
            if (iy < 0 || iy >= g->h) continue;
            float *drow = dx + iy * g->w;
            for (int64_t kx = 0; kx < g->kw; kx++) {
                const float wv = wt[ky * g->kw + kx];
                const int64_t off = kx * g->dw - g->pw;
                int64_t lo, hi;
                valid_columns(g, kx, &lo, &hi);
                if (g->sw == 1) {
                    float *dst = drow + off;
#pragma omp simd
                    for (int64_t ox = lo; ox < hi; ox++) dst[ox] += wv * grow[ox];
                } else {
                    for (int64_t ox = lo; ox < hi; ox++) drow[ox * g->sw + off] += wv * grow[ox];
                }
            }
        }
    }
}

/* Filter@GRAD contributions of one plane, added into dw[kh * kw] (double: a channel sums n * oh * ow terms) */
static void plane_filter_grad(const geometry *g, const float *gout, const float *x, double *dw) {
    for (int64_t ky = 0; ky < g->kh; ky++) {
        for (int64_t kx = 0; kx < g->kw; kx++) {
            const int64_t off = kx * g->dw - g->pw;
            int64_t lo, hi;
            valid_columns(g, kx, &lo, &hi);
            float acc = 0.0f;
            for (int64_t oy = 0; oy < g->oh; oy++) {
                const int64_t iy = oy * g->sh - g->ph + ky * g->dh;
                if (iy < 0 || iy >= g->h) continue;
                const float *grow = gout + oy * g->ow, *irow = x + iy * g->w;
                if (g->sw == 1) {
                    const float *src = irow + off;
#pragma omp simd reduction(+ : acc)
                    for (int64_t ox = lo; ox < hi; ox++) acc += grow[ox] * src[ox];
                } else {
                    for (int64_t ox = lo; ox < hi; ox++) acc += grow[ox] * irow[ox * g->sw + off];
                }
            }
            dw[ky * g->kw + kx] += acc;
        }
    }
}

static geometry make_geometry(const int64_t *dims, int64_t n) {
    /* dims: h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw */
    geometry g = {dims[0], dims[1], dims[2], dims[3], dims[4], dims[5],
                  dims[6], dims[7], dims[8], dims[9], dims[10], dims[11], n};
    return g;
}

typedef struct {
    geometry g;
    const float *x, *w, *gout;
    float *out, *dx, *dw;
    int64_t c;
} dw_args;

static void forward_planes(void *p, int64_t first, int64_t last) {
    const dw_args *a = p;
    const int64_t in_plane = a->g.h * a->g.w, out_plane = a->g.oh * a->g.ow, taps = a->g.kh * a->g.kw;
    for (int64_t q = first; q < last; q++)
        plane_forward(&a->g, a->x + q * in_plane, a->w + (q % a->c) * taps, a->out + q * out_plane);
}

static void input_grad_planes(void *p, int64_t first, int64_t last) {
    const dw_args *a = p;
    const int64_t in_plane = a->g.h * a->g.w, out_plane = a->g.oh * a->g.ow, taps = a->g.kh * a->g.kw;
    for (int64_t q = first; q < last; q++)
        plane_input_grad(&a->g, a->gout + q * out_plane, a->w + (q % a->c) * taps, a->dx + q * in_plane);
}

static void filter_grad_channels(void *p, int64_t first, int64_t last) {
    const dw_args *a = p;
    const int64_t in_plane = a->g.h * a->g.w, out_plane = a->g.oh * a->g.ow, taps = a->g.kh * a->g.kw;
    const int64_t n = a->g.n;
    double acc[taps];
    for (int64_t ch = first; ch < last; ch++) {
        for (int64_t t = 0; t < taps; t++) acc[t] = 0.0;
        for (int64_t i = 0; i < n; i++)
            plane_filter_grad(&a->g, a->gout + (i * a->c + ch) * out_plane, a->x + (i * a->c + ch) * in_plane, acc);
        for (int64_t t = 0; t < taps; t++) a->dw[ch * taps + t] = (float)acc[t];
    }
}

KC_EXPORT void kc_depthwise_conv2d_f32(const float *x, const float *w, float *out, int64_t n, int64_t c,
                                       const int64_t *dims, int threads) {
    dw_args a = {make_geometry(dims, n), x, w, NULL, out, NULL, NULL, c};
    kc_parallel_for(n * c, threads, forward_planes, &a);
}

/* dx (when not NULL): Input@GRAD, [n, c, h, w]; dw (when not NULL): Filter@GRAD, [c, kh * kw] */
KC_EXPORT void kc_depthwise_conv2d_grad_f32(const float *x, const float *w, const float *gout, float *dx, float *dw,
                                            int64_t n, int64_t c, const int64_t *dims, int threads) {
    dw_args a = {make_geometry(dims, n), x, w, gout, NULL, dx, dw, c};
    if (dx) kc_parallel_for(n * c, threads, input_grad_planes, &a);
    if (dw) kc_parallel_for(c, threads, filter_grad_channels, &a);
}

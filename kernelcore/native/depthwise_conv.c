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

/* one output of a plane, its taps bounds-checked */
static inline float output_at(const geometry *g, const float *x, const float *wt, int64_t oy, int64_t ox) {
    float acc = 0.0f;
    for (int64_t ky = 0; ky < g->kh; ky++) {
        const int64_t iy = oy * g->sh - g->ph + ky * g->dh;
        if (iy < 0 || iy >= g->h) continue;
        for (int64_t kx = 0; kx < g->kw; kx++) {
            const int64_t ix = ox * g->sw - g->pw + kx * g->dw;
            if (ix >= 0 && ix < g->w) acc += wt[ky * g->kw + kx] * x[iy * g->w + ix];
        }
    }
    return acc;
}

/* 3x3, dilation 1 (MobileNet's every depthwise layer): rows whose three input rows are inside the image take their
 * inner outputs in one loop over the row, all nine taps in registers (vectorised along the row); the outputs
 * whose window crosses the border, a column or two at each end and the first and last rows, go one by one */
static void plane_forward_3x3(const geometry *g, const float *x, const float *wt, float *out) {
    const float w0 = wt[0], w1 = wt[1], w2 = wt[2], w3 = wt[3], w4 = wt[4], w5 = wt[5], w6 = wt[6], w7 = wt[7],
                w8 = wt[8];
    const int64_t sw = g->sw;
    int64_t lo = g->pw <= 0 ? 0 : (g->pw + sw - 1) / sw;              /* the first ox with ox*sw - pw >= 0 */
    int64_t hi = g->w - 3 + g->pw < 0 ? 0 : (g->w - 3 + g->pw) / sw + 1; /* past the last with ix + 2 < w */
    if (lo > g->ow) lo = g->ow;
    if (hi > g->ow) hi = g->ow;
    if (hi < lo) hi = lo;
    for (int64_t oy = 0; oy < g->oh; oy++) {
        float *orow = out + oy * g->ow;
        const int64_t iy = oy * g->sh - g->ph;
        if (iy < 0 || iy + 2 >= g->h) {
            for (int64_t ox = 0; ox < g->ow; ox++) orow[ox] = output_at(g, x, wt, oy, ox);
            continue;
        }
        const float *r0 = x + iy * g->w - g->pw, *r1 = r0 + g->w, *r2 = r1 + g->w;
        for (int64_t ox = 0; ox < lo; ox++) orow[ox] = output_at(g, x, wt, oy, ox);
        if (sw == 1) {
#pragma omp simd
            for (int64_t ox = lo; ox < hi; ox++)
                orow[ox] = w0 * r0[ox] + w1 * r0[ox + 1] + w2 * r0[ox + 2] + w3 * r1[ox] + w4 * r1[ox + 1] +
                           w5 * r1[ox + 2] + w6 * r2[ox] + w7 * r2[ox + 1] + w8 * r2[ox + 2];
        } else {
#pragma omp simd
            for (int64_t ox = lo; ox < hi; ox++) {
                const int64_t i = ox * sw;
                orow[ox] = w0 * r0[i] + w1 * r0[i + 1] + w2 * r0[i + 2] + w3 * r1[i] + w4 * r1[i + 1] +
                           w5 * r1[i + 2] + w6 * r2[i] + w7 * r2[i + 1] + w8 * r2[i + 2];
            }
        }
        for (int64_t ox = hi; ox < g->ow; ox++) orow[ox] = output_at(g, x, wt, oy, ox);
    }
}

static void plane_forward(const geometry *g, const float *x, const float *wt, float *out) {
    if (g->kh == 3 && g->kw == 3 && g->dh == 1 && g->dw == 1) {
        plane_forward_3x3(g, x, wt, out);
        return;
    }
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
    const float *flipped; /* each channel's taps reversed, for Input@GRAD at stride 1 and dilation 1; or NULL */
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
    if (a->flipped) {
        /* stride 1, dilation 1: dx[iy, ix] = sum over taps of w[kh-1-ky, kw-1-kx] * g[iy - (kh-1-ph) + ky, ...],
         * the forward of Output@GRAD with the flipped filter and the complementary padding (a gather: no
         * scatter-adds, and the 3x3 rows' fast loop) */
        const geometry f = {a->g.oh, a->g.ow, a->g.h, a->g.w, a->g.kh, a->g.kw, 1, 1,
                            a->g.kh - 1 - a->g.ph, a->g.kw - 1 - a->g.pw, 1, 1, a->g.n};
        for (int64_t q = first; q < last; q++)
            plane_forward(&f, a->gout + q * out_plane, a->flipped + (q % a->c) * taps, a->dx + q * in_plane);
        return;
    }
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
    dw_args a = {make_geometry(dims, n), x, w, NULL, out, NULL, NULL, c, NULL};
    kc_parallel_for(n * c, threads, forward_planes, &a);
}

/* dx (when not NULL): Input@GRAD, [n, c, h, w]; dw (when not NULL): Filter@GRAD, [c, kh * kw] */
/* flipped: w with each channel's taps reversed (used at stride 1 and dilation 1), or NULL */
KC_EXPORT void kc_depthwise_conv2d_grad_f32(const float *x, const float *w, const float *flipped, const float *gout,
                                            float *dx, float *dw, int64_t n, int64_t c, const int64_t *dims,
                                            int threads) {
    dw_args a = {make_geometry(dims, n), x, w, gout, NULL, dx, dw, c, NULL};
    if (flipped && a.g.sh == 1 && a.g.sw == 1 && a.g.dh == 1 && a.g.dw == 1) a.flipped = flipped;
    if (dx) kc_parallel_for(n * c, threads, input_grad_planes, &a);
    if (dw) kc_parallel_for(c, threads, filter_grad_channels, &a);
}

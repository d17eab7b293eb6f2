/* batch_norm and batch_norm_grad on float32 channels-first batches, [N, C, spatial...] C-contiguous, as N * C
 * rows of `hw` elements: channel ch owns rows ch, C + ch, 2C + ch, ... The NumPy kernels (ops/norm.py,
 * grad/vision.py) make 5-7 passes over full-size temporaries; these make 2-3 over the inputs, a channel at a
 * time while its rows are in cache, the channels shared out over `threads` threads (pool.c). Each channel's sums
 * run in float lanes along a row and in double across rows. */
#include <math.h>
#include <stdint.h>

#include "kc_native.h"
#include "pool.h"

static inline const float *row(const float *a, int64_t i, int64_t ch, int64_t c, int64_t hw) {
    return a + (i * c + ch) * hw;
}

/* y = (x - m) * k + b over channel ch's rows */
static void normalise_channel(const float *x, float *y, int64_t ch, int64_t n, int64_t c, int64_t hw, float m,
                              float k, float b) {
    for (int64_t i = 0; i < n; i++) {
        const float *xr = row(x, i, ch, c, hw);
        float *yr = y + (xr - x);
#pragma omp simd
        for (int64_t j = 0; j < hw; j++) yr[j] = (xr[j] - m) * k + b;
    }
}

static double row_sum(const float *r, int64_t hw) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < hw; j++) s += r[j];
    return s;
}

static double row_sq_dev(const float *r, int64_t hw, float m) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < hw; j++) {
        float d = r[j] - m;
        s += d * d;
    }
    return s;
}

/* y = (x - mean) * k + b, per channel (inference with the running statistics: k = Scale / sqrt(Variance + eps)) */
typedef struct {
    const float *x, *mean, *k, *b;
    float *y;
    int64_t n, c, hw;
} affine_args;

static void affine_channels(void *p, int64_t first, int64_t last) {
    const affine_args *a = p;
    for (int64_t ch = first; ch < last; ch++)
        normalise_channel(a->x, a->y, ch, a->n, a->c, a->hw, a->mean[ch], a->k[ch], a->b[ch]);
}

KC_EXPORT void kc_bn_affine_f32(const float *x, float *y, const float *mean, const float *k, const float *b,
                                int64_t n, int64_t c, int64_t hw, int threads) {
    affine_args a = {x, mean, k, b, y, n, c, hw};
    kc_parallel_for(c, threads, affine_channels, &a);
}

/* batch statistics: mean, biased variance and inv = 1 / sqrt(var + eps) per channel (two passes: the squared
 * deviations from the mean, as NumPy's kernel, not E[x^2] - E[x]^2, which cancels where |mean| >> std), then
 * y = (x - mean) * (inv * Scale) + Bias */
typedef struct {
    const float *x, *scale, *bias;
    float *y, *mean, *var, *inv;
    int64_t n, c, hw;
    float eps;
} train_args;

static void train_channels(void *p, int64_t first, int64_t last) {
    const train_args *a = p;
    const int64_t n = a->n, c = a->c, hw = a->hw;
    const double count = (double)n * (double)hw;
    for (int64_t ch = first; ch < last; ch++) {
        double s = 0.0;
        for (int64_t i = 0; i < n; i++) s += row_sum(row(a->x, i, ch, c, hw), hw);
        const float m = (float)(s / count);
        double q = 0.0;
        for (int64_t i = 0; i < n; i++) q += row_sq_dev(row(a->x, i, ch, c, hw), hw, m);
        const float v = (float)(q / count);
        const float iv = 1.0f / sqrtf(v + a->eps);
        a->mean[ch] = m;
        a->var[ch] = v;
        a->inv[ch] = iv;
        normalise_channel(a->x, a->y, ch, n, c, hw, m, iv * a->scale[ch], a->bias[ch]);
    }
}

KC_EXPORT void kc_bn_train_f32(const float *x, float *y, const float *scale, const float *bias, float *mean,
                               float *var, float *inv, int64_t n, int64_t c, int64_t hw, float eps, int threads) {
    train_args a = {x, scale, bias, y, mean, var, inv, n, c, hw, eps};
    kc_parallel_for(c, threads, train_channels, &a);
}

/* dbias = sum(g), dscale = inv * sum(g * (x - mean)); dx (when not NULL) with batch statistics
 * = Scale * inv * (g - dbias / N - (x - mean) * inv * dscale / N), with global ones = g * Scale * inv */
typedef struct {
    const float *x, *g, *mean, *inv, *scale;
    float *dx, *dscale, *dbias;
    int64_t n, c, hw;
    int batch_stats;
} grad_args;

static void grad_channels(void *p, int64_t first, int64_t last) {
    const grad_args *a = p;
    const int64_t n = a->n, c = a->c, hw = a->hw;
    const double count = (double)n * (double)hw;
    for (int64_t ch = first; ch < last; ch++) {
        const float m = a->mean[ch], iv = a->inv[ch];
        double sg = 0.0, sgx = 0.0;
        for (int64_t i = 0; i < n; i++) {
            const float *xr = row(a->x, i, ch, c, hw), *gr = row(a->g, i, ch, c, hw);
            float s1 = 0.0f, s2 = 0.0f;
#pragma omp simd reduction(+ : s1, s2)
            for (int64_t j = 0; j < hw; j++) {
                s1 += gr[j];
                s2 += gr[j] * (xr[j] - m);
            }
            sg += s1;
            sgx += s2;
        }
        const float db = (float)sg, ds = (float)sgx * iv;
        a->dbias[ch] = db;
        a->dscale[ch] = ds;
        if (!a->dx) continue;
        const float k = a->scale[ch] * iv;
        if (!a->batch_stats) { /* constant statistics: X@GRAD does not read X (an inf in X must not make NaN) */
            for (int64_t i = 0; i < n; i++) {
                const float *gr = row(a->g, i, ch, c, hw);
                float *dr = a->dx + (gr - a->g);
#pragma omp simd
                for (int64_t j = 0; j < hw; j++) dr[j] = k * gr[j];
            }
            continue;
        }
        const float c1 = (float)(sg / count);
        const float c2 = (float)((double)iv * (double)ds / count);
        for (int64_t i = 0; i < n; i++) {
            const float *xr = row(a->x, i, ch, c, hw), *gr = row(a->g, i, ch, c, hw);
            float *dr = a->dx + (xr - a->x);
#pragma omp simd
            for (int64_t j = 0; j < hw; j++) dr[j] = k * (gr[j] - c1 - (xr[j] - m) * c2);
        }
    }
}

KC_EXPORT void kc_bn_grad_f32(const float *x, const float *g, const float *mean, const float *inv,
                              const float *scale, float *dx, float *dscale, float *dbias, int64_t n, int64_t c,
                              int64_t hw, int batch_stats, int threads) {
    grad_args a = {x, g, mean, inv, scale, dx, dscale, dbias, n, c, hw, batch_stats};
    kc_parallel_for(c, threads, grad_channels, &a);
}

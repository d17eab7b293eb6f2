/* batch_norm and batch_norm_grad on float32 channels-first batches, [N, C, spatial...] C-contiguous, as N * C
 * rows of `hw` elements: channel ch owns rows ch, C + ch, 2C + ch, ... The NumPy kernels (ops/norm.py,
 * grad/vision.py) make 5-7 passes over full-size temporaries; these make 2-3 over the inputs, a channel at a
 * time while its rows are in cache, the channels shared out over `threads` OpenMP threads. Each channel's sums
 * run in float lanes along a row and in double across rows. */
#include <math.h>
#include <stdint.h>

#include "kc_native.h"

static inline const float *row(const float *a, int64_t i, int64_t ch, int64_t c, int64_t hw) {
    return a + (i * c + ch) * hw;
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
KC_EXPORT void kc_bn_affine_f32(const float *x, float *y, const float *mean, const float *k, const float *b,
                                int64_t n, int64_t c, int64_t hw, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t ch = 0; ch < c; ch++) {
        const float m = mean[ch], kk = k[ch], bb = b[ch];
        for (int64_t i = 0; i < n; i++) {
            const float *xr = row(x, i, ch, c, hw);
            float *yr = y + (xr - x);
#pragma omp simd
            for (int64_t j = 0; j < hw; j++) yr[j] = (xr[j] - m) * kk + bb;
        }
    }
}

/* batch statistics: mean, biased variance and inv = 1 / sqrt(var + eps) per channel (two passes: the squared
 * deviations from the mean, as NumPy's kernel, not E[x^2] - E[x]^2, which cancels where |mean| >> std), then
 * y = (x - mean) * (inv * Scale) + Bias */
KC_EXPORT void kc_bn_train_f32(const float *x, float *y, const float *scale, const float *bias, float *mean,
                               float *var, float *inv, int64_t n, int64_t c, int64_t hw, float eps, int threads) {
    const double count = (double)n * (double)hw;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t ch = 0; ch < c; ch++) {
        double s = 0.0;
        for (int64_t i = 0; i < n; i++) s += row_sum(row(x, i, ch, c, hw), hw);
        const float m = (float)(s / count);
        double q = 0.0;
        for (int64_t i = 0; i < n; i++) q += row_sq_dev(row(x, i, ch, c, hw), hw, m);
        const float v = (float)(q / count);
        const float iv = 1.0f / sqrtf(v + eps);
        mean[ch] = m;
        var[ch] = v;
        inv[ch] = iv;
        const float kk = iv * scale[ch], bb = bias[ch];
        for (int64_t i = 0; i < n; i++) {
            const float *xr = row(x, i, ch, c, hw);
            float *yr = y + (xr - x);
#pragma omp simd
            for (int64_t j = 0; j < hw; j++) yr[j] = (xr[j] - m) * kk + bb;
        }
    }
}

/* dbias = sum(g), dscale = inv * sum(g * (x - mean)); dx (when not NULL) with batch statistics
 * = Scale * inv * (g - dbias / N - (x - mean) * inv * dscale / N), with global ones = g * Scale * inv */
KC_EXPORT void kc_bn_grad_f32(const float *x, const float *g, const float *mean, const float *inv,
                              const float *scale, float *dx, float *dscale, float *dbias, int64_t n, int64_t c,
                              int64_t hw, int batch_stats, int threads) {
    const double count = (double)n * (double)hw;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t ch = 0; ch < c; ch++) {
        const float m = mean[ch], iv = inv[ch];
        double sg = 0.0, sgx = 0.0;
        for (int64_t i = 0; i < n; i++) {
            const float *xr = row(x, i, ch, c, hw), *gr = row(g, i, ch, c, hw);
            float a = 0.0f, b = 0.0f;
#pragma omp simd reduction(+ : a, b)
            for (int64_t j = 0; j < hw; j++) {
                a += gr[j];
                b += gr[j] * (xr[j] - m);
            }
            sg += a;
            sgx += b;
        }
        const float db = (float)sg, ds = (float)sgx * iv;
        dbias[ch] = db;
        dscale[ch] = ds;
        if (!dx) continue;
        const float k = scale[ch] * iv;
        const float c1 = batch_stats ? (float)(sg / count) : 0.0f;
        const float c2 = batch_stats ? (float)((double)iv * (double)ds / count) : 0.0f;
        for (int64_t i = 0; i < n; i++) {
            const float *xr = row(x, i, ch, c, hw), *gr = row(g, i, ch, c, hw);
            float *dr = dx + (xr - x);
#pragma omp simd
            for (int64_t j = 0; j < hw; j++) dr[j] = k * (gr[j] - c1 - (xr[j] - m) * c2);
        }
    }
}

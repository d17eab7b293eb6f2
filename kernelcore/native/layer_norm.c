/* layer_norm and its gradient on float32 [rows, cols] (X flattened at begin_norm_axis): per row the mean, the
 * biased variance (squared deviations from the mean) and y = (x - mean) / sqrt(var + eps) * Scale + Bias; the
 * gradient X@GRAD = inv * (dy - mean(dy) - xhat * mean(dy * xhat)) with dy = Y@GRAD * Scale, and the column sums
 * Scale@GRAD = sum over rows of Y@GRAD * xhat, Bias@GRAD = sum over rows of Y@GRAD. NumPy's kernels make ten
 * passes with row-vector temporaries between them; here a row at a time (rows, then column blocks for the
 * sums, shared over `threads` threads: pool.c). Scale and Bias may be NULL (the op's dispensable inputs). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kc_native.h"
#include "pool.h"

typedef struct {
    const float *x, *scale, *bias, *g, *mean, *var;
    float *y, *out_mean, *out_var, *dx, *dscale, *dbias;
    int64_t rows, cols;
    float eps;
} ln_args;

static void forward_rows(void *p, int64_t first, int64_t last) {
    const ln_args *a = p;
    const int64_t n = a->cols;
    for (int64_t r = first; r < last; r++) {
        const float *x = a->x + r * n;
        float *y = a->y + r * n;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int64_t j = 0; j < n; j++) s += x[j];
        const float m = s / (float)n;
        float q = 0.0f;
#pragma omp simd reduction(+ : q)
        for (int64_t j = 0; j < n; j++) q += (x[j] - m) * (x[j] - m);
        const float v = q / (float)n;
        const float inv = 1.0f / sqrtf(v + a->eps);
        a->out_mean[r] = m;
        a->out_var[r] = v;
        const float *sc = a->scale, *b = a->bias;
#pragma omp simd
        for (int64_t j = 0; j < n; j++) {
            float t = (x[j] - m) * inv;
            if (sc) t *= sc[j];
            if (b) t += b[j];
            y[j] = t;
        }
    }
}

static void grad_rows(void *p, int64_t first, int64_t last) {
    const ln_args *a = p;
    const int64_t n = a->cols;
    const float *sc = a->scale;
    for (int64_t r = first; r < last; r++) {
        const float *x = a->x + r * n, *g = a->g + r * n;
        float *dx = a->dx + r * n;
        const float m = a->mean[r], inv = 1.0f / sqrtf(a->var[r] + a->eps);
        float s1 = 0.0f, s2 = 0.0f;
#pragma omp simd reduction(+ : s1, s2)
        for (int64_t j = 0; j < n; j++) {
            const float dy = sc ? g[j] * sc[j] : g[j];
            s1 += dy;
            s2 += dy * ((x[j] - m) * inv);
        }
        const float mdy = s1 / (float)n, mdyx = s2 / (float)n;
#pragma omp simd
        for (int64_t j = 0; j < n; j++) {
            const float dy = sc ? g[j] * sc[j] : g[j];
            dx[j] = inv * (dy - mdy - ((x[j] - m) * inv) * mdyx);
        }
    }
}

/* Scale@GRAD and Bias@GRAD for the columns [first, last): row after row, so each row's slice is read in order */
static void grad_columns(void *p, int64_t first, int64_t last) {
    const ln_args *a = p;
    const int64_t n = a->cols;
    for (int64_t j = first; j < last; j++) {
        if (a->dscale) a->dscale[j] = 0.0f;
        if (a->dbias) a->dbias[j] = 0.0f;
    }
    for (int64_t r = 0; r < a->rows; r++) {
        const float *x = a->x + r * n, *g = a->g + r * n;
        const float m = a->mean[r], inv = 1.0f / sqrtf(a->var[r] + a->eps);
        if (a->dscale) {
#pragma omp simd
            for (int64_t j = first; j < last; j++) a->dscale[j] += g[j] * ((x[j] - m) * inv);
        }
        if (a->dbias) {
#pragma omp simd
            for (int64_t j = first; j < last; j++) a->dbias[j] += g[j];
        }
    }
}

KC_EXPORT void kc_layer_norm_f32(const float *x, const float *scale, const float *bias, float *y, float *mean,
                                 float *var, int64_t rows, int64_t cols, float eps, int threads) {
    ln_args a = {x, scale, bias, NULL, NULL, NULL, y, mean, var, NULL, NULL, NULL, rows, cols, eps};
    kc_parallel_for(rows, kc_threads_for(rows * cols, threads), forward_rows, &a);
}

/* dx, dscale, dbias: each NULL where not wanted */
KC_EXPORT void kc_layer_norm_grad_f32(const float *x, const float *scale, const float *mean, const float *var,
                                      const float *g, float *dx, float *dscale, float *dbias, int64_t rows,
                                      int64_t cols, float eps, int threads) {
    ln_args a = {x, scale, NULL, g, mean, var, NULL, NULL, NULL, dx, dscale, dbias, rows, cols, eps};
    if (dx) kc_parallel_for(rows, kc_threads_for(rows * cols, threads), grad_rows, &a);
    if (dscale || dbias) kc_parallel_for(cols, kc_threads_for(rows * cols, threads), grad_columns, &a);
}

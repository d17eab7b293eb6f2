/* softmax along the last axis and its gradient on float32 rows: out = exp(x - max) / sum(exp(x - max)), and
 * X@GRAD = out * (g - sum(g * out)). NumPy makes four passes over the whole array with an array of row maxima
 * and sums between them (the attention probabilities of a BERT-style encoder: 2 MiB each); here a row at a
 * time while it is in L1, rows shared over `threads` threads (pool.c) for large arrays. */
#include <math.h>
#include <stdint.h>

#include "kc_math.h"
#include "kc_native.h"
#include "pool.h"

typedef struct {
    const float *x, *g;
    float *out;
    int64_t cols;
} rows_args;

WIDE_VECTORS static void softmax_rows(void *p, int64_t first, int64_t last) {
    const rows_args *a = p;
    const int64_t n = a->cols;
    for (int64_t i = first; i < last; i++) {
        const float *x = a->x + i * n;
        float *y = a->out + i * n;
        /* the max of the row's numbers; a NaN is skipped here and still makes the whole row NaN through x - m
         * and the sum, as does +inf (inf - inf) and a row of -inf only */
        float m = -INFINITY;
#pragma omp simd reduction(max : m)
        for (int64_t j = 0; j < n; j++) m = x[j] > m ? x[j] : m;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int64_t j = 0; j < n; j++) {
            const float e = kc_exp(x[j] - m);
            y[j] = e;
            s += e;
        }
        const float inv = 1.0f / s;
#pragma omp simd
        for (int64_t j = 0; j < n; j++) y[j] *= inv;
    }
}

WIDE_VECTORS static void softmax_grad_rows(void *p, int64_t first, int64_t last) {
    const rows_args *a = p; /* x: softmax's Out, g: Out@GRAD, out: X@GRAD */
    const int64_t n = a->cols;
    for (int64_t i = first; i < last; i++) {
        const float *o = a->x + i * n, *g = a->g + i * n;
        float *dx = a->out + i * n;
        float d = 0.0f;
#pragma omp simd reduction(+ : d)
        for (int64_t j = 0; j < n; j++) d += g[j] * o[j];
#pragma omp simd
        for (int64_t j = 0; j < n; j++) dx[j] = o[j] * (g[j] - d);
    }
}

KC_EXPORT void kc_softmax_f32(const float *x, float *out, int64_t rows, int64_t cols, int threads) {
    rows_args a = {x, NULL, out, cols};
    kc_parallel_for(rows, kc_threads_for(rows * cols, threads), softmax_rows, &a);
}

KC_EXPORT void kc_softmax_grad_f32(const float *out, const float *g, float *dx, int64_t rows, int64_t cols,
                                   int threads) {
    rows_args a = {out, g, dx, cols};
    kc_parallel_for(rows, kc_threads_for(rows * cols, threads), softmax_grad_rows, &a);
}

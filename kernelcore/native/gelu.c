/* gelu (exact: X * Phi(X)) and its gradient Out@GRAD * (Phi(X) + X phi(X)) on float32, the operations of
 * ops/pointwise.py's normal_cdf (Phi(x) = 0.5 + copysign(0.5 - erfc(|x| / sqrt 2) / 2, x)) in one pass instead
 * of eleven, in shares over `threads` threads (pool.c) when the array is large. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kc_math.h"
#include "kc_native.h"
#include "pool.h"

static inline float normal_cdf(float x) {
    float h = kc_erfc_nonnegative(fabsf(x) * 0.70710678118654752f) * 0.5f;
    return copysignf(0.5f - h, x) + 0.5f;
}

typedef struct {
    const float *x, *g;
    float *out;
} gelu_args;

WIDE_VECTORS static void forward_range(void *p, int64_t first, int64_t last) {
    const gelu_args *a = p;
#pragma omp simd
    for (int64_t i = first; i < last; i++) a->out[i] = normal_cdf(a->x[i]) * a->x[i];
}

WIDE_VECTORS static void grad_range(void *p, int64_t first, int64_t last) {
    const gelu_args *a = p;
#pragma omp simd
    for (int64_t i = first; i < last; i++) {
        const float x = a->x[i];
        const float d = kc_exp(x * x * -0.5f) * 0.39894228040143268f * x + normal_cdf(x);
        a->out[i] = d * a->g[i];
    }
}

KC_EXPORT void kc_gelu_f32(const float *x, float *out, int64_t n, int threads) {
    gelu_args a = {x, NULL, out};
    kc_parallel_for(n, kc_threads_for(n, threads), forward_range, &a);
}

KC_EXPORT void kc_gelu_grad_f32(const float *x, const float *g, float *dx, int64_t n, int threads) {
    gelu_args a = {x, g, dx};
    kc_parallel_for(n, kc_threads_for(n, threads), grad_range, &a);
}

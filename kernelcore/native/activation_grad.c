/* relu_grad and relu6_grad on float32: X@GRAD = Out@GRAD * (lo < Out [< hi]), the mask a 0 or 1 multiplied in
 * (as NumPy's g * mask, so a NaN or inf gradient under a zero mask still gives NaN, as Paddle's functor does).
 * NumPy makes the mask's passes, a bool array each, then the multiply: one pass here, in shares over `threads`
 * threads (pool.c) when the array is large. */
#include <stdint.h>

#include "kc_native.h"
#include "pool.h"

typedef struct {
    const float *out, *g;
    float *dx;
    float lo, hi;
    int upper;
} mask_args;

static void mask_range(void *p, int64_t first, int64_t last) {
    const mask_args *a = p;
    const float lo = a->lo, hi = a->hi;
    if (a->upper) {
#pragma omp simd
        for (int64_t i = first; i < last; i++) a->dx[i] = a->g[i] * (float)((a->out[i] > lo) & (a->out[i] < hi));
    } else {
#pragma omp simd
        for (int64_t i = first; i < last; i++) a->dx[i] = a->g[i] * (float)(a->out[i] > lo);
    }
}

KC_EXPORT void kc_masked_grad_f32(const float *out, const float *g, float *dx, int64_t n, float lo, float hi,
                                  int upper, int threads) {
    mask_args a = {out, g, dx, lo, hi, upper};
    kc_parallel_for(n, kc_threads_for(n, threads), mask_range, &a);
}

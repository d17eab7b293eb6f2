/* hard_swish and hard_swish_grad on float32 (MobileNetV3's activation):
 *   Out = X * min(max(X + offset, 0), threshold) / scale
 *   X@GRAD = Out@GRAD * (0 where X + offset <= 0, threshold / scale where X + offset >= threshold,
 *                        else (2 X + offset) / scale)
 * NumPy makes these in 4-8 passes over full-size temporaries; here one, shared over `threads` threads (pool.c)
 * when the array is large. The same operations in the same order as the NumPy bodies (ops/activation_extra.py,
 * grad/vision.py): the same bits, NaN included (a NaN fails every comparison and so passes through as NumPy's
 * maximum and minimum pass it). */
#include <stdint.h>

#include "kc_native.h"
#include "pool.h"

typedef struct {
    const float *x, *g;
    float *out;
    float offset, threshold, scale;
} hard_swish_args;

static void forward_range(void *p, int64_t first, int64_t last) {
    const hard_swish_args *a = p;
    const float off = a->offset, thr = a->threshold, sc = a->scale;
#pragma omp simd
    for (int64_t i = first; i < last; i++) {
        const float v = a->x[i];
        float m = v + off;
        m = m < 0.0f ? 0.0f : m; /* NumPy's maximum(m, 0): m itself unless below (-0 kept, NaN kept) */
        m = m > thr ? thr : m;   /* minimum(m, threshold) */
        a->out[i] = v * m / sc;
    }
}

static void grad_range(void *p, int64_t first, int64_t last) {
    const hard_swish_args *a = p;
    const float off = a->offset, thr = a->threshold, sc = a->scale, top = thr / sc;
#pragma omp simd
    for (int64_t i = first; i < last; i++) {
        const float v = a->x[i], inner = v + off;
        const float d = inner <= 0.0f ? 0.0f : inner >= thr ? top : (2.0f * v + off) / sc;
        a->out[i] = a->g[i] * d;
    }
}

KC_EXPORT void kc_hard_swish_f32(const float *x, float *out, int64_t n, float offset, float threshold, float scale,
                                 int threads) {
    hard_swish_args a = {x, 0, out, offset, threshold, scale};
    kc_parallel_for(n, kc_threads_for(n, threads), forward_range, &a);
}

KC_EXPORT void kc_hard_swish_grad_f32(const float *x, const float *g, float *dx, int64_t n, float offset,
                                      float threshold, float scale, int threads) {
    hard_swish_args a = {x, g, dx, offset, threshold, scale};
    kc_parallel_for(n, kc_threads_for(n, threads), grad_range, &a);
}

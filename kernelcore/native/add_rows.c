/* elementwise_add on float32 where Y repeats along X's middle dims: out[o, m, i] = x[o, m, i] + y[o, i], X seen as
 * [outer, mid, inner] and Y as [outer, inner] (a bias over the last dims: outer = 1; an attention mask [B, 1, 1, S]
 * over scores [B, heads, S, S]: outer B, mid heads S, inner S; equal shapes: mid = 1). NumPy adds on one core;
 * here the elements are shared over `threads` threads (pool.c) when the array is large: BERT-style's mask add over
 * [8, 4, 128, 128] took 0.32-0.37 ms in place. One IEEE addition per element, x + y in that order, as NumPy's
 * add: the same bits (where both operands are NaN the compiler may keep either one's payload; NumPy keeps x's). */
#include <stdint.h>

#include "kc_native.h"
#include "pool.h"

typedef struct {
    const float *x, *y;
    float *out;
    int64_t mid, inner;
} add_args;

/* elements [first, last) of x and out, a row of `inner` (or the part of one inside the range) at a time */
static void add_range(void *p, int64_t first, int64_t last) {
    const add_args *a = p;
    const int64_t inner = a->inner;
    for (int64_t e = first; e < last;) {
        const int64_t r = e / inner, row_end = (r + 1) * inner, stop = row_end < last ? row_end : last;
        const float *x = a->x + r * inner, *y = a->y + (r / a->mid) * inner;
        float *out = a->out + r * inner;
#pragma omp simd
        for (int64_t i = e - r * inner; i < stop - r * inner; i++) out[i] = x[i] + y[i];
        e = stop;
    }
}

/* x, out [outer, mid, inner] and y [outer, inner], C-contiguous; out is written, nothing else (it may be x) */
KC_EXPORT void kc_add_rows_f32(const float *x, const float *y, float *out, int64_t outer, int64_t mid, int64_t inner,
                               int threads) {
    add_args a = {x, y, out, mid, inner};
    const int64_t n = outer * mid * inner;
    kc_parallel_for(n, kc_threads_for(n, threads), add_range, &a);
}

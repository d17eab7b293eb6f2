/* The flight recorder's health summary of a float32 or float64 array in one pass, where the NumPy reference
 * (kernelcore/observe/health_summary.py) takes five: min, max, a sum, a dot product and the sign counts.
 *
 * out[10], as doubles (counts are exact below 2^53): how many elements are negative, zero, positive (finite ones
 * only), NaN, +Inf and -Inf, then the finite elements' min, max, mean and L2 norm (NaN, NaN, NaN and 0 where none
 * is finite). Returns how many elements are NaN or Inf: all a NaN watch reads.
 *
 * The array goes by blocks of BLOCK elements. A block's first pass assumes it is finite: min and max (a NaN never
 * wins their comparisons), the sum and the sum of squares in the array's own type, lane by lane, and the counts of
 * negatives and zeros, all in vector lanes with no test per element. A NaN or an Inf makes that sum NaN or Inf,
 * and so does a sum that overflowed the type: only then is the block read again, element by element, each
 * classified and the finite ones summed in a wider type (double, or long double for float64). A float32 block's
 * sum rounds about as OpenBLAS's sdot rounds it. The blocks' sums are added in long double, whose range holds any
 * float64 array's sum of squares on x86-64 (where long double is double, a float64 norm above ~1e154 is Inf).
 *
 * Large arrays are shared over `threads` threads (pool.c), each share summarised apart and the shares' numbers
 * added in a fixed order. */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "kc_native.h"
#include "pool.h"

#define BLOCK 1024
#define MAX_SHARES 64

/* FP exceptions are never read here: without this GCC keeps the comparisons of the first pass scalar (a compare
 * may raise "invalid" on a NaN, so it is not if-converted into vector selects), 2-4x slower */
#if defined(__GNUC__) && !defined(__clang__)
#define NO_TRAPS __attribute__((optimize("no-trapping-math")))
#else
#define NO_TRAPS
#endif

typedef struct {
    int64_t negative, zero, nan, pos_inf, neg_inf;
    double lo, hi;
    long double sum, sumsq;
} partial;

static void partial_init(partial *p) {
    p->negative = p->zero = p->nan = p->pos_inf = p->neg_inf = 0;
    p->lo = INFINITY;
    p->hi = -INFINITY;
    p->sum = p->sumsq = 0.0;
}

static void partial_add(partial *into, const partial *p) {
    into->negative += p->negative;
    into->zero += p->zero;
    into->nan += p->nan;
    into->pos_inf += p->pos_inf;
    into->neg_inf += p->neg_inf;
    if (p->lo < into->lo) into->lo = p->lo;
    if (p->hi > into->hi) into->hi = p->hi;
    into->sum += p->sum;
    into->sumsq += p->sumsq;
}

/* one block into p, for element type T (its counts COUNT, as wide as T: they share T's vector lanes; WIDE the
 * type of the second look's sums) */
#define BLOCK_FN(NAME, T, COUNT, WIDE)                                                                             \
    static NO_TRAPS void NAME(const T *x, int64_t len, partial *p) {                                              \
        T lo = INFINITY, hi = -INFINITY, s = 0, q = 0;                                                             \
        COUNT neg = 0, zero = 0;                                                                                   \
        _Pragma("omp simd reduction(min:lo) reduction(max:hi) reduction(+:s, q, neg, zero)")                       \
        for (int64_t i = 0; i < len; i++) {                                                                        \
            const T v = x[i];                                                                                      \
            lo = v < lo ? v : lo;                                                                                  \
            hi = v > hi ? v : hi;                                                                                  \
            s += v;                                                                                                \
            q += v * v;                                                                                            \
            neg += v < 0;                                                                                          \
            zero += v == 0;                                                                                        \
        }                                                                                                          \
        if (s - s == 0 && q - q == 0) { /* both finite: so was every element, and no sum overflowed */             \
            p->negative += neg;                                                                                    \
            p->zero += zero;                                                                                       \
            if (lo < p->lo) p->lo = lo;                                                                            \
            if (hi > p->hi) p->hi = hi;                                                                            \
            p->sum += s;                                                                                           \
            p->sumsq += q;                                                                                         \
            return;                                                                                                \
        }                                                                                                          \
        WIDE ws = 0, wq = 0;                                                                                       \
        for (int64_t i = 0; i < len; i++) {                                                                        \
            const T v = x[i];                                                                                      \
            if (v != v) {                                                                                          \
                p->nan++;                                                                                          \
            } else if (v == INFINITY) {                                                                            \
                p->pos_inf++;                                                                                      \
            } else if (v == -INFINITY) {                                                                           \
                p->neg_inf++;                                                                                      \
            } else {                                                                                               \
                p->negative += v < 0;                                                                              \
                p->zero += v == 0;                                                                                 \
                if (v < p->lo) p->lo = v;                                                                          \
                if (v > p->hi) p->hi = v;                                                                          \
                ws += v;                                                                                           \
                wq += (WIDE)v * v;                                                                                 \
            }                                                                                                      \
        }                                                                                                          \
        p->sum += ws;                                                                                              \
        p->sumsq += wq;                                                                                            \
    }

BLOCK_FN(block_f32, float, int32_t, double)
BLOCK_FN(block_f64, double, int64_t, long double)

typedef struct {
    const void *x;
    int64_t n, shares;
    int is_f64;
    partial parts[MAX_SHARES];
} summary_args;

/* shares [first, last) of the array, each into its own partial */
static void summary_shares(void *ctx, int64_t first, int64_t last) {
    summary_args *a = ctx;
    for (int64_t k = first; k < last; k++) {
        const int64_t begin = a->n * k / a->shares, end = a->n * (k + 1) / a->shares;
        partial *p = &a->parts[k];
        partial_init(p);
        for (int64_t b = begin; b < end; b += BLOCK) {
            const int64_t len = end - b < BLOCK ? end - b : BLOCK;
            if (a->is_f64)
                block_f64((const double *)a->x + b, len, p);
            else
                block_f32((const float *)a->x + b, len, p);
        }
    }
}

static int64_t summarize(const void *x, int64_t n, int is_f64, double *out, int threads) {
    summary_args a;
    a.x = x;
    a.n = n;
    a.is_f64 = is_f64;
    a.shares = kc_threads_for(n, threads < MAX_SHARES ? threads : MAX_SHARES);
    kc_parallel_for(a.shares, (int)a.shares, summary_shares, &a);
    partial all;
    partial_init(&all);
    for (int64_t k = 0; k < a.shares; k++) partial_add(&all, &a.parts[k]);
    const int64_t nonfinite = all.nan + all.pos_inf + all.neg_inf;
    const int64_t finite = n - nonfinite, positive = finite - all.negative - all.zero;
    const double none = NAN;
    const double numbers[10] = {(double)all.negative, (double)all.zero, (double)positive, (double)all.nan,
                                (double)all.pos_inf, (double)all.neg_inf, finite ? all.lo : none,
                                finite ? all.hi : none, finite ? (double)(all.sum / finite) : none,
                                (double)sqrtl(all.sumsq)};
    for (int i = 0; i < 10; i++) out[i] = numbers[i];
    return nonfinite;
}

KC_EXPORT int64_t kc_health_summary_f32(const float *x, int64_t n, double *out, int threads) {
    return summarize(x, n, 0, out, threads);
}

KC_EXPORT int64_t kc_health_summary_f64(const double *x, int64_t n, double *out, int threads) {
    return summarize(x, n, 1, out, threads);
}

/* Several arrays in one call (an op's outputs): items[3k], items[3k + 1], items[3k + 2] are the k-th array's
 * address, element count and type (0 float32, 1 float64); its ten numbers go to out[10k] on. A call from Python
 * costs more than the pass over a small array, and an optimizer's update writes several small ones. Returns the
 * NaN/Inf count of all of them together. */
KC_EXPORT int64_t kc_health_summary_many(const int64_t *items, int64_t count, double *out, int threads) {
    int64_t nonfinite = 0;
    for (int64_t k = 0; k < count; k++) {
        const void *x = (const void *)(intptr_t)items[3 * k];
        nonfinite += summarize(x, items[3 * k + 1], items[3 * k + 2] != 0, out + 10 * k, threads);
    }
    return nonfinite;
}

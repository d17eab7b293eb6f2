/* A small pool of worker threads for the C kernels' loops (pool.c). */
#ifndef KC_POOL_H
#define KC_POOL_H

#include <stdint.h>

/* one share of a loop: the indices [begin, end) of a range */
typedef void (*kc_task)(void *ctx, int64_t begin, int64_t end);

/* fn(ctx, begin, end) over [0, n) in `threads` contiguous shares, the calling thread running the first and the
 * pool's threads the others, all at once; returns when every share is done. With threads <= 1, a range too
 * short to share, or while another thread's loop holds the pool, the caller runs the whole range itself. */
void kc_parallel_for(int64_t n, int threads, kc_task fn, void *ctx);

/* the threads worth using on `elements` elements of an elementwise or row-wise pass: at most one per
 * KC_GRAIN elements (a worker asleep takes 50-100 us to wake on a virtual machine), at least one */
#define KC_GRAIN 32768
int kc_threads_for(int64_t elements, int threads);

#endif

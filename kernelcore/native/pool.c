/* The C kernels' worker threads. Not OpenMP: a process that has imported PyTorch already has GNU OpenMP loaded
 * (torch/lib/libgomp.so.1, same soname), whose threads then serve these kernels with PyTorch's settings: each
 * spun ~300,000 PAUSEs (milliseconds on this CPU) after every call, on the core the next op's parts needed
 * (ResNet-18's two-thread training step: 98 -> 144 ms). These workers spin at most SPIN_NS after a loop, yielding
 * the core to any other runnable thread while they do, then sleep on a condition variable. */
#define _GNU_SOURCE
#include "pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#define MAX_WORKERS 63
/* a worker waits this long for the next loop before it sleeps. A sleeping worker took ~75 us to wake here (a
 * virtual CPU left idle is halted), so a kernel called after a gap of one-thread work paid that on every call:
 * softmax over BERT-style's attention scores on two threads, 130 us back to back, 186-214 after gaps of 0.5-2 ms.
 * An encoder's C kernels come 0.1-1 ms apart, between NumPy's one-thread ops; spinning 2 ms instead of 0.2 took
 * its training step from 10.5-11.4 to 10.0-10.3 ms (best), and left the CNNs' runs as they were or faster. */
#define SPIN_NS 2000000

static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER; /* one loop at a time */
static pthread_mutex_t sleep_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static int workers; /* started; guarded by job_lock */
static _Atomic uint64_t assigned[MAX_WORKERS + 1]; /* a worker's slot: a new value hands it the current loop */
static uint64_t loops; /* loops handed out so far; guarded by job_lock */
static _Atomic int pending;
static _Atomic int sleeping;
static uint64_t start_assignment[MAX_WORKERS + 1]; /* a worker's slot when it was started */
static kc_task job_fn;
static void *job_ctx;
static int64_t job_n;
static int job_shares;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void run_share(int i) {
    const int64_t begin = job_n * i / job_shares, end = job_n * (i + 1) / job_shares;
    if (begin < end) job_fn(job_ctx, begin, end);
}

static void *worker(void *arg) {
    const int index = (int)(intptr_t)arg; /* 1 .. workers: share 0 is the caller's */
    /* what its slot held when it was started: the loop it was started for may be handed to it before it runs */
    uint64_t seen = start_assignment[index];
    for (;;) {
        const int64_t until = now_ns() + SPIN_NS;
        uint64_t a;
        while ((a = atomic_load_explicit(&assigned[index], memory_order_acquire)) == seen && now_ns() < until)
            sched_yield();  /* any other thread runnable on this core runs first */
        if (a == seen) {
            pthread_mutex_lock(&sleep_lock);
            atomic_fetch_add(&sleeping, 1);
            while ((a = atomic_load(&assigned[index])) == seen) /* seq_cst: pairs with the caller's `sleeping` read */
                pthread_cond_wait(&wake, &sleep_lock);
            atomic_fetch_sub(&sleeping, 1);
            pthread_mutex_unlock(&sleep_lock);
        }
        seen = a;
        /* the job's fields were written before this slot was, and stay until every share is done */
        run_share(index);
        atomic_fetch_sub_explicit(&pending, 1, memory_order_release);
    }
    return NULL;
}

static void reset_in_child(void) {
    /* the parent's workers do not exist in a forked child: start afresh (threads there come when asked) */
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t fresh_cond = PTHREAD_COND_INITIALIZER;
    job_lock = fresh;
    sleep_lock = fresh;
    wake = fresh_cond;
    workers = 0;
    atomic_store(&sleeping, 0);
    atomic_store(&pending, 0);
}

static pthread_once_t at_fork_once = PTHREAD_ONCE_INIT;
static void register_at_fork(void) { pthread_atfork(NULL, NULL, reset_in_child); }

static int ensure_workers(int wanted) { /* job_lock held; returns how many there are */
    pthread_once(&at_fork_once, register_at_fork);
    if (wanted > MAX_WORKERS) wanted = MAX_WORKERS;
    while (workers < wanted) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        start_assignment[workers + 1] = atomic_load(&assigned[workers + 1]);
        const int failed = pthread_create(&t, &attr, worker, (void *)(intptr_t)(workers + 1));
        pthread_attr_destroy(&attr);
        if (failed) break;
        workers++;
    }
    return workers;
}

int kc_threads_for(int64_t elements, int threads) {
    const int64_t most = elements / KC_GRAIN;
    return threads < most ? threads : (int)(most > 1 ? most : 1);
}

void kc_parallel_for(int64_t n, int threads, kc_task fn, void *ctx) {
    if (threads > n) threads = (int)n;
    if (threads <= 1 || pthread_mutex_trylock(&job_lock) != 0) {
        if (n > 0) fn(ctx, 0, n);
        return;
    }
    const int shares = ensure_workers(threads - 1) + 1;
    if (shares < 2) {
        pthread_mutex_unlock(&job_lock);
        fn(ctx, 0, n);
        return;
    }
    job_fn = fn;
    job_ctx = ctx;
    job_n = n;
    job_shares = shares < threads ? shares : threads;
    atomic_store(&pending, job_shares - 1);
    /* only the workers that take a share are handed the loop: the others never read its fields, which the next
     * loop may rewrite while they still sleep or spin */
    loops++;
    for (int i = 1; i < job_shares; i++) atomic_store(&assigned[i], loops);
    if (atomic_load(&sleeping) > 0) { /* a worker that counted itself after this read sees its new slot */
        pthread_mutex_lock(&sleep_lock);
        pthread_cond_broadcast(&wake);
        pthread_mutex_unlock(&sleep_lock);
    }
    run_share(0);
    while (atomic_load_explicit(&pending, memory_order_acquire) > 0) sched_yield();
    pthread_mutex_unlock(&job_lock);
}

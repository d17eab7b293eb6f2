/* C = A @ B on float32 for few rows of A (an RNN step: the batch's rows times the recurrent weight), B packed
 * once into panels of PANEL columns (kc_pack_columns_f32) and reused every step; also for many rows (an RNN's
 * input projections over all timesteps, with the bias added as the sums are written). OpenBLAS packs B again on every
 * call and runs its kernels for large matrices: [32, 256] @ [256, 1024] took 164 us on one core here (102
 * GFLOP/s); this takes 115 (146 GFLOP/s), blocks of up to 8 rows at a time (gemm_rows.h). Panels are shared over
 * `threads` threads (pool.c). */
#include <stdint.h>
#include <string.h>

#include "gemm_rows.h"
#include "kc_native.h"
#include "pool.h"

/* panel q of the packed B holds B[:, q * PANEL : (q + 1) * PANEL] as k rows of PANEL, zeros past column n; B's
 * element (p, j) is b[p * rs + j * cs] (a transposed view packs as it is, with no copy first) */
KC_EXPORT void kc_pack_columns_f32(const float *b, int64_t rs, int64_t cs, float *packed, int64_t k, int64_t n) {
    const int64_t panels = (n + PANEL - 1) / PANEL;
    for (int64_t q = 0; q < panels; q++) {
        const int64_t first = q * PANEL, width = n - first < PANEL ? n - first : PANEL;
        float *dst = packed + q * k * PANEL;
        for (int64_t p = 0; p < k; p++, dst += PANEL) {
            const float *src = b + p * rs + first * cs;
            if (cs == 1) {
                memcpy(dst, src, (size_t)width * sizeof(float));
            } else {
                for (int64_t j = 0; j < width; j++) dst[j] = src[j * cs];
            }
            for (int64_t j = width; j < PANEL; j++) dst[j] = 0.0f;
        }
    }
}

typedef struct {
    const float *a, *packed, *add;
    float *c;
    int64_t rs, cs, m, k, n, ld_add;
} gemm_args;

/* rows [r0, r1) times panels [q0, q1), panel by panel, each walked by blocks of 8 (then 4, 2, 1) rows: the panel
 * (k x PANEL) stays in L1 while the blocks of A pass it */
WIDE_VECTORS static void rows_times_panels(const gemm_args *g, int64_t r0, int64_t r1, int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; q++) {
        const int64_t col = q * PANEL, width = g->n - col < PANEL ? g->n - col : PANEL;
        const float *panel = g->packed + q * g->k * PANEL;
        for (int64_t r = r0; r < r1;) {
            const int64_t rows = kc_block_rows(r1 - r);
            const float *add = g->add != NULL ? g->add + r * g->ld_add + col : NULL;
            kc_rows(rows, g->a + r * g->rs, g->rs, g->cs, panel, PANEL, add, g->ld_add, g->c + r * g->n + col, g->n,
                    g->k, width);
            r += rows;
        }
    }
}

/* few rows (an RNN step's batch): the threads share the panels */
static void panels_range(void *p, int64_t first, int64_t last) {
    const gemm_args *g = p;
    rows_times_panels(g, 0, g->m, first, last);
}

/* many rows (an RNN's input projections, all timesteps at once): CHUNK rows at a time times every panel, so that
 * C is written a chunk of whole rows at a time. Panel-major over all rows wrote C in 128-byte pieces a row apart,
 * each a cache miss: [1600, 128] @ [128, 1024] took 3.9 ms on one core (OpenBLAS 2.9). The threads share the
 * chunks. */
#define CHUNK 32
static void chunks_range(void *p, int64_t first, int64_t last) {
    const gemm_args *g = p;
    const int64_t panels = (g->n + PANEL - 1) / PANEL;
    for (int64_t ch = first; ch < last; ch++) {
        const int64_t r0 = ch * CHUNK, r1 = r0 + CHUNK < g->m ? r0 + CHUNK : g->m;
        rows_times_panels(g, r0, r1, 0, panels);
    }
}

/* c [m, n] (C-contiguous) = add + A [m, k] @ B: A's element (r, p) at a[r * rs + p * cs], B packed by
 * kc_pack_columns_f32; add (not c) or NULL for none, its row r at add + r * ld_add: ld_add = n for a C-contiguous
 * [m, n] addend, 0 for one row added to every row (a bias) */
KC_EXPORT void kc_gemm_packed_f32(const float *a, int64_t rs, int64_t cs, const float *packed, const float *add,
                                  int64_t ld_add, float *c, int64_t m, int64_t k, int64_t n, int threads) {
    gemm_args g = {a, packed, add, c, rs, cs, m, k, n, ld_add};
    /* a thread per ~2M multiply-adds at most (~13 us of one core): below that the hand-off outweighs the share */
    const int64_t most = m * k * n / (1 << 21), use = threads < most ? threads : (int)(most > 1 ? most : 1);
    if (m > 2 * CHUNK) {
        kc_parallel_for((m + CHUNK - 1) / CHUNK, use, chunks_range, &g);
    } else {
        kc_parallel_for((n + PANEL - 1) / PANEL, use, panels_range, &g);
    }
}

/* One LSTM step of Paddle's fused rnn op (ops/rnn.py cell_forward) on float32, in one call: the recurrent GEMM
 * h_prev @ W_hh^T + x_proj, the gates' activations, c = f c_prev + i g and h = o tanh(c). NumPy makes the step's
 * elementwise part in five passes over [B, 4 hidden] arrays that the GEMM has just pushed out of cache: ~61 us a
 * step at batch 32, hidden 256, against ~28 on the same arrays kept in cache. Here each block of 32 rows x 32
 * hidden units takes its four gates' sums from the GEMM (gemm_rows.h) into a 16 KB tile, and the rest of the
 * step runs on that tile while it is in L1. The transcendentals are kc_math.h's (within ~1e-7 of float64, as NumPy's
 * are), so the values match the NumPy path to a few float32 ulps, not bit for bit. The step's backward is at the
 * end. */
#include <stdint.h>

#include "gemm_rows.h"
#include "kc_math.h"
#include "kc_native.h"
#include "pool.h"

typedef struct {
    const float *h_prev, *packed, *x_proj, *c_prev;
    float *gates, *c, *h;
    int64_t rs, cs, m, k, hidden, gate_panels;
} step_args;

/* rows of a step's block at a time: each gate's panel (k x PANEL) is walked by the block's rows in blocks of 8
 * while it is in L1, then the next gate's; the block's four gate tiles (16 KB) stay in L1 for the rest */
#define BLOCK_ROWS 32

/* tile[gate][r][j] holds the gate's sum for row r0 + r, unit col + j: the step's rest, written to c, h and (with
 * keep_gates, a constant at each call so that both loops are made) the activated gates */
WIDE_VECTORS static inline __attribute__((always_inline)) void finish_rows(const step_args *s,
                                                                        float tile[4][BLOCK_ROWS][PANEL],
                                                                        int64_t r0, int64_t rows, int64_t col,
                                                                        int64_t width, const int keep_gates) {
    const int64_t H = s->hidden;
    for (int64_t r = 0; r < rows; r++) {
        float *gi = NULL, *gf = NULL, *gg = NULL, *go = NULL;
        if (keep_gates) {
            gi = s->gates + (r0 + r) * 4 * H + col;
            gf = gi + H;
            gg = gf + H;
            go = gg + H;
        }
        const float *cp = s->c_prev + (r0 + r) * H + col;
        float *c = s->c + (r0 + r) * H + col, *h = s->h + (r0 + r) * H + col;
        const float *ti = tile[0][r], *tf = tile[1][r], *tg = tile[2][r], *to = tile[3][r];
#pragma omp simd
        for (int64_t j = 0; j < width; j++) {
            const float i = kc_sigmoid(ti[j]), f = kc_sigmoid(tf[j]), g = kc_tanh(tg[j]), o = kc_sigmoid(to[j]);
            if (keep_gates) {
                gi[j] = i;
                gf[j] = f;
                gg[j] = g;
                go[j] = o;
            }
            const float cj = f * cp[j] + i * g;
            c[j] = cj;
            h[j] = o * kc_tanh(cj);
        }
    }
}

WIDE_VECTORS static void finish_block(const step_args *s, float tile[4][BLOCK_ROWS][PANEL], int64_t r0,
                                      int64_t rows, int64_t col, int64_t width) {
    if (s->gates != NULL)
        finish_rows(s, tile, r0, rows, col, width, 1);
    else
        finish_rows(s, tile, r0, rows, col, width, 0);
}

/* hidden slices [first, last) of PANEL units each, BLOCK_ROWS rows at a time */
WIDE_VECTORS static void slices_range(void *p, int64_t first, int64_t last) {
    const step_args *s = p;
    const int64_t H = s->hidden;
    float tile[4][BLOCK_ROWS][PANEL];
    for (int64_t q = first; q < last; q++) {
        const int64_t col = q * PANEL, width = H - col < PANEL ? H - col : PANEL;
        for (int64_t r0 = 0; r0 < s->m; r0 += BLOCK_ROWS) {
            const int64_t rows = s->m - r0 < BLOCK_ROWS ? s->m - r0 : BLOCK_ROWS;
            for (int gate = 0; gate < 4; gate++) {
                const float *panel = s->packed + (gate * s->gate_panels + q) * s->k * PANEL;
                for (int64_t r = 0; r < rows;) {
                    const int64_t n = kc_block_rows(rows - r);
                    kc_rows(n, s->h_prev + (r0 + r) * s->rs, s->rs, s->cs, panel, PANEL,
                            s->x_proj + (r0 + r) * 4 * H + gate * H + col, 4 * H, tile[gate][r], PANEL, s->k, width);
                    r += n;
                }
            }
            finish_block(s, tile, r0, rows, col, width);
        }
    }
}

/* the threads a step's slices share (as kc_gemm_packed_f32's): one per ~2M multiply-adds at most, at least one */
static int step_threads(int64_t m, int64_t k, int64_t hidden, int threads) {
    const int64_t most = m * k * 4 * hidden / (1 << 21);
    return threads < most ? threads : (int)(most > 1 ? most : 1);
}

/* h_prev [m, k] (element (r, p) at h_prev[r * rs + p * cs]), W_hh^T [k, 4 hidden] packed gate by gate (each
 * gate's hidden columns by kc_pack_columns_f32, gate_panels = ceil(hidden / PANEL) panels each, one after
 * another), x_proj and gates [m, 4 hidden], c_prev, c and h [m, hidden], all C-contiguous; gates in Paddle's order
 * i, f, g (the candidate), o. gates, c and h are written, nothing else. */
KC_EXPORT void kc_lstm_step_f32(const float *h_prev, int64_t rs, int64_t cs, const float *packed,
                                const float *x_proj, const float *c_prev, float *gates, float *c, float *h, int64_t m,
                                int64_t k, int64_t hidden, int threads) {
    const int64_t slices = (hidden + PANEL - 1) / PANEL;
    step_args s = {h_prev, packed, x_proj, c_prev, gates, c, h, rs, cs, m, k, hidden, slices};
    kc_parallel_for(slices, step_threads(m, k, hidden, threads), slices_range, &s);
}

/* A whole pass of one (layer, direction) of an LSTM whose steps nobody observes (ops/rnn.py: no trace, no
 * debugger): the steps of kc_lstm_step_f32 one after another in one call, without the activated gates (no step
 * keeps them). x_proj [steps, m, 4 hidden] (every step's input projection), h0 and c0 [m, hidden] the state
 * before the first step, out [steps, m, hidden] each step's h, written in order t = 0, 1, ... or, with reverse,
 * steps - 1, ..., 0 (each step's h_prev the previous step's row of out); c_last [m, hidden] the last step's c and
 * c_spare [m, hidden] scratch (the steps' c alternate between them, the last landing in c_last). All C-contiguous;
 * out, c_last and c_spare are written, nothing else. The same operations in the same order as the steps called
 * one by one, so the same values. */
KC_EXPORT void kc_lstm_sequence_f32(const float *x_proj, const float *h0, const float *c0, const float *packed,
                                    float *out, float *c_last, float *c_spare, int64_t steps, int reverse,
                                    int64_t m, int64_t hidden, int threads) {
    const int64_t H = hidden, slices = (H + PANEL - 1) / PANEL;
    const int used = step_threads(m, H, H, threads);
    const float *h_prev = h0, *c_prev = c0;
    for (int64_t i = 0; i < steps; i++) {
        const int64_t t = reverse ? steps - 1 - i : i;
        float *c = (steps - 1 - i) % 2 == 0 ? c_last : c_spare, *h = out + t * m * H;
        step_args s = {h_prev, packed, x_proj + t * m * 4 * H, c_prev, NULL, c, h, H, 1, m, H, H, slices};
        kc_parallel_for(slices, used, slices_range, &s);
        h_prev = h;
        c_prev = c;
    }
}

/* The step's backward (grad/rnn.py _lstm_cell_backward): from its kept gates (activated), c and c_prev and the
 * gradients dh, dc of its h and c, the gradient of the gates' pre-activations d_pre and dc_prev in one pass over
 * each row, where NumPy makes eleven over [B, 4 hidden] and [B, hidden] arrays (~110 us a step at batch 32,
 * hidden 256); then dh_prev = d_pre @ W_hh, packed (kc_gemm_packed_f32), while d_pre is in cache. */
typedef struct {
    const float *gates, *c, *c_prev, *dh, *dc;
    float *d_pre, *dc_prev;
    int64_t hidden;
} grad_args;

WIDE_VECTORS static void grad_rows(void *p, int64_t first, int64_t last) {
    const grad_args *a = p;
    const int64_t H = a->hidden;
    for (int64_t b = first; b < last; b++) {
        const float *gi = a->gates + b * 4 * H, *gf = gi + H, *gg = gf + H, *go = gg + H;
        const float *c = a->c + b * H, *cp = a->c_prev + b * H, *dh = a->dh + b * H, *dc = a->dc + b * H;
        float *di = a->d_pre + b * 4 * H, *df = di + H, *dg = df + H, *dout = dg + H, *dcp = a->dc_prev + b * H;
#pragma omp simd
        for (int64_t j = 0; j < H; j++) {
            const float i = gi[j], f = gf[j], g = gg[j], o = go[j], tc = kc_tanh(c[j]);
            const float dcell = (1.0f - tc * tc) * o * dh[j] + dc[j]; /* the gradient of c */
            di[j] = (1.0f - i) * i * (dcell * g);
            df[j] = (1.0f - f) * f * (dcell * cp[j]);
            dg[j] = (1.0f - g) * (1.0f + g) * (dcell * i);
            dout[j] = (1.0f - o) * o * (dh[j] * tc);
            dcp[j] = dcell * f;
        }
    }
}

/* gates, d_pre [m, 4 hidden]; c, c_prev, dh, dc, dc_prev, dh_prev [m, hidden], all C-contiguous; w_back: W_hh
 * [4 hidden, hidden] packed by kc_pack_columns_f32. d_pre, dc_prev and dh_prev are written, nothing else. */
KC_EXPORT void kc_lstm_step_grad_f32(const float *gates, const float *c, const float *c_prev, const float *dh,
                                     const float *dc, float *d_pre, float *dc_prev, const float *w_back,
                                     float *dh_prev, int64_t m, int64_t hidden, int threads) {
    grad_args a = {gates, c, c_prev, dh, dc, d_pre, dc_prev, hidden};
    kc_parallel_for(m, kc_threads_for(m * 4 * hidden, threads), grad_rows, &a);
    kc_gemm_packed_f32(d_pre, 4 * hidden, 1, w_back, NULL, 0, dh_prev, m, 4 * hidden, hidden, threads);
}

/* A 2-D convolution (one group) of a float32 NCHW batch as one GEMM in C, written straight into NCHW:
 *   out[n, o, oy, ox] = sum over (c, ky, kx) of w[o, c, ky, kx] * x[n, c, oy sh - ph + ky dh, ox sw - pw + kx dw].
 * The NumPy path makes the im2col columns [C kh kw, N oh ow], multiplies them with one-thread OpenBLAS calls in
 * parts (cpu_parts.py) and copies the [O, N oh ow] product into [N, O, oh, ow]. OpenBLAS at one thread ran
 * ResNet-18's convolutions at 90-150 GFLOP/s here (it packs both operands again on every call, and its blocking
 * is made for larger matrices), and the parts' hand-offs and the copy came on top: 20.6 ms for its twenty
 * convolutions at batch 8 (3x64x64) on two cores. Here the columns are written by im2col straight into the GEMM's
 * panels (gemm_rows.h: 32 columns by k rows), the filter is A as it lies, and each block's sums go to their place
 * in the NCHW output: 11.5 ms for the same convolutions (docs/benchmarks.md).
 *
 * Few output channels (<= 2 CHUNK, a CNN's early layers: large maps, a small filter): the threads share the
 * panels, each made and multiplied by every filter row while it is in cache. More: the panels are made first
 * (shared over the threads), then the threads share blocks of CHUNK filter rows, each block times every panel,
 * so that each part of a large filter (late layers: 512 x 4608) is read from memory once. */
#include <stdint.h>
#include <string.h>

#include "gemm_rows.h"
#include "kc_native.h"
#include "pool.h"

#define CHUNK 32

typedef struct {
    const float *x, *w;
    float *packed, *out;
    int64_t n, c, h, wd, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw;
    int64_t m, k, cols, pixels; /* output channels, filter elements per channel, N oh ow, oh ow */
    int pointwise;              /* 1x1, stride 1, no padding: the input is its own column matrix (in_place) */
} conv_args;

/* one run's placement along an input row for kernel column kx: d[j] = row[off + j * sw] for j in [lo, hi), zero
 * elsewhere in [0, len) */
typedef struct {
    int64_t off, lo, hi;
} run_place;

#define MAX_KW 64

static inline void place_run(const conv_args *a, int64_t off, int64_t len, run_place *r) {
    int64_t lo = off >= 0 ? 0 : (-off + a->sw - 1) / a->sw;
    int64_t hi = a->wd - off <= 0 ? 0 : (a->wd - off + a->sw - 1) / a->sw;
    if (lo > len) lo = len;
    if (hi > len) hi = len;
    if (hi < lo) hi = lo;
    r->off = off;
    r->lo = lo;
    r->hi = hi;
}

/* panel q (columns [q PANEL, q PANEL + PANEL) of the im2col matrix, k rows of PANEL, zeros past the last column),
 * by runs of columns along one output row: each (channel, ky) input row is read once for the run's kw rows, the
 * run's clipping per kx worked out once for all channels */
static void pack_by_runs(const conv_args *a, int64_t q, float *dst) {
    const int64_t first = q * PANEL, last = first + PANEL < a->cols ? first + PANEL : a->cols;
    const int64_t plane = a->h * a->wd, sw = a->sw;
    run_place place[MAX_KW];
    if (last - first < PANEL) memset(dst, 0, (size_t)(a->k * PANEL) * sizeof(float));
    for (int64_t col = first; col < last;) {
        const int64_t img = col / a->pixels, rem = col % a->pixels, oy = rem / a->ow, ox0 = rem % a->ow;
        const int64_t len = a->ow - ox0 < last - col ? a->ow - ox0 : last - col, j0 = col - first;
        for (int64_t kx = 0; kx < a->kw && kx < MAX_KW; kx++)
            place_run(a, ox0 * sw - a->pw + kx * a->dw, len, &place[kx]);
        for (int64_t ch = 0; ch < a->c; ch++) {
            const float *xc = a->x + (img * a->c + ch) * plane;
            for (int64_t ky = 0; ky < a->kh; ky++) {
                float *d = dst + ((ch * a->kh + ky) * a->kw) * PANEL + j0;
                const int64_t iy = oy * a->sh - a->ph + ky * a->dh;
                if (iy < 0 || iy >= a->h) {
                    for (int64_t kx = 0; kx < a->kw; kx++, d += PANEL)
                        for (int64_t j = 0; j < len; j++) d[j] = 0.0f;
                    continue;
                }
                const float *row = xc + iy * a->wd;
                for (int64_t kx = 0; kx < a->kw; kx++, d += PANEL) {
                    run_place wide;  /* kernels wider than MAX_KW (none of the usual ones) place the rest here */
                    const run_place *r = kx < MAX_KW ? &place[kx] : &wide;
                    if (kx >= MAX_KW) place_run(a, ox0 * sw - a->pw + kx * a->dw, len, &wide);
                    const float *src = row + r->off;
                    for (int64_t j = 0; j < r->lo; j++) d[j] = 0.0f;
                    if (sw == 1) {
                        for (int64_t j = r->lo; j < r->hi; j++) d[j] = src[j];
                    } else {
                        for (int64_t j = r->lo; j < r->hi; j++) d[j] = src[j * sw];
                    }
                    for (int64_t j = r->hi; j < len; j++) d[j] = 0.0f;
                }
            }
        }
        col += len;
    }
}

/* small maps (runs of a few columns): each column's input place per kernel offset looked up in a table made
 * once per panel (-1: padding), then every channel's rows filled from it */
#define TABLE_MAX 2048
static void pack_by_table(const conv_args *a, int64_t q, float *dst) {
    const int64_t first = q * PANEL, width = a->cols - first < PANEL ? a->cols - first : PANEL;
    const int64_t plane = a->h * a->wd, taps = a->kh * a->kw;
    int32_t source[TABLE_MAX];
    for (int64_t j = 0; j < PANEL; j++) {
        const int64_t col = first + j, img = col / a->pixels, rem = col % a->pixels;
        const int64_t oy = rem / a->ow, ox = rem % a->ow;
        for (int64_t t = 0; t < taps; t++) {
            const int64_t iy = oy * a->sh - a->ph + (t / a->kw) * a->dh, ix = ox * a->sw - a->pw + (t % a->kw) * a->dw;
            source[t * PANEL + j] = j < width && iy >= 0 && iy < a->h && ix >= 0 && ix < a->wd
                                        ? (int32_t)(img * a->c * plane + iy * a->wd + ix) : -1;
        }
    }
    for (int64_t ch = 0; ch < a->c; ch++) {
        const float *xc = a->x + ch * plane;
        for (int64_t t = 0; t < taps; t++) {
            const int32_t *s = source + t * PANEL;
            float *d = dst + (ch * taps + t) * PANEL;
#pragma omp simd
            for (int64_t j = 0; j < PANEL; j++) d[j] = s[j] >= 0 ? xc[s[j]] : 0.0f;
        }
    }
}

/* the table where runs are short (maps narrower than a panel) and its making pays off over the channels; its gathers
 * took 0.3-0.45 ns an element here on 2x2 to 16x16 maps of 64-512 channels, the runs 0.5-1.0; the runs on a stem
 * (3 channels, 7x7 kernel: 0.45 against 1.3) and on wide maps */
static void pack_panel(const conv_args *a, int64_t q, float *dst) {
    const int table = (a->ow < 8 || (a->ow < PANEL && a->c >= 16)) && a->kh * a->kw * PANEL <= TABLE_MAX &&
                      a->n * a->c * a->h * a->wd < INT32_MAX; /* the table holds input offsets as int32 */
    if (table) {
        pack_by_table(a, q, dst);
    } else {
        pack_by_runs(a, q, dst);
    }
}

/* a 1x1 convolution of stride 1 and no padding reads its columns where they lie: image b's [c, oh ow] plane is
 * the column matrix of its pixels. A panel of PANEL columns inside one image is read in place (its rows a plane
 * apart); others (across images, or the last) are packed. MobileNetV2's pointwise convolutions took twice
 * OpenBLAS's time with every panel packed first (a copy of the whole input, for few multiply-adds per element). */
static int in_place(const conv_args *a, int64_t q) {
    return a->pointwise && (q * PANEL) % a->pixels + PANEL <= a->pixels;
}

/* panel q's first element and row stride */
static const float *panel_of(const conv_args *a, int64_t q, int64_t *ldb) {
    if (in_place(a, q)) {
        const int64_t col = q * PANEL;
        *ldb = a->pixels;
        return a->x + (col / a->pixels) * a->c * a->pixels + col % a->pixels;
    }
    *ldb = PANEL;
    return a->packed + q * a->k * PANEL;
}

static void make_panel(const conv_args *a, int64_t q) {
    if (!in_place(a, q)) pack_panel(a, q, a->packed + q * a->k * PANEL);
}

/* filter rows [r, r + rows) times panel q, the sums written to their NCHW places: straight from the row block
 * where the panel's columns lie in one image, else through a tile, a run of columns per image (WIDE_VECTORS: kc_rows
 * inlined here is vectorised with this function's settings, and spilled its sums with 256-bit ones: 30% slower) */
WIDE_VECTORS static void rows_times_panel(const conv_args *a, int64_t r, int64_t rows, int64_t q) {
    const int64_t col = q * PANEL, width = a->cols - col < PANEL ? a->cols - col : PANEL;
    const int64_t img = col / a->pixels, at = col % a->pixels;
    int64_t ldb;
    const float *panel = panel_of(a, q, &ldb), *w = a->w + r * a->k;
    if (at + width <= a->pixels) {
        kc_rows(rows, w, a->k, 1, panel, ldb, NULL, 0, a->out + (img * a->m + r) * a->pixels + at, a->pixels, a->k,
                width);
        return;
    }
    float tile[8 * PANEL];
    kc_rows(rows, w, a->k, 1, panel, ldb, NULL, 0, tile, PANEL, a->k, width);
    for (int64_t i = 0; i < rows; i++) {
        for (int64_t j = 0; j < width;) {
            const int64_t c = col + j, b = c / a->pixels, p = c % a->pixels;
            const int64_t len = a->pixels - p < width - j ? a->pixels - p : width - j;
            memcpy(a->out + (b * a->m + r + i) * a->pixels + p, tile + i * PANEL + j, (size_t)len * sizeof(float));
            j += len;
        }
    }
}

WIDE_VECTORS static void rows_times_panels(const conv_args *a, int64_t r0, int64_t r1, int64_t q) {
    for (int64_t r = r0; r < r1;) {
        const int64_t rows = kc_block_rows(r1 - r);
        rows_times_panel(a, r, rows, q);
        r += rows;
    }
}

/* few filter rows: panels [first, last), each made then multiplied by every row while it is in cache */
static void make_and_multiply(void *p, int64_t first, int64_t last) {
    const conv_args *a = p;
    for (int64_t q = first; q < last; q++) {
        make_panel(a, q);
        rows_times_panels(a, 0, a->m, q);
    }
}

static void make_panels(void *p, int64_t first, int64_t last) {
    const conv_args *a = p;
    for (int64_t q = first; q < last; q++) make_panel(a, q);
}

/* many filter rows: chunks [first, last) of CHUNK rows, each times every panel */
static void chunks_times_panels(void *p, int64_t first, int64_t last) {
    const conv_args *a = p;
    const int64_t panels = (a->cols + PANEL - 1) / PANEL;
    for (int64_t ch = first; ch < last; ch++) {
        const int64_t r0 = ch * CHUNK, r1 = r0 + CHUNK < a->m ? r0 + CHUNK : a->m;
        for (int64_t q = 0; q < panels; q++) rows_times_panels(a, r0, r1, q);
    }
}

/* out [n, m, oh, ow] = the convolution of x [n, c, h, w] with w [m, c, kh, kw]; geometry: h, w, oh, ow, kh, kw,
 * sh, sw, ph, pw, dh, dw (ph, pw: the padding above and left); scratch: room for the packed columns,
 * ceil(n oh ow / PANEL) PANEL c kh kw floats */
KC_EXPORT void kc_conv2d_f32(const float *x, const float *w, float *scratch, float *out, int64_t n, int64_t c,
                             int64_t m, const int64_t *geometry, int threads) {
    const int64_t *g = geometry;
    conv_args a = {x, w, scratch, out, n, c, g[0], g[1], g[4], g[5], g[2], g[3], g[6], g[7], g[8], g[9], g[10],
                   g[11], m, c * g[4] * g[5], n * g[2] * g[3], g[2] * g[3], 0};
    a.pointwise =
        a.kh == 1 && a.kw == 1 && a.sh == 1 && a.sw == 1 && a.ph == 0 && a.pw == 0 && a.oh == a.h && a.ow == a.wd;
    const int64_t panels = (a.cols + PANEL - 1) / PANEL;
    /* a thread per ~2M multiply-adds at most (~13 us of one core): below that the hand-off outweighs the share */
    const int64_t most = m * a.k * a.cols / (1 << 21);
    const int use = threads < most ? threads : (int)(most > 1 ? most : 1);
    if (m <= 2 * CHUNK) {
        kc_parallel_for(panels, use, make_and_multiply, &a);
        return;
    }
    if (!a.pointwise || a.pixels % PANEL) /* else every panel is read in place: nothing to make */
        kc_parallel_for(panels, kc_threads_for(a.k * panels * PANEL, threads), make_panels, &a);
    kc_parallel_for((m + CHUNK - 1) / CHUNK, use, chunks_times_panels, &a);
}

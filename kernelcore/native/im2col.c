/* The im2col columns of a float32 NCHW batch for a 2-D convolution:
 *   cols[(c * kh + ky) * kw + kx, (n * oh + oy) * ow + ox] = x[n, c, oy * sh - ph + ky * dh, ox * sw - pw + kx * dw],
 * zero where that lies outside the image. NumPy makes them from a padded copy of the input through a window view,
 * whose copy runs along rows of `ow` elements (2 to 32 on ResNet-18's maps: 1.4-10 GB/s); here the padding is
 * written as zeros, never materialised, and a stride-1 "same" convolution's block is one shifted copy of the input
 * plane. Column rows are shared over `threads` threads (pool.c). */
#include <stdint.h>
#include <string.h>

#include "kc_native.h"
#include "pool.h"

typedef struct {
    const float *x;
    float *cols;
    int64_t n, c, h, w, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw;
    const int32_t *source; /* small maps: per kernel offset and output position, its input's place in the plane */
} im2col_args;

/* maps of fewer output positions than this take the table (channels_range): their blocks are too short for
 * copies (ResNet-18's 2x2 maps: 1.7 GB/s by copies, 4.1 by the table; on 4x4 maps the two ran alike, on 8x8 the
 * copies twice as fast) */
#define SMALL_MAP 16

/* the output columns [*lo, *hi) whose input column ox * sw + off lies in [0, w) */
static inline void valid_columns(const im2col_args *a, int64_t off, int64_t *lo, int64_t *hi) {
    int64_t l = off >= 0 ? 0 : (-off + a->sw - 1) / a->sw;
    int64_t h = a->w - off <= 0 ? 0 : (a->w - off + a->sw - 1) / a->sw;
    if (h > a->ow) h = a->ow;
    *lo = l;
    *hi = h > l ? h : l;
}

/* one image's block of a column row, output row by output row: any stride, any width */
static void block_by_rows(const im2col_args *a, const float *xc, float *out, int64_t ky, int64_t off, int64_t lo,
                          int64_t hi) {
    for (int64_t oy = 0; oy < a->oh; oy++, out += a->ow) {
        const int64_t iy = oy * a->sh - a->ph + ky * a->dh;
        if (iy < 0 || iy >= a->h) {
            for (int64_t ox = 0; ox < a->ow; ox++) out[ox] = 0.0f;
            continue;
        }
        const float *row = xc + iy * a->w;  /* row[ox * sw + off] is output column ox's input */
        for (int64_t ox = 0; ox < lo; ox++) out[ox] = 0.0f;
        if (a->sw == 1) {
            for (int64_t ox = lo; ox < hi; ox++) out[ox] = row[ox + off];
        } else {
            for (int64_t ox = lo; ox < hi; ox++) out[ox] = row[ox * a->sw + off];
        }
        for (int64_t ox = hi; ox < a->ow; ox++) out[ox] = 0.0f;
    }
}

/* the same block where the output rows are as wide as the input's and the strides are 1 (a "same" convolution):
 * the valid output rows are then one run of the input plane shifted by (iy0, off), copied at once; the columns
 * that run took from a neighbouring row (off != 0) are zeroed after. On small maps this is one copy where the
 * row-by-row form makes oh short ones (ResNet-18's 2x2 to 8x8 maps). */
static void block_as_plane(const im2col_args *a, const float *xc, float *out, int64_t ky, int64_t off, int64_t lo,
                           int64_t hi) {
    const int64_t w = a->w, oh = a->oh;
    int64_t ylo = a->ph - ky * a->dh, yhi = a->h + a->ph - ky * a->dh;  /* output rows with iy in [0, h) */
    ylo = ylo < 0 ? 0 : (ylo > oh ? oh : ylo);
    yhi = yhi > oh ? oh : (yhi < ylo ? ylo : yhi);
    if (ylo > 0) memset(out, 0, (size_t)(ylo * w) * sizeof(float));
    if (yhi < oh) memset(out + yhi * w, 0, (size_t)((oh - yhi) * w) * sizeof(float));
    if (yhi == ylo) return;
    /* out[oy * w + ox] = xc[(oy - ph + ky * dh) * w + ox + off] for the rows [ylo, yhi): one shifted run, of which
     * the part that falls outside the plane (its first or last `off` elements) is left for the zeroing below */
    const int64_t first = ylo * w, count = (yhi - ylo) * w;
    const int64_t src0 = (ylo - a->ph + ky * a->dh) * w + off;
    int64_t from = 0, to = count;
    if (src0 < 0) from = -src0;
    if (src0 + count > a->h * w) to = a->h * w - src0;
    if (to > from) memcpy(out + first + from, xc + src0 + from, (size_t)(to - from) * sizeof(float));
    if (lo > 0 || hi < w) {
        for (int64_t oy = ylo; oy < yhi; oy++) {
            float *o = out + oy * w;
            for (int64_t ox = 0; ox < lo; ox++) o[ox] = 0.0f;
            for (int64_t ox = hi; ox < w; ox++) o[ox] = 0.0f;
        }
    }
}

static void rows_range(void *p, int64_t first, int64_t last) {
    const im2col_args *a = p;
    const int64_t plane = a->h * a->w, block = a->oh * a->ow;
    const int as_plane = a->sw == 1 && a->sh == 1 && a->ow == a->w;
    for (int64_t r = first; r < last; r++) {
        const int64_t kx = r % a->kw, ky = (r / a->kw) % a->kh, c = r / (a->kw * a->kh);
        const int64_t off = kx * a->dw - a->pw;  /* input column of output column 0 */
        int64_t lo, hi;
        valid_columns(a, off, &lo, &hi);
        float *out = a->cols + r * a->n * block;
        for (int64_t b = 0; b < a->n; b++, out += block) {
            const float *xc = a->x + (b * a->c + c) * plane;
            if (as_plane) {
                block_as_plane(a, xc, out, ky, off, lo, hi);
            } else {
                block_by_rows(a, xc, out, ky, off, lo, hi);
            }
        }
    }
}

/* small maps, a channel at a time: its plane read once per image for all kh * kw column rows, each output
 * element looked up in `source` (-1: padding) */
static void channels_range(void *p, int64_t first, int64_t last) {
    const im2col_args *a = p;
    const int64_t plane = a->h * a->w, block = a->oh * a->ow, taps = a->kh * a->kw, row = a->n * block;
    for (int64_t c = first; c < last; c++) {
        for (int64_t b = 0; b < a->n; b++) {
            const float *xc = a->x + (b * a->c + c) * plane;
            for (int64_t t = 0; t < taps; t++) {
                const int32_t *src = a->source + t * block;
                float *out = a->cols + (c * taps + t) * row + b * block;
                for (int64_t q = 0; q < block; q++) out[q] = src[q] >= 0 ? xc[src[q]] : 0.0f;
            }
        }
    }
}

/* geometry: h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw (ph, pw: the padding above and left) */
KC_EXPORT void kc_im2col_f32(const float *x, float *cols, int64_t n, int64_t c, const int64_t *geometry,
                             int threads) {
    const int64_t *g = geometry;
    im2col_args a = {x, cols, n, c, g[0], g[1], g[4], g[5], g[2], g[3], g[6], g[7], g[8], g[9], g[10], g[11], NULL};
    const int64_t rows = c * a.kh * a.kw, block = a.oh * a.ow, elements = rows * n * block;
    if (block < SMALL_MAP && a.kh * a.kw * block <= 4096) {
        int32_t source[4096];
        for (int64_t ky = 0; ky < a.kh; ky++)
            for (int64_t kx = 0; kx < a.kw; kx++)
                for (int64_t oy = 0; oy < a.oh; oy++)
                    for (int64_t ox = 0; ox < a.ow; ox++) {
                        const int64_t iy = oy * a.sh - a.ph + ky * a.dh, ix = ox * a.sw - a.pw + kx * a.dw;
                        source[((ky * a.kw + kx) * a.oh + oy) * a.ow + ox] =
                            iy >= 0 && iy < a.h && ix >= 0 && ix < a.w ? (int32_t)(iy * a.w + ix) : -1;
                    }
        a.source = source;
        kc_parallel_for(c, kc_threads_for(elements, threads), channels_range, &a);
        return;
    }
    kc_parallel_for(rows, kc_threads_for(elements, threads), rows_range, &a);
}

/* depthwise_conv2d and its gradients on float32 NCHW batches with one filter per channel (groups == channels,
 * no channel multiplier): out[n, c, oy, ox] = sum over taps (ky, kx) of w[c, ky, kx] *
 * x[n, c, oy * sh - ph + ky * dh, ox * sw - pw + kx * dw], zero outside the image. NumPy has no op for this: its
 * kernels (ops/conv.py, grad/vision.py) build per-channel columns or make one multiply-add pass per tap over the
 * whole batch. Here a channel's planes are done while they are in cache: where the geometry allows, a few images
 * at a time as one flat walk over zero-bordered copies (stride 1, and stride 2's 3x3 gradients), else a row at a
 * time with the padding never materialised; the work is shared out over `threads` threads (pool.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kc_native.h"
#include "pool.h"

typedef struct {
    int64_t h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, n;
} geometry;

/* the output columns [*lo, *hi) whose input column ox * sw - pw + kx * dw lies in [0, w) */
static inline void valid_columns(const geometry *g, int64_t kx, int64_t *lo, int64_t *hi) {
    const int64_t off = kx * g->dw - g->pw;  /* input column of output column 0 */
    int64_t a = off >= 0 ? 0 : (-off + g->sw - 1) / g->sw;
    int64_t b = g->w - off <= 0 ? 0 : (g->w - off + g->sw - 1) / g->sw;
    if (b > g->ow) b = g->ow;
    *lo = a;
    *hi = b > a ? b : a;
}

/* one output of a plane, its taps bounds-checked */
static inline float output_at(const geometry *g, const float *x, const float *wt, int64_t oy, int64_t ox) {
    float acc = 0.0f;
    for (int64_t ky = 0; ky < g->kh; ky++) {
        const int64_t iy = oy * g->sh - g->ph + ky * g->dh;
        if (iy < 0 || iy >= g->h) continue;
        for (int64_t kx = 0; kx < g->kw; kx++) {
            const int64_t ix = ox * g->sw - g->pw + kx * g->dw;
            if (ix >= 0 && ix < g->w) acc += wt[ky * g->kw + kx] * x[iy * g->w + ix];
        }
    }
    return acc;
}

/* 3x3, dilation 1 (MobileNet's every depthwise layer): rows whose three input rows are inside the image take their
 * inner outputs in one loop over the row, all nine taps in registers (vectorised along the row); the outputs
 * whose window crosses the border, a column or two at each end and the first and last rows, go one by one */
static inline __attribute__((always_inline)) void plane_forward_3x3(const geometry *g, const float *x,
                                                                   const float *wt, float *out) {
    const float w0 = wt[0], w1 = wt[1], w2 = wt[2], w3 = wt[3], w4 = wt[4], w5 = wt[5], w6 = wt[6], w7 = wt[7],
                w8 = wt[8];
    const int64_t sw = g->sw;
    int64_t lo = g->pw <= 0 ? 0 : (g->pw + sw - 1) / sw;              /* the first ox with ox*sw - pw >= 0 */
    int64_t hi = g->w - 3 + g->pw < 0 ? 0 : (g->w - 3 + g->pw) / sw + 1; /* past the last with ix + 2 < w */
    if (lo > g->ow) lo = g->ow;
    if (hi > g->ow) hi = g->ow;
    if (hi < lo) hi = lo;
    for (int64_t oy = 0; oy < g->oh; oy++) {
        float *orow = out + oy * g->ow;
        const int64_t iy = oy * g->sh - g->ph;
        if (iy < 0 || iy + 2 >= g->h) {
            for (int64_t ox = 0; ox < g->ow; ox++) orow[ox] = output_at(g, x, wt, oy, ox);
            continue;
        }
        const float *r0 = x + iy * g->w - g->pw, *r1 = r0 + g->w, *r2 = r1 + g->w;
        for (int64_t ox = 0; ox < lo; ox++) orow[ox] = output_at(g, x, wt, oy, ox);
        if (sw == 1) {
#pragma omp simd
            for (int64_t ox = lo; ox < hi; ox++)
                orow[ox] = w0 * r0[ox] + w1 * r0[ox + 1] + w2 * r0[ox + 2] + w3 * r1[ox] + w4 * r1[ox + 1] +
                           w5 * r1[ox + 2] + w6 * r2[ox] + w7 * r2[ox + 1] + w8 * r2[ox + 2];
        } else {
#pragma omp simd
            for (int64_t ox = lo; ox < hi; ox++) {
                const int64_t i = ox * sw;
                orow[ox] = w0 * r0[i] + w1 * r0[i + 1] + w2 * r0[i + 2] + w3 * r1[i] + w4 * r1[i + 1] +
                           w5 * r1[i + 2] + w6 * r2[i] + w7 * r2[i + 1] + w8 * r2[i + 2];
            }
        }
        for (int64_t ox = hi; ox < g->ow; ox++) orow[ox] = output_at(g, x, wt, oy, ox);
    }
}

static void plane_forward(const geometry *g, const float *x, const float *wt, float *out) {
    if (g->kh == 3 && g->kw == 3 && g->dh == 1 && g->dw == 1) {
        plane_forward_3x3(g, x, wt, out);
        return;
    }
    for (int64_t oy = 0; oy < g->oh; oy++) {
        float *orow = out + oy * g->ow;
        memset(orow, 0, sizeof(float) * (size_t)g->ow);
        for (int64_t ky = 0; ky < g->kh; ky++) {
            const int64_t iy = oy * g->sh - g->ph + ky * g->dh;
            if (iy < 0 || iy >= g->h) continue;
            const float *irow = x + iy * g->w;
            for (int64_t kx = 0; kx < g->kw; kx++) {
                const float wv = wt[ky * g->kw + kx];
                const int64_t off = kx * g->dw - g->pw;
                int64_t lo, hi;
                valid_columns(g, kx, &lo, &hi);
                if (g->sw == 1) {
                    const float *src = irow + off;
#pragma omp simd
                    for (int64_t ox = lo; ox < hi; ox++) orow[ox] += wv * src[ox];
                } else {
                    for (int64_t ox = lo; ox < hi; ox++) orow[ox] += wv * irow[ox * g->sw + off];
                }
            }
        }
    }
}

/* plane_forward out of line, for the stacked path's rare fallbacks: plane_forward_3x3 inlined there cost the
 * stacked loop 10-25% (and left out of plane_forward, the stride-2 rows 20%) */
static __attribute__((noinline)) void plane_forward_rows(const geometry *g, const float *x, const float *wt,
                                                         float *out) {
    plane_forward(g, x, wt, out);
}

/* Stride 1, finite taps (most of MobileNet's depthwise layers, 3x3 or MobileNetV3's 5x5, and every one's
 * Input@GRAD), a channel's planes a few images at a time. The planes are copied into a scratch with zero borders,
 * stacked, so that every tap of every output is a read at one fixed offset from the output's own index in a flat
 * walk over rows W = ow + (kw - 1) * dw wide. The group's outputs then come from one loop over the walk (3x3: all
 * nine taps in one expression; other kernels: one pass per tap), vectorised along it with no border cases and no
 * short-row remainders (eight 4x4 maps are a few vector iterations, not 128 window walks), and are packed into
 * their rows after (the positions between rows and between planes are discarded). Each output is 0 + its products
 * in row-major tap order: the padding's terms are +-0, which leave such a sum's bits unchanged, so this is
 * output_at's (and plane_forward's) value bit for bit. Non-finite taps would turn the padding's zeros into NaN:
 * such channels take plane_forward. At stride 2 the copy would have to split the plane by column and row parity,
 * which measured slower than plane_forward_3x3's rows. */
typedef struct {
    int64_t rows, cols; /* a plane's rows in the scratch and the walk's width W */
    int64_t images;     /* planes per group: the stacked planes about STACK_FLOATS */
} stacking;

#define STACK_FLOATS 12288 /* 48 KB of stacked planes per group, with their outputs about L2-resident */

/* a stacking of planes rows x cols, `per_plane` floats of scratch each (theirs and their walk's), grouped so that a
 * group's scratch is about STACK_FLOATS (at least one plane, at most the batch) */
static stacking stacking_sized(int64_t rows, int64_t cols, int64_t per_plane, int64_t n) {
    stacking s = {rows, cols, per_plane >= STACK_FLOATS ? 1 : STACK_FLOATS / per_plane};
    if (s.images > n) s.images = n;
    return s;
}

/* groups of s.images in a batch of n; work item j is channel j / groups's images of group j % groups */
static int64_t group_count(const stacking *s, int64_t n) {
    return (n + s->images - 1) / s->images;
}

static int64_t group_size(const stacking *s, int64_t n, int64_t i0) {
    return n - i0 < s->images ? n - i0 : s->images;
}

static int stacked_path_fits(const geometry *g) {
    return g->sh == 1 && g->sw == 1 && g->oh > 0 && g->ow > 0 && g->n > 0;
}

static int is_3x3(const geometry *g) {
    return g->kh == 3 && g->kw == 3 && g->dh == 1 && g->dw == 1;
}

static stacking stacking_of(const geometry *g) {
    const int64_t rows = g->oh + (g->kh - 1) * g->dh, cols = g->ow + (g->kw - 1) * g->dw;
    return stacking_sized(rows, cols, 2 * rows * cols, g->n); /* the padded plane and its flat outputs */
}

static int taps_finite(const float *wt, int64_t taps) {
    for (int64_t t = 0; t < taps; t++)
        if (!(wt[t] - wt[t] == 0.0f)) return 0; /* inf - inf and NaN - NaN are NaN */
    return 1;
}

/* plane x's part of its padded plane, into padded (whose zero border, written once, every group after keeps) */
static void copy_inside(const geometry *g, const stacking *s, const float *x, float *padded) {
    const int64_t W = s->cols;
    /* padded row r, column q hold x[r - ph, q - pw] */
    int64_t lo = g->pw < 0 ? 0 : g->pw, hi = g->w + g->pw, r0 = g->ph < 0 ? 0 : g->ph, r1 = g->h + g->ph;
    if (hi > W) hi = W;
    if (r1 > s->rows) r1 = s->rows;
    for (int64_t r = r0; r < r1; r++) {
        float *restrict row = padded + r * W;
        const float *restrict xrow = x + (r - g->ph) * g->w - g->pw;
#pragma omp simd
        for (int64_t q = lo; q < hi; q++) row[q] = xrow[q];
    }
}

/* 0, or NaN where a[0, n) holds a NaN or an infinity (the sum of its values times 0) */
static float non_finite_check(const float *a, int64_t n) {
    float check = 0.0f;
#pragma omp simd reduction(+ : check)
    for (int64_t i = 0; i < n; i++) check += a[i] * 0.0f;
    return check;
}

/* the 3x3 outputs of `walk` positions of stacked planes W wide: the nine taps in one expression, in tap order */
static void walk_3x3(const float *scratch, int64_t W, const float *wt, float *restrict flat, int64_t walk) {
    const float *restrict t0 = scratch, *restrict t1 = t0 + 1, *restrict t2 = t0 + 2, *restrict t3 = t0 + W,
                          *restrict t4 = t3 + 1, *restrict t5 = t3 + 2, *restrict t6 = t3 + W, *restrict t7 = t6 + 1,
                          *restrict t8 = t6 + 2;
    const float w0 = wt[0], w1 = wt[1], w2 = wt[2], w3 = wt[3], w4 = wt[4], w5 = wt[5], w6 = wt[6], w7 = wt[7],
                w8 = wt[8];
#pragma omp simd
    for (int64_t i = 0; i < walk; i++)
        flat[i] = 0.0f + w0 * t0[i] + w1 * t1[i] + w2 * t2[i] + w3 * t3[i] + w4 * t4[i] + w5 * t5[i] + w6 * t6[i] +
                  w7 * t7[i] + w8 * t8[i];
}

/* planes first, first + step, ... (count of them) of src, all with taps wt, into the same planes of dst */
static void stacked_forward(const geometry *g, const stacking *s, const float *src, float *dst, int64_t first,
                            int64_t step, int64_t count, const float *wt, float *scratch) {
    const int64_t in_plane = g->h * g->w, out_plane = g->oh * g->ow;
    if (!taps_finite(wt, g->kh * g->kw)) {
        for (int64_t k = 0; k < count; k++)
            plane_forward_rows(g, src + (first + k * step) * in_plane, wt, dst + (first + k * step) * out_plane);
        return;
    }
    const int64_t W = s->cols, image = s->rows * W;
    for (int64_t k = 0; k < count; k++) copy_inside(g, s, src + (first + k * step) * in_plane, scratch + k * image);
    float *restrict flat = scratch + s->images * image;
    const int64_t walk = (count - 1) * image + (g->oh - 1) * W + g->ow; /* its reads end inside the last plane */
    if (is_3x3(g)) {
        walk_3x3(scratch, W, wt, flat, walk);
    } else {
        memset(flat, 0, sizeof(float) * (size_t)walk);
        for (int64_t ky = 0; ky < g->kh; ky++)
            for (int64_t kx = 0; kx < g->kw; kx++) {
                const float wv = wt[ky * g->kw + kx];
                const float *restrict p = scratch + ky * g->dh * W + kx * g->dw;
#pragma omp simd
                for (int64_t i = 0; i < walk; i++) flat[i] += wv * p[i];
            }
    }
    for (int64_t k = 0; k < count; k++) {
        float *out = dst + (first + k * step) * out_plane;
        for (int64_t oy = 0; oy < g->oh; oy++)
            memcpy(out + oy * g->ow, flat + k * image + oy * W, sizeof(float) * (size_t)g->ow);
    }
}

/* the stacked path over work items [first, last): item j is channel j / groups's images of group j % groups */
static void stacked_items(const geometry *g, const float *src, float *dst, const float *taps, int64_t c,
                          int64_t first, int64_t last) {
    const stacking s = stacking_of(g);
    const int64_t groups = group_count(&s, g->n);
    float *scratch = calloc((size_t)(2 * s.images * s.rows * s.cols), sizeof(float));
    for (int64_t j = first; j < last; j++) {
        const int64_t ch = j / groups, i0 = (j % groups) * s.images, count = group_size(&s, g->n, i0);
        if (scratch) {
            stacked_forward(g, &s, src, dst, i0 * c + ch, c, count, taps + ch * g->kh * g->kw, scratch);
        } else { /* no memory for the scratch: the row-by-row path */
            for (int64_t i = i0; i < i0 + count; i++)
                plane_forward_rows(g, src + (i * c + ch) * g->h * g->w, taps + ch * g->kh * g->kw,
                                   dst + (i * c + ch) * g->oh * g->ow);
        }
    }
    free(scratch);
}

static int64_t stacked_item_count(const geometry *g, int64_t c) {
    const stacking s = stacking_of(g);
    return c * group_count(&s, g->n);
}

/* Input@GRAD of one plane: each output gradient scattered back to the inputs its taps read */
static void plane_input_grad(const geometry *g, const float *gout, const float *wt, float *dx) {
    memset(dx, 0, sizeof(float) * (size_t)(g->h * g->w));
    for (int64_t oy = 0; oy < g->oh; oy++) {
        const float *grow = gout + oy * g->ow;
        for (int64_t ky = 0; ky < g->kh; ky++) {
            const int64_t iy = oy * g->sh - g->ph + ky * g->dh;
            if (iy < 0 || iy >= g->h) continue;
            float *drow = dx + iy * g->w;
            for (int64_t kx = 0; kx < g->kw; kx++) {
                const float wv = wt[ky * g->kw + kx];
                const int64_t off = kx * g->dw - g->pw;
                int64_t lo, hi;
                valid_columns(g, kx, &lo, &hi);
                if (g->sw == 1) {
                    float *dst = drow + off;
#pragma omp simd
                    for (int64_t ox = lo; ox < hi; ox++) dst[ox] += wv * grow[ox];
                } else {
                    for (int64_t ox = lo; ox < hi; ox++) drow[ox * g->sw + off] += wv * grow[ox];
                }
            }
        }
    }
}

/* Filter@GRAD contributions of one plane, added into dw[kh * kw] (double: a channel sums n * oh * ow terms) */
static void plane_filter_grad(const geometry *g, const float *gout, const float *x, double *dw) {
    for (int64_t ky = 0; ky < g->kh; ky++) {
        for (int64_t kx = 0; kx < g->kw; kx++) {
            const int64_t off = kx * g->dw - g->pw;
            int64_t lo, hi;
            valid_columns(g, kx, &lo, &hi);
            float acc = 0.0f;
            for (int64_t oy = 0; oy < g->oh; oy++) {
                const int64_t iy = oy * g->sh - g->ph + ky * g->dh;
                if (iy < 0 || iy >= g->h) continue;
                const float *grow = gout + oy * g->ow, *irow = x + iy * g->w;
                if (g->sw == 1) {
                    const float *src = irow + off;
#pragma omp simd reduction(+ : acc)
                    for (int64_t ox = lo; ox < hi; ox++) acc += grow[ox] * src[ox];
                } else {
                    for (int64_t ox = lo; ox < hi; ox++) acc += grow[ox] * irow[ox * g->sw + off];
                }
            }
            dw[ky * g->kw + kx] += acc;
        }
    }
}

static geometry make_geometry(const int64_t *dims, int64_t n) {
    /* dims: h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw */
    geometry g = {dims[0], dims[1], dims[2], dims[3], dims[4], dims[5],
                  dims[6], dims[7], dims[8], dims[9], dims[10], dims[11], n};
    return g;
}

typedef struct {
    geometry g;
    const float *x, *w, *gout;
    float *out, *dx, *dw;
    int64_t c;
    const float *flipped; /* each channel's taps reversed, for Input@GRAD at stride 1 and dilation 1; or NULL */
} dw_args;

static void forward_planes(void *p, int64_t first, int64_t last) {
    const dw_args *a = p;
    const int64_t in_plane = a->g.h * a->g.w, out_plane = a->g.oh * a->g.ow, taps = a->g.kh * a->g.kw;
    for (int64_t q = first; q < last; q++)
        plane_forward(&a->g, a->x + q * in_plane, a->w + (q % a->c) * taps, a->out + q * out_plane);
}

static void forward_stacked(void *p, int64_t first, int64_t last) {
    const dw_args *a = p;
    stacked_items(&a->g, a->x, a->out, a->w, a->c, first, last);
}

/* Input@GRAD at stride 1 and dilation 1: dx[iy, ix] = sum over taps of w[kh-1-ky, kw-1-kx] * g[iy - (kh-1-ph) +
 * ky, ...], the forward of Output@GRAD with the flipped filter and the complementary padding (a gather: no
 * scatter-adds, and the forward's fast paths) */
static geometry flipped_geometry(const geometry *g) {
    const geometry f = {g->oh, g->ow, g->h, g->w, g->kh, g->kw, 1, 1, g->kh - 1 - g->ph, g->kw - 1 - g->pw, 1, 1, g->n};
    return f;
}

static void input_grad_stacked(void *p, int64_t first, int64_t last) {
    const dw_args *a = p;
    const geometry f = flipped_geometry(&a->g);
    stacked_items(&f, a->gout, a->dx, a->flipped, a->c, first, last);
}

static void input_grad_planes(void *p, int64_t first, int64_t last) {
    const dw_args *a = p;
    const int64_t in_plane = a->g.h * a->g.w, out_plane = a->g.oh * a->g.ow, taps = a->g.kh * a->g.kw;
    if (a->flipped) {
        const geometry f = flipped_geometry(&a->g);
        for (int64_t q = first; q < last; q++)
            plane_forward(&f, a->gout + q * out_plane, a->flipped + (q % a->c) * taps, a->dx + q * in_plane);
        return;
    }
    for (int64_t q = first; q < last; q++)
        plane_input_grad(&a->g, a->gout + q * out_plane, a->w + (q % a->c) * taps, a->dx + q * in_plane);
}

/* a group's Output@GRAD planes of channel ch laid on the walk (rows W wide in grads, one plane every `image`
 * floats; the zeros between rows, written once, kept) if they and the group's x planes hold only finite values
 * (returns 1); else (returns 0) the group's Filter@GRAD sums from plane_filter_grad, added into acc */
static int group_grads_on_walk(const geometry *g, const float *x, const float *gout, int64_t c, int64_t ch,
                               int64_t i0, int64_t count, int64_t W, int64_t image, float *grads, double *acc) {
    const int64_t in_plane = g->h * g->w, out_plane = g->oh * g->ow;
    float check = 0.0f;
    for (int64_t k = 0; k < count; k++) {
        const float *xp = x + ((i0 + k) * c + ch) * in_plane, *gp = gout + ((i0 + k) * c + ch) * out_plane;
        check += non_finite_check(xp, in_plane) + non_finite_check(gp, out_plane);
        for (int64_t oy = 0; oy < g->oh; oy++)
            memcpy(grads + k * image + oy * W, gp + oy * g->ow, sizeof(float) * (size_t)g->ow);
    }
    if (check == 0.0f) return 1;
    for (int64_t k = 0; k < count; k++) /* check is NaN: a non-finite value in the group */
        plane_filter_grad(g, gout + ((i0 + k) * c + ch) * out_plane, x + ((i0 + k) * c + ch) * in_plane, acc);
    return 0;
}

/* Filter@GRAD of channel ch at stride 1, added into acc[kh * kw], a group of images at a time: the x planes padded
 * as stacked_forward pads them, Output@GRAD laid out on the same flat walk (zeros at the positions the forward
 * discards, written once), so that each tap's sum over a plane is one dot product along the walk (3x3: all nine in
 * one vectorised pass over the group's planes). A group's sums run in float (at most
 * STACK_FLOATS / 2 terms: NumPy's float32 GEMM sums all n * oh * ow in float), across groups in double. The walk's
 * extra terms are a zero gradient times some x: +-0 for a finite x, but NaN for an infinite one, so a group holding
 * a non-finite x or gradient takes plane_filter_grad. */
static void stacked_filter_grad(const geometry *g, const stacking *s, const float *x, const float *gout, int64_t c,
                                int64_t ch, float *scratch, double *acc) {
    const int64_t W = s->cols, image = s->rows * W, walk = (g->oh - 1) * W + g->ow;
    const int64_t in_plane = g->h * g->w;
    float *padded = scratch, *grads = scratch + s->images * image;
    for (int64_t i0 = 0; i0 < g->n; i0 += s->images) {
        const int64_t count = group_size(s, g->n, i0);
        if (!group_grads_on_walk(g, x, gout, c, ch, i0, count, W, image, grads, acc)) continue;
        for (int64_t k = 0; k < count; k++) copy_inside(g, s, x + ((i0 + k) * c + ch) * in_plane, padded + k * image);
        /* the group's planes in one walk: between them the gradient's zeros add +-0 */
        const float *restrict G = grads, *restrict P = padded;
        const int64_t span = (count - 1) * image + walk;
        if (!is_3x3(g)) { /* one dot product per tap */
            for (int64_t ky = 0; ky < g->kh; ky++)
                for (int64_t kx = 0; kx < g->kw; kx++) {
                    const float *restrict p = P + ky * g->dh * W + kx * g->dw;
                    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
                    for (int64_t i = 0; i < span; i++) sum += G[i] * p[i];
                    acc[ky * g->kw + kx] += sum;
                }
            continue;
        }
        float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f, a4 = 0.0f, a5 = 0.0f, a6 = 0.0f, a7 = 0.0f, a8 = 0.0f;
#pragma omp simd reduction(+ : a0, a1, a2, a3, a4, a5, a6, a7, a8)
        for (int64_t i = 0; i < span; i++) {
            const float gi = G[i];
            a0 += gi * P[i];
            a1 += gi * P[i + 1];
            a2 += gi * P[i + 2];
            a3 += gi * P[i + W];
            a4 += gi * P[i + W + 1];
            a5 += gi * P[i + W + 2];
            a6 += gi * P[i + 2 * W];
            a7 += gi * P[i + 2 * W + 1];
            a8 += gi * P[i + 2 * W + 2];
        }
        acc[0] += a0, acc[1] += a1, acc[2] += a2, acc[3] += a3, acc[4] += a4, acc[5] += a5, acc[6] += a6,
            acc[7] += a7, acc[8] += a8;
    }
}

/* both gradients' parity-phase paths: 3x3, stride 2, dilation 1 */
static int is_3x3_stride_2(const geometry *g) {
    return is_3x3(g) && g->sh == 2 && g->sw == 2 && g->oh > 0 && g->ow > 0 && g->n > 0;
}

/* Filter@GRAD of channel ch at 3x3, stride 2, dilation 1, added into acc[9]: as stacked_filter_grad, with each x
 * plane split by row and column parity into four phases of (oh + 1) x (ow + 1) (phase (a, b) row r, column q: the
 * padded plane's row 2r + a, column 2q + b), so that tap (ky, kx) reads phase (ky % 2, kx % 2) at the fixed offset
 * (ky / 2) * W + kx / 2 from the walk's position. plane_filter_grad's strided rows ran at 4-5 ns a term. */
typedef struct {
    int64_t r0, r1, lo, hi, offset; /* the phase's rows and columns inside x; x's index of its row 0, column 0 */
} phase_window;

static stacking phased_stacking_of(const geometry *g) {
    /* four phases and the gradient's walk */
    return stacking_sized(g->oh + 1, g->ow + 1, 5 * (g->oh + 1) * (g->ow + 1), g->n);
}

static phase_window phase_window_of(const geometry *g, const stacking *s, int64_t a, int64_t b) {
    /* phase row r holds x row 2r + a - ph: inside x for r in [ceil((ph - a) / 2), ceil((h + ph - a) / 2)) */
    phase_window p = {g->ph - a <= 0 ? 0 : (g->ph - a + 1) / 2, g->h + g->ph - a <= 0 ? 0 : (g->h + g->ph - a + 1) / 2,
                      g->pw - b <= 0 ? 0 : (g->pw - b + 1) / 2, g->w + g->pw - b <= 0 ? 0 : (g->w + g->pw - b + 1) / 2,
                      (a - g->ph) * g->w + b - g->pw};
    if (p.r1 > s->rows) p.r1 = s->rows;
    if (p.hi > s->cols) p.hi = s->cols;
    return p;
}

static void copy_phase(const geometry *g, const stacking *s, const phase_window *p, const float *x, float *dst) {
    const int64_t W = s->cols, step = 2 * g->w, lo = p->lo, hi = p->hi;
    const float *x0 = x + p->offset;
    for (int64_t r = p->r0; r < p->r1; r++) {
        float *restrict row = dst + r * W;
        const float *restrict xrow = x0 + r * step;
        for (int64_t q = lo; q < hi; q++) row[q] = xrow[2 * q];
    }
}

static void phased_filter_grad(const geometry *g, const stacking *s, const phase_window windows[4], const float *x,
                               const float *gout, int64_t c, int64_t ch, float *scratch, double *acc) {
    const int64_t W = s->cols, image = s->rows * W, sub = s->images * image;
    const int64_t walk = (g->oh - 1) * W + g->ow, in_plane = g->h * g->w;
    float *grads = scratch + 4 * sub;
    for (int64_t i0 = 0; i0 < g->n; i0 += s->images) {
        const int64_t count = group_size(s, g->n, i0);
        if (!group_grads_on_walk(g, x, gout, c, ch, i0, count, W, image, grads, acc)) continue;
        for (int64_t k = 0; k < count; k++)
            for (int64_t f = 0; f < 4; f++)
                copy_phase(g, s, &windows[f], x + ((i0 + k) * c + ch) * in_plane, scratch + f * sub + k * image);
        const float *restrict G = grads, *restrict ee = scratch, *restrict eo = scratch + sub,
                              *restrict oe = scratch + 2 * sub, *restrict oo = scratch + 3 * sub;
        const float *restrict ee1 = ee + W, *restrict eo1 = eo + W;
        const int64_t span = (count - 1) * image + walk;
        float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f, a4 = 0.0f, a5 = 0.0f, a6 = 0.0f, a7 = 0.0f, a8 = 0.0f;
#pragma omp simd reduction(+ : a0, a1, a2, a3, a4, a5, a6, a7, a8)
        for (int64_t i = 0; i < span; i++) {
            const float gi = G[i];
            a0 += gi * ee[i];
            a1 += gi * eo[i];
            a2 += gi * ee[i + 1];
            a3 += gi * oe[i];
            a4 += gi * oo[i];
            a5 += gi * oe[i + 1];
            a6 += gi * ee1[i];
            a7 += gi * eo1[i];
            a8 += gi * ee1[i + 1];
        }
        acc[0] += a0, acc[1] += a1, acc[2] += a2, acc[3] += a3, acc[4] += a4, acc[5] += a5, acc[6] += a6,
            acc[7] += a7, acc[8] += a8;
    }
}

/* Input@GRAD at 3x3, stride 2, dilation 1, finite taps, a channel's planes a few images at a time. Split by the
 * parity of its (padded) row and column, dx is four small convolutions of Output@GRAD: phase (a, b), row r, column q
 * (the padded plane's row 2r + a, column 2q + b) sums w[ky, kx] * g[r - (ky - a) / 2, q - (kx - b) / 2] over the taps
 * with ky = a and kx = b mod 2 (four, two or one of them). With g copied into planes bordered by zeros (a row and a
 * column before it, so that r - 1 and q - 1 read zeros), each phase is a flat walk as at stride 1, its outputs
 * then written to their rows and columns of dx. plane_input_grad scattered each row of g to every other column
 * of dx, one tap at a time: 4-6 ns a term. Each element sums its taps from 0 in row-major order (plane_input_grad
 * summed them by output row first: the values differ in rounding). */
/* a bordered g plane's rows and width W: g with a zero row and column before it, and every phase row and column
 * dx needs, plus one */
static stacking g_stacking_of(const geometry *g) {
    int64_t rows = g->oh + 2, cols = g->ow + 2;
    if (rows < (g->ph + g->h) / 2 + 2) rows = (g->ph + g->h) / 2 + 2;
    if (cols < (g->pw + g->w) / 2 + 2) cols = (g->pw + g->w) / 2 + 2;
    return stacking_sized(rows, cols, 2 * rows * cols, g->n); /* the bordered planes and a phase's walk */
}

/* phase (a, b) of the group's dx planes: walk `span` positions of the bordered g planes, then place the outputs */
static void input_grad_phase(const geometry *g, const stacking *s, const float *gp, const float *wt, int64_t a,
                             int64_t b, float *restrict out, int64_t span, float *dx, int64_t first, int64_t step,
                             int64_t count) {
    const int64_t W = s->cols, image = s->rows * W;
    float tw[4];
    int64_t off[4], taps = 0;
    for (int64_t ky = a; ky < 3; ky += 2)
        for (int64_t kx = b; kx < 3; kx += 2) {
            tw[taps] = wt[ky * 3 + kx];
            off[taps++] = (1 - (ky - a) / 2) * W + 1 - (kx - b) / 2;
        }
    const float *restrict p0 = gp + off[0];
    if (taps == 1) {
        const float w0 = tw[0];
#pragma omp simd
        for (int64_t i = 0; i < span; i++) out[i] = 0.0f + w0 * p0[i];
    } else if (taps == 2) {
        const float w0 = tw[0], w1 = tw[1];
        const float *restrict p1 = gp + off[1];
#pragma omp simd
        for (int64_t i = 0; i < span; i++) out[i] = 0.0f + w0 * p0[i] + w1 * p1[i];
    } else {
        const float w0 = tw[0], w1 = tw[1], w2 = tw[2], w3 = tw[3];
        const float *restrict p1 = gp + off[1], *restrict p2 = gp + off[2], *restrict p3 = gp + off[3];
#pragma omp simd
        for (int64_t i = 0; i < span; i++) out[i] = 0.0f + w0 * p0[i] + w1 * p1[i] + w2 * p2[i] + w3 * p3[i];
    }
    /* dx row iy = 2r + a - ph, column ix = 2q + b - pw, for those inside the image */
    const int64_t r0 = g->ph - a <= 0 ? 0 : (g->ph - a + 1) / 2, r1 = (g->ph + g->h - a + 1) / 2;
    const int64_t q0 = g->pw - b <= 0 ? 0 : (g->pw - b + 1) / 2, q1 = (g->pw + g->w - b + 1) / 2;
    for (int64_t k = 0; k < count; k++) {
        float *plane = dx + (first + k * step) * g->h * g->w;
        for (int64_t r = r0; r < r1; r++) {
            float *row = plane + (2 * r + a - g->ph) * g->w + b - g->pw;
            const float *src = out + k * image + r * W;
            for (int64_t q = q0; q < q1; q++) row[2 * q] = src[q];
        }
    }
}

/* planes first, first + step, ... (count of them) of Output@GRAD gout, all with taps wt, into dx */
static void phased_input_grad(const geometry *g, const stacking *s, const float *gout, const float *wt, float *dx,
                              int64_t first, int64_t step, int64_t count, float *scratch) {
    const int64_t W = s->cols, image = s->rows * W, out_plane = g->oh * g->ow;
    float *gp = scratch, *out = scratch + s->images * image + W; /* W: the last walk's reads end one row on */
    for (int64_t k = 0; k < count; k++) {
        const float *src = gout + (first + k * step) * out_plane;
        for (int64_t oy = 0; oy < g->oh; oy++)
            memcpy(gp + k * image + (oy + 1) * W + 1, src + oy * g->ow, sizeof(float) * (size_t)g->ow);
    }
    const int64_t span = (count - 1) * image + (s->rows - 1) * W;
    for (int64_t a = 0; a < 2; a++)
        for (int64_t b = 0; b < 2; b++) input_grad_phase(g, s, gp, wt, a, b, out, span, dx, first, step, count);
}

static void input_grad_phased(void *p, int64_t first, int64_t last) {
    const dw_args *a = p;
    const geometry *g = &a->g;
    const stacking s = g_stacking_of(g);
    const int64_t groups = group_count(&s, g->n);
    float *scratch = calloc((size_t)(2 * s.images * s.rows * s.cols + 2 * s.cols), sizeof(float));
    for (int64_t j = first; j < last; j++) {
        const int64_t ch = j / groups, i0 = (j % groups) * s.images, count = group_size(&s, g->n, i0);
        const float *wt = a->w + ch * 9;
        if (scratch && taps_finite(wt, 9)) {
            phased_input_grad(g, &s, a->gout, wt, a->dx, i0 * a->c + ch, a->c, count, scratch);
        } else { /* non-finite taps would meet the zero border, or no memory: the scatter */
            for (int64_t i = i0; i < i0 + count; i++)
                plane_input_grad(g, a->gout + (i * a->c + ch) * g->oh * g->ow, wt,
                                 a->dx + (i * a->c + ch) * g->h * g->w);
        }
    }
    free(scratch);
}

static void filter_grad_channels(void *p, int64_t first, int64_t last) {
    const dw_args *a = p;
    const int64_t in_plane = a->g.h * a->g.w, out_plane = a->g.oh * a->g.ow, taps = a->g.kh * a->g.kw;
    const int64_t n = a->g.n;
    const int stacked = stacked_path_fits(&a->g);
    const int phased = !stacked && is_3x3_stride_2(&a->g);
    const stacking s = stacked ? stacking_of(&a->g) : phased ? phased_stacking_of(&a->g) : (stacking){0, 0, 0};
    phase_window windows[4];
    if (phased)
        for (int64_t f = 0; f < 4; f++) windows[f] = phase_window_of(&a->g, &s, f / 2, f % 2);
    const int64_t floats = (stacked ? 2 : 5) * s.images * s.rows * s.cols;
    float *scratch = stacked || phased ? calloc((size_t)floats, sizeof(float)) : NULL;
    double acc[taps];
    for (int64_t ch = first; ch < last; ch++) {
        for (int64_t t = 0; t < taps; t++) acc[t] = 0.0;
        if (scratch && stacked) {
            stacked_filter_grad(&a->g, &s, a->x, a->gout, a->c, ch, scratch, acc);
        } else if (scratch) {
            phased_filter_grad(&a->g, &s, windows, a->x, a->gout, a->c, ch, scratch, acc);
        } else {
            for (int64_t i = 0; i < n; i++)
                plane_filter_grad(&a->g, a->gout + (i * a->c + ch) * out_plane, a->x + (i * a->c + ch) * in_plane,
                                  acc);
        }
        for (int64_t t = 0; t < taps; t++) a->dw[ch * taps + t] = (float)acc[t];
    }
    free(scratch);
}

KC_EXPORT void kc_depthwise_conv2d_f32(const float *x, const float *w, float *out, int64_t n, int64_t c,
                                       const int64_t *dims, int threads) {
    dw_args a = {make_geometry(dims, n), x, w, NULL, out, NULL, NULL, c, NULL};
    if (stacked_path_fits(&a.g))
        kc_parallel_for(stacked_item_count(&a.g, c), threads, forward_stacked, &a);
    else
        kc_parallel_for(n * c, threads, forward_planes, &a);
}

/* dx (when not NULL): Input@GRAD, [n, c, h, w]; dw (when not NULL): Filter@GRAD, [c, kh * kw] */
/* flipped: w with each channel's taps reversed (used at stride 1 and dilation 1), or NULL */
KC_EXPORT void kc_depthwise_conv2d_grad_f32(const float *x, const float *w, const float *flipped, const float *gout,
                                            float *dx, float *dw, int64_t n, int64_t c, const int64_t *dims,
                                            int threads) {
    dw_args a = {make_geometry(dims, n), x, w, gout, NULL, dx, dw, c, NULL};
    if (flipped && a.g.sh == 1 && a.g.sw == 1 && a.g.dh == 1 && a.g.dw == 1) a.flipped = flipped;
    const geometry f = flipped_geometry(&a.g); /* the stacked items are counted on the geometry they walk */
    if (dx && a.flipped && stacked_path_fits(&f)) {
        kc_parallel_for(stacked_item_count(&f, c), threads, input_grad_stacked, &a);
    } else if (dx && is_3x3_stride_2(&a.g)) {
        const stacking s = g_stacking_of(&a.g);
        kc_parallel_for(c * group_count(&s, n), threads, input_grad_phased, &a);
    } else if (dx)
        kc_parallel_for(n * c, threads, input_grad_planes, &a);
    if (dw) kc_parallel_for(c, threads, filter_grad_channels, &a);
}

/* col2im, the adjoint of im2col.c, on float32: columns
 *   cols[(c * kh + ky) * kw + kx, (n * oh + oy) * ow + ox]
 * added into the NCHW batch x[n, c, oy * sh - ph + ky * dh, ox * sw - pw + kx * dw] (terms that land outside the
 * image are dropped), x written whole (zero where no column reaches). A convolution's Input@GRAD (and
 * conv2d_transpose's output) is col2im(W^T @ Output@GRAD). NumPy makes it with one strided add per kernel tap over
 * the whole batch, whose inner loop runs along rows of a few pixels; here a plane at a time, in cache. Each element
 * sums its terms from 0 in tap order (ky, then kx), as those adds do: the same bits. Planes are shared over
 * `threads` threads (pool.c). */
#include <stdint.h>
#include <string.h>

#include "kc_native.h"
#include "pool.h"

typedef struct {
    const float *cols;
    float *x;
    int64_t n, c, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
} col2im_args;

/* one (image, channel) plane: every tap's block of columns added at its shifted, strided window */
static void plane(const col2im_args *a, int64_t b, int64_t ch, float *xp) {
    const int64_t block = a->oh * a->ow, row = a->n * block;
    memset(xp, 0, sizeof(float) * (size_t)(a->h * a->w));
    for (int64_t ky = 0; ky < a->kh; ky++) {
        for (int64_t kx = 0; kx < a->kw; kx++) {
            const float *src = a->cols + ((ch * a->kh + ky) * a->kw + kx) * row + b * block;
            const int64_t off = kx * a->dw - a->pw; /* image column of output column 0 */
            int64_t lo = off >= 0 ? 0 : (-off + a->sw - 1) / a->sw;
            int64_t hi = a->w - off <= 0 ? 0 : (a->w - off + a->sw - 1) / a->sw;
            if (hi > a->ow) hi = a->ow;
            if (hi <= lo) continue;
            for (int64_t oy = 0; oy < a->oh; oy++) {
                const int64_t iy = oy * a->sh - a->ph + ky * a->dh;
                if (iy < 0 || iy >= a->h) continue;
                float *restrict dst = xp + iy * a->w + off;
                const float *restrict s = src + oy * a->ow;
                if (a->sw == 1) {
#pragma omp simd
                    for (int64_t ox = lo; ox < hi; ox++) dst[ox] += s[ox];
                } else {
                    for (int64_t ox = lo; ox < hi; ox++) dst[ox * a->sw] += s[ox];
                }
            }
        }
    }
}

static void planes_range(void *p, int64_t first, int64_t last) {
    const col2im_args *a = p;
    for (int64_t q = first; q < last; q++) plane(a, q / a->c, q % a->c, a->x + q * a->h * a->w);
}

/* dims: h, w (x's spatial), oh, ow (the columns'), kh, kw, sh, sw, ph, pw, dh, dw, as kc_im2col_f32 takes them */
KC_EXPORT void kc_col2im_f32(const float *cols, float *x, int64_t n, int64_t c, const int64_t *dims, int threads) {
    col2im_args a = {cols, x, n, c, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5],
                     dims[6], dims[7], dims[8], dims[9], dims[10], dims[11]};
    kc_parallel_for(n * c, kc_threads_for(n * c * a.h * a.w * a.kh * a.kw, threads), planes_range, &a);
}

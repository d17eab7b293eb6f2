/* kernelcore's CPU kernels in C (kernelcore/native/__init__.py loads them with ctypes). Every function takes
 * C-contiguous arrays and the number of threads to share its loop over, which the caller decides
 * (kernelcore/runtime/cpu_parts.py: one inside an op's part, else the run's thread limit).
 *
 * Every function the library exports is declared here, and only here (the build makes a missing prototype an
 * error): tests/test_native_bindings.py checks these prototypes against the ctypes signatures in __init__.py, and
 * the loader refuses a library built from other sources than those beside it (kc_native_sources). */
#ifndef KC_NATIVE_H
#define KC_NATIVE_H

#include <stdint.h>

#define KC_EXPORT __attribute__((visibility("default")))

/* GCC's vectoriser prefers 256-bit vectors. Loops that keep many sums in registers (the GEMM's eight rows: 101 us
 * instead of 161 on an RNN step's [32, 256] @ [256, 1024]) or run long polynomials per element (softmax's exp)
 * gain from 512-bit ones. A function inlined into another is vectorised with the caller's setting, so callers of
 * such loops carry it too. Ignored where the machine has no 512-bit vectors. */
#if defined(__GNUC__) && !defined(__clang__)
#define WIDE_VECTORS __attribute__((target("prefer-vector-width=512")))
#else
#define WIDE_VECTORS
#endif

/* a * b + c with one rounding where the CPU fuses it (x86-64-v3 and up, other architectures' FMA), so that every
 * such level gives the same bits. Below x86-64-v3 fmaf is a library call per element, which kept the GEMM from
 * vectorising (ResNet-18's inference 74x slower here); there it is a multiply and an add, whose last bits may
 * differ from the fused levels'. (ISO C mode contracts nothing itself.) */
#if defined(__x86_64__) && !defined(__FMA__)
#define KC_FMA(a, b, c) ((a) * (b) + (c))
#else
#define KC_FMA(a, b, c) fmaf(a, b, c)
#endif

/* build_info.c: what the library was built from and for, and what this CPU runs */
KC_EXPORT const char *kc_native_sources(void); /* SHA-256 of the sources it was built from (build.py) */
KC_EXPORT const char *kc_native_level(void);   /* the x86-64 level it was built for, or "custom" */
KC_EXPORT int kc_native_cpu_level(void);       /* the highest x86-64 level this CPU and OS run (1-4); 0 elsewhere */

/* batch_norm.c */
KC_EXPORT void kc_bn_affine_f32(const float *x, float *y, const float *mean, const float *k, const float *b,
                                int64_t n, int64_t c, int64_t hw, int threads);
KC_EXPORT void kc_bn_train_f32(const float *x, float *y, const float *scale, const float *bias, float *mean,
                               float *var, float *inv, int64_t n, int64_t c, int64_t hw, float eps, int threads);
KC_EXPORT void kc_bn_grad_f32(const float *x, const float *g, const float *mean, const float *inv,
                              const float *scale, float *dx, float *dscale, float *dbias, int64_t n, int64_t c,
                              int64_t hw, int batch_stats, int threads);

/* depthwise_conv.c */
KC_EXPORT void kc_depthwise_conv2d_f32(const float *x, const float *w, float *out, int64_t n, int64_t c,
                                       const int64_t *dims, int threads);
KC_EXPORT void kc_depthwise_conv2d_grad_f32(const float *x, const float *w, const float *flipped,
                                            const float *gout, float *dx, float *dw, int64_t n, int64_t c,
                                            const int64_t *dims, int threads);

/* max_pool.c */
KC_EXPORT void kc_max_pool2d_f32(const float *x, float *y, int64_t planes, const int64_t *dims, int threads);
KC_EXPORT void kc_max_pool2d_grad_f32(const float *x, const float *out, const float *g, float *dx, int64_t planes,
                                      const int64_t *dims, int threads);

/* activation_grad.c, clip.c, hard_swish.c, gelu.c */
KC_EXPORT void kc_masked_grad_f32(const float *out, const float *g, float *dx, int64_t n, float lo, float hi,
                                  int upper, int threads);
KC_EXPORT void kc_clip_f32(const float *x, float *out, int64_t n, float lo, float hi, int lo_on_ties, int threads);
KC_EXPORT void kc_hard_swish_f32(const float *x, float *out, int64_t n, float offset, float threshold, float scale,
                                 int threads);
KC_EXPORT void kc_hard_swish_grad_f32(const float *x, const float *g, float *dx, int64_t n, float offset,
                                      float threshold, float scale, int threads);
KC_EXPORT void kc_gelu_f32(const float *x, float *out, int64_t n, int threads);
KC_EXPORT void kc_gelu_grad_f32(const float *x, const float *g, float *dx, int64_t n, int threads);

/* add_rows.c */
KC_EXPORT void kc_add_rows_f32(const float *x, const float *y, float *out, int64_t outer, int64_t mid,
                               int64_t inner, int threads);

/* softmax.c, layer_norm.c */
KC_EXPORT void kc_softmax_f32(const float *x, float *out, int64_t rows, int64_t cols, int threads);
KC_EXPORT void kc_softmax_grad_f32(const float *out, const float *g, float *dx, int64_t rows, int64_t cols,
                                   int threads);
KC_EXPORT void kc_layer_norm_f32(const float *x, const float *scale, const float *bias, float *y, float *mean,
                                 float *var, int64_t rows, int64_t cols, float eps, int threads);
KC_EXPORT void kc_layer_norm_grad_f32(const float *x, const float *scale, const float *mean, const float *var,
                                      const float *g, float *dx, float *dscale, float *dbias, int64_t rows,
                                      int64_t cols, float eps, int threads);

/* im2col.c, col2im.c, conv_gemm.c */
KC_EXPORT void kc_im2col_f32(const float *x, float *cols, int64_t n, int64_t c, const int64_t *geometry,
                             int threads);
KC_EXPORT void kc_col2im_f32(const float *cols, float *x, int64_t n, int64_t c, const int64_t *dims, int threads);
KC_EXPORT void kc_conv2d_f32(const float *x, const float *w, float *scratch, float *out, int64_t n, int64_t c,
                             int64_t m, const int64_t *geometry, int threads);

/* gemm_packed.c, lstm_step.c */
KC_EXPORT void kc_pack_columns_f32(const float *b, int64_t rs, int64_t cs, float *packed, int64_t k, int64_t n);
KC_EXPORT void kc_gemm_packed_f32(const float *a, int64_t rs, int64_t cs, const float *packed, const float *add,
                                  int64_t ld_add, float *c, int64_t m, int64_t k, int64_t n, int threads);
KC_EXPORT void kc_lstm_step_f32(const float *h_prev, int64_t rs, int64_t cs, const float *packed,
                                const float *x_proj, const float *c_prev, float *gates, float *c, float *h, int64_t m,
                                int64_t k, int64_t hidden, int threads);
KC_EXPORT void kc_lstm_sequence_f32(const float *x_proj, const float *h0, const float *c0, const float *packed,
                                    float *out, float *c_last, float *c_spare, int64_t steps, int reverse,
                                    int64_t m, int64_t hidden, int threads);
KC_EXPORT void kc_lstm_step_grad_f32(const float *gates, const float *c, const float *c_prev, const float *dh,
                                     const float *dc, float *d_pre, float *dc_prev, const float *w_back,
                                     float *dh_prev, int64_t m, int64_t hidden, int threads);

/* health_summary.c: the flight recorder's numbers of an array (out[10]: see the file); returns its NaN/Inf count */
KC_EXPORT int64_t kc_health_summary_f32(const float *x, int64_t n, double *out, int threads);
KC_EXPORT int64_t kc_health_summary_f64(const double *x, int64_t n, double *out, int threads);
KC_EXPORT int64_t kc_health_summary_many(const int64_t *items, int64_t count, double *out, int threads);

/* row_plan.c: an iteration's outputs checked against the flight recorder's plan (see the file); 0 where all are
 * what it says, else 1 + the first row that is not. Reads Python objects: call it only through row_plan.py's
 * plan_checker, which checks their layout first and keeps the GIL for the call */
KC_EXPORT int64_t kc_plan_check(const void *records, const int64_t *plan, int64_t rows, const void *tuple_type,
                                int64_t tuple_items_at, const void *ndarray_type, int64_t *roots, int64_t *items,
                                int64_t *in_c, int64_t *other, double *numbers, int64_t *counts);

#endif

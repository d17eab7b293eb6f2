/* The inner GEMM of gemm_packed.c, lstm_step.c and conv_gemm.c: a block of up to 8 rows of A times one panel of a
 * B packed by kc_pack_columns_f32 (PANEL columns, k rows, zeros past B's last column), its 8 x PANEL sums kept in
 * registers (16 of the 32 AVX-512 registers) while it walks down the panel, one fused multiply-add per element
 * (KC_FMA, kc_native.h: fused where the CPU fuses). */
#ifndef KC_GEMM_ROWS_H
#define KC_GEMM_ROWS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kc_native.h" /* WIDE_VECTORS */

#define PANEL 32

/* rows [0, ROWS) of a panel's product: c[r * ldc + j] = add[r * ld_add + j] + sum over p of a[r * rs + p * cs] *
 * panel[p * ldb + j] (add: NULL for none), for the first `width` columns (A's strides rs, cs: a row-major A or a
 * transposed view of one; ldb: PANEL for a packed panel, or the row stride of a B read where it lies) */
#define KC_ROW_BLOCK(ROWS)                                                                                       \
    WIDE_VECTORS static void kc_rows_##ROWS(const float *restrict a, int64_t rs, int64_t cs,                      \
                                            const float *restrict panel, int64_t ldb, const float *add,          \
                                            int64_t ld_add, float *restrict c, int64_t ldc, int64_t k,           \
                                            int64_t width) {                                                     \
        float acc[ROWS][PANEL];                                                                                   \
        for (int r = 0; r < ROWS; r++)                                                                            \
            for (int j = 0; j < PANEL; j++) acc[r][j] = add != NULL && j < width ? add[r * ld_add + j] : 0.0f;    \
        for (int64_t p = 0; p < k; p++) {                                                                         \
            const float *restrict b = panel + p * ldb;                                                            \
            for (int r = 0; r < ROWS; r++) {                                                                      \
                const float av = a[r * rs + p * cs];                                                              \
                _Pragma("omp simd") for (int j = 0; j < PANEL; j++) acc[r][j] = KC_FMA(av, b[j], acc[r][j]);        \
            }                                                                                                     \
        }                                                                                                         \
        for (int r = 0; r < ROWS; r++) memcpy(c + r * ldc, acc[r], (size_t)width * sizeof(float));                \
    }
KC_ROW_BLOCK(8)
KC_ROW_BLOCK(4)
KC_ROW_BLOCK(2)
KC_ROW_BLOCK(1)

/* the rows the next block takes of the `left` still to do: 8, then 4, 2, 1 at the end */
static inline int64_t kc_block_rows(int64_t left) { return left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1; }

/* kc_rows_ROWS for ROWS = kc_block_rows(...) */
static inline void kc_rows(int64_t rows, const float *a, int64_t rs, int64_t cs, const float *panel, int64_t ldb,
                           const float *add, int64_t ld_add, float *c, int64_t ldc, int64_t k, int64_t width) {
    switch (rows) {
        case 8: kc_rows_8(a, rs, cs, panel, ldb, add, ld_add, c, ldc, k, width); break;
        case 4: kc_rows_4(a, rs, cs, panel, ldb, add, ld_add, c, ldc, k, width); break;
        case 2: kc_rows_2(a, rs, cs, panel, ldb, add, ld_add, c, ldc, k, width); break;
        default: kc_rows_1(a, rs, cs, panel, ldb, add, ld_add, c, ldc, k, width); break;
    }
}

/* gemm_packed.c: c [m, n] = add + A [m, k] @ B packed by kc_pack_columns_f32 (see there) */
void kc_gemm_packed_f32(const float *a, int64_t rs, int64_t cs, const float *packed, const float *add,
                        int64_t ld_add, float *c, int64_t m, int64_t k, int64_t n, int threads);

#endif

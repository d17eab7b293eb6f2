/* exp, tanh, sigmoid and erfc on float32 for the C kernels, written so that GCC vectorises the loops that call
 * them (no libm call, no branch): softmax.c, gelu.c, lstm_step.c. */
#ifndef KC_MATH_H
#define KC_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kc_native.h" /* KC_FMA */

/* exp(x): x = n ln2 + r with |r| <= ln2 / 2, exp(r) by its Taylor polynomial to r^7 (truncation below 6e-9
 * relative: under float32's half ulp; measured within 1.2e-7 of float64's exp on [-87, 0]), times 2^n made in
 * the exponent bits. KC_FMA (kc_native.h), not a * b + c: ISO C mode does not contract, and the separate
 * multiplies and adds doubled the time of tanh below. Below -87, where float32 leaves its normal range, it gives 0
 * (NumPy's expf gives subnormals down to -103); above 88 +inf; NaN stays NaN. */
static inline float kc_exp(float x) {
    float xc = x >= -87.0f ? x : -87.0f; /* a NaN becomes -87 here, and NaN again at the end */
    xc = xc <= 88.0f ? xc : 88.0f;
    const float log2e = 1.44269504088896341f, ln2_hi = 0.693145751953125f, ln2_lo = 1.42860682030941723e-6f;
    const float shifter = 12582912.0f; /* 1.5 * 2^23: adding and subtracting it rounds to an integer */
    const float n = KC_FMA(xc, log2e, shifter) - shifter;
    const float r = KC_FMA(n, -ln2_lo, KC_FMA(n, -ln2_hi, xc));
    float p = 1.0f / 5040.0f;
    p = KC_FMA(p, r, 1.0f / 720.0f);
    p = KC_FMA(p, r, 1.0f / 120.0f);
    p = KC_FMA(p, r, 1.0f / 24.0f);
    p = KC_FMA(p, r, 1.0f / 6.0f);
    p = KC_FMA(p, r, 0.5f);
    p = KC_FMA(p, r, 1.0f);
    p = KC_FMA(p, r, 1.0f);
    const int32_t bits = ((int32_t)n + 127) << 23; /* n in [-126, 127]: a normal power of two */
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    const float e = p * scale;
    return x != x ? x : (x >= -87.0f ? (x <= 88.0f ? e : (float)INFINITY) : 0.0f);
}

/* tanh(x): below |x| = 0.625 x (1 + x^2 P(x^2)), P of degree 4 fitted for the least largest relative error
 * (9e-8 in float64); above it (1 - e) / (1 + e) with e = exp(-2 |x|) <= 0.29, so no cancellation. Within 1.1e-7
 * of float64's tanh, measured over [-6, 6]; +-1 past |x| = 9; NaN stays NaN, -0 stays -0. */
static inline float kc_tanh(float x) {
    const float ax = fabsf(x), z = x * x;
    float p = -0.006142f;
    p = KC_FMA(p, z, 0.02103563f);
    p = KC_FMA(p, z, -0.05386157f);
    p = KC_FMA(p, z, 0.13332874f);
    p = KC_FMA(p, z, -0.3333333f);
    const float small = KC_FMA(ax, z * p, ax);
    const float e = kc_exp(-2.0f * ax);
    const float big = (1.0f - e) / (1.0f + e);
    return x != x ? x : copysignf(ax < 0.625f ? small : big, x);
}

/* sigmoid(x) = 1 / (1 + exp(-x)): 0 far below (exp gives +inf), 1 far above, NaN stays NaN */
static inline float kc_sigmoid(float x) { return 1.0f / (1.0f + kc_exp(-x)); }

/* erfc(z) for z >= 0: the Chebyshev fit ops/pointwise.py's erfc_nonnegative uses (fractional error below
 * 1.2e-7), the same operations in the same order */
static inline float kc_erfc_nonnegative(float z) {
    const float t = 1.0f / (z * 0.5f + 1.0f);
    float p = t * 0.17087277f;
    p = (p + -0.82215223f) * t;
    p = (p + 1.48851587f) * t;
    p = (p + -1.13520398f) * t;
    p = (p + 0.27886807f) * t;
    p = (p + -0.18628806f) * t;
    p = (p + 0.09678418f) * t;
    p = (p + 0.37409196f) * t;
    p = (p + 1.00002368f) * t;
    p = p + -1.26551223f;
    return kc_exp(p - z * z) * t;
}

#endif

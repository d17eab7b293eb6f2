/* kernelcore's CPU kernels in C (kernelcore/native/__init__.py loads them with ctypes). Every function takes
 * C-contiguous arrays and the number of threads to share its loop over, which the caller decides
 * (kernelcore/cpu_parts.py: one inside an op's part, else the run's thread limit). */
#ifndef KC_NATIVE_H
#define KC_NATIVE_H

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

/* raised whenever a function's signature changes: the loader refuses a library built from other sources */
#define KC_NATIVE_ABI 20

#endif

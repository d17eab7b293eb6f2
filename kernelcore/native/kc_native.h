/* kernelcore's CPU kernels in C (kernelcore/native/__init__.py loads them with ctypes). Every function takes
 * C-contiguous arrays and the number of threads to share its loop over, which the caller decides
 * (kernelcore/cpu_parts.py: one inside an op's part, else the run's thread limit). */
#ifndef KC_NATIVE_H
#define KC_NATIVE_H

#define KC_EXPORT __attribute__((visibility("default")))

/* raised whenever a function's signature changes: the loader refuses a library built from other sources */
#define KC_NATIVE_ABI 15

#endif

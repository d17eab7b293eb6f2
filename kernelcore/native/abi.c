#include "kc_native.h"

KC_EXPORT int kc_native_abi(void) { return KC_NATIVE_ABI; }

KC_EXPORT int kc_native_openmp(void) {
#ifdef _OPENMP
    return _OPENMP;
#else
    return 0;
#endif
}

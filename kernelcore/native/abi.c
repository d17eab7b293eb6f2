#include "kc_native.h"

KC_EXPORT int kc_native_abi(void) { return KC_NATIVE_ABI; }

/* What the library was built from and for (build.py passes both), and the probe the loader asks, in the baseline
 * library, which level to load. */
#include "kc_native.h"

#ifndef KC_SOURCES_DIGEST
#define KC_SOURCES_DIGEST "" /* built by hand: the loader takes it for a library of other sources */
#endif
#ifndef KC_NATIVE_LEVEL
#define KC_NATIVE_LEVEL "custom"
#endif

KC_EXPORT const char *kc_native_sources(void) { return KC_SOURCES_DIGEST; }

KC_EXPORT const char *kc_native_level(void) { return KC_NATIVE_LEVEL; }

/* __builtin_cpu_supports checks the OS's support too (AVX-512 needs the OS to save its registers); compilers that
 * cannot name the levels (GCC before 12, clang before 18) get the baseline only */
KC_EXPORT int kc_native_cpu_level(void) {
#if defined(__x86_64__) && ((defined(__clang__) && __clang_major__ >= 18) || \
                            (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 12))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("x86-64-v4")) return 4;
    if (__builtin_cpu_supports("x86-64-v3")) return 3;
    if (__builtin_cpu_supports("x86-64-v2")) return 2;
    return 1;
#elif defined(__x86_64__)
    return 1;
#else
    return 0;
#endif
}

// The instruction set the C kernels use (kernels_level.h), chosen once at run time.
#include "kernels_level.h"
#include "dispatch.h"

static int cap = KERNEL_AVX512;

int tributary_kernels_cap(int level) {
    int previous = __atomic_load_n(&cap, __ATOMIC_RELAXED);
    __atomic_store_n(&cap, level < KERNEL_PORTABLE ? KERNEL_PORTABLE : level > KERNEL_AVX512 ? KERNEL_AVX512 : level,
                     __ATOMIC_RELAXED);
    return previous;
}

static int processor_level(void) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")) return KERNEL_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2")) return KERNEL_AVX2_BMI2;
#endif
    return KERNEL_PORTABLE;
}

int tributary_kernel_level(void) {
    static int chosen = -1;  // every thread that finds it unset stores the same value
    int level = __atomic_load_n(&chosen, __ATOMIC_RELAXED);
    if (level < 0) {
        level = processor_level();
        __atomic_store_n(&chosen, level, __ATOMIC_RELAXED);
    }
    int limit = __atomic_load_n(&cap, __ATOMIC_RELAXED);
    return level < limit ? level : limit;
}

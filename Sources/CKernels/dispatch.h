// The instruction-set level the C kernels run at (internal to this target).
#ifndef TRIBUTARY_KERNELS_DISPATCH_H
#define TRIBUTARY_KERNELS_DISPATCH_H

enum { KERNEL_PORTABLE = 0, KERNEL_AVX2_BMI2 = 1, KERNEL_AVX512 = 2 };

/// The best level of this processor (AVX-512F + DQ; AVX2 + BMI2; neither), within the tests' cap.
int tributary_kernel_level(void);

#endif

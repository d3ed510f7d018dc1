// The instruction-set level the codec kernels run at (internal to this target).
#ifndef TRIBUTARY_CODEC_DISPATCH_H
#define TRIBUTARY_CODEC_DISPATCH_H

enum { KERNEL_PORTABLE = 0, KERNEL_AVX2_BMI2 = 1, KERNEL_AVX512 = 2 };

/// The best level of this processor (AVX-512F + DQ; AVX2 + BMI2; neither), within the tests' cap.
int tributary_codec_kernel_level(void);

#endif

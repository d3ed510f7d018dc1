// The instruction set of the C kernels (codec_kernels.h, dsp_kernels.h): chosen once at run time,
// capped by the tests.
#ifndef TRIBUTARY_KERNELS_LEVEL_H
#define TRIBUTARY_KERNELS_LEVEL_H

/// The widest instruction set the kernels use: 0 the portable loops, 1 AVX2 + BMI2, 2 AVX-512F +
/// DQ (the default: the best the processor has). For tests, which compare every level with the
/// reference loops; returns the previous cap. Every level computes the same values, so a change
/// while other threads run kernels changes only their speed.
int tributary_kernels_cap(int level);

#endif

// The Welch segment's loops around the FFT (TributaryDSP's SegmentPeriodogram) in C, with AVX-512 or
// AVX2 chosen at run time (Swift on Linux compiles for the baseline x86-64). Each computes exactly
// what the Swift loop it replaces computes, bit for bit: the same operations in the same order,
// every product and sum rounded apart (never fused).
#ifndef TRIBUTARY_DSP_KERNELS_H
#define TRIBUTARY_DSP_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels_level.h"

/// numpy's pairwise summation of a[0 ..< n] (its `pairwise_sum`, so that a segment's mean is
/// scipy's bit for bit): below 8 values one running sum from 0; up to 128, eight running sums
/// r0 … r7 started at a[0 … 7] and stepped 8 values at a time, combined as
/// ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), then the last n mod 8 values added in order;
/// above 128, the sums of the first ⌊n/2⌋ rounded down to a multiple of 8 and of the rest, added.
double tributary_pairwise_sum(const double *a, size_t n);

/// out[i] = (x[i] − mean) × w[i] for i < n (mean 0 gives x[i] × w[i] exactly).
void tributary_detrend_window(const double *x, const double *w, double mean, double *out, size_t n);

/// sums[k] += y[2k] × y[2k] + y[2k+1] × y[2k+1] for k < bins (y: an interleaved complex spectrum).
void tributary_accumulate_power(const double *y, double *sums, size_t bins);

/// Filters up to four lines (`lanes`, 1 ... 4) of `count` samples at once through `sections`
/// second-order sections (six coefficients each, a0 = 1), each line exactly as scipy's _sosfilt
/// filters it (direct form II transposed: y = b0·x + z0; z0 = b1·x − a1·y + z1; z1 = b2·x − a2·y,
/// rounded apart): sample k of line l is x[l][k · x_stride], its output y[l][k · y_stride] (strides
/// may be negative; x and y may be the same memory). `state` holds sections × 2 × 4 values, value j
/// of section s of lane l at (s · 2 + j) · 4 + l: the initial state in, the final state out (lanes
/// past `lanes` are computed on zeros and never read or written elsewhere).
void tributary_sos4(const double *sos, size_t sections, const double *const *x, ptrdiff_t x_stride, double *const *y,
                    ptrdiff_t y_stride, size_t count, size_t lanes, double *state);

/// upfirdn's outputs k = first ..< first + count of four lines at once (lane l: x[l], y[l]), each
/// inside the signal: newest input ⌊k·down / up⌋ ≥ per_phase − 1 and < the length. Output k is the
/// sum, from zero, in the order of j, of x[l][(newest − per_phase + 1 + j) · x_stride] ·
/// hf[(k·down mod up) · per_phase + j] for j < per_phase (hf: the polyphase filter, flipped), written
/// to y[l][(k − first) · y_stride]. Returns 0, or −1 for a zero factor or no memory (nothing written).
int tributary_upfirdn4(const double *const *x, ptrdiff_t x_stride, const double *hf, size_t per_phase, size_t up, size_t down,
                       size_t first, size_t count, double *const *y, ptrdiff_t y_stride);

#endif

// Hot loops of the capture decoder (docs/CAPTURE.md §5.1) in C, so that each can use the vector and
// bit-manipulation instructions the processor has (AVX-512, AVX2, BMI2), chosen at run time: Swift on
// Linux compiles for the baseline x86-64. Every kernel computes exactly what the Swift reference
// loop beside its call computes (bit for bit); on other processors a portable loop does.
#ifndef TRIBUTARY_CODEC_KERNELS_H
#define TRIBUTARY_CODEC_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels_level.h"

/// out[i] = the binary64 bits of offset + gain × (double)x[i], the product and the sum each rounded
/// to nearest (never fused), for i < n.
void tributary_grid64(const int64_t *x, uint64_t *out, size_t n, double offset, double gain);

/// out[i] = the binary32 bits of (float)(offset + gain × (double)x[i]) (binary64 arithmetic as in
/// tributary_grid64, then one rounding to binary32), for i < n.
void tributary_grid32(const int64_t *x, uint32_t *out, size_t n, double offset, double gain);

/// out[i] = (the binary64 bits of offset + gain × (double)x[i], as tributary_grid64) + adj[i], the
/// addition of the bit patterns wrapping (an adjustment block, docs/CAPTURE.md §5.1).
void tributary_grid64_adjusted(const int64_t *x, const int64_t *adj, uint64_t *out, size_t n, double offset, double gain);

/// out[i] = (the binary32 bits as tributary_grid32) + the low 32 bits of adj[i], wrapping.
void tributary_grid32_adjusted(const int64_t *x, const int64_t *adj, uint32_t *out, size_t n, double offset, double gain);

/// out[i] = the low 16 bits of x[i] (integer samples from their latents), for i < n.
void tributary_narrow16(const int64_t *x, int16_t *out, size_t n);

/// out[i] = the low 32 bits of x[i], for i < n.
void tributary_narrow32(const int64_t *x, int32_t *out, size_t n);

/// The values of a latent block's first n samples (stream version 3, docs/CAPTURE.md §5.1), in
/// wrapping 64-bit arithmetic: r[i] = base + ((bin_start + symbols[i]) << shift) + low_i, but
/// r[i] = base + low_i where symbols[i] == escape, low_i being the i-th `shift`-bit field of `bits`
/// (least significant bit first). Requires shift ≤ 56 and, when shift > 0, 8 readable bytes at
/// byte ⌊i × shift / 8⌋ of `bits` for every i < n (`bits` is not read when shift is 0).
void tributary_unpack_bins(const uint8_t *symbols, const uint8_t *bits, size_t n, unsigned shift,
                           uint64_t base, uint64_t bin_start, uint8_t escape, int64_t *r);

#endif

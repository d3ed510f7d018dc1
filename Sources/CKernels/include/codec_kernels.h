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

/// The values of a latent block's first n samples (stream versions 3–4, docs/CAPTURE.md §5.1), in
/// wrapping 64-bit arithmetic: r[i] = base + ((bin_start + symbols[i]) << shift) + low_i, but
/// r[i] = base + low_i where symbols[i] == escape, low_i being the i-th `shift`-bit field of `bits`
/// (least significant bit first). Requires shift ≤ 56 and, when shift > 0, 8 readable bytes at
/// byte ⌊i × shift / 8⌋ of `bits` for every i < n (`bits` is not read when shift is 0).
void tributary_unpack_bins(const uint8_t *symbols, const uint8_t *bits, size_t n, unsigned shift,
                           uint64_t base, uint64_t bin_start, uint8_t escape, int64_t *r);

/// How many of bytes[0 … n − 1] equal `value` (a latent block's escapes); the positions of the
/// first `capacity` of them, in increasing order, go to `positions`. Requires n < 2^32.
size_t tributary_find_byte(const uint8_t *bytes, size_t n, uint8_t value, uint32_t *positions, size_t capacity);

/// A latent block's symbol bytes of arity 2 or 3 (stream version 4, docs/CAPTURE.md §5.1): with
/// P = ⌈n / arity⌉, byte j holds the digits of values j, P + j (and 2P + j when arity is 3), in
/// radix 16 (arity 2) or 6 (arity 3), the first the least significant; digits of values ≥ n are
/// 0. Requires n ≥ 1, every symbol below the radix, and P bytes at `packed`.
void tributary_pack_digits(const uint8_t *symbols, size_t n, unsigned arity, uint8_t *packed);
/// The inverse of tributary_pack_digits: the n symbols from the P = ⌈n / arity⌉ bytes at `packed`.
/// Returns the largest digit, or a value above 15 when a byte is not a valid symbol byte (radix 6:
/// a byte ≥ 216) or a digit of a value ≥ n is not 0. Requires n ≥ 1 and arity 2 or 3.
unsigned tributary_expand_digits(const uint8_t *packed, size_t n, unsigned arity, uint8_t *symbols);


// The encoder's loops (codec_encode.c).

/// The residuals of order-8 linear prediction, in place: for i from n − 1 down to 8,
/// v[i] −= (2^(shift−1) + Σ_j coefficients[j] × v[i − 1 − j]) >> shift, in wrapping 64-bit
/// arithmetic with an arithmetic shift, each prediction reading the samples as they were. v[0 … 7]
/// (whose history is short) are the caller's. Requires 1 ≤ shift ≤ 62.
void tributary_predict_linear8(int64_t *v, size_t n, const int64_t *coefficients, unsigned shift);
/// The latents of n binary64 samples (bit patterns x) on the grid offset + gain × k:
/// q = (x − offset) × inverse; k[i] = q rounded to nearest (ties to even) when |q| ≤ 2^50, else 0
/// (NaN too); adj[i] = x[i] − the bits of offset + gain × (double)k[i] (product and sum each
/// rounded), wrapping. Returns the OR of every adj[i] (0: every sample on the grid).
/// A latent block's symbols (stream versions 3–4, before arity 2 or 3 packs them): bin = ((r[i] − base) >> shift) − start in wrapping
/// unsigned 64-bit arithmetic; symbols[i] = bin (its low byte) when bin < bins, else escape.
/// Returns the number of escapes. Requires shift ≤ 63.
size_t tributary_bin_symbols(const int64_t *r, size_t n, uint64_t base, unsigned shift, uint64_t start, uint64_t bins,
                             uint8_t escape, uint8_t *symbols);
/// A latent block's low bits (stream versions 3–4): the low `shift` bits of r[i] − base (wrapping)
/// for every i < n, LSB-first, value i's at bits i × shift …; the last byte's unused bits are 0.
/// Returns the bytes, ⌈n × shift / 8⌉. Requires 1 ≤ shift ≤ 56 and room for 8 bytes more (every
/// write stores 8).
size_t tributary_pack_low_bits(const int64_t *r, size_t n, uint64_t base, unsigned shift, uint8_t *out);
/// How many of x[0 … n − 1] are not 0.
size_t tributary_count_nonzero64(const int64_t *x, size_t n);
/// Bit-shuffles the first `groups` groups of 64 eight-byte elements of a block (BitShuffle.swift's
/// layout: bit row p of the block, `row_bytes` bytes long, gets the 8 bytes g × 8 … g × 8 + 7 of
/// group g), where the processor has AVX-512BW and VBMI, or AVX2; returns the groups done (0: none,
/// the caller's loop does them).
size_t tributary_bitshuffle8_groups(const uint8_t *src, uint8_t *dst, size_t groups, size_t row_bytes);
/// The smallest and the largest of r[0 … n − 1] (n ≥ 1), signed.
void tributary_min_max64(const int64_t *r, size_t n, int64_t *lowest, int64_t *highest);
uint64_t tributary_to_grid64(const uint64_t *x, int64_t *k, int64_t *adj, size_t n, double offset, double gain, double inverse);
#endif

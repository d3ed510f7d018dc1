// A latent block's values (stream versions 3 and 4) from its bin symbols and low bits (codec_kernels.h).
#include "codec_kernels.h"
#include "dispatch.h"
#include <string.h>

static inline uint64_t value_of(uint8_t s, uint8_t escape, uint64_t base, uint64_t bin_start, unsigned shift) {
    return s == escape ? base : base + ((bin_start + s) << shift);
}

/// The escapes' positions from byte `first` on, `found` of them listed before (the portable
/// loop, and the AVX2 kernel's tail).
static size_t find_byte_from(const uint8_t *bytes, size_t first, size_t n, uint8_t value, uint32_t *positions,
                             size_t capacity, size_t found) {
    for (size_t i = first; i < n; i++) {
        if (bytes[i] == value) {
            if (found < capacity) positions[found] = (uint32_t)i;
            found++;
        }
    }
    return found;
}

/// Values first ..< n.
static void unpack_portable(const uint8_t *symbols, const uint8_t *bits, size_t first, size_t n, unsigned shift,
                            uint64_t base, uint64_t bin_start, uint8_t escape, int64_t *r) {
    if (shift == 0) {
        for (size_t i = first; i < n; i++) r[i] = (int64_t)value_of(symbols[i], escape, base, bin_start, 0);
        return;
    }
    const uint64_t mask = (UINT64_C(1) << shift) - 1;
    size_t position = first * shift;
    for (size_t i = first; i < n; i++, position += shift) {
        uint64_t word;
        memcpy(&word, bits + (position >> 3), 8);  // little-endian hosts only (as the Swift reader)
        r[i] = (int64_t)(value_of(symbols[i], escape, base, bin_start, shift) + ((word >> (position & 7)) & mask));
    }
}

#if defined(__x86_64__)
#include <immintrin.h>

// The AVX2 kernels' step: four values from their symbols at `symbols` and their low bits `low`
// (one in each lane): the bin's value by a shift and an add, the escape's by a mask.
struct bins_avx2 { __m256i base, start, escape; __m128i shift; };

__attribute__((target("avx2"), always_inline))
static inline void store_four_avx2(const struct bins_avx2 *b, const uint8_t *symbols, __m256i low, int64_t *r) {
    uint32_t four;
    memcpy(&four, symbols, 4);
    __m256i sym = _mm256_cvtepu8_epi64(_mm_cvtsi32_si128((int)four));
    __m256i bin = _mm256_sll_epi64(_mm256_add_epi64(b->start, sym), b->shift);
    bin = _mm256_andnot_si256(_mm256_cmpeq_epi64(sym, b->escape), bin);
    _mm256_storeu_si256((__m256i *)r, _mm256_add_epi64(_mm256_add_epi64(b->base, bin), low));
}

// Low bits wider than 16 (up to 56: with a bit offset of at most 7, the 8 bytes at a value's first
// byte hold its field): one scalar load and shift per value, the four assembled in a vector.
__attribute__((target("avx2,bmi2")))
static void unpack_wide_avx2(const uint8_t *symbols, const uint8_t *bits, size_t n, unsigned shift,
                             const struct bins_avx2 *b, int64_t *r) {
    const __m256i mask = _mm256_set1_epi64x((int64_t)((UINT64_C(1) << shift) - 1));
    size_t i = 0, position = 0;
    for (; i + 4 <= n; i += 4, position += 4 * (size_t)shift) {
        uint64_t w[4];
        for (int j = 0; j < 4; j++) {
            size_t p = position + (size_t)j * shift;
            memcpy(&w[j], bits + (p >> 3), 8);  // each value's first byte: readable (codec_kernels.h)
            w[j] >>= p & 7;
        }
        store_four_avx2(b, symbols + i, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)w), mask), r + i);
    }
}

// Four values a step, for low-bit widths up to 16: the four values' bits, 4 × shift <= 64 of them,
// start at a bit offset of 0 or 4 in the 8 bytes at the first value's first byte (4 × shift × k is
// a multiple of 4), so one scalar load and shift serve all four; the lanes take them apart by
// variable shifts (no gather, which is slow on the AVX2 processors of this project's machines).
// Wider low bits (noise of thousands of steps in a bin, or latents wider than 32 bits) take
// `unpack_wide_avx2`, the last values the scalar loop with SHRX and BZHI.
__attribute__((target("avx2,bmi2")))
static void unpack_avx2(const uint8_t *symbols, const uint8_t *bits, size_t n, unsigned shift,
                        uint64_t base, uint64_t bin_start, uint8_t escape, int64_t *r) {
    if (shift > 56) { unpack_portable(symbols, bits, 0, n, shift, base, bin_start, escape, r); return; }
    const struct bins_avx2 b = {_mm256_set1_epi64x((int64_t)base), _mm256_set1_epi64x((int64_t)bin_start),
                                _mm256_set1_epi64x(escape), _mm_cvtsi32_si128((int)shift)};
    size_t i = n & ~(size_t)3;  // the values the vector loops make
    if (shift > 16) {
        unpack_wide_avx2(symbols, bits, n, shift, &b, r);
    } else {
        const int64_t s = (int64_t)shift;
        const __m256i mask = _mm256_set1_epi64x((int64_t)((UINT64_C(1) << shift) - 1));
        const __m256i lanes = _mm256_set_epi64x(3 * s, 2 * s, s, 0);
        for (size_t k = 0; k < i; k += 4) {
            __m256i low = _mm256_setzero_si256();
            if (shift > 0) {
                size_t position = k * shift;
                uint64_t word;
                memcpy(&word, bits + (position >> 3), 8);  // value k's first byte: readable (codec_kernels.h)
                low = _mm256_and_si256(_mm256_srlv_epi64(_mm256_set1_epi64x((int64_t)(word >> (position & 7))), lanes), mask);
            }
            store_four_avx2(&b, symbols + k, low, r + k);
        }
    }
    unpack_portable(symbols, bits, i, n, shift, base, bin_start, escape, r);
}

// Eight values a step: their 8-byte words gathered at each value's byte, shifted by each value's
// bit, masked; the bin's value from the symbol by a shift and an add, the escape's by a blend.
__attribute__((target("avx512f")))
static void unpack_avx512(const uint8_t *symbols, const uint8_t *bits, size_t n, unsigned shift,
                          uint64_t base, uint64_t bin_start, uint8_t escape, int64_t *r) {
    if (shift == 0) { unpack_portable(symbols, bits, 0, n, shift, base, bin_start, escape, r); return; }
    const __m512i mask = _mm512_set1_epi64((int64_t)((UINT64_C(1) << shift) - 1));
    const __m512i seven = _mm512_set1_epi64(7);
    const __m512i vbase = _mm512_set1_epi64((int64_t)base), vstart = _mm512_set1_epi64((int64_t)bin_start);
    const __m512i vescape = _mm512_set1_epi64(escape);
    const __m128i count = _mm_cvtsi32_si128((int)shift);
    const __m512i step = _mm512_set1_epi64((int64_t)(8 * (uint64_t)shift));
    // Lane j's bit position: j × shift, then 8 × shift more each step.
    __m512i position = _mm512_set_epi64(7 * (int64_t)shift, 6 * (int64_t)shift, 5 * (int64_t)shift, 4 * (int64_t)shift,
                                3 * (int64_t)shift, 2 * (int64_t)shift, (int64_t)shift, 0);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512i words = _mm512_i64gather_epi64(_mm512_srli_epi64(position, 3), (const void *)bits, 1);
        __m512i low = _mm512_and_si512(_mm512_srlv_epi64(words, _mm512_and_si512(position, seven)), mask);
        __m512i s = _mm512_cvtepu8_epi64(_mm_loadl_epi64((const __m128i *)(symbols + i)));
        __m512i bin = _mm512_sll_epi64(_mm512_add_epi64(vstart, s), count);
        bin = _mm512_mask_blend_epi64(_mm512_cmpeq_epi64_mask(s, vescape), bin, _mm512_setzero_si512());
        _mm512_storeu_si512((void *)(r + i), _mm512_add_epi64(_mm512_add_epi64(vbase, bin), low));
        position = _mm512_add_epi64(position, step);
    }
    unpack_portable(symbols, bits, i, n, shift, base, bin_start, escape, r);
}


// The escapes' positions: 32 symbols a compare and a mask, a bit loop only where one is.
__attribute__((target("avx2")))
static size_t find_byte_avx2(const uint8_t *bytes, size_t n, uint8_t value, uint32_t *positions, size_t capacity) {
    const __m256i v = _mm256_set1_epi8((char)value);
    size_t found = 0, i = 0;
    for (; i + 32 <= n; i += 32) {
        uint32_t mask = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(bytes + i)), v));
        while (mask) {
            if (found < capacity) positions[found] = (uint32_t)(i + (size_t)__builtin_ctz(mask));
            found++;
            mask &= mask - 1;
        }
    }
    return find_byte_from(bytes, i, n, value, positions, capacity, found);
}

void tributary_unpack_bins(const uint8_t *symbols, const uint8_t *bits, size_t n, unsigned shift,
                           uint64_t base, uint64_t bin_start, uint8_t escape, int64_t *r) {
    switch (tributary_kernel_level()) {
    case KERNEL_AVX512: unpack_avx512(symbols, bits, n, shift, base, bin_start, escape, r); break;
    case KERNEL_AVX2_BMI2: unpack_avx2(symbols, bits, n, shift, base, bin_start, escape, r); break;
    default: unpack_portable(symbols, bits, 0, n, shift, base, bin_start, escape, r);
    }
}
#endif

#if !defined(__x86_64__)
void tributary_unpack_bins(const uint8_t *symbols, const uint8_t *bits, size_t n, unsigned shift,
                           uint64_t base, uint64_t bin_start, uint8_t escape, int64_t *r) {
    unpack_portable(symbols, bits, 0, n, shift, base, bin_start, escape, r);
}
#endif

size_t tributary_find_byte(const uint8_t *bytes, size_t n, uint8_t value, uint32_t *positions, size_t capacity) {
#if defined(__x86_64__)
    if (tributary_kernel_level() >= KERNEL_AVX2_BMI2) return find_byte_avx2(bytes, n, value, positions, capacity);
#endif
    return find_byte_from(bytes, 0, n, value, positions, capacity, 0);
}

// Stream version 4's symbol bytes of two or three bin digits (docs/CAPTURE.md §5.1, "symbol arity"):
// byte j of a block's P = ⌈n / k⌉ bytes holds the digits of values j, P + j (and 2P + j), in radix
// 16 (k = 2) or 6 (k = 3), the first the least significant. Plain loops the compiler vectorises;
// the AVX2 build of the same body runs where the processor has it.
#include "codec_kernels.h"
#include "dispatch.h"

// q = ⌊b / 6⌋ for 0 ≤ b < 256 as (b × 171) >> 10 (exact on that range; a 16-bit multiply).
static inline __attribute__((always_inline)) unsigned div6(unsigned b) { return (b * 171u) >> 10; }

static inline __attribute__((always_inline))
void pack_body(const uint8_t *symbols, size_t n, unsigned arity, uint8_t *packed) {
    const size_t p = (n + arity - 1) / arity;
    if (arity == 2) {
        const size_t both = n - p;  // bytes holding two values (n − P ≤ P)
        for (size_t j = 0; j < both; j++) packed[j] = (uint8_t)(symbols[j] | (symbols[p + j] << 4));
        for (size_t j = both; j < p; j++) packed[j] = symbols[j];
    } else {
        const size_t two = n - p < p ? n - p : p;      // bytes holding at least two values
        const size_t three = n > 2 * p ? n - 2 * p : 0; // bytes holding three
        for (size_t j = 0; j < three; j++)
            packed[j] = (uint8_t)(symbols[j] + 6 * symbols[p + j] + 36 * symbols[2 * p + j]);
        for (size_t j = three; j < two; j++) packed[j] = (uint8_t)(symbols[j] + 6 * symbols[p + j]);
        for (size_t j = two; j < p; j++) packed[j] = symbols[j];
    }
}

// Radix 6, from byte `from` on: the digits, the largest of them, or 255 when a digit of a value
// past n is not 0.
static inline __attribute__((always_inline))
unsigned expand3_from(const uint8_t *packed, size_t n, size_t from, uint8_t *symbols) {
    const size_t p = (n + 2) / 3;
    const size_t two = n - p < p ? n - p : p;       // bytes holding at least two values
    const size_t three = n > 2 * p ? n - 2 * p : 0;  // bytes holding three
    uint8_t largest = 0, padding = 0;
    for (size_t j = from; j < p; j++) {
        const unsigned b = packed[j], q = div6(b), d2 = div6(q);
        const uint8_t d0 = (uint8_t)(b - 6 * q), d1 = (uint8_t)(q - 6 * d2);
        symbols[j] = d0;
        largest = largest > d0 ? largest : d0;
        if (j < two) {
            symbols[p + j] = d1;
            largest = largest > d1 ? largest : d1;
        } else {
            padding |= d1;
        }
        // A byte ≥ 216 has d2 ≥ 6: larger than any digit (≤ 5), so caught by the caller's bound.
        if (j < three) {
            symbols[2 * p + j] = (uint8_t)d2;
            largest = largest > (uint8_t)d2 ? largest : (uint8_t)d2;
        } else {
            padding |= (uint8_t)d2;
        }
    }
    return padding ? 255u : largest;
}

static inline __attribute__((always_inline))
unsigned expand_body(const uint8_t *packed, size_t n, unsigned arity, uint8_t *symbols) {
    if (arity == 3) return expand3_from(packed, n, 0, symbols);
    const size_t p = (n + 1) / 2;
    uint8_t largest = 0, padding = 0;
    {
        const size_t both = n - p;
        for (size_t j = 0; j < both; j++) {
            const uint8_t b = packed[j], low = b & 15, high = b >> 4;
            symbols[j] = low;
            symbols[p + j] = high;
            largest = largest > low ? largest : low;
            largest = largest > high ? largest : high;
        }
        for (size_t j = both; j < p; j++) {
            const uint8_t b = packed[j];
            symbols[j] = b & 15;
            largest = largest > (b & 15) ? largest : (b & 15);
            padding |= b >> 4;
        }
    }
    return padding ? 255u : largest;
}

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx2")))
static void pack_avx2(const uint8_t *symbols, size_t n, unsigned arity, uint8_t *packed) { pack_body(symbols, n, arity, packed); }
// Radix 6, 32 bytes a step (the compiler keeps the scalar loop's byte division scalar): the even
// and odd bytes as 16-bit lanes, each divided by 6 twice with (x × 171) >> 10, the digits put
// back together as bytes.
__attribute__((target("avx2")))
static unsigned expand_avx2(const uint8_t *packed, size_t n, unsigned arity, uint8_t *symbols) {
    if (arity != 3) return expand_body(packed, n, arity, symbols);
    const size_t p = (n + 2) / 3, three = n > 2 * p ? n - 2 * p : 0;
    const __m256i low = _mm256_set1_epi16(0x00FF), m171 = _mm256_set1_epi16(171), six = _mm256_set1_epi16(6);
    __m256i largest = _mm256_setzero_si256();
    size_t j = 0;
    for (; j + 32 <= three; j += 32) {
        const __m256i b = _mm256_loadu_si256((const __m256i *)(packed + j));
        const __m256i be = _mm256_and_si256(b, low), bo = _mm256_srli_epi16(b, 8);
        const __m256i qe = _mm256_srli_epi16(_mm256_mullo_epi16(be, m171), 10), qo = _mm256_srli_epi16(_mm256_mullo_epi16(bo, m171), 10);
        const __m256i re = _mm256_srli_epi16(_mm256_mullo_epi16(qe, m171), 10), ro = _mm256_srli_epi16(_mm256_mullo_epi16(qo, m171), 10);
        const __m256i d0e = _mm256_sub_epi16(be, _mm256_mullo_epi16(qe, six)), d0o = _mm256_sub_epi16(bo, _mm256_mullo_epi16(qo, six));
        const __m256i d1e = _mm256_sub_epi16(qe, _mm256_mullo_epi16(re, six)), d1o = _mm256_sub_epi16(qo, _mm256_mullo_epi16(ro, six));
        const __m256i d0 = _mm256_or_si256(d0e, _mm256_slli_epi16(d0o, 8));
        const __m256i d1 = _mm256_or_si256(d1e, _mm256_slli_epi16(d1o, 8));
        const __m256i d2 = _mm256_or_si256(re, _mm256_slli_epi16(ro, 8));
        _mm256_storeu_si256((__m256i *)(symbols + j), d0);
        _mm256_storeu_si256((__m256i *)(symbols + p + j), d1);
        _mm256_storeu_si256((__m256i *)(symbols + 2 * p + j), d2);
        largest = _mm256_max_epu8(largest, _mm256_max_epu8(d0, _mm256_max_epu8(d1, d2)));
    }
    uint8_t lanes[32];
    _mm256_storeu_si256((__m256i *)lanes, largest);
    unsigned most = 0;
    for (int k = 0; k < 32; k++) most = lanes[k] > most ? lanes[k] : most;
    const unsigned rest = expand3_from(packed, n, j, symbols);
    return rest > most ? rest : most;
}
#endif

static void pack_portable(const uint8_t *symbols, size_t n, unsigned arity, uint8_t *packed) { pack_body(symbols, n, arity, packed); }
static unsigned expand_portable(const uint8_t *packed, size_t n, unsigned arity, uint8_t *symbols) {
    return expand_body(packed, n, arity, symbols);
}

void tributary_pack_digits(const uint8_t *symbols, size_t n, unsigned arity, uint8_t *packed) {
#if defined(__x86_64__)
    if (tributary_kernel_level() >= KERNEL_AVX2_BMI2) { pack_avx2(symbols, n, arity, packed); return; }
#endif
    pack_portable(symbols, n, arity, packed);
}

unsigned tributary_expand_digits(const uint8_t *packed, size_t n, unsigned arity, uint8_t *symbols) {
#if defined(__x86_64__)
    if (tributary_kernel_level() >= KERNEL_AVX2_BMI2) return expand_avx2(packed, n, arity, symbols);
#endif
    return expand_portable(packed, n, arity, symbols);
}

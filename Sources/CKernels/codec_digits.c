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

static inline __attribute__((always_inline))
unsigned expand_body(const uint8_t *packed, size_t n, unsigned arity, uint8_t *symbols) {
    const size_t p = (n + arity - 1) / arity;
    uint8_t largest = 0, padding = 0;
    if (arity == 2) {
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
    } else {
        const size_t two = n - p < p ? n - p : p;
        const size_t three = n > 2 * p ? n - 2 * p : 0;
        for (size_t j = 0; j < three; j++) {
            const unsigned b = packed[j], q = div6(b), d2 = div6(q);
            const uint8_t d0 = (uint8_t)(b - 6 * q), d1 = (uint8_t)(q - 6 * d2);
            symbols[j] = d0;
            symbols[p + j] = d1;
            symbols[2 * p + j] = (uint8_t)d2;
            // A byte ≥ 216 has d2 ≥ 6: larger than any digit (≤ 5), so caught by the caller's bound.
            uint8_t m = d0 > d1 ? d0 : d1;
            m = m > (uint8_t)d2 ? m : (uint8_t)d2;
            largest = largest > m ? largest : m;
        }
        for (size_t j = three; j < p; j++) {
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
            padding |= (uint8_t)d2;
        }
    }
    return padding ? 255u : largest;
}

#if defined(__x86_64__)
__attribute__((target("avx2")))
static void pack_avx2(const uint8_t *symbols, size_t n, unsigned arity, uint8_t *packed) { pack_body(symbols, n, arity, packed); }
__attribute__((target("avx2")))
static unsigned expand_avx2(const uint8_t *packed, size_t n, unsigned arity, uint8_t *symbols) {
    return expand_body(packed, n, arity, symbols);
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

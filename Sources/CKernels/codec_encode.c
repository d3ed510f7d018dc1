// Hot loops of the capture encoder (codec_kernels.h) — the order-8 linear prediction, binary64 grid
// latents, a latent block's bin symbols, non-zero counts, min/max, the bit-shuffle of 8-byte
// elements — eight values at a time with AVX-512 (VPMULLQ, VCVTTPD2QQ, VPMOVQB, VPMOVB2M), which
// Swift's baseline x86-64 code cannot use, and (all but the prediction, whose 64-bit products AVX2
// lacks) four at a time with AVX2 (the bit-shuffle: 32 elements a register, VPMOVMSKB).
#include "codec_kernels.h"
#include "dispatch.h"
#include "bits.h"
#include <string.h>

// As the Swift reference: a product and a sum, each rounded (no fused multiply-add).
#pragma STDC FP_CONTRACT OFF
#if defined(__clang__)
#pragma clang fp contract(off)
#endif


// One residual: wrapping 64-bit products and sums, arithmetic shift (as Swift's &* &+ &>>).
static inline int64_t residual8(const int64_t *v, size_t i, const int64_t *c, unsigned shift) {
    uint64_t sum = (uint64_t)1 << (shift - 1);
    for (int j = 0; j < 8; j++) sum += (uint64_t)c[j] * (uint64_t)v[i - 1 - j];
    return (int64_t)((uint64_t)v[i] - (uint64_t)((int64_t)sum >> shift));
}

static void predict8_portable(int64_t *v, size_t n, const int64_t *c, unsigned shift) {
    for (size_t i = n; i-- > 8;) v[i] = residual8(v, i, c, shift);
}

static inline int64_t grid_count(double x, double offset, double inverse) {
    double q = (x - offset) * inverse;
    // Round to nearest by adding and removing 1.5 × 2^52; NaN and far values give 0.
    return __builtin_fabs(q) <= 0x1p50 ? (int64_t)((q + 0x1.8p52) - 0x1.8p52) : 0;
}

static uint64_t to_grid64_portable(const uint64_t *x, int64_t *k, int64_t *adj, size_t n, double offset, double gain, double inverse) {
    uint64_t any = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t count = grid_count(double64(x[i]), offset, inverse);
        uint64_t d = x[i] - bits64(offset + gain * (double)count);
        k[i] = count;
        adj[i] = (int64_t)d;
        any |= d;
    }
    return any;
}

static void min_max64_portable(const int64_t *r, size_t n, int64_t *lowest, int64_t *highest) {
    int64_t lo = r[0], hi = r[0];
    for (size_t i = 1; i < n; i++) {
        lo = r[i] < lo ? r[i] : lo;
        hi = r[i] > hi ? r[i] : hi;
    }
    *lowest = lo;
    *highest = hi;
}

static size_t bin_symbols_portable(const int64_t *r, size_t n, uint64_t base, unsigned shift, uint64_t start, uint64_t bins,
                                   uint8_t escape, uint8_t *symbols) {
    size_t escapes = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t bin = (((uint64_t)r[i] - base) >> shift) - start;
        int inside = bin < bins;
        symbols[i] = inside ? (uint8_t)bin : escape;
        escapes += !inside;
    }
    return escapes;
}

static size_t count_nonzero64_portable(const int64_t *x, size_t n) {
    size_t count = 0;
    for (size_t i = 0; i < n; i++) count += x[i] != 0;
    return count;
}

#if defined(__x86_64__)
#include <immintrin.h>

// AVX2: four values a step. The grid latents as the AVX-512 kernel, with the rounded quotient's
// integer taken from the bits of q + 1.5 × 2^52 (exact below 2^51; lanes beyond 2^50, and NaN,
// masked to 0 as the rule says).
__attribute__((target("avx2")))
static uint64_t to_grid64_avx2(const uint64_t *x, int64_t *k, int64_t *adj, size_t n, double offset, double gain, double inverse) {
    const __m256d o = _mm256_set1_pd(offset), g = _mm256_set1_pd(gain), inv = _mm256_set1_pd(inverse);
    const __m256d magic = _mm256_set1_pd(0x1.8p52), limit = _mm256_set1_pd(0x1p50);
    const __m256d sign = _mm256_set1_pd(-0.0);
    const __m256i magicBits = _mm256_castpd_si256(magic);
    __m256i any = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256i bits = _mm256_loadu_si256((const __m256i *)(x + i));
        __m256d q = _mm256_mul_pd(_mm256_sub_pd(_mm256_castsi256_pd(bits), o), inv);
        __m256d near = _mm256_cmp_pd(_mm256_andnot_pd(sign, q), limit, _CMP_LE_OQ);  // false for NaN
        __m256d shifted = _mm256_add_pd(q, magic);
        __m256d rounded = _mm256_and_pd(near, _mm256_sub_pd(shifted, magic));
        __m256i count = _mm256_and_si256(_mm256_castpd_si256(near), _mm256_sub_epi64(_mm256_castpd_si256(shifted), magicBits));
        __m256d y = _mm256_add_pd(o, _mm256_mul_pd(g, rounded));
        __m256i d = _mm256_sub_epi64(bits, _mm256_castpd_si256(y));
        _mm256_storeu_si256((__m256i *)(k + i), count);
        _mm256_storeu_si256((__m256i *)(adj + i), d);
        any = _mm256_or_si256(any, d);
    }
    uint64_t lanes[4];
    _mm256_storeu_si256((__m256i *)lanes, any);
    return (lanes[0] | lanes[1] | lanes[2] | lanes[3]) | to_grid64_portable(x + i, k + i, adj + i, n - i, offset, gain, inverse);
}

// Sixteen values a step: four vectors of bins (unsigned comparison by flipping the sign bits),
// each value below 256 once the escapes are blended in, packed to bytes in their order.
__attribute__((target("avx2")))
static size_t bin_symbols_avx2(const int64_t *r, size_t n, uint64_t base, unsigned shift, uint64_t start, uint64_t bins,
                               uint8_t escape, uint8_t *symbols) {
    const __m256i b = _mm256_set1_epi64x((int64_t)base), s = _mm256_set1_epi64x((int64_t)start);
    const __m256i flip = _mm256_set1_epi64x(INT64_MIN);
    const __m256i limit = _mm256_set1_epi64x((int64_t)(bins ^ (UINT64_C(1) << 63))), e = _mm256_set1_epi64x(escape);
    const __m128i count = _mm_cvtsi32_si128((int)shift);
    size_t escapes = 0, i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i t[4];
        for (int j = 0; j < 4; j++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(r + i + 4 * j));
            __m256i bin = _mm256_sub_epi64(_mm256_srl_epi64(_mm256_sub_epi64(v, b), count), s);
            __m256i inside = _mm256_cmpgt_epi64(limit, _mm256_xor_si256(bin, flip));  // bin < bins, unsigned
            escapes += 4 - (size_t)__builtin_popcount((unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(inside)));
            t[j] = _mm256_blendv_epi8(e, bin, inside);
        }
        // Each 128-bit lane: the low dwords of two vectors' qwords, then words, then bytes; the two
        // lanes' halves interleaved back into value order.
        __m256i t01 = _mm256_blend_epi32(_mm256_shuffle_epi32(t[0], 0x88), _mm256_shuffle_epi32(t[1], 0x88), 0xCC);
        __m256i t23 = _mm256_blend_epi32(_mm256_shuffle_epi32(t[2], 0x88), _mm256_shuffle_epi32(t[3], 0x88), 0xCC);
        __m256i w = _mm256_packus_epi32(t01, t23);
        __m256i bytes = _mm256_packus_epi16(w, w);
        __m128i low = _mm256_castsi256_si128(bytes), high = _mm256_extracti128_si256(bytes, 1);
        _mm_storeu_si128((__m128i *)(symbols + i), _mm_unpacklo_epi16(low, high));
    }
    return escapes + bin_symbols_portable(r + i, n - i, base, shift, start, bins, escape, symbols + i);
}

__attribute__((target("avx2")))
static size_t count_nonzero64_avx2(const int64_t *x, size_t n) {
    const __m256i zero = _mm256_setzero_si256();
    size_t zeros = 0, i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256i equal = _mm256_cmpeq_epi64(_mm256_loadu_si256((const __m256i *)(x + i)), zero);
        zeros += (size_t)__builtin_popcount((unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(equal)));
    }
    return (i - zeros) + count_nonzero64_portable(x + i, n - i);
}

// VPCMPGTQ and blends: signed 64-bit minimum and maximum of four lanes.
__attribute__((target("avx2")))
static void min_max64_avx2(const int64_t *r, size_t n, int64_t *lowest, int64_t *highest) {
    if (n < 8) { min_max64_portable(r, n, lowest, highest); return; }
    __m256i lo = _mm256_loadu_si256((const __m256i *)r), hi = lo;
    size_t i = 4;
    for (; i + 4 <= n; i += 4) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(r + i));
        lo = _mm256_blendv_epi8(lo, v, _mm256_cmpgt_epi64(lo, v));
        hi = _mm256_blendv_epi8(hi, v, _mm256_cmpgt_epi64(v, hi));
    }
    int64_t l[4], h[4];
    _mm256_storeu_si256((__m256i *)l, lo);
    _mm256_storeu_si256((__m256i *)h, hi);
    int64_t a = l[0], z = h[0];
    for (int j = 1; j < 4; j++) {
        a = l[j] < a ? l[j] : a;
        z = h[j] > z ? h[j] : z;
    }
    for (; i < n; i++) {
        a = r[i] < a ? r[i] : a;
        z = r[i] > z ? r[i] : z;
    }
    *lowest = a;
    *highest = z;
}

__attribute__((target("avx512f")))
static size_t bin_symbols_avx512(const int64_t *r, size_t n, uint64_t base, unsigned shift, uint64_t start, uint64_t bins,
                                 uint8_t escape, uint8_t *symbols) {
    const __m512i b = _mm512_set1_epi64((int64_t)base), s = _mm512_set1_epi64((int64_t)start);
    const __m512i limit = _mm512_set1_epi64((int64_t)bins), e = _mm512_set1_epi64(escape);
    const __m128i count = _mm_cvtsi32_si128((int)shift);
    size_t escapes = 0, i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512i v = _mm512_loadu_si512((const void *)(r + i));
        __m512i bin = _mm512_sub_epi64(_mm512_srl_epi64(_mm512_sub_epi64(v, b), count), s);
        __mmask8 inside = _mm512_cmplt_epu64_mask(bin, limit);
        __m512i symbol = _mm512_mask_blend_epi64(inside, e, bin);
        _mm_storel_epi64((__m128i *)(symbols + i), _mm512_cvtepi64_epi8(symbol));  // VPMOVQB: the low bytes
        escapes += 8 - (size_t)__builtin_popcount((unsigned)inside);
    }
    return escapes + bin_symbols_portable(r + i, n - i, base, shift, start, bins, escape, symbols + i);
}

// Bit-shuffle of 8-byte elements (BitShuffle.swift's layout): per group of 64 elements, the bytes
// j of the 64 elements gathered into one vector (VPERMB within each 8 elements, then a qword
// gather), and each of its 8 bit rows taken by VPMOVB2M (the bytes' top bits), shifting one bit up
// between rows.
__attribute__((target("avx512f,avx512bw,avx512vbmi")))
static void bitshuffle8_avx512(const uint8_t *src, uint8_t *dst, size_t groups, size_t row_bytes) {
    uint8_t order[64];
    for (int j = 0; j < 8; j++)
        for (int e = 0; e < 8; e++) order[8 * j + e] = (uint8_t)(8 * e + j);  // byte j of element e
    const __m512i by_byte = _mm512_loadu_si512((const void *)order);
    const __m512i columns = _mm512_setr_epi64(0, 8, 16, 24, 32, 40, 48, 56);
    uint64_t scratch[64] __attribute__((aligned(64)));
    for (size_t g = 0; g < groups; g++) {
        const uint8_t *in = src + g * 512;
        for (int i = 0; i < 8; i++)
            _mm512_store_si512((void *)(scratch + 8 * i), _mm512_permutexvar_epi8(by_byte, _mm512_loadu_si512((const void *)(in + 64 * i))));
        for (int j = 0; j < 8; j++) {
            // Byte t of v: byte j of element t of the group.
            __m512i v = _mm512_i64gather_epi64(_mm512_add_epi64(columns, _mm512_set1_epi64(j)), (const void *)scratch, 8);
            for (int k = 7; k >= 0; k--) {
                uint64_t row = (uint64_t)_mm512_movepi8_mask(_mm512_slli_epi64(v, 7 - k));
                memcpy(dst + (size_t)(8 * j + k) * row_bytes + g * 8, &row, 8);
            }
        }
    }
}

// The same with AVX2, 32 elements at a time: each 16-byte half of an element pair gets its bytes
// paired by byte position (VPSHUFB: word j = byte j of both elements), an 8 × 8 transpose of
// 16-bit words (three rounds of unpacks, within each 128-bit lane) gathers byte j of the 32
// elements in one register (elements 0–15 in the low lane, 16–31 in the high one), and each bit
// row is VPMOVMSKB of that register shifted so the row's bit is every byte's top bit.
__attribute__((target("avx2")))
static inline void bytes_by_position_avx2(const uint8_t *in, __m256i r[8]) {
    const __m256i pair_bytes = _mm256_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15,
                                                0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
    __m256i a[8], t[8], u[8];
    for (int p = 0; p < 8; p++) {
        // Low lane: elements 2p, 2p + 1; high lane: elements 16 + 2p, 17 + 2p.
        __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(in + 16 * p))),
                                            _mm_loadu_si128((const __m128i *)(in + 128 + 16 * p)), 1);
        a[p] = _mm256_shuffle_epi8(v, pair_bytes);
    }
    for (int p = 0; p < 4; p++) {
        t[2 * p] = _mm256_unpacklo_epi16(a[2 * p], a[2 * p + 1]);
        t[2 * p + 1] = _mm256_unpackhi_epi16(a[2 * p], a[2 * p + 1]);
    }
    for (int q = 0; q < 2; q++) {
        u[4 * q + 0] = _mm256_unpacklo_epi32(t[4 * q + 0], t[4 * q + 2]);
        u[4 * q + 1] = _mm256_unpackhi_epi32(t[4 * q + 0], t[4 * q + 2]);
        u[4 * q + 2] = _mm256_unpacklo_epi32(t[4 * q + 1], t[4 * q + 3]);
        u[4 * q + 3] = _mm256_unpackhi_epi32(t[4 * q + 1], t[4 * q + 3]);
    }
    // r[j]: byte j of elements 0 … 15 (low lane) and 16 … 31 (high lane), in order.
    for (int j = 0; j < 8; j++)
        r[j] = (j & 1) ? _mm256_unpackhi_epi64(u[j / 2], u[4 + j / 2]) : _mm256_unpacklo_epi64(u[j / 2], u[4 + j / 2]);
}

// The same with AVX2, a group of 64 elements as two halves of 32: each 16-byte element pair gets
// its bytes paired by position (VPSHUFB: word j = byte j of both elements), an 8 × 8 transpose of
// 16-bit words (three rounds of unpacks, within each 128-bit lane) gathers byte j of 32 elements
// in one register, and each bit row is VPMOVMSKB of the two halves' registers shifted so that the
// row's bit is every byte's top bit — one 8-byte store a row.
__attribute__((target("avx2")))
static void bitshuffle8_avx2(const uint8_t *src, uint8_t *dst, size_t groups, size_t row_bytes) {
    for (size_t g = 0; g < groups; g++) {
        __m256i low[8], high[8];
        bytes_by_position_avx2(src + g * 512, low);
        bytes_by_position_avx2(src + g * 512 + 256, high);
        for (int j = 0; j < 8; j++) {
            __m256i a = low[j], b = high[j];
            for (int k = 7; k >= 0; k--) {
                uint64_t row = (uint32_t)_mm256_movemask_epi8(a) | (uint64_t)(uint32_t)_mm256_movemask_epi8(b) << 32;
                memcpy(dst + (size_t)(8 * j + k) * row_bytes + g * 8, &row, 8);
                a = _mm256_add_epi8(a, a);  // the next lower bit to the top of each byte
                b = _mm256_add_epi8(b, b);
            }
        }
    }
}

static int has_bitshuffle8_kernel(void) {
    static int known = -1;
    int has = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (has < 0) {
        __builtin_cpu_init();
        has = __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vbmi");
        __atomic_store_n(&known, has, __ATOMIC_RELAXED);
    }
    return has;
}

__attribute__((target("avx512f")))
static size_t count_nonzero64_avx512(const int64_t *x, size_t n) {
    size_t count = 0, i = 0;
    for (; i + 8 <= n; i += 8)
        count += (size_t)__builtin_popcount((unsigned)_mm512_test_epi64_mask(_mm512_loadu_si512((const void *)(x + i)),
                                                                             _mm512_loadu_si512((const void *)(x + i))));
    return count + count_nonzero64_portable(x + i, n - i);
}

// VPMINSQ / VPMAXSQ: signed 64-bit minimum and maximum of eight lanes (baseline x86-64 has no
// 64-bit vector compare, so the Swift loop runs one value a cycle).
__attribute__((target("avx512f")))
static void min_max64_avx512(const int64_t *r, size_t n, int64_t *lowest, int64_t *highest) {
    if (n < 16) { min_max64_portable(r, n, lowest, highest); return; }
    __m512i lo = _mm512_loadu_si512((const void *)r), hi = lo;
    size_t i = 8;
    for (; i + 8 <= n; i += 8) {
        __m512i v = _mm512_loadu_si512((const void *)(r + i));
        lo = _mm512_min_epi64(lo, v);
        hi = _mm512_max_epi64(hi, v);
    }
    int64_t l = _mm512_reduce_min_epi64(lo), h = _mm512_reduce_max_epi64(hi);
    for (; i < n; i++) {
        l = r[i] < l ? r[i] : l;
        h = r[i] > h ? r[i] : h;
    }
    *lowest = l;
    *highest = h;
}

// Backwards in blocks of eight: a block reads the eight samples before each of its own, which
// lie below it and are not yet replaced.
__attribute__((target("avx512f,avx512dq")))
static void predict8_avx512(int64_t *v, size_t n, const int64_t *c, unsigned shift) {
    __m512i coefficient[8];
    for (int j = 0; j < 8; j++) coefficient[j] = _mm512_set1_epi64(c[j]);
    const __m512i half = _mm512_set1_epi64((int64_t)1 << (shift - 1));
    const __m128i count = _mm_cvtsi32_si128((int)shift);
    size_t top = n;
    while (top >= 16) {
        size_t b = top - 8;
        __m512i sum = half;
        for (int j = 0; j < 8; j++)
            sum = _mm512_add_epi64(sum, _mm512_mullo_epi64(coefficient[j], _mm512_loadu_si512((const void *)(v + b - 1 - j))));
        __m512i r = _mm512_sub_epi64(_mm512_loadu_si512((const void *)(v + b)), _mm512_sra_epi64(sum, count));
        _mm512_storeu_si512((void *)(v + b), r);
        top = b;
    }
    for (size_t i = top; i-- > 8;) v[i] = residual8(v, i, c, shift);
}

__attribute__((target("avx512f,avx512dq")))
static uint64_t to_grid64_avx512(const uint64_t *x, int64_t *k, int64_t *adj, size_t n, double offset, double gain, double inverse) {
    const __m512d o = _mm512_set1_pd(offset), g = _mm512_set1_pd(gain), inv = _mm512_set1_pd(inverse);
    const __m512d magic = _mm512_set1_pd(0x1.8p52), limit = _mm512_set1_pd(0x1p50);
    __m512i any = _mm512_setzero_si512();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512i bits = _mm512_loadu_si512((const void *)(x + i));
        __m512d q = _mm512_mul_pd(_mm512_sub_pd(_mm512_castsi512_pd(bits), o), inv);
        __mmask8 near = _mm512_cmp_pd_mask(_mm512_abs_pd(q), limit, _CMP_LE_OQ);  // false for NaN
        __m512d rounded = _mm512_sub_pd(_mm512_add_pd(q, magic), magic);
        // The rounded value is an integer below 2^50 in magnitude: the conversion is exact.
        __m512i count = _mm512_maskz_cvttpd_epi64(near, rounded);
        __m512d y = _mm512_add_pd(o, _mm512_mul_pd(g, _mm512_cvtepi64_pd(count)));
        __m512i d = _mm512_sub_epi64(bits, _mm512_castpd_si512(y));
        _mm512_storeu_si512((void *)(k + i), count);
        _mm512_storeu_si512((void *)(adj + i), d);
        any = _mm512_or_si512(any, d);
    }
    return (uint64_t)_mm512_reduce_or_epi64(any) | to_grid64_portable(x + i, k + i, adj + i, n - i, offset, gain, inverse);
}
#endif

void tributary_predict_linear8(int64_t *v, size_t n, const int64_t *coefficients, unsigned shift) {
#if defined(__x86_64__)
    if (tributary_kernel_level() == KERNEL_AVX512) { predict8_avx512(v, n, coefficients, shift); return; }
#endif
    predict8_portable(v, n, coefficients, shift);
}

uint64_t tributary_to_grid64(const uint64_t *x, int64_t *k, int64_t *adj, size_t n, double offset, double gain, double inverse) {
#if defined(__x86_64__)
    if (tributary_kernel_level() == KERNEL_AVX512) return to_grid64_avx512(x, k, adj, n, offset, gain, inverse);
    if (tributary_kernel_level() == KERNEL_AVX2_BMI2) return to_grid64_avx2(x, k, adj, n, offset, gain, inverse);
#endif
    return to_grid64_portable(x, k, adj, n, offset, gain, inverse);
}

void tributary_min_max64(const int64_t *r, size_t n, int64_t *lowest, int64_t *highest) {
#if defined(__x86_64__)
    if (tributary_kernel_level() == KERNEL_AVX512) { min_max64_avx512(r, n, lowest, highest); return; }
    if (tributary_kernel_level() == KERNEL_AVX2_BMI2) { min_max64_avx2(r, n, lowest, highest); return; }
#endif
    min_max64_portable(r, n, lowest, highest);
}

size_t tributary_bin_symbols(const int64_t *r, size_t n, uint64_t base, unsigned shift, uint64_t start, uint64_t bins,
                             uint8_t escape, uint8_t *symbols) {
#if defined(__x86_64__)
    if (tributary_kernel_level() == KERNEL_AVX512) return bin_symbols_avx512(r, n, base, shift, start, bins, escape, symbols);
    if (tributary_kernel_level() == KERNEL_AVX2_BMI2) return bin_symbols_avx2(r, n, base, shift, start, bins, escape, symbols);
#endif
    return bin_symbols_portable(r, n, base, shift, start, bins, escape, symbols);
}

size_t tributary_count_nonzero64(const int64_t *x, size_t n) {
#if defined(__x86_64__)
    if (tributary_kernel_level() == KERNEL_AVX512) return count_nonzero64_avx512(x, n);
    if (tributary_kernel_level() == KERNEL_AVX2_BMI2) return count_nonzero64_avx2(x, n);
#endif
    return count_nonzero64_portable(x, n);
}

size_t tributary_bitshuffle8_groups(const uint8_t *src, uint8_t *dst, size_t groups, size_t row_bytes) {
#if defined(__x86_64__)
    int level = tributary_kernel_level();
    if (level == KERNEL_AVX512 && has_bitshuffle8_kernel()) {
        bitshuffle8_avx512(src, dst, groups, row_bytes);
        return groups;
    }
    if (level >= KERNEL_AVX2_BMI2) {
        bitshuffle8_avx2(src, dst, groups, row_bytes);
        return groups;
    }
#endif
    (void)src; (void)dst; (void)row_bytes;
    return 0;
}

// A latent block's low bits (codec_kernels.h): the LSB-first writer of LatentCoder.swift's
// BitWriter (8 bytes stored at every write, advanced by the whole bytes filled), with the values
// of a group assembled by independent shifts before one write, the group's size fixed per width
// range so that the compiler unrolls it: the writer's chain of dependent steps is 2-8 times
// shorter than one write a value. The bits written are the same whatever the grouping.
struct low_writer { uint8_t *out; uint64_t acc; unsigned filled; };

static inline __attribute__((always_inline)) void low_put(struct low_writer *w, uint64_t value, unsigned width) {
    w->acc |= value << w->filled;  // filled < 8 and width ≤ 56: every bit fits
    w->filled += width;
    memcpy(w->out, &w->acc, 8);
    const unsigned bytes = w->filled >> 3;  // ≤ 7
    w->out += bytes;
    w->acc = bytes ? w->acc >> (8 * bytes) : w->acc;
    w->filled &= 7;
}

size_t tributary_pack_low_bits(const int64_t *r, size_t n, uint64_t base, unsigned shift, uint8_t *out) {
    struct low_writer w = {out, 0, 0};
    const uint64_t mask = (UINT64_C(1) << shift) - 1;
    const unsigned s = shift;
#define LOW(k) (((uint64_t)r[i + (k)] - base) & mask)
    size_t i = 0;
    if (s <= 7) {
        for (; i + 8 <= n; i += 8)
            low_put(&w, LOW(0) | LOW(1) << s | LOW(2) << 2 * s | LOW(3) << 3 * s | LOW(4) << 4 * s | LOW(5) << 5 * s
                        | LOW(6) << 6 * s | LOW(7) << 7 * s, 8 * s);
    } else if (s <= 14) {
        for (; i + 4 <= n; i += 4) low_put(&w, LOW(0) | LOW(1) << s | LOW(2) << 2 * s | LOW(3) << 3 * s, 4 * s);
    } else if (s <= 28) {
        for (; i + 2 <= n; i += 2) low_put(&w, LOW(0) | LOW(1) << s, 2 * s);
    }
    for (; i < n; i++) low_put(&w, LOW(0), s);
#undef LOW
    if (w.filled > 0) *w.out++ = (uint8_t)w.acc;
    return (size_t)(w.out - out);
}

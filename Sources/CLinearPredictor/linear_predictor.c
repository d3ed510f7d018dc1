// The order-8 linear predictor's inverse for four channels at once (docs/CAPTURE.md §5.1), in AVX2,
// and for eight at once in AVX-512 (further down).
//
// One channel's recurrence x[i] = v[i] + ((2^(q-1) + Σ c[j] × x[i-1-j]) >> q) (wrapping 64-bit
// arithmetic, missing history 0) is bound by its dependency chain and by the one integer
// multiplier; four channels in the lanes of a vector run four chains at once, with the products on
// the vector units. VPMULDQ multiplies the low 32 bits of each lane (signed) into 64, so the lanes
// give the wrapping 64-bit result exactly while every coefficient and every latent lies in
// [-2^31, 2^31): the coefficients are checked first, the latents in blocks as they are made.
// The declarations and their contracts: include/linear_predictor.h.
#include "linear_predictor.h"

#if defined(__x86_64__)
#include <immintrin.h>

bool tributary_linear8_x4_available(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
}

/// Steps of one block between checks of the latents' range.
#define TRIBUTARY_LINEAR8_BLOCK 64

__attribute__((target("avx2")))
size_t tributary_linear8_x4(const int64_t *v0, const int64_t *v1, const int64_t *v2, const int64_t *v3,
                            int64_t *x0, int64_t *x1, int64_t *x2, int64_t *x3, size_t n,
                            const int64_t *c, const int64_t *q) {
    for (int j = 0; j < 32; j++) {
        if (c[j] < -(INT64_C(1) << 31) || c[j] >= (INT64_C(1) << 31)) return 0;
    }
    __m256i cv[8];
    for (int j = 0; j < 8; j++) cv[j] = _mm256_set_epi64x(c[24 + j], c[16 + j], c[8 + j], c[j]);
    const __m256i shift = _mm256_set_epi64x(q[3], q[2], q[1], q[0]);
    const __m256i one = _mm256_set1_epi64x(1);
    const __m256i half = _mm256_sllv_epi64(one, _mm256_sub_epi64(shift, one));
    const __m256i zero = _mm256_setzero_si256();
    // The sum's sign bit flipped (+2^63) makes the logical shift an arithmetic one plus 2^(63-q),
    // taken back off the residual: exact for every sum, and off the dependency chain.
    const __m256i flip = _mm256_set1_epi64x(INT64_MIN);
    const __m256i start = _mm256_add_epi64(half, flip);
    const __m256i back = _mm256_srlv_epi64(flip, shift);
    // latent + 2^31 has no high bits while the latent is in [-2^31, 2^31); ORed over a block.
    const __m256i bias = _mm256_set1_epi64x(INT64_C(1) << 31);
    const __m256i high = _mm256_set1_epi64x((int64_t)0xFFFFFFFF00000000u);
    // h1 … h8: the latents of the last eight samples, newest first.
    __m256i h1 = zero, h2 = zero, h3 = zero, h4 = zero, h5 = zero, h6 = zero, h7 = zero, h8 = zero;
    __m256i outside = zero;
    // One step: the latents of sample s of the four lanes from their residuals (minus `back`).
#define TRIBUTARY_LINEAR8_STEP(residual, latent)                                                                    \
    do {                                                                                                            \
        /* The products of the older seven off the chain, the newest's last. */                                     \
        __m256i older = _mm256_add_epi64(                                                                           \
            _mm256_add_epi64(_mm256_add_epi64(start, _mm256_mul_epi32(cv[1], h2)),                                  \
                             _mm256_add_epi64(_mm256_mul_epi32(cv[2], h3), _mm256_mul_epi32(cv[3], h4))),           \
            _mm256_add_epi64(_mm256_add_epi64(_mm256_mul_epi32(cv[4], h5), _mm256_mul_epi32(cv[5], h6)),            \
                             _mm256_add_epi64(_mm256_mul_epi32(cv[6], h7), _mm256_mul_epi32(cv[7], h8))));          \
        __m256i sum = _mm256_add_epi64(older, _mm256_mul_epi32(cv[0], h1));                                         \
        latent = _mm256_add_epi64(_mm256_sub_epi64(residual, back), _mm256_srlv_epi64(sum, shift));                 \
        outside = _mm256_or_si256(outside, _mm256_add_epi64(latent, bias));                                         \
        h8 = h7; h7 = h6; h6 = h5; h5 = h4; h4 = h3; h3 = h2; h2 = h1; h1 = latent;                                 \
    } while (0)
    size_t i = 0;
    while (i < n) {
        size_t end = n - i < TRIBUTARY_LINEAR8_BLOCK ? n : i + TRIBUTARY_LINEAR8_BLOCK;
        size_t s = i;
        outside = zero;
        // Four steps at a time: each step vector from two 128-bit loads and an unpack (lanes 0 and
        // 2 of one load pair, 1 and 3 of the other), the latents back the same way: no
        // element-by-element gathers and extracts, and no cross-lane permutes (VPERM2I128 is
        // eight micro-ops on Zen 1, where this took 8 % off the kernel).
        for (; s + 4 <= end; s += 4) {
            __m256i a02 = _mm256_loadu2_m128i((const __m128i *)(v2 + s), (const __m128i *)(v0 + s));          // a0 a1 | c0 c1
            __m256i b13 = _mm256_loadu2_m128i((const __m128i *)(v3 + s), (const __m128i *)(v1 + s));          // b0 b1 | d0 d1
            __m256i c02 = _mm256_loadu2_m128i((const __m128i *)(v2 + s + 2), (const __m128i *)(v0 + s + 2));  // a2 a3 | c2 c3
            __m256i d13 = _mm256_loadu2_m128i((const __m128i *)(v3 + s + 2), (const __m128i *)(v1 + s + 2));  // b2 b3 | d2 d3
            __m256i r0 = _mm256_unpacklo_epi64(a02, b13), r1 = _mm256_unpackhi_epi64(a02, b13);
            __m256i r2 = _mm256_unpacklo_epi64(c02, d13), r3 = _mm256_unpackhi_epi64(c02, d13);
            __m256i l0, l1, l2, l3;
            TRIBUTARY_LINEAR8_STEP(r0, l0);
            TRIBUTARY_LINEAR8_STEP(r1, l1);
            TRIBUTARY_LINEAR8_STEP(r2, l2);
            TRIBUTARY_LINEAR8_STEP(r3, l3);
            _mm256_storeu2_m128i((__m128i *)(x2 + s), (__m128i *)(x0 + s), _mm256_unpacklo_epi64(l0, l1));
            _mm256_storeu2_m128i((__m128i *)(x3 + s), (__m128i *)(x1 + s), _mm256_unpackhi_epi64(l0, l1));
            _mm256_storeu2_m128i((__m128i *)(x2 + s + 2), (__m128i *)(x0 + s + 2), _mm256_unpacklo_epi64(l2, l3));
            _mm256_storeu2_m128i((__m128i *)(x3 + s + 2), (__m128i *)(x1 + s + 2), _mm256_unpackhi_epi64(l2, l3));
        }
        for (; s < end; s++) {
            __m256i latent;
            TRIBUTARY_LINEAR8_STEP(_mm256_set_epi64x(v3[s], v2[s], v1[s], v0[s]), latent);
            x0[s] = _mm256_extract_epi64(latent, 0);
            x1[s] = _mm256_extract_epi64(latent, 1);
            x2[s] = _mm256_extract_epi64(latent, 2);
            x3[s] = _mm256_extract_epi64(latent, 3);
        }
        if (!_mm256_testz_si256(outside, high)) return i;
        i = end;
    }
#undef TRIBUTARY_LINEAR8_STEP
    return n;
}

bool tributary_linear8_x8_available(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
}

/// The 8 × 8 transpose of 64-bit elements: row k of `r` becomes element k of every row (in place).
__attribute__((target("avx512f")))
static inline void transpose8(__m512i r[8]) {
    __m512i t[8], u[8];
    for (int k = 0; k < 4; k++) {
        t[2 * k] = _mm512_unpacklo_epi64(r[2 * k], r[2 * k + 1]);      // r0[0] r1[0] | r0[2] r1[2] | …
        t[2 * k + 1] = _mm512_unpackhi_epi64(r[2 * k], r[2 * k + 1]);  // r0[1] r1[1] | r0[3] r1[3] | …
    }
    for (int g = 0; g < 2; g++) {  // rows 0-3, then 4-7
        u[4 * g] = _mm512_shuffle_i64x2(t[4 * g], t[4 * g + 2], 0x88);      // elements 0 and 4
        u[4 * g + 1] = _mm512_shuffle_i64x2(t[4 * g + 1], t[4 * g + 3], 0x88);  // 1 and 5
        u[4 * g + 2] = _mm512_shuffle_i64x2(t[4 * g], t[4 * g + 2], 0xDD);  // 2 and 6
        u[4 * g + 3] = _mm512_shuffle_i64x2(t[4 * g + 1], t[4 * g + 3], 0xDD);  // 3 and 7
    }
    for (int j = 0; j < 4; j++) {
        r[j] = _mm512_shuffle_i64x2(u[j], u[4 + j], 0x88);
        r[4 + j] = _mm512_shuffle_i64x2(u[j], u[4 + j], 0xDD);
    }
}

// Eight channels in the lanes of one 512-bit vector: the same chain per step as four, twice the
// samples (the four-lane loop is bound by the chain's latency, not by its instructions). Residuals
// come in and latents go out eight steps at a time through 8 × 8 transposes.
__attribute__((target("avx512f")))
size_t tributary_linear8_x8(const int64_t *const v[8], int64_t *const x[8], size_t n, const int64_t *c, const int64_t *q) {
    for (int j = 0; j < 64; j++) {
        if (c[j] < -(INT64_C(1) << 31) || c[j] >= (INT64_C(1) << 31)) return 0;
    }
    __m512i cv[8];
    for (int j = 0; j < 8; j++)
        cv[j] = _mm512_set_epi64(c[56 + j], c[48 + j], c[40 + j], c[32 + j], c[24 + j], c[16 + j], c[8 + j], c[j]);
    const __m512i shift = _mm512_set_epi64(q[7], q[6], q[5], q[4], q[3], q[2], q[1], q[0]);
    const __m512i one = _mm512_set1_epi64(1);
    const __m512i half = _mm512_sllv_epi64(one, _mm512_sub_epi64(shift, one));
    const __m512i zero = _mm512_setzero_si512();
    // As in the four-lane kernel: the sum's sign bit flipped makes the logical shift arithmetic.
    const __m512i flip = _mm512_set1_epi64(INT64_MIN);
    const __m512i start = _mm512_add_epi64(half, flip);
    const __m512i back = _mm512_srlv_epi64(flip, shift);
    const __m512i bias = _mm512_set1_epi64(INT64_C(1) << 31);
    const __m512i high = _mm512_set1_epi64((int64_t)0xFFFFFFFF00000000u);
    __m512i h1 = zero, h2 = zero, h3 = zero, h4 = zero, h5 = zero, h6 = zero, h7 = zero, h8 = zero;
    __m512i outside = zero;
#define TRIBUTARY_LINEAR8_STEP8(residual, latent)                                                                   \
    do {                                                                                                            \
        __m512i older = _mm512_add_epi64(                                                                           \
            _mm512_add_epi64(_mm512_add_epi64(start, _mm512_mul_epi32(cv[1], h2)),                                  \
                             _mm512_add_epi64(_mm512_mul_epi32(cv[2], h3), _mm512_mul_epi32(cv[3], h4))),           \
            _mm512_add_epi64(_mm512_add_epi64(_mm512_mul_epi32(cv[4], h5), _mm512_mul_epi32(cv[5], h6)),            \
                             _mm512_add_epi64(_mm512_mul_epi32(cv[6], h7), _mm512_mul_epi32(cv[7], h8))));          \
        __m512i sum = _mm512_add_epi64(older, _mm512_mul_epi32(cv[0], h1));                                         \
        latent = _mm512_add_epi64(_mm512_sub_epi64(residual, back), _mm512_srlv_epi64(sum, shift));                 \
        outside = _mm512_or_si512(outside, _mm512_add_epi64(latent, bias));                                         \
        h8 = h7; h7 = h6; h6 = h5; h5 = h4; h4 = h3; h3 = h2; h2 = h1; h1 = latent;                                 \
    } while (0)
    size_t i = 0;
    while (i < n) {
        size_t end = n - i < TRIBUTARY_LINEAR8_BLOCK ? n : i + TRIBUTARY_LINEAR8_BLOCK;
        size_t s = i;
        outside = zero;
        for (; s + 8 <= end; s += 8) {
            __m512i r[8];
            for (int k = 0; k < 8; k++) r[k] = _mm512_loadu_si512((const void *)(v[k] + s));
            transpose8(r);
            for (int j = 0; j < 8; j++) TRIBUTARY_LINEAR8_STEP8(r[j], r[j]);
            transpose8(r);
            for (int k = 0; k < 8; k++) _mm512_storeu_si512((void *)(x[k] + s), r[k]);
        }
        for (; s < end; s++) {
            __m512i latent;
            TRIBUTARY_LINEAR8_STEP8(_mm512_set_epi64(v[7][s], v[6][s], v[5][s], v[4][s], v[3][s], v[2][s], v[1][s], v[0][s]), latent);
            int64_t lanes[8];
            _mm512_storeu_si512((void *)lanes, latent);
            for (int k = 0; k < 8; k++) x[k][s] = lanes[k];
        }
        if (_mm512_test_epi64_mask(outside, high) != 0) return i;
        i = end;
    }
#undef TRIBUTARY_LINEAR8_STEP8
    return n;
}
#else
// Off x86-64: never available, never called.
bool tributary_linear8_x4_available(void) { return false; }
bool tributary_linear8_x8_available(void) { return false; }
size_t tributary_linear8_x8(const int64_t *const v[8], int64_t *const x[8], size_t n, const int64_t *c, const int64_t *q) { return 0; }
size_t tributary_linear8_x4(const int64_t *v0, const int64_t *v1, const int64_t *v2, const int64_t *v3,
                            int64_t *x0, int64_t *x1, int64_t *x2, int64_t *x3, size_t n,
                            const int64_t *c, const int64_t *q) { return 0; }
#endif

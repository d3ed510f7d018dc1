// The order-8 linear predictor's inverse for four channels at once (docs/CAPTURE.md §5.1), in AVX2.
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
    size_t i = 0;
    while (i < n) {
        size_t end = n - i < TRIBUTARY_LINEAR8_BLOCK ? n : i + TRIBUTARY_LINEAR8_BLOCK;
        __m256i outside = zero;
        for (size_t s = i; s < end; s++) {
            // The products of the older seven off the chain, the newest's last.
            __m256i older = _mm256_add_epi64(
                _mm256_add_epi64(_mm256_add_epi64(start, _mm256_mul_epi32(cv[1], h2)),
                                 _mm256_add_epi64(_mm256_mul_epi32(cv[2], h3), _mm256_mul_epi32(cv[3], h4))),
                _mm256_add_epi64(_mm256_add_epi64(_mm256_mul_epi32(cv[4], h5), _mm256_mul_epi32(cv[5], h6)),
                                 _mm256_add_epi64(_mm256_mul_epi32(cv[6], h7), _mm256_mul_epi32(cv[7], h8))));
            __m256i r = _mm256_sub_epi64(_mm256_set_epi64x(v3[s], v2[s], v1[s], v0[s]), back);
            __m256i sum = _mm256_add_epi64(older, _mm256_mul_epi32(cv[0], h1));
            __m256i latent = _mm256_add_epi64(r, _mm256_srlv_epi64(sum, shift));
            outside = _mm256_or_si256(outside, _mm256_add_epi64(latent, bias));
            x0[s] = _mm256_extract_epi64(latent, 0);
            x1[s] = _mm256_extract_epi64(latent, 1);
            x2[s] = _mm256_extract_epi64(latent, 2);
            x3[s] = _mm256_extract_epi64(latent, 3);
            h8 = h7; h7 = h6; h6 = h5; h5 = h4; h4 = h3; h3 = h2; h2 = h1; h1 = latent;
        }
        if (!_mm256_testz_si256(outside, high)) return i;
        i = end;
    }
    return n;
}
#else
// Off x86-64: never available, never called.
bool tributary_linear8_x4_available(void) { return false; }
size_t tributary_linear8_x4(const int64_t *v0, const int64_t *v1, const int64_t *v2, const int64_t *v3,
                            int64_t *x0, int64_t *x1, int64_t *x2, int64_t *x3, size_t n,
                            const int64_t *c, const int64_t *q) { return 0; }
#endif

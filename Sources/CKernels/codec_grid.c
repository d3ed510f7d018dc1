// Latents on a grid to binary64 / binary32 samples (codec_kernels.h).
#include "codec_kernels.h"
#include "dispatch.h"
#include "bits.h"
#include <string.h>

// The reference semantics: a product and a sum, each rounded; a contraction into one fused
// multiply-add would change the last bit of some samples.
#pragma STDC FP_CONTRACT OFF
#if defined(__clang__)
#pragma clang fp contract(off)
#endif


static void grid64_portable(const int64_t *x, uint64_t *out, size_t n, double offset, double gain) {
    for (size_t i = 0; i < n; i++) out[i] = bits64(offset + gain * (double)x[i]);
}

static void grid32_portable(const int64_t *x, uint32_t *out, size_t n, double offset, double gain) {
    for (size_t i = 0; i < n; i++) out[i] = bits32((float)(offset + gain * (double)x[i]));
}

static void grid64_adjusted_portable(const int64_t *x, const int64_t *adj, uint64_t *out, size_t n, double offset, double gain) {
    for (size_t i = 0; i < n; i++) out[i] = bits64(offset + gain * (double)x[i]) + (uint64_t)adj[i];
}

static void grid32_adjusted_portable(const int64_t *x, const int64_t *adj, uint32_t *out, size_t n, double offset, double gain) {
    for (size_t i = 0; i < n; i++) out[i] = bits32((float)(offset + gain * (double)x[i])) + (uint32_t)adj[i];
}

static void narrow16_portable(const int64_t *x, int16_t *out, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = (int16_t)(uint16_t)(uint64_t)x[i];
}

static void narrow32_portable(const int64_t *x, int32_t *out, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = (int32_t)(uint32_t)(uint64_t)x[i];
}

#if defined(__x86_64__)
#include <immintrin.h>

// VPMOVQW / VPMOVQD: eight latents truncated at once.
__attribute__((target("avx512f")))
static void narrow16_avx512(const int64_t *x, int16_t *out, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm_storeu_si128((__m128i *)(out + i), _mm512_cvtepi64_epi16(_mm512_loadu_si512((const void *)(x + i))));
    narrow16_portable(x + i, out + i, n - i);
}

__attribute__((target("avx512f")))
static void narrow32_avx512(const int64_t *x, int32_t *out, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_si256((__m256i *)(out + i), _mm512_cvtepi64_epi32(_mm512_loadu_si512((const void *)(x + i))));
    narrow32_portable(x + i, out + i, n - i);
}

__attribute__((target("avx512f,avx512dq")))
static void grid64_adjusted_avx512(const int64_t *x, const int64_t *adj, uint64_t *out, size_t n, double offset, double gain) {
    const __m512d o = _mm512_set1_pd(offset), g = _mm512_set1_pd(gain);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512d d = _mm512_add_pd(o, _mm512_mul_pd(g, _mm512_cvtepi64_pd(_mm512_loadu_si512((const void *)(x + i)))));
        __m512i bits = _mm512_add_epi64(_mm512_castpd_si512(d), _mm512_loadu_si512((const void *)(adj + i)));
        _mm512_storeu_si512((void *)(out + i), bits);
    }
    grid64_adjusted_portable(x + i, adj + i, out + i, n - i, offset, gain);
}

__attribute__((target("avx512f,avx512dq")))
static void grid32_adjusted_avx512(const int64_t *x, const int64_t *adj, uint32_t *out, size_t n, double offset, double gain) {
    const __m512d o = _mm512_set1_pd(offset), g = _mm512_set1_pd(gain);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512d d = _mm512_add_pd(o, _mm512_mul_pd(g, _mm512_cvtepi64_pd(_mm512_loadu_si512((const void *)(x + i)))));
        __m256i low = _mm512_cvtepi64_epi32(_mm512_loadu_si512((const void *)(adj + i)));  // truncating
        __m256i bits = _mm256_add_epi32(_mm256_castps_si256(_mm512_cvtpd_ps(d)), low);
        _mm256_storeu_si256((__m256i *)(out + i), bits);
    }
    grid32_adjusted_portable(x + i, adj + i, out + i, n - i, offset, gain);
}

// VCVTQQ2PD converts eight int64 at once (round to nearest, as the scalar conversion).
__attribute__((target("avx512f,avx512dq")))
static void grid64_avx512(const int64_t *x, uint64_t *out, size_t n, double offset, double gain) {
    const __m512d o = _mm512_set1_pd(offset), g = _mm512_set1_pd(gain);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512d d = _mm512_cvtepi64_pd(_mm512_loadu_si512((const void *)(x + i)));
        _mm512_storeu_pd((double *)(out + i), _mm512_add_pd(o, _mm512_mul_pd(g, d)));
    }
    grid64_portable(x + i, out + i, n - i, offset, gain);
}

__attribute__((target("avx512f,avx512dq")))
static void grid32_avx512(const int64_t *x, uint32_t *out, size_t n, double offset, double gain) {
    const __m512d o = _mm512_set1_pd(offset), g = _mm512_set1_pd(gain);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512d d = _mm512_cvtepi64_pd(_mm512_loadu_si512((const void *)(x + i)));
        _mm256_storeu_ps((float *)(out + i), _mm512_cvtpd_ps(_mm512_add_pd(o, _mm512_mul_pd(g, d))));
    }
    grid32_portable(x + i, out + i, n - i, offset, gain);
}

// AVX2 has no int64 → double conversion; for |x| < 2^51, adding 1.5 × 2^52 to the bits of
// (x + 1.5 × 2^52 as an integer) gives a double whose value is exactly x + 1.5 × 2^52, and
// subtracting 1.5 × 2^52 back is exact. Blocks with a larger latent take the scalar loop.
__attribute__((target("avx2")))
static void grid64_avx2(const int64_t *x, uint64_t *out, size_t n, double offset, double gain) {
    const __m256d o = _mm256_set1_pd(offset), g = _mm256_set1_pd(gain);
    const __m256i magic = _mm256_set1_epi64x(0x4338000000000000LL);
    const __m256d magicd = _mm256_set1_pd(6755399441055744.0);  // 1.5 × 2^52
    const __m256i limit = _mm256_set1_epi64x((INT64_C(1) << 51) - 1), negative = _mm256_set1_epi64x(-(INT64_C(1) << 51));
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(x + i));
        __m256i outside = _mm256_or_si256(_mm256_cmpgt_epi64(v, limit), _mm256_cmpgt_epi64(negative, v));
        if (!_mm256_testz_si256(outside, outside)) {
            grid64_portable(x + i, out + i, 4, offset, gain);
            continue;
        }
        __m256d d = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_add_epi64(v, magic)), magicd);
        _mm256_storeu_pd((double *)(out + i), _mm256_add_pd(o, _mm256_mul_pd(g, d)));
    }
    grid64_portable(x + i, out + i, n - i, offset, gain);
}


// The same conversion for the other outputs (each block of four with a latent of 2^51 or more
// takes the scalar loop): binary32 samples (VCVTPD2PS rounds to nearest, as the C conversion),
// adjusted samples (the bit patterns plus the adjustments, wrapping), and the integer types.
__attribute__((target("avx2")))
static inline int outside51(__m256i v) {
    const __m256i limit = _mm256_set1_epi64x((INT64_C(1) << 51) - 1), negative = _mm256_set1_epi64x(-(INT64_C(1) << 51));
    __m256i outside = _mm256_or_si256(_mm256_cmpgt_epi64(v, limit), _mm256_cmpgt_epi64(negative, v));
    return !_mm256_testz_si256(outside, outside);
}

__attribute__((target("avx2")))
static inline __m256d on_grid(__m256i v, __m256d o, __m256d g) {
    const __m256i magic = _mm256_set1_epi64x(0x4338000000000000LL);
    const __m256d magicd = _mm256_set1_pd(6755399441055744.0);
    return _mm256_add_pd(o, _mm256_mul_pd(g, _mm256_sub_pd(_mm256_castsi256_pd(_mm256_add_epi64(v, magic)), magicd)));
}

/// The low 32 bits of four int64 lanes, in order.
__attribute__((target("avx2")))
static inline __m128i low32(__m256i v) {
    return _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(v, _mm256_set_epi32(7, 5, 3, 1, 6, 4, 2, 0)));
}

__attribute__((target("avx2")))
static void grid32_avx2(const int64_t *x, uint32_t *out, size_t n, double offset, double gain) {
    const __m256d o = _mm256_set1_pd(offset), g = _mm256_set1_pd(gain);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(x + i));
        if (outside51(v)) { grid32_portable(x + i, out + i, 4, offset, gain); continue; }
        _mm_storeu_ps((float *)(out + i), _mm256_cvtpd_ps(on_grid(v, o, g)));
    }
    grid32_portable(x + i, out + i, n - i, offset, gain);
}

__attribute__((target("avx2")))
static void grid64_adjusted_avx2(const int64_t *x, const int64_t *adj, uint64_t *out, size_t n, double offset, double gain) {
    const __m256d o = _mm256_set1_pd(offset), g = _mm256_set1_pd(gain);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(x + i));
        if (outside51(v)) { grid64_adjusted_portable(x + i, adj + i, out + i, 4, offset, gain); continue; }
        __m256i bits = _mm256_add_epi64(_mm256_castpd_si256(on_grid(v, o, g)), _mm256_loadu_si256((const __m256i *)(adj + i)));
        _mm256_storeu_si256((__m256i *)(out + i), bits);
    }
    grid64_adjusted_portable(x + i, adj + i, out + i, n - i, offset, gain);
}

__attribute__((target("avx2")))
static void grid32_adjusted_avx2(const int64_t *x, const int64_t *adj, uint32_t *out, size_t n, double offset, double gain) {
    const __m256d o = _mm256_set1_pd(offset), g = _mm256_set1_pd(gain);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(x + i));
        if (outside51(v)) { grid32_adjusted_portable(x + i, adj + i, out + i, 4, offset, gain); continue; }
        __m128i bits = _mm_add_epi32(_mm_castps_si128(_mm256_cvtpd_ps(on_grid(v, o, g))), low32(_mm256_loadu_si256((const __m256i *)(adj + i))));
        _mm_storeu_si128((__m128i *)(out + i), bits);
    }
    grid32_adjusted_portable(x + i, adj + i, out + i, n - i, offset, gain);
}

__attribute__((target("avx2")))
static void narrow32_avx2(const int64_t *x, int32_t *out, size_t n) {
    size_t i = 0;
    for (; i + 4 <= n; i += 4) _mm_storeu_si128((__m128i *)(out + i), low32(_mm256_loadu_si256((const __m256i *)(x + i))));
    narrow32_portable(x + i, out + i, n - i);
}

__attribute__((target("avx2")))
static void narrow16_avx2(const int64_t *x, int16_t *out, size_t n) {
    // Bytes 0-1 of each 64-bit lane to the front of its 128-bit half, then the halves together.
    const __m256i pick = _mm256_setr_epi8(0, 1, 8, 9, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                          0, 1, 8, 9, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i a = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)(x + i)), pick);
        __m256i b = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)(x + i + 4)), pick);
        __m128i lo = _mm_unpacklo_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
        __m128i hi = _mm_unpacklo_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
        _mm_storeu_si128((__m128i *)(out + i), _mm_unpacklo_epi64(lo, hi));
    }
    narrow16_portable(x + i, out + i, n - i);
}

void tributary_grid64(const int64_t *x, uint64_t *out, size_t n, double offset, double gain) {
    switch (tributary_kernel_level()) {
    case KERNEL_AVX512: grid64_avx512(x, out, n, offset, gain); break;
    case KERNEL_AVX2_BMI2: grid64_avx2(x, out, n, offset, gain); break;
    default: grid64_portable(x, out, n, offset, gain);
    }
}

void tributary_grid32(const int64_t *x, uint32_t *out, size_t n, double offset, double gain) {
    switch (tributary_kernel_level()) {
    case KERNEL_AVX512: grid32_avx512(x, out, n, offset, gain); break;
    case KERNEL_AVX2_BMI2: grid32_avx2(x, out, n, offset, gain); break;
    default: grid32_portable(x, out, n, offset, gain);
    }
}

void tributary_grid64_adjusted(const int64_t *x, const int64_t *adj, uint64_t *out, size_t n, double offset, double gain) {
    switch (tributary_kernel_level()) {
    case KERNEL_AVX512: grid64_adjusted_avx512(x, adj, out, n, offset, gain); break;
    case KERNEL_AVX2_BMI2: grid64_adjusted_avx2(x, adj, out, n, offset, gain); break;
    default: grid64_adjusted_portable(x, adj, out, n, offset, gain);
    }
}

void tributary_grid32_adjusted(const int64_t *x, const int64_t *adj, uint32_t *out, size_t n, double offset, double gain) {
    switch (tributary_kernel_level()) {
    case KERNEL_AVX512: grid32_adjusted_avx512(x, adj, out, n, offset, gain); break;
    case KERNEL_AVX2_BMI2: grid32_adjusted_avx2(x, adj, out, n, offset, gain); break;
    default: grid32_adjusted_portable(x, adj, out, n, offset, gain);
    }
}

void tributary_narrow16(const int64_t *x, int16_t *out, size_t n) {
    switch (tributary_kernel_level()) {
    case KERNEL_AVX512: narrow16_avx512(x, out, n); break;
    case KERNEL_AVX2_BMI2: narrow16_avx2(x, out, n); break;
    default: narrow16_portable(x, out, n);
    }
}

void tributary_narrow32(const int64_t *x, int32_t *out, size_t n) {
    switch (tributary_kernel_level()) {
    case KERNEL_AVX512: narrow32_avx512(x, out, n); break;
    case KERNEL_AVX2_BMI2: narrow32_avx2(x, out, n); break;
    default: narrow32_portable(x, out, n);
    }
}

#else
void tributary_narrow16(const int64_t *x, int16_t *out, size_t n) { narrow16_portable(x, out, n); }
void tributary_narrow32(const int64_t *x, int32_t *out, size_t n) { narrow32_portable(x, out, n); }
void tributary_grid64_adjusted(const int64_t *x, const int64_t *adj, uint64_t *out, size_t n, double offset, double gain) {
    grid64_adjusted_portable(x, adj, out, n, offset, gain);
}
void tributary_grid32_adjusted(const int64_t *x, const int64_t *adj, uint32_t *out, size_t n, double offset, double gain) {
    grid32_adjusted_portable(x, adj, out, n, offset, gain);
}
void tributary_grid64(const int64_t *x, uint64_t *out, size_t n, double offset, double gain) {
    grid64_portable(x, out, n, offset, gain);
}
void tributary_grid32(const int64_t *x, uint32_t *out, size_t n, double offset, double gain) {
    grid32_portable(x, out, n, offset, gain);
}
#endif

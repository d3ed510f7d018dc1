// The order-8 linear predictor's inverse for four channels at once (docs/CAPTURE.md §5.1), in AVX2,
// and for eight at once in AVX-512 (further down). The four lanes run first in binary64 FMAs where
// that is exact (`linear8_x4_f64`, optionally writing the samples in the same pass: binary64 and
// binary32 grids, int32, int16), and in the 64-bit integer lanes described here otherwise.
//
// One channel's recurrence x[i] = v[i] + ((2^(q-1) + Σ c[j] × x[i-1-j]) >> q) (wrapping 64-bit
// arithmetic, missing history 0) is bound by its dependency chain and by the one integer
// multiplier; four channels in the lanes of a vector run four chains at once, with the products on
// the vector units. VPMULDQ multiplies the low 32 bits of each lane (signed) into 64, so the lanes
// give the wrapping 64-bit result exactly while every coefficient and every latent lies in
// [-2^31, 2^31): the coefficients are checked first, the latents in blocks as they are made.
// The declarations and their contracts: include/linear_predictor.h.
#include "linear_predictor.h"
#include <math.h>

// The grid conversion as tributary_grid64 defines it: a product and a sum, each rounded.
#pragma STDC FP_CONTRACT OFF
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

#if defined(__x86_64__)
#include <immintrin.h>

bool tributary_linear8_x4_available(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
}

/// Steps of one block between checks of the latents' range.
#define TRIBUTARY_LINEAR8_BLOCK 64

__attribute__((target("avx2")))
static size_t linear8_x4_int(const int64_t *v0, const int64_t *v1, const int64_t *v2, const int64_t *v3,
                             int64_t *x0, int64_t *x1, int64_t *x2, int64_t *x3, size_t n,
                             const int64_t *c, const int64_t *q);

static bool fma_available(void) {
    static int known = -1;
    if (known < 0) { __builtin_cpu_init(); known = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
    return known;
}

/// The largest power of two B ≤ 2^30 for which the binary64 kernel is exact while every latent
/// lies in [-B, B), or 0 when there is none ≥ 2^8 (or a coefficient is outside [-2^31, 2^31), or
/// q outside 1 … 50). With W = Σ|c[j]|, a residual is then |v| ≤ B + 2 + W·B / 2^q (the latent
/// minus its prediction), and every partial sum of a step, in units of 2^-q, is at most
/// 2^(q-1) + 2^q·|v| + W·B ≤ 2^q·(B + 2) + 2·W·B, which must stay below 2^53.
static int64_t exact_bound(const int64_t *c, int64_t q) {
    if (q < 1 || q > 50) return 0;
    unsigned __int128 w = 0;
    for (int j = 0; j < 8; j++) {
        if (c[j] < -(INT64_C(1) << 31) || c[j] >= (INT64_C(1) << 31)) return 0;
        w += (unsigned __int128)(c[j] < 0 ? -c[j] : c[j]);
    }
    const unsigned __int128 limit = (unsigned __int128)1 << 53;
    for (int k = 30; k >= 8; k--) {
        const unsigned __int128 b = (unsigned __int128)1 << k;
        if ((((unsigned __int128)1 << q) * (b + 2)) + 2 * w * b < limit) return (int64_t)b;
    }
    return 0;
}

/// What the binary64 kernel writes for each lane: the latents (int64), or the samples of one of
/// the kinds of `tributary_linear8_samples_x4` (linear_predictor.h).
enum { LINEAR8_LATENTS = 0 };

// The recurrence in binary64 with fused multiply-adds, where that is exact: with the coefficients
// scaled by 2^-q (exact: they have 32 bits), a step's sum v + 1/2 + Σ c[j] 2^-q x[i-1-j] is a
// multiple of 2^-q, and while the latents lie in [-B, B) (`exact_bound`) every partial sum is an
// integer number of 2^-q below 2^53: every product and addition is exact, in any order, and the
// floor of the sum is the integer rule's v + ((2^(q-1) + Σ) >> q). A block in which a latent left
// [-B, B) ends the call (its return value is then < n and nothing written is to be used). A
// residual whose conversion is not exact (|v| ≥ 2^51) becomes a binary64 of at least 2^51 in
// magnitude, an infinity or a NaN: the latent it makes leaves [-B, B) or is NaN, caught either way.
// On Zen 1 a 256-bit FMA runs a cycle on two pipes, a 64-bit integer product on one: this is
// faster than the integer kernel, and fused with the grid conversion faster than the inverse and
// the conversion as two passes (Benchmarks/kernels/linear8_bench.c times each form in one run). The
// integer kinds take the latents' low bits from x + 1.5 × 2^52 and gather each lane's four steps by
// blends (no transpose), faster than the inverse followed by a narrowing pass.
__attribute__((target("avx2,fma"), always_inline))
static inline size_t linear8_x4_f64(const int64_t *const v[4], void *const out[4], size_t n,
                                    const int64_t *c, const int64_t *q, int mode, int order,
                                    const double *offset, const double *gain) {
    if (n == 0 || !fma_available()) return 0;
    double bound[4];
    for (int k = 0; k < 4; k++) {
        int64_t b = exact_bound(c + 8 * k, q[k]);
        if (b == 0) return 0;
        bound[k] = (double)b;
    }
    const int64_t *const v0 = v[0], *const v1 = v[1], *const v2 = v[2], *const v3 = v[3];
    __m256d cv[8];
    for (int j = 0; j < 8; j++)
        cv[j] = _mm256_set_pd(ldexp((double)c[24 + j], -(int)q[3]), ldexp((double)c[16 + j], -(int)q[2]),
                              ldexp((double)c[8 + j], -(int)q[1]), ldexp((double)c[j], -(int)q[0]));
    const __m256d above = _mm256_set_pd(bound[3], bound[2], bound[1], bound[0]);
    const __m256d below = _mm256_sub_pd(_mm256_setzero_pd(), above);
    // int64 ↔ binary64 for |value| < 2^51: the integer added to the bits of 1.5 × 2^52.
    const __m256i magic = _mm256_set1_epi64x(0x4338000000000000LL);
    const __m256d magicd = _mm256_set1_pd(6755399441055744.0);
    const __m256d half = _mm256_set1_pd(0.5);
    __m256d go = _mm256_setzero_pd(), gg = go;  // the lanes' grid
    if (mode == TRIBUTARY_SAMPLES_GRID64 || mode == TRIBUTARY_SAMPLES_GRID32) {
        go = _mm256_set_pd(offset[3], offset[2], offset[1], offset[0]);
        gg = _mm256_set_pd(gain[3], gain[2], gain[1], gain[0]);
    }
    // The transposed form: when a latent is made, its eight products go at once into the sums of
    // the eight steps after it. `sum` is this step's complete sum, a1 … a7 the running sums of the
    // seven after it (a1 still without its newest product). The next step's sum is made right
    // after the floor, ahead of the other seven products, which become ready at the same moment
    // (the scheduler takes the oldest first). Every sum starts at 1/2, the rounding term 2^(q-1)
    // in units of 2^-q, and takes its residual one step before its newest product.
#define TRIBUTARY_LINEAR8_RESIDUAL(residual)                                                                        \
    _mm256_sub_pd(_mm256_castsi256_pd(_mm256_add_epi64(residual, magic)), magicd)
    __m256d sum = _mm256_add_pd(half, TRIBUTARY_LINEAR8_RESIDUAL(_mm256_set_epi64x(v3[0], v2[0], v1[0], v0[0])));
    __m256d a1 = half, a2 = half, a3 = half, a4 = half, a5 = half, a6 = half, a7 = half;
    // The block's largest and smallest latents. A NaN (from a residual whose bits made one) is not
    // seen by them, but it stays in its lane: every later sum takes a product of it (0 × NaN is
    // NaN too), so the next step's sum is NaN at the block's end.
    __m256d highest = below, lowest = above;
    // `order` (a constant in each instance: 2, 4 or 8) leaves out the products of coefficients
    // that are 0 in every lane; the running sums past it only pass their residuals on.
#define TRIBUTARY_LINEAR8_F64_STEP(x)                                                                               \
    do {                                                                                                            \
        x = _mm256_round_pd(sum, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);                                        \
        sum = _mm256_fmadd_pd(cv[0], x, a1);                                                                        \
        a1 = order > 1 ? _mm256_fmadd_pd(cv[1], x, a2) : a2;                                                        \
        a2 = order > 2 ? _mm256_fmadd_pd(cv[2], x, a3) : a3;                                                        \
        a3 = order > 3 ? _mm256_fmadd_pd(cv[3], x, a4) : a4;                                                        \
        a4 = order > 4 ? _mm256_fmadd_pd(cv[4], x, a5) : a5;                                                        \
        a5 = order > 5 ? _mm256_fmadd_pd(cv[5], x, a6) : a6;                                                        \
        a6 = order > 6 ? _mm256_fmadd_pd(cv[6], x, a7) : a7;                                                        \
        a7 = order > 7 ? _mm256_fmadd_pd(cv[7], x, half) : half;                                                    \
        highest = _mm256_max_pd(x, highest);                                                                        \
        lowest = _mm256_min_pd(x, lowest);                                                                          \
    } while (0)
    // A step's four latents (integers in binary64) as 64-bit output elements (latents, grid64) ...
#define TRIBUTARY_LINEAR8_WIDE(x)                                                                                   \
    (mode == TRIBUTARY_SAMPLES_GRID64 ? _mm256_castpd_si256(_mm256_add_pd(go, _mm256_mul_pd(gg, x)))                \
                                      : _mm256_sub_epi64(_mm256_castpd_si256(_mm256_add_pd(x, magicd)), magic))
    // ... or 32-bit ones (grid32: the binary64 sample rounded to binary32 as the C cast does; the
    // integers, |x| < 2^30, converted exactly; int16 keeps their low 16 bits when it is stored).
#define TRIBUTARY_LINEAR8_NARROW(x)                                                                                 \
    (mode == TRIBUTARY_SAMPLES_GRID32 ? _mm_castps_si128(_mm256_cvtpd_ps(_mm256_add_pd(go, _mm256_mul_pd(gg, x))))  \
                                      : _mm256_cvtpd_epi32(x))
    const bool wide = mode == LINEAR8_LATENTS || mode == TRIBUTARY_SAMPLES_GRID64;
    // The low two bytes of each 32-bit element, packed into the low eight bytes.
    const __m128i low16 = _mm_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1);
    char *const o[4] = {out[0], out[1], out[2], out[3]};
    size_t i = 0;
    while (i < n) {
        size_t end = n - i < TRIBUTARY_LINEAR8_BLOCK ? n : i + TRIBUTARY_LINEAR8_BLOCK;
        size_t s = i;
        // Four steps at a time, with the residuals of the four steps after them (s + 1 … s + 4):
        // each step vector from two 128-bit loads and an unpack, the results back the same way.
        for (; s + 4 <= end && s + 4 < n; s += 4) {
            const size_t t = s + 1;
            __m256i a02 = _mm256_loadu2_m128i((const __m128i *)(v2 + t), (const __m128i *)(v0 + t));
            __m256i b13 = _mm256_loadu2_m128i((const __m128i *)(v3 + t), (const __m128i *)(v1 + t));
            __m256i c02 = _mm256_loadu2_m128i((const __m128i *)(v2 + t + 2), (const __m128i *)(v0 + t + 2));
            __m256i d13 = _mm256_loadu2_m128i((const __m128i *)(v3 + t + 2), (const __m128i *)(v1 + t + 2));
            a1 = _mm256_add_pd(a1, TRIBUTARY_LINEAR8_RESIDUAL(_mm256_unpacklo_epi64(a02, b13)));
            a2 = _mm256_add_pd(a2, TRIBUTARY_LINEAR8_RESIDUAL(_mm256_unpackhi_epi64(a02, b13)));
            a3 = _mm256_add_pd(a3, TRIBUTARY_LINEAR8_RESIDUAL(_mm256_unpacklo_epi64(c02, d13)));
            a4 = _mm256_add_pd(a4, TRIBUTARY_LINEAR8_RESIDUAL(_mm256_unpackhi_epi64(c02, d13)));
            __m256d x0, x1, x2, x3;
            TRIBUTARY_LINEAR8_F64_STEP(x0);
            TRIBUTARY_LINEAR8_F64_STEP(x1);
            TRIBUTARY_LINEAR8_F64_STEP(x2);
            TRIBUTARY_LINEAR8_F64_STEP(x3);
            if (wide) {
                __m256i l0 = TRIBUTARY_LINEAR8_WIDE(x0), l1 = TRIBUTARY_LINEAR8_WIDE(x1);
                __m256i l2 = TRIBUTARY_LINEAR8_WIDE(x2), l3 = TRIBUTARY_LINEAR8_WIDE(x3);
                uint64_t *const w0 = (uint64_t *)o[0], *const w1 = (uint64_t *)o[1], *const w2 = (uint64_t *)o[2], *const w3 = (uint64_t *)o[3];
                _mm256_storeu2_m128i((__m128i *)(w2 + s), (__m128i *)(w0 + s), _mm256_unpacklo_epi64(l0, l1));
                _mm256_storeu2_m128i((__m128i *)(w3 + s), (__m128i *)(w1 + s), _mm256_unpackhi_epi64(l0, l1));
                _mm256_storeu2_m128i((__m128i *)(w2 + s + 2), (__m128i *)(w0 + s + 2), _mm256_unpacklo_epi64(l2, l3));
                _mm256_storeu2_m128i((__m128i *)(w3 + s + 2), (__m128i *)(w1 + s + 2), _mm256_unpackhi_epi64(l2, l3));
            } else if (mode == TRIBUTARY_SAMPLES_INT16) {
                // x + 1.5 × 2^52 holds the integer in its low bits; the four steps' low 16 bits
                // gathered into each lane's 64 bits by blends are that lane's four samples.
                __m256i y0 = _mm256_castpd_si256(_mm256_add_pd(x0, magicd)), y1 = _mm256_castpd_si256(_mm256_add_pd(x1, magicd));
                __m256i y2 = _mm256_castpd_si256(_mm256_add_pd(x2, magicd)), y3 = _mm256_castpd_si256(_mm256_add_pd(x3, magicd));
                __m256i w = _mm256_blend_epi16(y0, _mm256_slli_epi64(y1, 16), 0x22);
                w = _mm256_blend_epi16(w, _mm256_slli_epi64(y2, 32), 0x44);
                w = _mm256_blend_epi16(w, _mm256_slli_epi64(y3, 48), 0x88);
                __m128i low = _mm256_castsi256_si128(w), high = _mm256_extracti128_si256(w, 1);
                _mm_storel_epi64((__m128i *)(o[0] + 2 * s), low);
                _mm_storeh_pd((double *)(o[1] + 2 * s), _mm_castsi128_pd(low));
                _mm_storel_epi64((__m128i *)(o[2] + 2 * s), high);
                _mm_storeh_pd((double *)(o[3] + 2 * s), _mm_castsi128_pd(high));
            } else if (mode == TRIBUTARY_SAMPLES_INT32) {
                // The same with 32 bits: two steps a lane in each 64 bits, lanes 0 and 2 of both
                // pairs in one vector, 1 and 3 in the other.
                __m256i y0 = _mm256_castpd_si256(_mm256_add_pd(x0, magicd)), y1 = _mm256_castpd_si256(_mm256_add_pd(x1, magicd));
                __m256i y2 = _mm256_castpd_si256(_mm256_add_pd(x2, magicd)), y3 = _mm256_castpd_si256(_mm256_add_pd(x3, magicd));
                __m256i p01 = _mm256_blend_epi32(y0, _mm256_slli_epi64(y1, 32), 0xAA);
                __m256i p23 = _mm256_blend_epi32(y2, _mm256_slli_epi64(y3, 32), 0xAA);
                _mm256_storeu2_m128i((__m128i *)(o[2] + 4 * s), (__m128i *)(o[0] + 4 * s), _mm256_unpacklo_epi64(p01, p23));
                _mm256_storeu2_m128i((__m128i *)(o[3] + 4 * s), (__m128i *)(o[1] + 4 * s), _mm256_unpackhi_epi64(p01, p23));
            } else {
                // The 4 × 4 transpose of 32-bit elements: step-major vectors into lane-major ones.
                __m128i l0 = TRIBUTARY_LINEAR8_NARROW(x0), l1 = TRIBUTARY_LINEAR8_NARROW(x1);
                __m128i l2 = TRIBUTARY_LINEAR8_NARROW(x2), l3 = TRIBUTARY_LINEAR8_NARROW(x3);
                __m128i t0 = _mm_unpacklo_epi32(l0, l1), t1 = _mm_unpackhi_epi32(l0, l1);
                __m128i t2 = _mm_unpacklo_epi32(l2, l3), t3 = _mm_unpackhi_epi32(l2, l3);
                __m128i r[4] = {_mm_unpacklo_epi64(t0, t2), _mm_unpackhi_epi64(t0, t2), _mm_unpacklo_epi64(t1, t3), _mm_unpackhi_epi64(t1, t3)};
                for (int k = 0; k < 4; k++) {
                    if (mode == TRIBUTARY_SAMPLES_INT16) _mm_storel_epi64((__m128i *)(o[k] + 2 * s), _mm_shuffle_epi8(r[k], low16));
                    else _mm_storeu_si128((__m128i *)(o[k] + 4 * s), r[k]);
                }
            }
        }
        for (; s < end; s++) {
            if (s + 1 < n) a1 = _mm256_add_pd(a1, TRIBUTARY_LINEAR8_RESIDUAL(_mm256_set_epi64x(v3[s + 1], v2[s + 1], v1[s + 1], v0[s + 1])));
            __m256d x;
            TRIBUTARY_LINEAR8_F64_STEP(x);
            if (wide) {
                uint64_t lanes[4];
                _mm256_storeu_si256((__m256i *)lanes, TRIBUTARY_LINEAR8_WIDE(x));
                for (int k = 0; k < 4; k++) ((uint64_t *)o[k])[s] = lanes[k];
            } else {
                uint32_t lanes[4];
                _mm_storeu_si128((__m128i *)lanes, TRIBUTARY_LINEAR8_NARROW(x));
                for (int k = 0; k < 4; k++) {
                    if (mode == TRIBUTARY_SAMPLES_INT16) ((uint16_t *)o[k])[s] = (uint16_t)lanes[k];
                    else ((uint32_t *)o[k])[s] = lanes[k];
                }
            }
        }
        __m256d outside = _mm256_or_pd(_mm256_or_pd(_mm256_cmp_pd(highest, above, _CMP_GE_OQ), _mm256_cmp_pd(lowest, below, _CMP_LT_OQ)),
                                       _mm256_cmp_pd(sum, sum, _CMP_UNORD_Q));
        if (!_mm256_testz_pd(outside, outside)) return i;
        i = end;
    }
#undef TRIBUTARY_LINEAR8_F64_STEP
#undef TRIBUTARY_LINEAR8_WIDE
#undef TRIBUTARY_LINEAR8_NARROW
#undef TRIBUTARY_LINEAR8_RESIDUAL
    return n;
}

/// The order the four lanes' coefficients need: 2 or 4 when those past it are 0 in every lane
/// (a segment of a lower order, padded), else 8.
static int lanes_order(const int64_t *c) {
    int64_t past2 = 0, past4 = 0;
    for (int k = 0; k < 4; k++) {
        for (int j = 2; j < 4; j++) past2 |= c[8 * k + j];
        for (int j = 4; j < 8; j++) past4 |= c[8 * k + j];
    }
    return (past2 | past4) == 0 ? 2 : (past4 == 0 ? 4 : 8);
}

// One instance of the kernel per output kind and order: both are constants in each, so that the
// conversion, the stores and the products are chosen at compile time.
#define TRIBUTARY_LINEAR8_KIND(kind, mode)                                                                          \
    __attribute__((target("avx2,fma"))) static size_t linear8_x4_##kind##_2(                                        \
        const int64_t *const v[4], void *const out[4], size_t n, const int64_t *c, const int64_t *q,                \
        const double *offset, const double *gain) {                                                                 \
        return linear8_x4_f64(v, out, n, c, q, mode, 2, offset, gain);                                              \
    }                                                                                                               \
    __attribute__((target("avx2,fma"))) static size_t linear8_x4_##kind##_4(                                        \
        const int64_t *const v[4], void *const out[4], size_t n, const int64_t *c, const int64_t *q,                \
        const double *offset, const double *gain) {                                                                 \
        return linear8_x4_f64(v, out, n, c, q, mode, 4, offset, gain);                                              \
    }                                                                                                               \
    __attribute__((target("avx2,fma"))) static size_t linear8_x4_##kind(                                            \
        const int64_t *const v[4], void *const out[4], size_t n, const int64_t *c, const int64_t *q,                \
        const double *offset, const double *gain) {                                                                 \
        switch (lanes_order(c)) {                                                                                   \
        case 2: return linear8_x4_##kind##_2(v, out, n, c, q, offset, gain);                                        \
        case 4: return linear8_x4_##kind##_4(v, out, n, c, q, offset, gain);                                        \
        default: return linear8_x4_f64(v, out, n, c, q, mode, 8, offset, gain);                                     \
        }                                                                                                           \
    }
TRIBUTARY_LINEAR8_KIND(LATENTS, LINEAR8_LATENTS)
TRIBUTARY_LINEAR8_KIND(GRID64, TRIBUTARY_SAMPLES_GRID64)
TRIBUTARY_LINEAR8_KIND(GRID32, TRIBUTARY_SAMPLES_GRID32)
TRIBUTARY_LINEAR8_KIND(INT32, TRIBUTARY_SAMPLES_INT32)
TRIBUTARY_LINEAR8_KIND(INT16, TRIBUTARY_SAMPLES_INT16)
#undef TRIBUTARY_LINEAR8_KIND

static size_t linear8_x4_f64_latents(const int64_t *const v[4], int64_t *const x[4], size_t n, const int64_t *c, const int64_t *q) {
    void *const out[4] = {x[0], x[1], x[2], x[3]};
    return linear8_x4_LATENTS(v, out, n, c, q, NULL, NULL);
}

size_t tributary_linear8_samples_x4(const int64_t *const v[4], void *const out[4], size_t n, const int64_t *c, const int64_t *q,
                                    int kind, const double *offset, const double *gain) {
    switch (kind) {
    case TRIBUTARY_SAMPLES_GRID64: return linear8_x4_GRID64(v, out, n, c, q, offset, gain);
    case TRIBUTARY_SAMPLES_GRID32: return linear8_x4_GRID32(v, out, n, c, q, offset, gain);
    case TRIBUTARY_SAMPLES_INT32: return linear8_x4_INT32(v, out, n, c, q, offset, gain);
    case TRIBUTARY_SAMPLES_INT16: return linear8_x4_INT16(v, out, n, c, q, offset, gain);
    default: return 0;
    }
}

size_t tributary_linear8_x4(const int64_t *v0, const int64_t *v1, const int64_t *v2, const int64_t *v3,
                            int64_t *x0, int64_t *x1, int64_t *x2, int64_t *x3, size_t n,
                            const int64_t *c, const int64_t *q) {
    const int64_t *const v[4] = {v0, v1, v2, v3};
    int64_t *const x[4] = {x0, x1, x2, x3};
    if (linear8_x4_f64_latents(v, x, n, c, q) == n) return n;
    return linear8_x4_int(v0, v1, v2, v3, x0, x1, x2, x3, n, c, q);
}

__attribute__((target("avx2")))
static size_t linear8_x4_int(const int64_t *v0, const int64_t *v1, const int64_t *v2, const int64_t *v3,
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
        // eight micro-ops on Zen 1, where this made the kernel measurably faster).
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
size_t tributary_linear8_samples_x4(const int64_t *const v[4], void *const out[4], size_t n, const int64_t *c, const int64_t *q,
                                    int kind, const double *offset, const double *gain) { return 0; }
size_t tributary_linear8_x8(const int64_t *const v[8], int64_t *const x[8], size_t n, const int64_t *c, const int64_t *q) { return 0; }
size_t tributary_linear8_x4(const int64_t *v0, const int64_t *v1, const int64_t *v2, const int64_t *v3,
                            int64_t *x0, int64_t *x1, int64_t *x2, int64_t *x3, size_t n,
                            const int64_t *c, const int64_t *q) { return 0; }
#endif

// The Welch segment's loops around the FFT (dsp_kernels.h).
#include "dsp_kernels.h"
#include "dispatch.h"

#pragma STDC FP_CONTRACT OFF
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

static double leaf_portable(const double *a, size_t n) {
    double r0 = a[0], r1 = a[1], r2 = a[2], r3 = a[3], r4 = a[4], r5 = a[5], r6 = a[6], r7 = a[7];
    size_t i = 8, end = n - n % 8;
    for (; i < end; i += 8) {
        r0 += a[i]; r1 += a[i + 1]; r2 += a[i + 2]; r3 += a[i + 3];
        r4 += a[i + 4]; r5 += a[i + 5]; r6 += a[i + 6]; r7 += a[i + 7];
    }
    double result = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7));
    for (; i < n; i++) result += a[i];
    return result;
}

static void detrend_window_portable(const double *x, const double *w, double mean, double *out, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = (x[i] - mean) * w[i];
}

static void accumulate_power_portable(const double *y, double *sums, size_t bins) {
    for (size_t k = 0; k < bins; k++) {
        double re = y[2 * k], im = y[2 * k + 1];
        sums[k] += re * re + im * im;
    }
}

#if defined(__x86_64__)
#include <immintrin.h>

// The eight running sums are the eight lanes of one vector.
__attribute__((target("avx512f")))
static double leaf_avx512(const double *a, size_t n) {
    __m512d r = _mm512_loadu_pd(a);
    size_t i = 8, end = n - n % 8;
    for (; i < end; i += 8) r = _mm512_add_pd(r, _mm512_loadu_pd(a + i));
    double l[8];
    _mm512_storeu_pd(l, r);
    double result = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
    for (; i < n; i++) result += a[i];
    return result;
}

__attribute__((target("avx2")))
static double leaf_avx2(const double *a, size_t n) {
    __m256d lo = _mm256_loadu_pd(a), hi = _mm256_loadu_pd(a + 4);
    size_t i = 8, end = n - n % 8;
    for (; i < end; i += 8) {
        lo = _mm256_add_pd(lo, _mm256_loadu_pd(a + i));
        hi = _mm256_add_pd(hi, _mm256_loadu_pd(a + i + 4));
    }
    double l[8];
    _mm256_storeu_pd(l, lo);
    _mm256_storeu_pd(l + 4, hi);
    double result = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
    for (; i < n; i++) result += a[i];
    return result;
}

__attribute__((target("avx512f")))
static void detrend_window_avx512(const double *x, const double *w, double mean, double *out, size_t n) {
    const __m512d m = _mm512_set1_pd(mean);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm512_storeu_pd(out + i, _mm512_mul_pd(_mm512_sub_pd(_mm512_loadu_pd(x + i), m), _mm512_loadu_pd(w + i)));
    }
    detrend_window_portable(x + i, w + i, mean, out + i, n - i);
}

__attribute__((target("avx2")))
static void detrend_window_avx2(const double *x, const double *w, double mean, double *out, size_t n) {
    const __m256d m = _mm256_set1_pd(mean);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        _mm256_storeu_pd(out + i, _mm256_mul_pd(_mm256_sub_pd(_mm256_loadu_pd(x + i), m), _mm256_loadu_pd(w + i)));
    }
    detrend_window_portable(x + i, w + i, mean, out + i, n - i);
}

// Eight bins a step: the squares of 16 interleaved values, their real and imaginary halves
// gathered by two permutes, added, and added to the sums.
__attribute__((target("avx512f")))
static void accumulate_power_avx512(const double *y, double *sums, size_t bins) {
    const __m512i even = _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0), odd = _mm512_set_epi64(15, 13, 11, 9, 7, 5, 3, 1);
    size_t k = 0;
    for (; k + 8 <= bins; k += 8) {
        __m512d a = _mm512_loadu_pd(y + 2 * k), b = _mm512_loadu_pd(y + 2 * k + 8);
        __m512d sa = _mm512_mul_pd(a, a), sb = _mm512_mul_pd(b, b);
        __m512d p = _mm512_add_pd(_mm512_permutex2var_pd(sa, even, sb), _mm512_permutex2var_pd(sa, odd, sb));
        _mm512_storeu_pd(sums + k, _mm512_add_pd(_mm512_loadu_pd(sums + k), p));
    }
    accumulate_power_portable(y + 2 * k, sums + k, bins - k);
}

__attribute__((target("avx2")))
static void accumulate_power_avx2(const double *y, double *sums, size_t bins) {
    size_t k = 0;
    for (; k + 4 <= bins; k += 4) {
        __m256d a = _mm256_loadu_pd(y + 2 * k), b = _mm256_loadu_pd(y + 2 * k + 4);
        __m256d sa = _mm256_mul_pd(a, a), sb = _mm256_mul_pd(b, b);
        // hadd gives (sa0 + sa1, sb0 + sb1, sa2 + sa3, sb2 + sb3): re² + im² of bins 0, 2, 1, 3.
        __m256d p = _mm256_permute4x64_pd(_mm256_hadd_pd(sa, sb), 0xD8);
        _mm256_storeu_pd(sums + k, _mm256_add_pd(_mm256_loadu_pd(sums + k), p));
    }
    accumulate_power_portable(y + 2 * k, sums + k, bins - k);
}

static double leaf(const double *a, size_t n, int level) {
    return level == KERNEL_AVX512 ? leaf_avx512(a, n) : level == KERNEL_AVX2_BMI2 ? leaf_avx2(a, n) : leaf_portable(a, n);
}

void tributary_detrend_window(const double *x, const double *w, double mean, double *out, size_t n) {
    switch (tributary_kernel_level()) {
    case KERNEL_AVX512: detrend_window_avx512(x, w, mean, out, n); break;
    case KERNEL_AVX2_BMI2: detrend_window_avx2(x, w, mean, out, n); break;
    default: detrend_window_portable(x, w, mean, out, n);
    }
}

void tributary_accumulate_power(const double *y, double *sums, size_t bins) {
    switch (tributary_kernel_level()) {
    case KERNEL_AVX512: accumulate_power_avx512(y, sums, bins); break;
    case KERNEL_AVX2_BMI2: accumulate_power_avx2(y, sums, bins); break;
    default: accumulate_power_portable(y, sums, bins);
    }
}
#else
static double leaf(const double *a, size_t n, int level) { (void)level; return leaf_portable(a, n); }
void tributary_detrend_window(const double *x, const double *w, double mean, double *out, size_t n) {
    detrend_window_portable(x, w, mean, out, n);
}
void tributary_accumulate_power(const double *y, double *sums, size_t bins) { accumulate_power_portable(y, sums, bins); }
#endif

static double pairwise(const double *a, size_t n, int level) {
    if (n < 8) {
        double r = 0;
        for (size_t i = 0; i < n; i++) r += a[i];
        return r;
    }
    if (n <= 128) return leaf(a, n, level);
    size_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise(a, n2, level) + pairwise(a + n2, n - n2, level);
}

double tributary_pairwise_sum(const double *a, size_t n) { return pairwise(a, n, tributary_kernel_level()); }

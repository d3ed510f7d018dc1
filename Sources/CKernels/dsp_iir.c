// Four lines of samples through a cascade of second-order sections at once (dsp_kernels.h): the
// lines are the lanes of one vector, and up to four sections' states stay in registers while a
// block of samples passes, so the recursion of one line no longer waits on memory and four lines
// share each instruction. Each lane computes exactly scipy's _sosfilt: the same operations in the
// same order, every product and sum rounded apart (never fused).
#include "dsp_kernels.h"
#include "dispatch.h"

#include <stdlib.h>

#pragma STDC FP_CONTRACT OFF
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

typedef double lanes4 __attribute__((vector_size(32), aligned(32)));

enum { SOS_BLOCK = 256, SOS_GROUP = 4 };

// `k` sections (1 ... 4, a constant after inlining) over `m` samples of `buf`, in place; the
// sections' states are z[(s * 2 + j)] (lanes in the vector).
static inline __attribute__((always_inline)) void sos_group(const double *c, int k, lanes4 *buf, size_t m, lanes4 *z) {
    lanes4 z0[SOS_GROUP], z1[SOS_GROUP];
    for (int s = 0; s < k; s++) { z0[s] = z[2 * s]; z1[s] = z[2 * s + 1]; }
    for (size_t n = 0; n < m; n++) {
        lanes4 current = buf[n];
        for (int s = 0; s < k; s++) {
            const double *q = c + 6 * s;
            lanes4 next = q[0] * current + z0[s];
            z0[s] = q[1] * current - q[4] * next + z1[s];
            z1[s] = q[2] * current - q[5] * next;
            current = next;
        }
        buf[n] = current;
    }
    for (int s = 0; s < k; s++) { z[2 * s] = z0[s]; z[2 * s + 1] = z1[s]; }
}

static inline __attribute__((always_inline)) void sos4_body(
    const double *sos, size_t sections, const double *const *x, ptrdiff_t xs, double *const *y, ptrdiff_t ys,
    size_t count, size_t lanes, double *state) {
    lanes4 buf[SOS_BLOCK];
    lanes4 z[2 * SOS_GROUP];
    for (size_t done = 0; done < count; done += SOS_BLOCK) {
        size_t m = count - done < SOS_BLOCK ? count - done : SOS_BLOCK;
        if (lanes == 4) {
            const double *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3];
            for (size_t n = 0; n < m; n++) {
                ptrdiff_t at = (ptrdiff_t)(done + n) * xs;
                lanes4 v = {x0[at], x1[at], x2[at], x3[at]};
                buf[n] = v;
            }
        } else {
            for (size_t n = 0; n < m; n++) {
                ptrdiff_t at = (ptrdiff_t)(done + n) * xs;
                lanes4 v = {0, 0, 0, 0};
                for (size_t l = 0; l < lanes; l++) v[l] = x[l][at];
                buf[n] = v;
            }
        }
        for (size_t first = 0; first < sections; first += SOS_GROUP) {
            size_t k = sections - first < SOS_GROUP ? sections - first : SOS_GROUP;
            for (size_t i = 0; i < 2 * k; i++) {
                lanes4 v;
                for (int l = 0; l < 4; l++) v[l] = state[(2 * first + i) * 4 + l];
                z[i] = v;
            }
            const double *c = sos + 6 * first;
            switch (k) {
            case 1: sos_group(c, 1, buf, m, z); break;
            case 2: sos_group(c, 2, buf, m, z); break;
            case 3: sos_group(c, 3, buf, m, z); break;
            default: sos_group(c, 4, buf, m, z); break;
            }
            for (size_t i = 0; i < 2 * k; i++) {
                for (int l = 0; l < 4; l++) state[(2 * first + i) * 4 + l] = z[i][l];
            }
        }
        if (lanes == 4) {
            double *y0 = y[0], *y1 = y[1], *y2 = y[2], *y3 = y[3];
            for (size_t n = 0; n < m; n++) {
                ptrdiff_t at = (ptrdiff_t)(done + n) * ys;
                lanes4 v = buf[n];
                y0[at] = v[0];
                y1[at] = v[1];
                y2[at] = v[2];
                y3[at] = v[3];
            }
        } else {
            for (size_t n = 0; n < m; n++) {
                ptrdiff_t at = (ptrdiff_t)(done + n) * ys;
                for (size_t l = 0; l < lanes; l++) y[l][at] = buf[n][l];
            }
        }
    }
}

static void sos4_portable(const double *sos, size_t sections, const double *const *x, ptrdiff_t xs, double *const *y, ptrdiff_t ys,
                          size_t count, size_t lanes, double *state) {
    sos4_body(sos, sections, x, xs, y, ys, count, lanes, state);
}

#if defined(__x86_64__)
__attribute__((target("avx2")))
static void sos4_avx2(const double *sos, size_t sections, const double *const *x, ptrdiff_t xs, double *const *y, ptrdiff_t ys,
                      size_t count, size_t lanes, double *state) {
    sos4_body(sos, sections, x, xs, y, ys, count, lanes, state);
}
#endif

void tributary_sos4(const double *sos, size_t sections, const double *const *x, ptrdiff_t x_stride, double *const *y,
                    ptrdiff_t y_stride, size_t count, size_t lanes, double *state) {
    if (lanes == 0 || lanes > 4) return;
#if defined(__x86_64__)
    if (tributary_kernel_level() >= KERNEL_AVX2_BMI2) {
        sos4_avx2(sos, sections, x, x_stride, y, y_stride, count, lanes, state);
        return;
    }
#endif
    sos4_portable(sos, sections, x, x_stride, y, y_stride, count, lanes, state);
}

// upfirdn's interior for four lines at once: the lines are the lanes, a chunk of their samples is
// laid side by side once, and four outputs' sums run at a time, each lane's sum from zero in the
// order of the taps (scipy's order), every product and sum rounded apart.
enum { UPFIRDN_CHUNK = 512 };

static inline __attribute__((always_inline)) void upfirdn4_body(
    const double *const *x, ptrdiff_t xs, const double *hf, size_t per_phase, size_t up, size_t down, size_t first,
    size_t count, double *const *y, ptrdiff_t ys, lanes4 *buf) {
    const size_t back = per_phase - 1;
    const double *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3];
    for (size_t k0 = first; k0 < first + count; k0 += UPFIRDN_CHUNK) {
        size_t m = first + count - k0 < UPFIRDN_CHUNK ? first + count - k0 : UPFIRDN_CHUNK;
        size_t lo = (k0 * down) / up - back, hi = ((k0 + m - 1) * down) / up;
        for (size_t i = lo; i <= hi; i++) {
            ptrdiff_t at = (ptrdiff_t)i * xs;
            lanes4 v = {x0[at], x1[at], x2[at], x3[at]};
            buf[i - lo] = v;
        }
        // Output k's newest sample and phase, stepped by down / up without a division per output.
        const size_t step = down / up, rest = down % up;
        size_t newest = (k0 * down) / up, phase = (k0 * down) % up;
        size_t k = k0;
        for (; k + 4 <= k0 + m; k += 4) {
            const lanes4 *b[4];
            const double *h[4];
            for (int i = 0; i < 4; i++) {
                b[i] = buf + (newest - back - lo);
                h[i] = hf + phase * per_phase;
                newest += step;
                phase += rest;
                if (phase >= up) { phase -= up; newest++; }
            }
            lanes4 s0 = {0, 0, 0, 0}, s1 = s0, s2 = s0, s3 = s0;
            for (size_t j = 0; j < per_phase; j++) {
                s0 += b[0][j] * h[0][j];
                s1 += b[1][j] * h[1][j];
                s2 += b[2][j] * h[2][j];
                s3 += b[3][j] * h[3][j];
            }
            lanes4 s[4] = {s0, s1, s2, s3};
            for (int i = 0; i < 4; i++) {
                ptrdiff_t at = (ptrdiff_t)(k + i - first) * ys;
                y[0][at] = s[i][0];
                y[1][at] = s[i][1];
                y[2][at] = s[i][2];
                y[3][at] = s[i][3];
            }
        }
        for (; k < k0 + m; k++) {
            const lanes4 *bk = buf + (newest - back - lo);
            const double *hk = hf + phase * per_phase;
            newest += step;
            phase += rest;
            if (phase >= up) { phase -= up; newest++; }
            lanes4 s0 = {0, 0, 0, 0};
            for (size_t j = 0; j < per_phase; j++) s0 += bk[j] * hk[j];
            ptrdiff_t at = (ptrdiff_t)(k - first) * ys;
            y[0][at] = s0[0];
            y[1][at] = s0[1];
            y[2][at] = s0[2];
            y[3][at] = s0[3];
        }
    }
}

static void upfirdn4_portable(const double *const *x, ptrdiff_t xs, const double *hf, size_t per_phase, size_t up, size_t down,
                              size_t first, size_t count, double *const *y, ptrdiff_t ys, lanes4 *buf) {
    upfirdn4_body(x, xs, hf, per_phase, up, down, first, count, y, ys, buf);
}

#if defined(__x86_64__)
__attribute__((target("avx2")))
static void upfirdn4_avx2(const double *const *x, ptrdiff_t xs, const double *hf, size_t per_phase, size_t up, size_t down,
                          size_t first, size_t count, double *const *y, ptrdiff_t ys, lanes4 *buf) {
    upfirdn4_body(x, xs, hf, per_phase, up, down, first, count, y, ys, buf);
}
#endif

int tributary_upfirdn4(const double *const *x, ptrdiff_t x_stride, const double *hf, size_t per_phase, size_t up, size_t down,
                       size_t first, size_t count, double *const *y, ptrdiff_t y_stride) {
    if (count == 0) return 0;
    if (per_phase == 0 || up == 0 || down == 0) return -1;
    // A chunk's inputs: its outputs' newest samples span at most (CHUNK − 1)·down / up + 1, plus the taps behind.
    size_t span = ((size_t)(UPFIRDN_CHUNK - 1) * down) / up + 2 + per_phase;
    lanes4 *buf = aligned_alloc(32, span * sizeof(lanes4));
    if (!buf) return -1;
#if defined(__x86_64__)
    if (tributary_kernel_level() >= KERNEL_AVX2_BMI2) {
        upfirdn4_avx2(x, x_stride, hf, per_phase, up, down, first, count, y, y_stride, buf);
        free(buf);
        return 0;
    }
#endif
    upfirdn4_portable(x, x_stride, hf, per_phase, up, down, first, count, y, y_stride, buf);
    free(buf);
    return 0;
}

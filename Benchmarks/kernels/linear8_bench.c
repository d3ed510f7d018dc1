// The four-lane and eight-lane order-8 inverses (Sources/CLinearPredictor) on 8 × 16 384 realistic
// residuals (three tones and noise through a stable filter at shift 20), against the rule written
// as a one-channel C loop in the same run, and the four-lane inverse fused with the conversion to
// samples (tributary_linear8_samples_x4: binary64 and binary32 grids, int32, int16) against the
// inverse followed by the conversion's own pass (tributary_grid64, _grid32, _narrow32, _narrow16:
// what the decoder did before); checks they agree, then prints ns per sample: median (min-max) of
// 7 rounds of 200 calls; then the same kernels on segments of orders 2 and 4 (coefficients padded
// with zeros, whose products the kernels leave out).
// Build and run:
//   clang -O2 -I Sources/CLinearPredictor/include -I Sources/CKernels/include -I Sources/CKernels \
//     Benchmarks/kernels/linear8_bench.c Sources/CLinearPredictor/linear_predictor.c \
//     Sources/CKernels/codec_grid.c Sources/CKernels/dispatch.c -lm -o /tmp/linear8_bench && /tmp/linear8_bench
#include "linear_predictor.h"
#include "codec_kernels.h"
#include <string.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

// x[i] = v[i] + ((2^(q-1) + sum c[j] x[i-1-j]) >> q), wrapping, missing history 0 (docs/CAPTURE.md §5.1).
static void rule(const int64_t *v, int64_t *x, size_t n, const int64_t *c, int q) {
    for (size_t i = 0; i < n; i++) {
        uint64_t s = (uint64_t)1 << (q - 1);
        for (size_t j = 0; j < 8 && j < i; j++) s += (uint64_t)c[j] * (uint64_t)x[i - 1 - j];
        x[i] = (int64_t)((uint64_t)v[i] + (uint64_t)((int64_t)s >> q));
    }
}

// The residuals of values y under the same predictor (from the end, in place).
static void predict(int64_t *y, size_t n, const int64_t *c, int q) {
    for (size_t i = n; i-- > 0;) {
        uint64_t s = (uint64_t)1 << (q - 1);
        for (size_t j = 0; j < 8 && j < i; j++) s += (uint64_t)c[j] * (uint64_t)y[i - 1 - j];
        y[i] = (int64_t)((uint64_t)y[i] - (uint64_t)((int64_t)s >> q));
    }
}

static int compare(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

int main(void) {
    if (!tributary_linear8_x4_available()) { puts("no AVX2: the kernels are not used on this processor"); return 0; }
    int eight = tributary_linear8_x8_available();
    enum { N = 16384, ROUNDS = 7, CALLS = 200 };
    const int q = 20;
    const double filter[8] = {1.6, -0.3, -0.2, 0.1, -0.05, 0.02, -0.1, -0.08};
    int64_t c[64], shifts[8] = {q, q, q, q, q, q, q, q};
    int64_t *v[8], *x[8], *expected[8];
    srand(1);
    for (int k = 0; k < 8; k++) {
        v[k] = malloc(8 * N); x[k] = malloc(8 * N); expected[k] = malloc(8 * N);
        for (int j = 0; j < 8; j++) c[8 * k + j] = llround(filter[j] * (1 << q)) + k;
        for (size_t i = 0; i < N; i++)
            v[k][i] = llround(3000 * sin(0.03 * (k + 1) * i) + 800 * sin(0.7 * i) + 300 * sin(1.9 * i + k) + rand() % 200 - 100);
        predict(v[k], N, c + 8 * k, q);
        rule(v[k], expected[k], N, c + 8 * k, q);
    }
    // Lengths that are not multiples of the lanes' steps, then the full one.
    const size_t lengths[] = {1, 7, 13, 100, N - 3, N};
    for (size_t t = 0; t < sizeof lengths / sizeof *lengths; t++) {
        size_t n = lengths[t], wrong = 0;
        for (int k = 0; k < 8; k++) rule(v[k], expected[k], n, c + 8 * k, q);
        size_t four = tributary_linear8_x4(v[0], v[1], v[2], v[3], x[0], x[1], x[2], x[3], n, c, shifts)
            + tributary_linear8_x4(v[4], v[5], v[6], v[7], x[4], x[5], x[6], x[7], n, c + 32, shifts + 4);
        for (int k = 0; k < 8; k++) for (size_t i = 0; i < n; i++) wrong += x[k][i] != expected[k][i];
        if (four != 2 * n || wrong) { printf("four-lane kernel disagrees with the rule at n = %zu: %zu wrong\n", n, wrong); return 1; }
        if (eight) {
            size_t finished = tributary_linear8_x8((const int64_t *const *)v, x, n, c, shifts);
            for (int k = 0; k < 8; k++) for (size_t i = 0; i < n; i++) wrong += x[k][i] != expected[k][i];
            if (finished != n || wrong) { printf("eight-lane kernel disagrees with the rule at n = %zu: %zu wrong\n", n, wrong); return 1; }
        }
    }
    // Each fused conversion against the inverse then the conversion's pass, bit for bit.
    const double offset[4] = {-10.0, 0.0, 1.5, 3.0}, gain[4] = {20.0 / 65536, 1.0 / 3.0, 0.1, 1e-3};
    const int kinds[4] = {TRIBUTARY_SAMPLES_GRID64, TRIBUTARY_SAMPLES_GRID32, TRIBUTARY_SAMPLES_INT32, TRIBUTARY_SAMPLES_INT16};
    const char *names[4] = {"grid64", "grid32", "int32", "int16"};
    const size_t widths[4] = {8, 4, 4, 2};
    void *g[8], *expectedSamples[8];
    for (int k = 0; k < 8; k++) { g[k] = malloc(8 * N); expectedSamples[k] = malloc(8 * N); }
    // The conversion as its own pass (what the fused kernel replaces).
#define CONVERT(kind, from, to, n, k)                                                                                  \
    do {                                                                                                            \
        if ((kind) == TRIBUTARY_SAMPLES_GRID64) tributary_grid64(from, (uint64_t *)(to), n, offset[(k) % 4], gain[(k) % 4]); \
        else if ((kind) == TRIBUTARY_SAMPLES_GRID32) tributary_grid32(from, (uint32_t *)(to), n, offset[(k) % 4], gain[(k) % 4]); \
        else if ((kind) == TRIBUTARY_SAMPLES_INT32) tributary_narrow32(from, (int32_t *)(to), n);                     \
        else tributary_narrow16(from, (int16_t *)(to), n);                                                          \
    } while (0)
    for (int kind = 0; kind < 4; kind++) {
        for (size_t t = 0; t < sizeof lengths / sizeof *lengths; t++) {
            size_t n = lengths[t], wrong = 0;
            for (int k = 0; k < 4; k++) {
                rule(v[k], expected[k], n, c + 8 * k, q);
                CONVERT(kinds[kind], expected[k], expectedSamples[k], n, k);
            }
            size_t done = tributary_linear8_samples_x4((const int64_t *const *)v, g, n, c, shifts, kinds[kind], offset, gain);
            for (int k = 0; k < 4; k++) wrong += memcmp(g[k], expectedSamples[k], widths[kind] * n) != 0;
            if (done != n || wrong) {
                printf("fused %s kernel disagrees at n = %zu: %zu lanes wrong, %zu done\n", names[kind], n, wrong, done);
                return 1;
            }
        }
    }
    // Orders 2 and 4 (coefficients past them 0 in every lane: the kernels leave their products
    // out), checked against the rule for every kind, then timed fused with each kind.
    const double lower[2][4] = {{1.9, -0.95, 0, 0}, {2.2, -1.5, 0.4, -0.12}};
    int64_t cl[2][32], *vl[2][4];
    for (int o = 0; o < 2; o++) {
        for (int k = 0; k < 4; k++) {
            for (int j = 0; j < 8; j++) cl[o][8 * k + j] = j < 4 && lower[o][j] != 0 ? llround(lower[o][j] * (1 << q)) + k : 0;
            vl[o][k] = malloc(8 * N);
            for (size_t i = 0; i < N; i++) vl[o][k][i] = llround(3000 * sin(0.02 * (k + 1) * i) + 400 * sin(0.9 * i) + rand() % 200 - 100);
            predict(vl[o][k], N, cl[o] + 8 * k, q);
        }
        for (int kind = -1; kind < 4; kind++) {
            for (size_t t = 0; t < sizeof lengths / sizeof *lengths; t++) {
                size_t n = lengths[t], wrong = 0, done;
                for (int k = 0; k < 4; k++) {
                    rule(vl[o][k], expected[k], n, cl[o] + 8 * k, q);
                    if (kind >= 0) CONVERT(kinds[kind], expected[k], expectedSamples[k], n, k);
                }
                if (kind < 0) {
                    done = tributary_linear8_x4(vl[o][0], vl[o][1], vl[o][2], vl[o][3], x[0], x[1], x[2], x[3], n, cl[o], shifts);
                    for (int k = 0; k < 4; k++) wrong += memcmp(x[k], expected[k], 8 * n) != 0;
                } else {
                    done = tributary_linear8_samples_x4((const int64_t *const *)vl[o], g, n, cl[o], shifts, kinds[kind], offset, gain);
                    for (int k = 0; k < 4; k++) wrong += memcmp(g[k], expectedSamples[k], widths[kind] * n) != 0;
                }
                if (done != n || wrong) {
                    printf("order-%d %s kernel disagrees at n = %zu: %zu lanes wrong, %zu done\n", 2 << o, kind < 0 ? "latent" : names[kind], n, wrong, done);
                    return 1;
                }
            }
        }
    }
    double orders[2][4][ROUNDS];
    double kernel[ROUNDS], kernel8[ROUNDS], one[ROUNDS], fused[4][ROUNDS], separate[4][ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now();
        for (int i = 0; i < CALLS; i++) {
            tributary_linear8_x4(v[0], v[1], v[2], v[3], x[0], x[1], x[2], x[3], N, c, shifts);
            tributary_linear8_x4(v[4], v[5], v[6], v[7], x[4], x[5], x[6], x[7], N, c + 32, shifts + 4);
        }
        double t1 = now();
        if (eight) for (int i = 0; i < CALLS; i++) tributary_linear8_x8((const int64_t *const *)v, x, N, c, shifts);
        double t2 = now();
        for (int i = 0; i < CALLS / 8; i++) for (int k = 0; k < 8; k++) rule(v[k], expected[k], N, c + 8 * k, q);
        double t3 = now();
        kernel[r] = (t1 - t0) / (CALLS * 8.0 * N) * 1e9;
        kernel8[r] = (t2 - t1) / (CALLS * 8.0 * N) * 1e9;
        one[r] = (t3 - t2) / (CALLS / 8 * 8.0 * N) * 1e9;
        for (int kind = 0; kind < 4; kind++) {
            double t4 = now();
            for (int i = 0; i < CALLS; i++) {
                tributary_linear8_samples_x4((const int64_t *const *)v, g, N, c, shifts, kinds[kind], offset, gain);
                tributary_linear8_samples_x4((const int64_t *const *)v + 4, g + 4, N, c + 32, shifts + 4, kinds[kind], offset, gain);
            }
            double t5 = now();
            for (int i = 0; i < CALLS; i++) {
                tributary_linear8_x4(v[0], v[1], v[2], v[3], x[0], x[1], x[2], x[3], N, c, shifts);
                tributary_linear8_x4(v[4], v[5], v[6], v[7], x[4], x[5], x[6], x[7], N, c + 32, shifts + 4);
                for (int k = 0; k < 8; k++) CONVERT(kinds[kind], x[k], g[k], N, k);
            }
            double t6 = now();
            fused[kind][r] = (t5 - t4) / (CALLS * 8.0 * N) * 1e9;
            separate[kind][r] = (t6 - t5) / (CALLS * 8.0 * N) * 1e9;
            for (int o = 0; o < 2; o++) {
                double t7 = now();
                for (int i = 0; i < 2 * CALLS; i++)
                    tributary_linear8_samples_x4((const int64_t *const *)vl[o], g, N, cl[o], shifts, kinds[kind], offset, gain);
                orders[o][kind][r] = (now() - t7) / (CALLS * 8.0 * N) * 1e9;
            }
        }
    }
#undef CONVERT
    qsort(kernel, ROUNDS, sizeof(double), compare);
    qsort(kernel8, ROUNDS, sizeof(double), compare);
    qsort(one, ROUNDS, sizeof(double), compare);
    printf("four-lane kernel   %.3f ns/sample (%.3f-%.3f)\n", kernel[ROUNDS / 2], kernel[0], kernel[ROUNDS - 1]);
    if (eight) printf("eight-lane kernel  %.3f ns/sample (%.3f-%.3f)\n", kernel8[ROUNDS / 2], kernel8[0], kernel8[ROUNDS - 1]);
    else puts("eight-lane kernel  not measured: no AVX-512F on this processor");
    printf("one-channel C rule %.3f ns/sample (%.3f-%.3f)\n", one[ROUNDS / 2], one[0], one[ROUNDS - 1]);
    for (int kind = 0; kind < 4; kind++) {
        qsort(fused[kind], ROUNDS, sizeof(double), compare);
        qsort(separate[kind], ROUNDS, sizeof(double), compare);
        printf("four-lane + %-6s %.3f ns/sample (%.3f-%.3f) fused, %.3f (%.3f-%.3f) as two passes\n", names[kind], fused[kind][ROUNDS / 2],
               fused[kind][0], fused[kind][ROUNDS - 1], separate[kind][ROUNDS / 2], separate[kind][0], separate[kind][ROUNDS - 1]);
        for (int o = 0; o < 2; o++) {
            qsort(orders[o][kind], ROUNDS, sizeof(double), compare);
            printf("  the same at order %d: %.3f ns/sample (%.3f-%.3f)\n", 2 << o, orders[o][kind][ROUNDS / 2], orders[o][kind][0], orders[o][kind][ROUNDS - 1]);
        }
    }
    return 0;
}

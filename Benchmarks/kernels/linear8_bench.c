// The four-lane order-8 inverse (Sources/CLinearPredictor) on 4 × 16 384 realistic residuals (three
// tones and noise through a stable filter at shift 20), against the rule written as a one-channel C
// loop in the same run; checks they agree, then prints ns per sample: median (min-max) of 7 rounds
// of 200 calls. Build and run:
//   clang -O2 -I Sources/CLinearPredictor/include Benchmarks/kernels/linear8_bench.c \
//     Sources/CLinearPredictor/linear_predictor.c -lm -o /tmp/linear8_bench && /tmp/linear8_bench
#include "linear_predictor.h"
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
    if (!tributary_linear8_x4_available()) { puts("no AVX2: the kernel is not used on this processor"); return 0; }
    enum { N = 16384, ROUNDS = 7, CALLS = 200 };
    const int q = 20;
    const double filter[8] = {1.6, -0.3, -0.2, 0.1, -0.05, 0.02, -0.1, -0.08};
    int64_t c[32], shifts[4] = {q, q, q, q};
    int64_t *v[4], *x[4], *expected[4];
    srand(1);
    for (int k = 0; k < 4; k++) {
        v[k] = malloc(8 * N); x[k] = malloc(8 * N); expected[k] = malloc(8 * N);
        for (int j = 0; j < 8; j++) c[8 * k + j] = llround(filter[j] * (1 << q)) + k;
        for (size_t i = 0; i < N; i++)
            v[k][i] = llround(3000 * sin(0.03 * (k + 1) * i) + 800 * sin(0.7 * i) + 300 * sin(1.9 * i + k) + rand() % 200 - 100);
        predict(v[k], N, c + 8 * k, q);
        rule(v[k], expected[k], N, c + 8 * k, q);
    }
    size_t finished = tributary_linear8_x4(v[0], v[1], v[2], v[3], x[0], x[1], x[2], x[3], N, c, shifts);
    size_t wrong = 0;
    for (int k = 0; k < 4; k++) for (size_t i = 0; i < N; i++) wrong += x[k][i] != expected[k][i];
    if (finished != N || wrong) { printf("kernel disagrees with the rule: finished %zu of %d, %zu wrong\n", finished, N, wrong); return 1; }
    double kernel[ROUNDS], one[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now();
        for (int i = 0; i < CALLS; i++) tributary_linear8_x4(v[0], v[1], v[2], v[3], x[0], x[1], x[2], x[3], N, c, shifts);
        double t1 = now();
        for (int i = 0; i < CALLS / 4; i++) for (int k = 0; k < 4; k++) rule(v[k], expected[k], N, c + 8 * k, q);
        double t2 = now();
        kernel[r] = (t1 - t0) / (CALLS * 4.0 * N) * 1e9;
        one[r] = (t2 - t1) / (CALLS / 4 * 4.0 * N) * 1e9;
    }
    qsort(kernel, ROUNDS, sizeof(double), compare);
    qsort(one, ROUNDS, sizeof(double), compare);
    printf("four-lane kernel   %.3f ns/sample (%.3f-%.3f)\n", kernel[ROUNDS / 2], kernel[0], kernel[ROUNDS - 1]);
    printf("one-channel C rule %.3f ns/sample (%.3f-%.3f)\n", one[ROUNDS / 2], one[0], one[ROUNDS - 1]);
    return 0;
}

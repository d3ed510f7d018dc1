// The bit-shuffle of 8-byte elements (tributary_bitshuffle8_groups, Sources/CKernels/codec_encode.c)
// at each kernel level the processor has — AVX-512 (BW + VBMI) and AVX2 — on one block of 1 024
// elements (8 KiB, in L1) and on 8 MiB of blocks (from memory); checks that every level writes the
// bytes of the layout written as a plain C loop (bit by bit, BitShuffle.swift's documentation: a
// reference for correctness, not a peer — the Swift loop that runs without a kernel is measured by
// its share of a profiled `record --fast-codec`), then prints GB/s: median (min-max) of
// 7 rounds.
// Build and run:
//   clang -O2 -I Sources/CKernels/include -I Sources/CKernels Benchmarks/kernels/bitshuffle8_bench.c \
//     Sources/CKernels/codec_encode.c Sources/CKernels/dispatch.c -o /tmp/bitshuffle8_bench && /tmp/bitshuffle8_bench
#include "codec_kernels.h"
#include "dispatch.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int tributary_kernels_cap(int level);

enum { BLOCK = 1024, ROW_BYTES = BLOCK / 8, ROUNDS = 7 };

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

// One block, bit by bit: row 8j + k holds bit k of byte j of every element, element e at bit e % 8
// of byte e / 8 of the row.
static void reference_block(const uint8_t *src, uint8_t *dst) {
    memset(dst, 0, BLOCK * 8);
    for (int j = 0; j < 8; j++)
        for (int k = 0; k < 8; k++)
            for (int e = 0; e < BLOCK; e++)
                if ((src[8 * e + j] >> k) & 1) dst[(8 * j + k) * ROW_BYTES + e / 8] |= (uint8_t)(1u << (e % 8));
}

// Shuffles `bytes` (whole blocks) with the kernel at the current level, or the reference loop.
static void shuffle(const uint8_t *src, uint8_t *dst, size_t bytes, int reference) {
    for (size_t b = 0; b < bytes; b += BLOCK * 8) {
        if (reference) reference_block(src + b, dst + b);
        else if (tributary_bitshuffle8_groups(src + b, dst + b, BLOCK / 64, ROW_BYTES) != BLOCK / 64) {
            fprintf(stderr, "no kernel at this level\n");
            exit(1);
        }
    }
}

static void measure(const char *name, const uint8_t *src, uint8_t *dst, size_t bytes) {
    double rate[ROUNDS];
    size_t total = bytes < (1u << 20) ? (size_t)256 << 20 : (size_t)512 << 20;
    for (int r = 0; r < ROUNDS; r++) {
        double start = now();
        for (size_t done = 0; done < total; done += bytes) shuffle(src, dst, bytes, 0);
        rate[r] = total / (now() - start) / 1e9;
    }
    qsort(rate, ROUNDS, sizeof rate[0], by_value);
    printf("  %-28s %6.2f GB/s (%.2f-%.2f)\n", name, rate[ROUNDS / 2], rate[0], rate[ROUNDS - 1]);
}

int main(void) {
    size_t sizes[2] = {BLOCK * 8, 8u << 20};
    uint8_t *src = aligned_alloc(64, sizes[1]), *dst = aligned_alloc(64, sizes[1]), *want = aligned_alloc(64, sizes[1]);
    // Slowly varying float64 samples, as a capture's are (the kernel's speed does not depend on them).
    for (size_t i = 0; i < sizes[1] / 8; i++) {
        double x = 0.5 * (double)(i % 4096) / 4096.0 + 1e-6 * (double)(rand() % 1000);
        memcpy(src + 8 * i, &x, 8);
    }
    shuffle(src, want, sizes[1], 1);
    const char *names[3] = {"portable", "AVX2", "AVX-512 (BW + VBMI)"};
    for (int s = 0; s < 2; s++) {
        printf("%s:\n", s == 0 ? "one block of 1 024 elements (8 KiB, in L1)" : "8 MiB of blocks");
        for (int level = KERNEL_AVX2_BMI2; level <= KERNEL_AVX512; level++) {
            tributary_kernels_cap(level);
            if (tributary_kernel_level() != level) continue;
            if (tributary_bitshuffle8_groups(src, dst, BLOCK / 64, ROW_BYTES) == 0) continue;  // AVX-512 without VBMI
            shuffle(src, dst, sizes[s], 0);
            if (memcmp(dst, want, sizes[s]) != 0) {
                fprintf(stderr, "%s: the kernel's bytes differ from the reference's\n", names[level]);
                return 1;
            }
            measure(names[level], src, dst, sizes[s]);
        }
    }
    return 0;
}

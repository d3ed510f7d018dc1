// Why the C interface's read populates its destination first (Sources/TributaryC/CaptureAPI.swift):
// a fresh 64 MiB buffer (madvised for huge pages, as numpy's are) written chunk by chunk the way a
// read places its samples (8 rows, 16 Ki-sample pieces), by one thread, by two threads at once, by
// two threads after one MADV_POPULATE_WRITE, and by two threads each populating its half first (what
// the read does). Prints ms per buffer: median (min-max) of 9 rounds.
//   cc -O2 -pthread Benchmarks/kernels/first_touch.c -o /tmp/first_touch && /tmp/first_touch
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define ROWS 8
#define ROW (1UL << 20)
#define PIECE 16384
static double *buffer;

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

static void *write_pieces(void *first) {
    for (size_t k = (size_t)first; k < ROW / PIECE; k += 2)
        for (int r = 0; r < ROWS; r++)
            for (size_t i = 0; i < PIECE; i++) buffer[r * ROW + k * PIECE + i] = 1.0;
    return NULL;
}

static pthread_barrier_t barrier;

// Populates one half of the buffer (MADV_POPULATE_WRITE), waits for the other thread, then writes.
static void *populate_then_write(void *first) {
    size_t half = ROWS * ROW * 8 / 2;
    madvise((char *)buffer + (size_t)first * half, half, 23 /* MADV_POPULATE_WRITE */);
    pthread_barrier_wait(&barrier);
    return write_pieces(first);
}

static int compare(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

static void measure(const char *name, int threads, int populate) {
    enum { ROUNDS = 9 };
    double ms[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now();
        buffer = mmap(NULL, ROWS * ROW * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        madvise(buffer, ROWS * ROW * 8, MADV_HUGEPAGE);
        if (populate == 1) madvise(buffer, ROWS * ROW * 8, 23 /* MADV_POPULATE_WRITE */);
        if (populate == 2) {
            pthread_t t[2];
            pthread_barrier_init(&barrier, NULL, 2);
            for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, populate_then_write, (void *)i);
            for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
            pthread_barrier_destroy(&barrier);
        } else if (threads == 1) {
            write_pieces((void *)0); write_pieces((void *)1);
        } else {
            pthread_t t[2];
            for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, write_pieces, (void *)i);
            for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
        }
        ms[r] = (now() - t0) * 1e3;
        munmap(buffer, ROWS * ROW * 8);
    }
    qsort(ms, ROUNDS, sizeof(double), compare);
    printf("%-36s %.1f ms (%.1f-%.1f)\n", name, ms[ROUNDS / 2], ms[0], ms[ROUNDS - 1]);
}

int main(void) {
    measure("one thread", 1, 0);
    measure("two threads", 2, 0);
    measure("two threads after MADV_POPULATE_WRITE", 2, 1);
    measure("two threads, each populating its half", 2, 2);
    return 0;
}

// First touches of a fresh 64 MiB buffer (madvised for huge pages, as numpy's arrays are), right
// after 512 MiB were freed and again after an idle pause, in ms per round. On this project's VM
// (free page reporting hands idle freed memory back to the host) they stall erratically, which is why
// Benchmarks/python_bench.py rotates its readers' order instead of always running tributary's read
// right after pyxdf's seconds-long, memory-hungry one. The stalls do not come every run: see
// docs/PERFORMANCE.md ("C kernels and first touches") for the runs and their spread.
//   cc -O2 Benchmarks/kernels/idle_first_touch.c -o /tmp/idle_first_touch && /tmp/idle_first_touch [PAUSE_S=2.5] [ROUNDS=12]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

/// Maps `bytes`, touches every byte, unmaps; returns the ms it took.
static double touch(size_t bytes) {
    double t = now();
    char *b = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED) { perror("mmap"); exit(1); }
    madvise(b, bytes, MADV_HUGEPAGE);
    memset(b, 1, bytes);
    double ms = (now() - t) * 1e3;
    munmap(b, bytes);
    return ms;
}

int main(int argc, char **argv) {
    double pause = argc > 1 ? atof(argv[1]) : 2.5;
    int rounds = argc > 2 ? atoi(argv[2]) : 12;
    const size_t big = 512UL << 20, buffer = 64UL << 20;
    for (int r = 0; r < rounds; r++) {
        touch(big);
        double right_after = touch(buffer);
        touch(big);
        usleep((useconds_t)(pause * 1e6));
        double after_idle = touch(buffer);
        printf("round %2d: 64 MiB first touch right after a free %6.1f ms, after %.1f s idle %6.1f ms\n", r, right_after, pause, after_idle);
    }
    return 0;
}

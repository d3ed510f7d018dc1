"""Peer for the statistics suite over CHANNELS x N float64: numpy min, max, mean, std (four calls, as
users write it), and the ceiling: a one-pass C loop (sum, sum of squares, min, max; `cc -O2`,
compiled here at run time). Prints {"numpy_s": median s, "c_one_pass_s": median s}."""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

C_SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
    long channels = atol(argv[1]), n = atol(argv[2]); int reps = atoi(argv[3]);
    double *x = malloc(sizeof(double) * channels * n), *samples = malloc(sizeof(double) * reps), sink = 0;
    srand(1);
    for (long i = 0; i < channels * n; i++) x[i] = rand() / (double)RAND_MAX - 0.5;
    for (int r = -2; r < reps; r++) {
        double t = now();
        for (long c = 0; c < channels; c++) {
            const double *p = x + c * n;
            double s[4] = {0}, q[4] = {0}, lo[4], hi[4];
            for (int k = 0; k < 4; k++) lo[k] = hi[k] = p[0];
            for (long i = 0; i + 4 <= n; i += 4)
                for (int k = 0; k < 4; k++) {
                    double v = p[i + k];
                    s[k] += v; q[k] += v * v;
                    lo[k] = v < lo[k] ? v : lo[k]; hi[k] = v > hi[k] ? v : hi[k];
                }
            sink += s[0] + s[1] + s[2] + s[3] + q[0] + q[1] + q[2] + q[3] + lo[0] + lo[3] + hi[1] + hi[2];
        }
        if (r >= 0) samples[r] = now() - t;
    }
    qsort(samples, reps, sizeof(double), cmp);
    printf("%.9g %g\n", samples[reps / 2], sink);
    return 0;
}
"""

channels, n, reps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
x = np.random.default_rng(1).normal(size=(channels, n))
times = []
for _ in range(reps + 2):
    t = time.perf_counter()
    x.min(axis=1)
    x.max(axis=1)
    x.mean(axis=1)
    x.std(axis=1)
    times.append(time.perf_counter() - t)
with tempfile.TemporaryDirectory() as tmp:
    src, exe = os.path.join(tmp, "stats.c"), os.path.join(tmp, "stats")
    with open(src, "w") as f:
        f.write(C_SOURCE)
    subprocess.run(["cc", "-O2", src, "-o", exe], check=True)
    c_s = float(subprocess.run([exe, str(channels), str(n), str(reps)], check=True, capture_output=True, text=True).stdout.split()[0])
print(json.dumps({"numpy_s": float(np.median(times[2:])), "c_one_pass_s": c_s}))

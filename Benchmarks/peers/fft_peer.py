"""Peer for the fft suite: numpy.fft.rfft and a plain C loop over FFTW (compiled here at run time with
`cc -O2 ... -lfftw3`), both over 8 channels of N float64, FFTW_MEASURE plans like Tributary's.
Usage: fft_peer.py CHANNELS REPS N... Prints {"numpy_us": {N: us per transform}, "fftw_us": {...}}."""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

C_SOURCE = r"""
#include <fftw3.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
    int channels = atoi(argv[1]), n = atoi(argv[2]), reps = atoi(argv[3]);
    int inner = 1 + 2000000 / (n * channels);
    double *in = fftw_alloc_real((size_t)n * channels);
    fftw_complex *out = fftw_alloc_complex((size_t)(n / 2 + 1) * channels);
    fftw_plan plan = fftw_plan_dft_r2c_1d(n, in, out, FFTW_MEASURE);
    srand(1);
    for (long i = 0; i < (long)n * channels; i++) in[i] = rand() / (double)RAND_MAX - 0.5;
    double *samples = malloc(sizeof(double) * reps);
    for (int r = -3; r < reps; r++) {
        double t = now();
        for (int k = 0; k < inner; k++)
            for (int c = 0; c < channels; c++)
                fftw_execute_dft_r2c(plan, in + (size_t)c * n, out + (size_t)c * (n / 2 + 1));
        if (r >= 0) samples[r] = (now() - t) / (inner * channels);
    }
    qsort(samples, reps, sizeof(double), cmp);
    printf("%.9g\n", samples[reps / 2] * 1e6);
    return 0;
}
"""

channels, reps = int(sys.argv[1]), int(sys.argv[2])
sizes = [int(a) for a in sys.argv[3:]]
numpy_us, fftw_us = {}, {}
with tempfile.TemporaryDirectory() as tmp:
    src, exe = os.path.join(tmp, "fftw_loop.c"), os.path.join(tmp, "fftw_loop")
    with open(src, "w") as f:
        f.write(C_SOURCE)
    subprocess.run(["cc", "-O2", src, "-o", exe, "-lfftw3", "-lm"], check=True)
    for n in sizes:
        fftw_us[n] = float(subprocess.run([exe, str(channels), str(n), str(reps)], check=True, capture_output=True, text=True).stdout)
        x = np.random.default_rng(1).normal(size=(channels, n))
        inner = 1 + 2_000_000 // (n * channels)
        times = []
        for _ in range(reps + 3):
            t = time.perf_counter()
            for _ in range(inner):
                np.fft.rfft(x, axis=1)
            times.append((time.perf_counter() - t) / (inner * channels))
        numpy_us[n] = float(np.median(times[3:])) * 1e6
print(json.dumps({"numpy_us": numpy_us, "fftw_us": fftw_us}))

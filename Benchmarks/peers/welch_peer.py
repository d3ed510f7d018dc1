"""Peer for the welch suite: scipy.signal.welch over CHANNELS x N float64, nperseg, hann, 50 % overlap.
Prints {"scipy_s": median seconds}."""
import json
import sys
import time

import numpy as np
from scipy import signal

channels, n, nperseg, reps = (int(a) for a in sys.argv[1:5])
x = np.random.default_rng(1).normal(size=(channels, n))
times = []
for _ in range(reps + 1):
    t = time.perf_counter()
    signal.welch(x, fs=1.0, window="hann", nperseg=nperseg, noverlap=nperseg // 2, axis=-1)
    times.append(time.perf_counter() - t)
print(json.dumps({"scipy_s": float(np.median(times[1:]))}))

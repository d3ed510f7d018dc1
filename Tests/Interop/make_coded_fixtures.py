"""Writes the data of the coded-transform fixtures, deterministically (integer arithmetic only).

usage: make_coded_fixtures.py OUT_DIR

OUT_DIR/<class>.npy, shaped (2, 3000). Tests/TributaryCaptureTests/Fixtures/coded-v1-<class>.tcap
were made from these with `tributary import X.npy --rate 1000 --out X.tcap` by the writer of
coded-stream version 1 (2 rANS lanes; main at commit 6a776a6), coded-v2-<class>.tcap the same way by
the writer of version 2 (4 lanes; main at commit 05e7a97), coded-v3-<class>.tcap by the writer of
version 3 (zstd-coded symbols; main at commit 415f44b), and the .npy files kept beside the
version-1 captures (coded-v1-<class>.npy; the data of all three): they prove that every capture
written before coded-stream version 4 still reads (CodedFixtureTests, test_coded_spec.py).
"""
import os
import sys

import numpy as np

CHANNELS, SAMPLES = 2, 3000


def counts(seed, bits, noise):
    """Triangle wave plus uniform noise of +-noise LSB, from a 64-bit LCG: the same on every machine."""
    state = seed
    full = 1 << (bits - 1)
    out = np.empty((CHANNELS, SAMPLES), dtype=np.int64)
    for c in range(CHANNELS):
        for i in range(SAMPLES):
            state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
            r = (state >> 33) % (2 * noise + 1) - noise
            period = 400 + 173 * c
            phase = i % period
            tri = (phase if phase < period // 2 else period - phase) * (full // 2) // (period // 2) - full // 4
            out[c, i] = max(-full, min(full - 1, tri + r))
    return out


def classes():
    k16 = counts(11, 16, 40)
    k24 = counts(12, 24, 300)
    step16 = 20.0 / 65536
    exact = k16 * step16
    exact[:, ::97] = -0.0  # as numpy.round leaves them near zero crossings: an exception list
    affine = 1.3e-3 + step16 * 1.000171 * k16  # DAQmx-style offset + gain * k
    ranged = k16 / 32768 * 7.5  # rounded off offset + gain * k: adjustments
    unquantised = np.cumsum(k16 * step16 * 0.37, axis=1) / 3.0  # full mantissas
    wide = np.power(2.0, k16 / 256.0)  # magnitudes 2^-128 ... 2^128: float bits
    return {
        "float64-exact": exact,
        "float64-affine": affine,
        "float64-range": ranged,
        "float64-wide": wide,
        "float64-bits": unquantised,
        "float32-adc24": (k24 * (20.0 / 2 ** 24)).astype(np.float32),
        "int16-counts": k16.astype(np.int16),
        "int32-adc24": k24.astype(np.int32),  # 24-bit delta-sigma codes as int32 counts (sample format 4)
    }


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, data in classes().items():
        np.save(os.path.join(out, name + ".npy"), np.ascontiguousarray(data.astype(data.dtype.newbyteorder("<"))))


if __name__ == "__main__":
    main()

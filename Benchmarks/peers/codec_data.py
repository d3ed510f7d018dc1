"""Generated measurement data for the codec benchmark (Benchmarks/TributaryBenchmarks/CodecSuite.swift).

usage: codec_data.py OUT_DIR SAMPLES_PER_CHANNEL [SEED]

Writes OUT_DIR/<class>.bin, channel-major (8 channels x SAMPLES_PER_CHANNEL), little-endian, and
prints one JSON object on its last line: {"<class>": {"file":…, "dtype":…, "channels":8, "samples":…}}.
Each channel c is a sum of two tones (amplitudes a fraction of full scale, frequencies 3 … 2000 Hz at
51.2 kHz) plus Gaussian noise of NOISE_LSB[c] LSB, so the classes span "a few LSB to a few hundred".
"""
import json
import os
import sys

import numpy as np
from scipy import signal

CHANNELS = 8
NOISE_LSB = [2, 5, 12, 30, 60, 120, 200, 400]
FS = 51_200.0


def counts(rng, n, bits, c):
    full = 2 ** (bits - 1)
    t = np.arange(n) / FS
    f1 = 3 + 1000 * rng.random()
    f2 = 50 + 2000 * rng.random()
    a1 = full * (0.05 + 0.5 * rng.random())
    a2 = full * 0.05 * rng.random()
    v = a1 * np.sin(2 * np.pi * f1 * t + rng.random() * 6) + a2 * np.sin(2 * np.pi * f2 * t + rng.random() * 6)
    v += NOISE_LSB[c] * rng.standard_normal(n)
    return np.clip(v, -full, full - 1)  # still real-valued: rounding is done by each class


def generate(n, seed):
    rng = np.random.default_rng(seed)
    raw16 = [counts(rng, n, 16, c) for c in range(CHANNELS)]
    raw24 = [counts(rng, n, 24, c) for c in range(CHANNELS)]
    step16 = 20.0 / 65536
    step24 = 20.0 / 2 ** 24
    out = {}
    # 16-bit ADC, exact grid; numpy.round makes -0.0 for values in (-0.5, 0).
    out["adc16-exact"] = np.concatenate([np.round(v) * step16 for v in raw16])
    # 16-bit, k / 32768 * range.
    out["adc16-range"] = np.concatenate([np.round(v) / 32768 * 7.5 for v in raw16])
    # DAQmx-style scaling with a per-channel calibration: offset + gain * k.
    daq = []
    for c, v in enumerate(raw16):
        gain = step16 * (1 + 1.7e-4 * (c + 1) + rng.random() * 1e-5)
        offset = 1.3e-3 * (c - 3.3) + rng.random() * 1e-6
        daq.append(offset + gain * np.round(v))
    out["daqmx-affine"] = np.concatenate(daq)
    out["adc24"] = np.concatenate([np.round(v) * step24 for v in raw24])
    # float32 volts from a 24-bit ADC (27 significant bits: not an exact float32 grid).
    out["float32-adc24"] = np.concatenate([(np.round(v) * step24).astype(np.float32) for v in raw24])
    # Unquantised float64: 16-bit-level signals through a low-pass filter (full mantissas).
    b, a = signal.butter(4, 0.2)
    out["float64-filtered"] = np.concatenate([signal.lfilter(b, a, v * step16) for v in raw16])
    out["int16-counts"] = np.concatenate([np.round(v).astype(np.int16) for v in raw16])
    out["int32-counts24"] = np.concatenate([np.round(v).astype(np.int32) for v in raw24])
    return out


def main():
    directory, n = sys.argv[1], int(sys.argv[2])
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 2026
    os.makedirs(directory, exist_ok=True)
    info = {}
    for name, data in generate(n, seed).items():
        path = os.path.join(directory, name + ".bin")
        data.astype(data.dtype.newbyteorder("<")).tofile(path)
        info[name] = {"file": path, "dtype": str(data.dtype), "channels": CHANNELS, "samples": n}
    print(json.dumps(info))


if __name__ == "__main__":
    main()

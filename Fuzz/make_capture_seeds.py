"""Writes the capture fuzzer's seed corpus (Fuzz/seeds/capture-fuzz/).

The first byte of a seed is the fuzzer's mode (Fuzz/CaptureFuzz.swift): bit 0 set means the CRCs
are fixed up before reading, so mutations reach the envelope fields and chunk bodies.

- spec-*: captures written from docs/CAPTURE.md by Tests/Interop/capture_spec.py, chunks stored
  with codec 0 so the fuzzer mutates the chunk body itself (structure, stream descriptors,
  per-channel regrouped streams of §4.3);
- import-*: captures made by `tributary import` (zstd chunks, as the writer makes them), when
  --tributary names the binary.

usage: python Fuzz/make_capture_seeds.py OUT_DIR [--tributary PATH]
"""
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "Tests/Interop"))
import capture_spec as cs  # noqa: E402
import wire_spec as ws  # noqa: E402

out = pathlib.Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
tributary = sys.argv[sys.argv.index("--tributary") + 1] if "--tributary" in sys.argv else None
rng = np.random.default_rng(2026)
step = 20 / 65536


def seed(name, mode, data):
    (out / name).write_bytes(bytes([mode]) + data)


def adc(rows, n):
    return (np.round(rng.normal(size=(rows, n)) * 300) * step).tolist()


f64 = [ws.frame("analog", ws.analog_f64([2, 0], adc(2, 12), first_sample=12 * i), sequence=i, timestamp_ns=i * 1000,
                source_id=1) for i in range(3)]
f32 = [ws.frame("analog", ws.analog_f32([0, 1, 2], rng.normal(size=(3, 5)).astype(np.float32).tolist()), sequence=i,
                source_id=2) for i in range(2)]
i16 = [ws.frame("analog", ws.analog_i16([1, 0], rng.integers(-500, 500, size=(2, 9)).tolist(), [step, 2 * step], [0.0, 0.5]),
                sequence=i, source_id=3) for i in range(3)]
mixed = [
    ws.frame("analog", ws.analog_f64([5, 1], adc(2, 4)), sequence=1, source_id=4),
    ws.frame("message", ws.message(7, "between"), sequence=2, source_id=4),
    ws.frame("analog", ws.analog_i16([1], [[1, 2, 3]], [0.1], [0.0]), sequence=3, source_id=4),
    ws.frame("analog", ws.analog_f64([], []), sequence=4, source_id=4),
    ws.frame("analog", ws.analog_f32([3, 4], [[], []]), sequence=5, source_id=4),
    ws.frame("analog", ws.analog_i16([9, 1, 9], [[4, 5], [7, 8], [1, 2]], [0.2, 0.3, 0.4], [1.0, 2.0, 3.0]), sequence=6, source_id=4),
    ws.frame("gap", ws.gap(10, 2), sequence=7, source_id=4),
]
seed("spec-float64", 0, cs.capture([f64]))
seed("spec-float32", 0, cs.capture([f32]))
seed("spec-int16-fixcrc", 1, cs.capture([i16], footer=False, delta_int16=True))
seed("spec-mixed-fixcrc", 1, cs.capture([mixed, f64], footer=False, delta_int16=True))
whole = cs.capture([f64, i16, mixed])
seed("spec-torn", 1, whole[: len(whole) * 2 // 3])

if tributary:
    with tempfile.TemporaryDirectory() as d:
        for name, mode, array in [("import-float64", 0, np.round(rng.normal(size=(1, 150)) * 300) * step),
                                  ("import-float32", 0, rng.normal(size=(1, 60)).astype(np.float32)),
                                  ("import-int16-fixcrc", 1, rng.integers(-900, 900, size=(2, 80), dtype=np.int16))]:
            np.save(os.path.join(d, "s1.npy"), array)
            subprocess.run([tributary, "import", os.path.join(d, "s1.npy"), "--rate", "100", "--out", os.path.join(d, "s.tcap")],
                           check=True, capture_output=True)
            seed(name, mode, pathlib.Path(d, "s.tcap").read_bytes())

"""Peer for the wire decode benchmark: numpy frombuffer + reshape + a channel slice on the same
frame bytes (what a Python user would write to read an analog frame). Prints one JSON object."""
import json
import struct
import sys
import time

import numpy as np

path = sys.argv[1]
data = open(path, "rb").read()
# Header fields the Python reader needs: payload length, then the analog preamble.
payload_length = struct.unpack_from("<I", data, 12)[0]
channels, samples = struct.unpack_from("<II", data, 40)
samples_offset = 40 + ((24 + 4 * channels + 7) & ~7)


def decode_once():
    if data[:4] != b"TRIB":
        raise ValueError("bad magic")
    c, n = struct.unpack_from("<II", data, 40)
    matrix = np.frombuffer(data, dtype="<f8", count=c * n, offset=samples_offset).reshape(c, n)
    return matrix[3]


iterations = 20000
times = []
for _ in range(3):
    for _ in range(iterations):
        decode_once()
for _ in range(9):
    start = time.perf_counter_ns()
    for _ in range(iterations):
        decode_once()
    times.append((time.perf_counter_ns() - start) / iterations)
times.sort()
print(json.dumps({"decode_ns": times[len(times) // 2], "check": float(decode_once()[0])}))

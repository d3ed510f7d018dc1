"""Compression peers for the Tributary compression benchmark, measured on the same files.

usage: compression_peer.py FLOAT64_FILE INT16_FILE CHUNK_BYTES REPETITIONS

* python-blosc2, bit-shuffle + zstd level 1 (and 3), every CHUNK_BYTES slice of each file compressed
  as an independent blosc2 chunk (as Tributary does), with 1 and 2 blosc2 threads.
* the zstd command-line tool, levels 1 and 3, on each whole raw file (one thread, -T1), through a subprocess.

Prints one JSON object on its last line: {"<name>": {"ratio":…, "compress_mbps":…, "decompress_mbps":…}, …}.
MB/s are of uncompressed input bytes (10^6 bytes per second), medians over REPETITIONS runs.
"""
import json
import os
import statistics
import subprocess
import sys
import time

import blosc2


def timed(fn, repetitions):
    times = []
    result = None
    fn()  # warm-up
    for _ in range(repetitions):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def blosc2_figures(data, typesize, chunk, level, threads, repetitions):
    blosc2.set_nthreads(threads)
    slices = [data[i:i + chunk] for i in range(0, len(data), chunk)]

    def compress():
        return [blosc2.compress(s, typesize=typesize, clevel=level,
                                filter=blosc2.Filter.BITSHUFFLE, codec=blosc2.Codec.ZSTD) for s in slices]

    t_c, frames = timed(compress, repetitions)
    compressed = sum(len(f) for f in frames)

    def decompress():
        return [blosc2.decompress(f) for f in frames]

    t_d, out = timed(decompress, repetitions)
    assert b"".join(out) == data, "blosc2 round trip differs"
    return {"ratio": len(data) / compressed, "compressed_bytes": compressed,
            "compress_mbps": len(data) / t_c / 1e6, "decompress_mbps": len(data) / t_d / 1e6}


def zstd_cli_figures(path, level, repetitions):
    size = os.path.getsize(path)
    out_path = path + ".peer.zst"

    def compress():
        subprocess.run(["zstd", "-q", "-f", "-T1", f"-{level}", path, "-o", out_path], check=True)

    t_c, _ = timed(compress, repetitions)
    compressed = os.path.getsize(out_path)

    def decompress():
        subprocess.run(["zstd", "-q", "-d", "-c", out_path], check=True, stdout=subprocess.DEVNULL)

    t_d, _ = timed(decompress, repetitions)
    os.remove(out_path)
    return {"ratio": size / compressed, "compressed_bytes": compressed,
            "compress_mbps": size / t_c / 1e6, "decompress_mbps": size / t_d / 1e6}


def main():
    f64_path, i16_path, chunk, repetitions = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    results = {}
    for label, path, typesize in (("f64", f64_path, 8), ("i16", i16_path, 2)):
        with open(path, "rb") as f:
            data = f.read()
        for level in (1, 3):
            for threads in (1, 2):
                results[f"{label} blosc2 bitshuffle+zstd-{level} {threads}t"] = blosc2_figures(
                    data, typesize, chunk, level, threads, repetitions)
            results[f"{label} zstd-cli -{level}"] = zstd_cli_figures(path, level, repetitions)
        results[f"{label} raw_bytes"] = len(data)
    print(json.dumps(results))


if __name__ == "__main__":
    main()

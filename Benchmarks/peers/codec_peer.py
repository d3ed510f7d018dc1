"""Codec peers for the Tributary codec benchmark, measured on the files of codec_data.py.

usage: codec_peer.py INFO_JSON_FILE REPETITIONS

For every data class: pcodec 1.1 (levels 3 and 8, one standalone compression per channel, as pcodec
is meant to be used on a column), python-blosc2 (bit-shuffle + zstd-1, 1 MiB chunks, one thread) and
zstandard (zstd -3, 1 MiB chunks). Prints one JSON object on its last line:
{"<class>": {"<peer>": {"compressed_bytes":…, "compress_mbps":…, "decompress_mbps":…}}}, MB/s of the
class's uncompressed bytes (10^6 bytes per thread CPU second: time.thread_time(), as the Swift side
measures, so that a busy machine slows neither more than the other), medians over REPETITIONS runs,
one core.
"""
import json
import statistics
import sys
import time

import blosc2
import numpy as np
import pcodec
import zstandard
from pcodec import standalone

CHUNK = 1 << 20


def timed(fn, repetitions):
    times, result = [], None
    result = fn()  # warm-up
    for _ in range(repetitions):
        start = time.thread_time()
        result = fn()
        times.append(time.thread_time() - start)
    return statistics.median(times), result


def figures(raw_bytes, compress, decompress, check, repetitions):
    tc, packed = timed(compress, repetitions)
    td, restored = timed(lambda: decompress(packed), repetitions)
    check(restored)
    size = sum(len(p) for p in packed)
    return {"compressed_bytes": size, "compress_mbps": raw_bytes / tc / 1e6, "decompress_mbps": raw_bytes / td / 1e6}


def main():
    info = json.load(open(sys.argv[1]))
    repetitions = int(sys.argv[2])
    blosc2.set_nthreads(1)
    result = {}
    for name, meta in info.items():
        data = np.fromfile(meta["file"], dtype=meta["dtype"])
        channels = data.reshape(meta["channels"], -1)
        raw = data.tobytes()
        n = len(raw)
        row = {}

        def same_channels(restored):
            for a, b in zip(channels, restored):
                assert a.tobytes() == np.asarray(b).tobytes(), name

        def same_bytes(restored):
            assert b"".join(restored) == raw, name

        for level in (3, 8):
            config = pcodec.ChunkConfig(compression_level=level)
            row[f"pcodec-{level}"] = figures(
                n, lambda: [standalone.simple_compress(c, config) for c in channels],
                lambda packed: [standalone.simple_decompress(p) for p in packed], same_channels, repetitions)
        slices = [raw[i:i + CHUNK] for i in range(0, n, CHUNK)]
        typesize = data.dtype.itemsize
        row["blosc2-bitshuffle-zstd1"] = figures(
            n, lambda: [blosc2.compress(s, typesize=typesize, clevel=1, filter=blosc2.Filter.BITSHUFFLE,
                                        codec=blosc2.Codec.ZSTD) for s in slices],
            lambda packed: [blosc2.decompress(p) for p in packed], same_bytes, repetitions)
        zc, zd = zstandard.ZstdCompressor(level=3), zstandard.ZstdDecompressor()
        row["zstd-3"] = figures(n, lambda: [zc.compress(s) for s in slices],
                                lambda packed: [zd.decompress(p) for p in packed], same_bytes, repetitions)
        result[name] = row
        print(name, {k: round(8 * meta["channels"] * meta["samples"] / v["compressed_bytes"], 3) for k, v in row.items()},
              file=sys.stderr)
    print(json.dumps(result))


if __name__ == "__main__":
    main()

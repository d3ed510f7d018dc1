"""The Python doors against the tools a Python user would pick instead (issue 9), in one run.

1. Reading 8 x 1M float64 into numpy: `tributary.open(...).read()` of a capture, against
   `numpy.load` of the same data as NPY (uncompressed), npTDMS reading it as TDMS and pyxdf reading
   it as XDF (both files written by the peers' own writers, or by a minimal writer from the XDF
   spec when pyxdf has none).
2. Batch analysis of 16 captures (statistics + Welch 4096): `tributary.batch.analyze_many` on a
   Dask LocalCluster with 1 and 2 worker processes, against a scipy script with
   multiprocessing (2 processes) over the same data as NPY files.

Every figure is the median of ROUNDS interleaved rounds, with the spread (min-max); ratios are
medians of per-round ratios. Run by `make bench`; needs the package installed (`make python`).
"""
import argparse
import multiprocessing
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np


def median_spread(values):
    return statistics.median(values), min(values), max(values)


def fmt(values, unit="s", scale=1.0):
    m, lo, hi = median_spread([v * scale for v in values])
    return f"{m:.3f} {unit} ({lo:.3f}-{hi:.3f})"


def adc_data(channels, samples, seed):
    rng = np.random.default_rng(seed)
    t = np.arange(samples) / 10_000.0
    data = np.empty((channels, samples))
    for c in range(channels):
        signal = np.sin(2 * np.pi * 50 * (c + 1) * t) + rng.normal(0, 0.01, samples)
        data[c] = np.round(signal / (20 / 65536)) * (20 / 65536)
    return data


def write_xdf(path, data, rate):
    """A minimal XDF 1.0 writer (the spec's chunk tags 1, 2, 3, 6): one stream, double64 samples,
    one chunk per 10 000 samples, each with its first sample's timestamp."""
    def chunk(tag, content):
        length = len(content) + 2
        return bytes([8]) + struct.pack("<Q", length) + struct.pack("<H", tag) + content

    channels, samples = data.shape
    out = bytearray(b"XDF:")
    out += chunk(1, b'<?xml version="1.0"?><info><version>1.0</version></info>')
    header = (f'<?xml version="1.0"?><info><name>bench</name><type>EEG</type><channel_count>{channels}'
              f'</channel_count><nominal_srate>{rate}</nominal_srate><channel_format>double64</channel_format>'
              f'<created_at>0</created_at></info>').encode()
    out += chunk(2, struct.pack("<I", 1) + header)
    rows = np.ascontiguousarray(data.T)
    for start in range(0, samples, 10_000):
        block = rows[start:start + 10_000]
        n = len(block)
        body = bytearray(struct.pack("<I", 1) + bytes([4]) + struct.pack("<I", n))
        stamp = struct.pack("<Bd", 8, start / rate)
        empty = b"\x00"
        for i in range(n):
            body += stamp if i == 0 else empty
            body += block[i].tobytes()
        out += chunk(3, bytes(body))
    footer = (f'<?xml version="1.0"?><info><first_timestamp>0</first_timestamp><last_timestamp>{(samples - 1) / rate}'
              f'</last_timestamp><sample_count>{samples}</sample_count></info>').encode()
    out += chunk(6, struct.pack("<I", 1) + footer)
    with open(path, "wb") as f:
        f.write(out)


def scipy_analyze(path):
    import scipy.signal
    data = np.load(path)
    rows = []
    for channel in data:
        f, p = scipy.signal.welch(channel, fs=10_000, nperseg=4096)
        rows.append((channel.min(), channel.max(), channel.mean(), channel.std(), float(p.max())))
    return rows


def timed(function, *args):
    start = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - start, result


def main():
    work = tempfile.mkdtemp(prefix="tributary-pybench-")
    try:
        return run(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the NPY, TDMS, XDF and capture files: about 490 MB


def run(work):
    parser = argparse.ArgumentParser()
    parser.add_argument("--tributary", required=True, help="the tributary executable")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--files", type=int, default=16)
    arguments = parser.parse_args()

    import nptdms
    import pyxdf

    import tributary

    data = adc_data(8, 1 << 20, seed=1)
    npy, tcap = os.path.join(work, "data.npy"), os.path.join(work, "data.tcap")
    tdms, xdf = os.path.join(work, "data.tdms"), os.path.join(work, "data.xdf")
    np.save(npy, data)
    subprocess.run([arguments.tributary, "import", npy, "--rate", "10000", "--out", tcap], check=True,
                   capture_output=True)
    with nptdms.TdmsWriter(tdms) as writer:
        writer.write_segment([nptdms.ChannelObject("bench", f"ch{c}", data[c]) for c in range(8)])
    write_xdf(xdf, data, 10_000)

    def read_tributary():
        with tributary.open(tcap) as capture:
            return capture.read(1)

    def read_npy():
        return np.load(npy)

    def read_tdms():
        f = nptdms.TdmsFile.read(tdms)
        return np.vstack([f["bench"][f"ch{c}"][:] for c in range(8)])

    def read_xdf():
        streams, _ = pyxdf.load_xdf(xdf, synchronize_clocks=False, dejitter_timestamps=False)
        return streams[0]["time_series"].T

    # Every reader returns the same values.
    for reader in (read_tributary, read_npy, read_tdms, read_xdf):
        values = np.asarray(reader())
        assert values.shape == data.shape and np.array_equal(values, data), reader.__name__
    readers = {"tributary.open().read()": read_tributary, "numpy.load (NPY)": read_npy,
               "nptdms TdmsFile.read (TDMS)": read_tdms, "pyxdf.load_xdf (XDF)": read_xdf}
    times = {name: [] for name in readers}
    # The order rotates round by round, so that every reader follows every other equally often: in a
    # fixed order tributary's read always ran right after pyxdf's seconds-long, memory-hungry one, and
    # first touches of fresh 64 MB buffers stall erratically on this VM
    # (Benchmarks/kernels/idle_first_touch.c, docs/PERFORMANCE.md "C kernels and first touches").
    names = list(readers)
    for round in range(arguments.rounds):
        for name in names[round % len(names):] + names[:round % len(names)]:
            times[name].append(timed(readers[name])[0])
    megabytes = data.nbytes / 1e6
    print(f"\n== Reading 8 x {1 << 20} float64 ({megabytes:.0f} MB) into numpy, {arguments.rounds} interleaved rounds ==")
    print(f"{'reader':32} {'median s (min-max)':28} {'MB/s':>8}  tributary is")
    ours = times["tributary.open().read()"]
    for name, values in times.items():
        ratios = [p / t for p, t in zip(values, ours)]
        print(f"{name:32} {fmt(values):28} {megabytes / statistics.median(values):8.0f}  "
              f"{statistics.median(ratios):.2f}x as fast (per-round median)")

    # Batch analysis.
    from dask.distributed import Client, LocalCluster
    paths, npys = [], []
    for index in range(arguments.files):
        block = adc_data(8, 1 << 18, seed=100 + index)
        n, t = os.path.join(work, f"batch-{index}.npy"), os.path.join(work, f"batch-{index}.tcap")
        np.save(n, block)
        subprocess.run([arguments.tributary, "import", n, "--rate", "10000", "--out", t], check=True, capture_output=True)
        paths.append(t)
        npys.append(n)
    options = dict(stats=True, welch=4096)
    results = {"analyze_many, 1 worker": [], "analyze_many, 2 workers": [], "scipy + multiprocessing (2)": []}
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0") as one, \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0") as two, \
            Client(one) as client1, Client(two) as client2, multiprocessing.Pool(2) as pool:
        # Warm-up: workers import the package and load the library once.
        tributary.batch.analyze_many(paths[:2], client=client1, **options)
        tributary.batch.analyze_many(paths[:2], client=client2, **options)
        pool.map(scipy_analyze, npys[:2])
        for _ in range(arguments.rounds):
            seconds, frame = timed(lambda: tributary.batch.analyze_many(paths, client=client1, **options))
            assert len(frame) == 8 * arguments.files and not frame.attrs["failures"]
            results["analyze_many, 1 worker"].append(seconds)
            seconds, frame = timed(lambda: tributary.batch.analyze_many(paths, client=client2, **options))
            assert len(frame) == 8 * arguments.files and not frame.attrs["failures"]
            results["analyze_many, 2 workers"].append(seconds)
            seconds, rows = timed(lambda: pool.map(scipy_analyze, npys))
            assert len(rows) == arguments.files
            results["scipy + multiprocessing (2)"].append(seconds)
    print(f"\n== Batch analysis of {arguments.files} files of 8 x {1 << 18} float64 (stats + Welch 4096), "
          f"{arguments.rounds} interleaved rounds ==")
    two = results["analyze_many, 2 workers"]
    for name, values in results.items():
        ratios = [v / t for v, t in zip(values, two)]
        print(f"{name:32} {fmt(values):28}  analyze_many (2 workers) is {statistics.median(ratios):.2f}x as fast")


if __name__ == "__main__":
    sys.exit(main())

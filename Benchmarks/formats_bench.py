"""Export and import throughput of TDMS, XDF and HDF5: `tributary export` / `tributary import` against
npTDMS (TDMS write and read), pyxdf (XDF read; it has no writer) and h5py (HDF5 write and read) on the
same data, measured in the same run.

    python Benchmarks/formats_bench.py TRIBUTARY [--channels 8] [--samples 1000000] [--repeat 3] [--json OUT]

MB/s = float64 sample bytes (channels × samples × 8) / best wall time of --repeat runs. Tributary's
times are whole processes: export reads and decompresses the capture and writes the file; import
reads the file and writes a compressed capture. The peers' times are in-process calls (no interpreter
start, no capture): reading = the file into numpy arrays, writing = numpy arrays into the file.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("tributary")
    p.add_argument("--channels", type=int, default=8)
    p.add_argument("--samples", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json")
    a = p.parse_args()
    rate = 100_000.0
    rng = np.random.default_rng(1)
    t = np.arange(a.samples) / rate
    # 16-bit ADC data as float64 volts: what a DAQ delivers, and what compresses as captures do.
    signal = np.round((np.sin(2 * np.pi * 50 * t)[None, :] * (np.arange(a.channels)[:, None] + 1) / a.channels
                       + rng.normal(scale=0.01, size=(a.channels, a.samples))) * 3000) * (20 / 65536)
    mb = signal.nbytes / 1e6
    results = {"channels": a.channels, "samples": a.samples, "megabytes": mb, "rows": []}

    def tributary(*args):
        r = subprocess.run([a.tributary, *args], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"tributary {' '.join(args)}: {r.stderr}")

    with tempfile.TemporaryDirectory() as d:
        path = lambda n: os.path.join(d, n)
        np.save(path("s.npy"), signal)
        tributary("import", path("s.npy"), "--rate", str(rate), "--out", path("s.tcap"))

        def row(fmt, direction, ours, peer_name, peer):
            entry = {"format": fmt, "direction": direction, "tributary_mb_s": mb / ours,
                     "peer": peer_name, "peer_mb_s": mb / peer if peer else None,
                     "speedup": peer / ours if peer else None}
            results["rows"].append(entry)
            speed = f"{entry['speedup']:.1f}x" if peer else "n/a"
            peer_text = f"{entry['peer_mb_s']:9.1f}" if peer else "      n/a"
            print(f"{fmt:5} {direction:6}  tributary {entry['tributary_mb_s']:9.1f} MB/s   {peer_name:8} {peer_text} MB/s   {speed}")

        # TDMS
        from nptdms import TdmsWriter, ChannelObject, TdmsFile
        ours = best(lambda: tributary("export", path("s.tcap"), "--format", "tdms", "--out", path("o.tdms")), a.repeat)

        def nptdms_write():
            with TdmsWriter(path("p.tdms")) as w:
                w.write_segment([ChannelObject("g", f"ch{k}", signal[k], properties={"wf_increment": 1 / rate}) for k in range(a.channels)])
        row("tdms", "export", ours, "npTDMS", best(nptdms_write, a.repeat))
        ours = best(lambda: tributary("import", path("o.tdms"), "--out", path("t.tcap"), "--force"), a.repeat)

        def nptdms_read():
            f = TdmsFile.read(path("o.tdms"))
            return [c[:] for c in f.groups()[0].channels()]
        row("tdms", "import", ours, "npTDMS", best(nptdms_read, a.repeat))

        # XDF
        import pyxdf
        ours = best(lambda: tributary("export", path("s.tcap"), "--format", "xdf", "--out", path("o.xdf")), a.repeat)
        row("xdf", "export", ours, "(none)", None)
        ours = best(lambda: tributary("import", path("o.xdf"), "--out", path("x.tcap"), "--force"), a.repeat)
        row("xdf", "import", ours, "pyxdf", best(lambda: pyxdf.load_xdf(path("o.xdf"), dejitter_timestamps=False), a.repeat))

        # HDF5
        import h5py
        ours = best(lambda: tributary("export", path("s.tcap"), "--format", "hdf5", "--out", path("o.h5")), a.repeat)

        def h5py_write():
            with h5py.File(path("p.h5"), "w") as f:
                f.create_dataset("g/data", data=signal, chunks=(1, min(a.samples, 65536)), shuffle=True, compression="gzip", compression_opts=4)
        row("hdf5", "export", ours, "h5py", best(h5py_write, a.repeat))
        ours = best(lambda: tributary("import", path("o.h5"), "--out", path("h.tcap"), "--force"), a.repeat)

        def h5py_read():
            with h5py.File(path("o.h5"), "r") as f:
                return f[list(f.keys())[0]]["data"][()]
        row("hdf5", "import", ours, "h5py", best(h5py_read, a.repeat))

    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()

"""Export and import throughput of TDMS, XDF and HDF5: `tributary export` / `tributary import` against
npTDMS (TDMS write and read), pyxdf (XDF read; it has no writer) and h5py (HDF5 write and read) on the
same data, measured in the same run.

    python Benchmarks/formats_bench.py TRIBUTARY [--channels 8] [--samples 1000000] [--rounds 5] [--json OUT]

What each side does (the whole job a user does, from a file at rest to a file at rest):

  export  tributary: one `tributary export s.tcap --format F --out o.F` process: start, open the
          capture, decompress its chunks, write the file.
          peer: in-process (no interpreter start): numpy.load of s.npy, the same data uncompressed
          (what the capture was imported from), then the peer's writer writes the same values and
          waveform metadata (one group / dataset, float64, rate and start time; HDF5 with the same
          chunking and shuffle + deflate 4 as tributary).
  import  tributary: one `tributary import o.F --out t.tcap` process: start, read the file, compress
          and write a capture.
          peer: in-process: the peer's reader reads o.F (the file tributary exported) into numpy
          arrays, then numpy.save writes them to an .npy (uncompressed: the peer's own at-rest form).

So the peer is spared the interpreter start and the decompression (export) / compression (import)
that tributary does. Each round runs every case once, tributary and peer alternating which goes
first; the figures are medians over --rounds rounds with their spread (min-max), MB/s = float64
sample bytes (channels x samples x 8) / median wall time, ratio = peer median / tributary median
(> 1: tributary faster). Two extra tributary rows break the imports down: `npy->tcap` is
`tributary import s.npy` (reading the NPY is a memory map: this is the cost of writing a capture,
i.e. the codec), and `--fast-codec` imports with the codec's fast path (no entropy coding).
`process start` is `tributary --version`. Tributary's CPU time (user + system of the process, both
threads) is printed too: on a busy machine it is steadier than wall time, and the codec share is
given from both.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import tempfile
import time

import numpy as np


def main():
    p = argparse.ArgumentParser()
    p.add_argument("tributary")
    p.add_argument("--channels", type=int, default=8)
    p.add_argument("--samples", type=int, default=1_000_000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json")
    a = p.parse_args()
    rate = 100_000.0
    start_ns = 1_700_000_000_000_000_000
    rng = np.random.default_rng(1)
    t = np.arange(a.samples) / rate
    # 16-bit ADC data as float64 volts: what a DAQ delivers, and what compresses as captures do.
    signal = np.round((np.sin(2 * np.pi * 50 * t)[None, :] * (np.arange(a.channels)[:, None] + 1) / a.channels
                       + rng.normal(scale=0.01, size=(a.channels, a.samples))) * 3000) * (20 / 65536)
    mb = signal.nbytes / 1e6
    results = {"channels": a.channels, "samples": a.samples, "megabytes": mb, "rounds": a.rounds, "rows": []}

    def tributary(*args):
        r = subprocess.run([a.tributary, *args], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"tributary {' '.join(args)}: {r.stderr}")

    import h5py
    import pyxdf
    from nptdms import ChannelObject, GroupObject, TdmsFile, TdmsWriter

    with tempfile.TemporaryDirectory() as d:
        def path(n):
            return os.path.join(d, n)
        np.save(path("s.npy"), signal)
        tributary("import", path("s.npy"), "--rate", str(rate), "--out", path("s.tcap"))
        for fmt, ext in (("tdms", "tdms"), ("xdf", "xdf"), ("hdf5", "h5")):
            tributary("export", path("s.tcap"), "--format", fmt, "--out", path(f"o.{ext}"))

        def nptdms_write():
            x = np.load(path("s.npy"))
            props = {"wf_increment": 1 / rate, "wf_start_offset": 0.0, "wf_samples": a.samples,
                     "wf_start_time": np.datetime64(start_ns, "ns"), "unit_string": "V"}
            with TdmsWriter(path("p.tdms")) as w:
                w.write_segment([GroupObject("g")] + [ChannelObject("g", f"ch{k}", x[k], properties=props) for k in range(a.channels)])

        def nptdms_read():
            f = TdmsFile.read(path("o.tdms"))
            np.save(path("p.npy"), np.stack([c[:] for c in f.groups()[0].channels()]))

        def pyxdf_read():
            streams, _ = pyxdf.load_xdf(path("o.xdf"), dejitter_timestamps=False)
            np.save(path("p.npy"), streams[0]["time_series"])

        def h5py_write():
            x = np.load(path("s.npy"))
            with h5py.File(path("p.h5"), "w") as f:
                ds = f.create_dataset("g/data", data=x, chunks=(1, min(a.samples, 65536)), shuffle=True, compression="gzip", compression_opts=4)
                ds.attrs["sample_rate"] = rate
                ds.attrs["start_time_ns"] = start_ns

        def h5py_read():
            with h5py.File(path("o.h5"), "r") as f:
                np.save(path("p.npy"), f[list(f.keys())[0]]["data"][()])

        def ours(*args):
            return (lambda: tributary(*args))
        cases = [
            ("tdms", "export", ours("export", path("s.tcap"), "--format", "tdms", "--out", path("t.tdms"), "--force"), "npTDMS", nptdms_write),
            ("tdms", "import", ours("import", path("o.tdms"), "--out", path("t.tcap"), "--force"), "npTDMS", nptdms_read),
            ("xdf", "export", ours("export", path("s.tcap"), "--format", "xdf", "--out", path("t.xdf"), "--force"), None, None),
            ("xdf", "import", ours("import", path("o.xdf"), "--out", path("t.tcap"), "--force"), "pyxdf", pyxdf_read),
            ("hdf5", "export", ours("export", path("s.tcap"), "--format", "hdf5", "--out", path("t.h5"), "--force"), "h5py", h5py_write),
            ("hdf5", "import", ours("import", path("o.h5"), "--out", path("t.tcap"), "--force"), "h5py", h5py_read),
            ("npy", "npy->tcap", ours("import", path("s.npy"), "--rate", str(rate), "--out", path("t.tcap"), "--force"), None, None),
            ("tdms", "import --fast-codec", ours("import", path("o.tdms"), "--out", path("t.tcap"), "--force", "--fast-codec"), None, None),
            ("-", "process start", ours("--version"), None, None),
        ]
        times = {k: ([], []) for k in range(len(cases))}
        cpu = {k: [] for k in range(len(cases))}

        def child_cpu():
            r = resource.getrusage(resource.RUSAGE_CHILDREN)
            return r.ru_utime + r.ru_stime
        for r in range(a.rounds):
            for k, (_, _, mine, _, peer) in enumerate(cases):
                order = [(0, mine), (1, peer)] if r % 2 == 0 else [(1, peer), (0, mine)]
                for side, fn in order:
                    if fn is None:
                        continue
                    c0, t0 = child_cpu(), time.perf_counter()
                    fn()
                    times[k][side].append(time.perf_counter() - t0)
                    if side == 0:
                        cpu[k].append(child_cpu() - c0)

    print(f"{a.channels} channels x {a.samples} samples float64 = {mb:.1f} MB; medians of {a.rounds} interleaved rounds, spread min-max")
    print(f"{'case':28} {'tributary MB/s':>15} {'(ms, spread)':>20} {'CPU ms':>7}   {'peer':8} {'MB/s':>9} {'(ms, spread)':>20}   ratio")
    def fmt_t(v):
        return f"{1e3 * statistics.median(v):7.1f} [{1e3 * min(v):.0f}-{1e3 * max(v):.0f}]"
    for k, (fmt, direction, _, peer_name, _) in enumerate(cases):
        mine, peer = times[k]
        m = statistics.median(mine)
        entry = {"format": fmt, "direction": direction, "tributary_ms": [1e3 * x for x in mine], "tributary_median_ms": 1e3 * m,
                 "tributary_cpu_median_ms": 1e3 * statistics.median(cpu[k]), "tributary_mb_s": mb / m, "peer": peer_name}
        rate_text = f"{mb / m:15.1f}" if fmt != "-" else f"{'':15}"  # process start moves no data
        line = f"{fmt + ' ' + direction:28} {rate_text} {fmt_t(mine):>20} {entry['tributary_cpu_median_ms']:7.0f}   "
        if peer:
            pm = statistics.median(peer)
            entry.update({"peer_ms": [1e3 * x for x in peer], "peer_median_ms": 1e3 * pm, "peer_mb_s": mb / pm, "ratio": pm / m})
            line += f"{peer_name:8} {mb / pm:9.1f} {fmt_t(peer):>20}   {pm / m:.2f}x"
        else:
            line += f"{'(none)':8} {'':9} {'':>20}   n/a"
        results["rows"].append(entry)
        print(line)
    med = {(r["format"], r["direction"]): r["tributary_median_ms"] for r in results["rows"]}
    cpu_med = {(r["format"], r["direction"]): r["tributary_cpu_median_ms"] for r in results["rows"]}
    for fmt in ("tdms", "xdf", "hdf5"):
        share = min(1.0, med[("npy", "npy->tcap")] / med[(fmt, "import")])
        cpu_share = min(1.0, cpu_med[("npy", "npy->tcap")] / cpu_med[(fmt, "import")])
        results[f"{fmt}_import_capture_write_share"] = {"wall": share, "cpu": cpu_share}
        print(f"{fmt} import: writing the capture (npy->tcap) is {100 * share:.0f}% of tributary's import wall time, {100 * cpu_share:.0f}% of its CPU time")
    print(f"process start: {med[('-', 'process start')]:.1f} ms of every tributary row")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()

"""Paired batch analyses: two (or more) library builds analyse the same captures, one process per
variant, the variants alternating, so that a busy machine disturbs each pair alike.

    .venv/bin/python Benchmarks/analyze_pairs.py old=OLD/libtributary.so new=lib/libtributary.so --pairs 5
    .venv/bin/python Benchmarks/analyze_pairs.py old=OLD/libtributary.so new=lib/libtributary.so --dask

Without --dask each process runs `tributary.analyze(path, stats=True, welch=4096)` over the files
PASSES times in a thread of its own with `MALLOC_TRIM_THRESHOLD_=65536` — as a Dask worker runs its
tasks (Dask starts workers with that setting, which also fixes glibc's mmap threshold at 128 KiB) —
and reports the median time of one file. With --dask each process runs `analyze_many` on a
LocalCluster of two worker processes ROUNDS times and reports the median round. The files are the
batch of `python_bench.py` (16 captures of 8 x 262 144 ADC-quantised float64), made once in a
temporary directory unless --files gives a directory of captures. Printed per variant: its figure
for every pair and, per pair, its ratio to the first variant's.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

CHILD = r'''
import glob, json, os, statistics, threading, time
import tributary, tributary.batch
paths = sorted(glob.glob(os.path.join(os.environ["PAIRS_FILES"], "*.tcap")))
count = int(os.environ["PAIRS_COUNT"])
options = dict(stats=True, welch=4096)
result = {}
if os.environ["PAIRS_DASK"] == "1":
    from dask.distributed import Client, LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client:
        tributary.batch.analyze_many(paths[:4], client=client, **options)
        rounds = []
        for _ in range(count):
            t0 = time.perf_counter()
            frame = tributary.batch.analyze_many(paths, client=client, **options)
            rounds.append(time.perf_counter() - t0)
            assert not frame.attrs["failures"]
        result["seconds"] = statistics.median(rounds)
else:
    def loop():
        for p in paths[:2]:
            tributary.analyze(p, arrays="numpy", **options)
        times = []
        for _ in range(count):
            for p in paths:
                t0 = time.perf_counter()
                tributary.analyze(p, arrays="numpy", **options)
                times.append(time.perf_counter() - t0)
        result["seconds"] = statistics.median(times)
    worker = threading.Thread(target=loop)
    worker.start()
    worker.join()
print(json.dumps(result))
'''


def make_batch(directory, tributary_tool):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import numpy as np

    from python_bench import adc_data
    for index in range(16):
        npy, tcap = os.path.join(directory, f"batch-{index}.npy"), os.path.join(directory, f"batch-{index}.tcap")
        np.save(npy, adc_data(8, 1 << 18, seed=100 + index))
        subprocess.run([tributary_tool, "import", npy, "--rate", "10000", "--out", tcap], check=True, capture_output=True)
        os.remove(npy)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("variants", nargs="+", help="LABEL=LIBRARY (at least two)")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--dask", action="store_true", help="analyze_many on a 2-worker LocalCluster instead of a loop")
    parser.add_argument("--count", type=int, default=None, help="passes over the files (loop, default 3) or rounds (--dask, default 5)")
    parser.add_argument("--files", help="a directory of captures (default: the python_bench batch, made once)")
    parser.add_argument("--tributary", default=".build/release/tributary", help="the tool that imports the batch")
    arguments = parser.parse_args()
    variants = []
    for v in arguments.variants:
        label, _, library = v.partition("=")
        if not label or not library:
            parser.error(f"{v!r} is not LABEL=LIBRARY")
        if not os.path.exists(library):
            parser.error(f"{library}: no such file")
        variants.append((label, library))
    if len(variants) < 2:
        parser.error("give at least two variants")
    made = None
    files = arguments.files
    if files is None:
        made = files = tempfile.mkdtemp(prefix="tributary-analyze-pairs-")
        make_batch(files, arguments.tributary)
    try:
        count = arguments.count or (5 if arguments.dask else 3)
        rows = {label: [] for label, _ in variants}
        for _ in range(arguments.pairs):
            for label, library in variants:
                environment = {**os.environ, "TRIBUTARY_LIBRARY": library, "PAIRS_FILES": files, "PAIRS_COUNT": str(count),
                               "PAIRS_DASK": "1" if arguments.dask else "0"}
                if not arguments.dask:
                    environment["MALLOC_TRIM_THRESHOLD_"] = "65536"
                done = subprocess.run([sys.executable, "-c", CHILD], env=environment, capture_output=True, text=True)
                if done.returncode != 0:
                    sys.exit(f"{label}: the analysing process failed:\n{done.stderr}")
                rows[label].append(json.loads(done.stdout.strip().splitlines()[-1])["seconds"])
    finally:
        if made:
            shutil.rmtree(made, ignore_errors=True)
    first = variants[0][0]
    what = "analyze_many round (2 workers), s" if arguments.dask else "one file in a worker-like thread, ms"
    scale = 1 if arguments.dask else 1e3
    print(f"== {arguments.pairs} pairs: {what}; per pair, in order ==")
    for label, values in rows.items():
        print(f"{label:8} {[round(scale * v, 3) for v in values]}  median {scale * statistics.median(values):.3f}")
        if label != first:
            ratios = [v / f for v, f in zip(values, rows[first])]
            print(f"{'':8} / {first}: {[round(x, 3) for x in ratios]} (median {statistics.median(ratios):.3f})")


if __name__ == "__main__":
    main()

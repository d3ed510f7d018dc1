"""Paired reads: two (or more) library builds or capture files read the same data, one process per
variant, the variants alternating, so that a busy machine disturbs each pair alike.

    .venv/bin/python Benchmarks/read_pairs.py --npy data.npy \\
        old=OLD/libtributary.so:data.tcap new=lib/libtributary.so:data.tcap --pairs 5

Each process reads the capture's first analog source with `tributary.open(...).read()` READS times
after one warm-up read, and `numpy.load` of the NPY after each read (the peer, in the same process);
it reports the median wall and CPU time of the reads and the median of the per-read ratios
numpy.load / read. Printed per variant: those figures for every pair, and per pair each variant's
wall and CPU time over the first variant's. A variant ending in `:into` reads every time into the
array of its warm-up read (`read(out=...)`) instead of a new one.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r'''
import json, os, resource, statistics, time
import numpy as np, tributary
capture, npy, reads = os.environ["READ_CAPTURE"], os.environ["READ_NPY"], int(os.environ["READ_COUNT"])
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
into = None
def read():
    with tributary.open(capture) as c:
        return c.read(out=into)
expected = np.load(npy)
first = read()
assert np.array_equal(first, expected), "the capture does not hold the NPY's values"
if os.environ.get("READ_INTO") == "1":
    into = first  # every timed read fills this one array (read(out=...))
wall, used, ratio = [], [], []
for _ in range(reads):
    c0, t0 = cpu(), time.perf_counter()
    read()
    wall.append(time.perf_counter() - t0)
    used.append(cpu() - c0)
    t0 = time.perf_counter()
    np.load(npy)
    ratio.append((time.perf_counter() - t0) / wall[-1])
print(json.dumps({"wall": statistics.median(wall), "cpu": statistics.median(used), "ratio": statistics.median(ratio)}))
'''


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("variants", nargs="+", help="LABEL=LIBRARY:CAPTURE[:into] (at least two; ':into' reads "
                                                     "into one array with read(out=...) instead of a new one each time)")
    parser.add_argument("--npy", required=True, help="the same data as NPY (checked against each read, and the peer)")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--reads", type=int, default=21)
    arguments = parser.parse_args()
    variants = []
    for v in arguments.variants:
        label, _, rest = v.partition("=")
        library, _, capture = rest.partition(":")
        into = capture.endswith(":into")
        capture = capture.removesuffix(":into")
        if not label or not library or not capture:
            parser.error(f"{v!r} is not LABEL=LIBRARY:CAPTURE[:into]")
        for path in (library, capture):
            if not os.path.exists(path):
                parser.error(f"{path}: no such file")
        variants.append((label, library, capture, into))
    if len(variants) < 2:
        parser.error("give at least two variants")
    rows = {label: [] for label, _, _, _ in variants}
    for _ in range(arguments.pairs):
        for label, library, capture, into in variants:
            environment = {**os.environ, "TRIBUTARY_LIBRARY": library, "READ_CAPTURE": capture,
                           "READ_NPY": arguments.npy, "READ_COUNT": str(arguments.reads), "READ_INTO": "1" if into else "0"}
            done = subprocess.run([sys.executable, "-c", CHILD], env=environment, capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"{label}: the reading process failed:\n{done.stderr}")
            rows[label].append(json.loads(done.stdout))
    first = variants[0][0]
    print(f"== {arguments.pairs} pairs, {arguments.reads} reads per process; per pair, in order ==")
    for label, values in rows.items():
        print(f"{label:8} wall ms {[round(1e3 * v['wall'], 1) for v in values]}  cpu ms {[round(1e3 * v['cpu'], 1) for v in values]}")
        print(f"{'':8} numpy.load / read {[round(v['ratio'], 2) for v in values]}  median {statistics.median(v['ratio'] for v in values):.2f}")
        if label != first:
            walls = [v["wall"] / f["wall"] for v, f in zip(values, rows[first])]
            cpus = [v["cpu"] / f["cpu"] for v, f in zip(values, rows[first])]
            print(f"{'':8} / {first}: wall {[round(x, 2) for x in walls]} (median {statistics.median(walls):.2f}), "
                  f"cpu {[round(x, 2) for x in cpus]} (median {statistics.median(cpus):.2f})")


if __name__ == "__main__":
    main()

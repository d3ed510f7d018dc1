"""Before/after pairs of a change across the whole toolkit: two built trees run the same suites, one
process per tree, alternating BEFORE, AFTER, BEFORE, AFTER ..., so that a busy machine disturbs each
pair alike (issue 39's rule "speed does not drop"; docs/PERFORMANCE.md, "Before and after the redesign").

    git worktree add --detach ../before 29014c8        # then in each tree: swift build -c release && make lib
    .venv/bin/python Benchmarks/redesign_pairs.py --before ../before --after . --pairs 5

A tree is used through TREE/.build/release/{tributary,tributary-bench}, TREE/lib/libtributary.so and
TREE/python (its own Python package, which its library matches). Suites (--suites, default all):

  codec      `tributary-bench --filter codec` without its peers, one round (TRIBUTARY_CODEC_NO_PEERS=1,
             TRIBUTARY_CODEC_ROUNDS=1; --codec-samples sets TRIBUTARY_CODEC_SAMPLES): compress and
             decompress MB/s per thread CPU second per class and their geometric means; the
             compressed ratios must be equal in both trees.
  capture    `--filter capture`: float64 and int16 write (2 compression threads) and read MB/s; the
             file ratios must be equal.
  transport  `--filter transport`: publisher -> Subject in one process, 64 KiB frames, defaults,
             lossless and live, MB/s (medians of the suite's 5 rounds) and the same over raw pyzmq in
             those rounds; callback latency p50 at 1 000 frames/s.
  read       read_pairs.py's reading process: `tributary.open(...).read()` of 8 x 1M float64, median
             wall and CPU ms of --reads reads (21) after a warm-up.
  batch      as analyze_pairs.py's process (no Dask): `tributary.analyze(stats=True, welch=4096)` of
             16 captures of 8 x 262 144 float64 in a worker-like thread, --passes times (3): median
             wall and CPU (the whole process's) ms a file.

The read and batch captures are written once by the BEFORE tree's `tributary import` and once by
the AFTER tree's; the script stops unless they are byte-identical but for the header's uuid and
creation time (captures must not change).

Per figure it prints each tree's value in every pair, the medians, the per-pair speed ratios
AFTER / BEFORE (for times: BEFORE's time over AFTER's; above 1 = AFTER faster), and BEFORE's own
spread (its min and max over its median). A figure is "slower" when the median pair ratio is below
BEFORE's min / median, i.e. outside the spread BEFORE shows against itself. --json keeps it all.
"""
import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import read_pairs  # beside this script: its reading process is the one timed here

# analyze_pairs.py's process without Dask, timing each file's CPU (all threads) beside its wall time.
BATCH_CHILD = r'''
import glob, json, os, resource, statistics, threading, time
import tributary
paths = sorted(glob.glob(os.path.join(os.environ["PAIRS_FILES"], "*.tcap")))
count = int(os.environ["PAIRS_COUNT"])
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
result = {}
def loop():
    for p in paths[:2]:
        tributary.analyze(p, arrays="numpy", stats=True, welch=4096)
    wall, used = [], []
    for _ in range(count):
        for p in paths:
            c0, t0 = cpu(), time.perf_counter()
            tributary.analyze(p, arrays="numpy", stats=True, welch=4096)
            wall.append(time.perf_counter() - t0)
            used.append(cpu() - c0)
    result.update(wall=statistics.median(wall), cpu=statistics.median(used))
worker = threading.Thread(target=loop)
worker.start()
worker.join()
print(json.dumps(result))
'''

SUITES = ("codec", "capture", "transport", "read", "batch")


class Tree:
    """One built tree: its tools, its C library and its Python package."""

    def __init__(self, label: str, root: str):
        self.label, self.root = label, os.path.abspath(root)
        self.bench = os.path.join(self.root, ".build/release/tributary-bench")
        self.tool = os.path.join(self.root, ".build/release/tributary")
        self.library = os.path.join(self.root, "lib/libtributary.so")
        self.python = os.path.join(self.root, "python")
        for path in (self.bench, self.tool, self.library, self.python):
            if not os.path.exists(path):
                sys.exit(f"{label}: {path} is missing (swift build -c release && make lib in {self.root})")

    def commit(self) -> str:
        # the tree's python/ is in its checkout (a tree of links to another build names that checkout)
        done = subprocess.run(["git", "-C", os.path.realpath(self.python), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True)
        return done.stdout.strip() or "?"


def run_bench(tree: Tree, suite: str, extra_env: dict) -> str:
    """Runs one tributary-bench suite in the tree (its peers from its Benchmarks/peers) and returns the output."""
    scratch = tempfile.mkdtemp(prefix="redesign-pairs-")  # the bench's scratch is $TMPDIR/tributary-bench
    try:
        environment = {**os.environ, "TMPDIR": scratch, **extra_env}
        done = subprocess.run([tree.bench, "--python", sys.executable, "--filter", suite], cwd=tree.root,
                              env=environment, capture_output=True, text=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if done.returncode != 0:
        sys.exit(f"{tree.label}: tributary-bench --filter {suite} failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done.stdout


def row_value(output: str, name: str, occurrence: int = 0) -> str:
    """The text after a printTable row's name (its Tributary, peer and ratio columns)."""
    rows = [line.strip()[len(name):] for line in output.splitlines() if line.strip().startswith(name)]
    if len(rows) <= occurrence:
        sys.exit(f"no row {name!r} (#{occurrence + 1}) in the benchmark's output:\n{output[-3000:]}")
    return rows[occurrence]


def first_number(text: str) -> float:
    match = re.search(r"-?\d+(?:\.\d+)?", text)
    if not match:
        sys.exit(f"no number in {text!r}")
    return float(match.group(0))


def codec_figures(tree: Tree, samples: int) -> dict:
    output = run_bench(tree, "codec", {"TRIBUTARY_CODEC_NO_PEERS": "1", "TRIBUTARY_CODEC_ROUNDS": "1",
                                       "TRIBUTARY_CODEC_SAMPLES": str(samples)})
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if line.split()[:2] == ["class", "trib"]), None)
    if start is None:
        sys.exit(f"{tree.label}: no codec table in:\n{output[-3000:]}")
    figures, same = {}, {}
    compress, decompress = [], []
    for line in lines[start + 1:]:
        cells = line.split()
        if len(cells) < 16:
            break
        name = cells[0]
        same[f"codec {name} ratio"] = cells[1]
        figures[f"codec {name} compress MB/s"] = (float(cells[10]), "speed")
        figures[f"codec {name} decompress MB/s"] = (float(cells[15]), "speed")
        compress.append(float(cells[10]))
        decompress.append(float(cells[15]))
    if not compress:
        sys.exit(f"{tree.label}: an empty codec table in:\n{output[-3000:]}")
    figures["codec compress MB/s, geometric mean of the classes"] = (geometric_mean(compress), "speed")
    figures["codec decompress MB/s, geometric mean of the classes"] = (geometric_mean(decompress), "speed")
    return {"figures": figures, "same": same}


def capture_figures(tree: Tree) -> dict:
    output = run_bench(tree, "capture", {})
    figures, same = {}, {}
    for kind in ("float64 ADC", "int16"):
        figures[f"capture {kind} write MB/s (2 threads)"] = (first_number(row_value(output, f"{kind}: write MB/s, 2 threads vs 1")), "speed")
        figures[f"capture {kind} read+decode MB/s"] = (first_number(row_value(output, f"{kind}: read+decode MB/s (one thread)")), "speed")
        same[f"capture {kind} file ratio"] = row_value(output, f"{kind}: ratio frames/file (vs raw float64)").split()[0]
    return {"figures": figures, "same": same}


def transport_figures(tree: Tree) -> dict:
    output = run_bench(tree, "transport", {})
    figures = {}
    for occurrence, delivery in enumerate(("lossless", "live")):
        text = row_value(output, "defaults (two contexts, callback thread) [MB/s samples]", occurrence)
        figures[f"transport {delivery} MB/s"] = (first_number(text), "speed")
        figures[f"transport {delivery} x raw pyzmq (same rounds)"] = (first_number(text[text.index("pyzmq"):]), "speed")
    latency = row_value(output, "1000 frames/s")
    figures["transport latency p50 µs at 1 000 frames/s"] = (first_number(latency[latency.index("p50"):]), "time")
    return {"figures": figures, "same": {}}


def read_figures(tree: Tree, data: dict, reads: int) -> dict:
    environment = {**os.environ, "TRIBUTARY_LIBRARY": tree.library, "PYTHONPATH": tree.python,
                   "READ_CAPTURE": data["tcap"], "READ_NPY": data["npy"], "READ_COUNT": str(reads), "READ_INTO": "0"}
    done = subprocess.run([sys.executable, "-c", read_pairs.CHILD], env=environment, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{tree.label}: the reading process failed:\n{done.stderr}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {"figures": {"Python read wall ms": (1e3 * result["wall"], "time"), "Python read CPU ms": (1e3 * result["cpu"], "time")},
            "same": {}}


def batch_figures(tree: Tree, data: dict, passes: int) -> dict:
    environment = {**os.environ, "TRIBUTARY_LIBRARY": tree.library, "PYTHONPATH": tree.python, "PAIRS_FILES": data["batch"],
                   "PAIRS_COUNT": str(passes), "MALLOC_TRIM_THRESHOLD_": "65536"}
    done = subprocess.run([sys.executable, "-c", BATCH_CHILD], env=environment, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{tree.label}: the analysing process failed:\n{done.stderr}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {"figures": {"batch analyze wall ms a file": (1e3 * result["wall"], "time"),
                        "batch analyze CPU ms a file": (1e3 * result["cpu"], "time")}, "same": {}}


def geometric_mean(values: list) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def same_capture(path: str, other: str) -> bool:
    """Byte-identical but for what every capture has of its own: the header's random `uuid`, its
    `created_ns` and so its `header_crc` (docs/CAPTURE.md §2)."""
    with open(path, "rb") as f:
        a = f.read()
    with open(other, "rb") as f:
        b = f.read()
    if len(a) != len(b) or len(a) < 48:
        return False
    end = int.from_bytes(a[12:16], "little")  # header_length: the CRC is its last 4 bytes
    if not 48 <= end <= len(a) or a[:16] != b[:16]:
        return False
    return a[40:end - 4] == b[40:end - 4] and a[end:] == b[end:]


def data_paths(directory: str) -> dict:
    return {"npy": os.path.join(directory, "read.npy"), "tcap": os.path.join(directory, "read.tcap"),
            "batch": os.path.join(directory, "batch")}


def make_data(data: dict, before: Tree, after: Tree) -> None:
    """The read's and the batch's captures, written by both trees' import; they must be byte-identical."""
    import numpy as np

    from python_bench import adc_data
    directory = os.path.dirname(data["npy"])
    os.makedirs(data["batch"] + ".partial")
    jobs = [(data["npy"], adc_data(8, 1 << 20, seed=1), data["tcap"])]
    for index in range(16):
        jobs.append((os.path.join(directory, f"batch-{index}.npy"), adc_data(8, 1 << 18, seed=100 + index),
                     os.path.join(data["batch"] + ".partial", f"batch-{index}.tcap")))
    # Without --start-time, import began at time 0 until it took the file's modification time (after
    # 29014c8); both trees are given 0, where they take the option.
    start = {}
    for tool in (before.tool, after.tool):
        usage = subprocess.run([tool, "help", "import"], capture_output=True, text=True).stdout
        start[tool] = ["--start-time", "0"] if "--start-time" in usage else []
    for npy, values, tcap in jobs:
        np.save(npy, values)
        check = tcap + ".before"
        for tool, out in ((after.tool, tcap), (before.tool, check)):
            subprocess.run([tool, "import", npy, "--rate", "10000", "--out", out, *start[tool]], check=True, capture_output=True)
        if not same_capture(tcap, check):
            sys.exit(f"{tcap}: the two trees' `tributary import` wrote different captures")
        os.remove(check)
        if npy != data["npy"]:
            os.remove(npy)
    os.rename(data["batch"] + ".partial", data["batch"])
    print(f"data: 17 captures, byte-identical from both trees' `tributary import` but for uuid and creation time ({directory})", flush=True)


def summarise(suite: str, runs: dict, before: str, after: str) -> list:
    """Per figure: the values of every pair, the medians, the pair ratios and BEFORE's spread."""
    out = []
    for name, (_, kind) in runs[before][0]["figures"].items():
        b = [r["figures"][name][0] for r in runs[before]]
        a = [r["figures"][name][0] for r in runs[after]]
        ratios = [(x / y if kind == "speed" else y / x) for x, y in zip(a, b)]
        low, high = min(b) / statistics.median(b), max(b) / statistics.median(b)
        if kind == "time":  # as speeds: the slowest BEFORE run is its lowest speed
            low, high = statistics.median(b) / max(b), statistics.median(b) / min(b)
        median_ratio = statistics.median(ratios)
        verdict = "slower" if median_ratio < low else ("faster" if median_ratio > high else "within")
        out.append({"suite": suite, "figure": name, "kind": kind, "before": b, "after": a,
                    "before_median": statistics.median(b), "after_median": statistics.median(a), "ratios": ratios,
                    "ratio_median": median_ratio, "before_spread": [low, high], "verdict": verdict})
    for key in runs[before][0]["same"]:
        values = {r["same"][key] for tree in (before, after) for r in runs[tree]}
        if len(values) != 1:
            out.append({"suite": suite, "figure": key, "kind": "identity", "values": sorted(values), "verdict": "DIFFERS"})
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="the tree before the change (built: release + lib)")
    parser.add_argument("--after", required=True, help="the tree after the change (built: release + lib)")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--suites", default=",".join(SUITES), help=f"comma-separated, of {', '.join(SUITES)}")
    parser.add_argument("--codec-samples", type=int, default=1 << 20, help="codec: samples per channel of each class (default 1048576)")
    parser.add_argument("--reads", type=int, default=21, help="read: timed reads per process (default 21)")
    parser.add_argument("--passes", type=int, default=3, help="batch: passes over the 16 files per process (default 3)")
    parser.add_argument("--data", help="read/batch: keep the captures in this directory, made there (and checked) if it "
                                       "does not exist yet, reused if it does (default: a temporary one)")
    parser.add_argument("--json", help="write every run's figures and the summary here")
    arguments = parser.parse_args()
    suites = [s for s in arguments.suites.split(",") if s]
    for s in suites:
        if s not in SUITES:
            parser.error(f"unknown suite {s!r}")
    if min(arguments.pairs, arguments.codec_samples, arguments.reads, arguments.passes) < 1:
        parser.error("--pairs, --codec-samples, --reads and --passes must be at least 1")
    before, after = Tree("before", arguments.before), Tree("after", arguments.after)
    trees = (before, after)
    print(f"before {before.commit()} ({before.root}), after {after.commit()} ({after.root}), {arguments.pairs} pairs", flush=True)
    work = arguments.data or tempfile.mkdtemp(prefix="redesign-pairs-data-")
    results, log = [], {"before": before.commit(), "after": after.commit(), "suites": {}}
    try:
        data = {}
        if {"read", "batch"} & set(suites):
            data = data_paths(work)
            if arguments.data and os.path.exists(data["batch"]):
                print(f"data: reusing the captures in {work}", flush=True)
            else:
                os.makedirs(work, exist_ok=True)
                make_data(data, before, after)
        measure = {"codec": lambda t: codec_figures(t, arguments.codec_samples), "capture": capture_figures,
                   "transport": transport_figures, "read": lambda t: read_figures(t, data, arguments.reads),
                   "batch": lambda t: batch_figures(t, data, arguments.passes)}
        for suite in suites:
            runs = {"before": [], "after": []}
            for pair in range(arguments.pairs):
                for tree in trees:
                    started, load = time.time(), os.getloadavg()[0]
                    figures = measure[suite](tree)
                    figures["load"], figures["seconds"] = load, time.time() - started
                    runs[tree.label].append(figures)
                    print(f"{suite} pair {pair + 1} {tree.label}: load {load:.1f}, {figures['seconds']:.0f} s", flush=True)
            log["suites"][suite] = runs
            results += summarise(suite, runs, "before", "after")
    finally:
        if not arguments.data:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\n== {arguments.pairs} pairs, before {log['before']} / after {log['after']}; ratio = after's speed / before's ==")
    for r in results:
        if r["kind"] == "identity":
            print(f"{r['figure']}: DIFFERS between the runs: {r['values']}")
            continue
        print(f"{r['figure']}: before {[round(v, 2) for v in r['before']]} median {r['before_median']:.2f}; "
              f"after {[round(v, 2) for v in r['after']]} median {r['after_median']:.2f}")
        print(f"    pair ratios {[round(x, 3) for x in r['ratios']]} median {r['ratio_median']:.3f}; "
              f"before's spread {r['before_spread'][0]:.3f}-{r['before_spread'][1]:.3f}: {r['verdict']}")
    if arguments.json:
        log["summary"] = results
        with open(arguments.json, "w") as f:
            json.dump(log, f, indent=1)


if __name__ == "__main__":
    main()

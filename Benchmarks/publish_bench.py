"""Publishing from Python and C (issue 40, "Speed") against the tools a user would pick instead, in
one run. Run by `make bench`; `--quick` for a short smoke run.

1. Throughput: a Python process pushing --blocks blocks of 8 x 1 024 float64 (64 KiB) through
   `tributary.Publisher` (a lossless source, `PublishedSource.push`) to a `tributary subscribe --summary`
   process: delivered MB/s (the subscriber's, first data frame to last). Peers, the same bytes in the
   same rounds: pylsl `push_chunk` -> `pull_chunk` processes (Benchmarks/peers/lsl_peer.py, chunks of
   1 024 samples x 8 channels, at most --lsl-chunks of them: LSL moves tens of MB/s) and a pyzmq
   DEALER process sending 65 536-byte messages to a ROUTER process (zmq_process_peer.py).
2. Latency between processes at 1 000 blocks/s of 8 x 16 float64: the Python pusher gives each block
   the time of its push as its last sample's time (`time_ns` = now - 16 samples / rate), `tributary
   bench ADDRESS` (the library's Subject, observers on a callback thread; and with `--inline`, on the
   socket thread) reports the observer callback's time minus it; the peer is LSL's outlet -> inlet at the same rate and block
   (`push_chunk(chunk, local_clock())`, the inlet's `pull_chunk` time minus that stamp).
3. C push (Benchmarks/c/push_cpu.c, built here against the release library) with one
   `subscribe --summary`: the pushing thread's CPU per `tributary_source_push` against one memcpy of
   the block, its heap allocations per push, and the whole publishing process's CPU per block
   (pushing thread, publisher loop, libzmq's I/O thread), for 8 x 16 and 8 x 1 024 float64 blocks,
   unpaced (lossless) and at 1 000 blocks/s (live).

Rounds alternate Tributary and its peers (the order flips every round); each figure is the median of
the rounds with the spread (min-max), ratios are medians of per-round ratios.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import process_bench  # noqa: E402  (the peers' processes and the spread notation are shared)

spread = process_bench.median_spread

CHANNELS = 8


def ratios(ours, theirs, higher_is_better=True):
    """Per-round ratios ours / theirs (or theirs / ours), None where either is missing."""
    out = []
    for a, b in zip(ours, theirs):
        if a and b:
            out.append(a / b if higher_is_better else b / a)
    return out


# ---- the pushing process (started by this script: `publish_bench.py push ...`) ------------------------
def push_role(args):
    """Binds a publisher with source 1 (8 float64 channels), prints 'listening on ENDPOINT', waits for a
    subscriber, pushes, prints one JSON object and closes (lossless frames drain first)."""
    import numpy as np

    import tributary

    paced = args.rate > 0
    block = np.random.default_rng(1).standard_normal((CHANNELS, args.samples))
    rate_hz = args.rate * args.samples if paced else 1_000_000.0
    with tributary.Publisher("tcp://127.0.0.1:0", api_key="bench", announce=False) as pub:
        source = pub.add_source(id=1, name="push", rate=rate_hz, channels=CHANNELS, dtype="float64", lossless=not paced)
        print("listening on", pub.endpoint, flush=True)
        deadline = time.time() + 30
        while pub.subscribers < 1 and time.time() < deadline:
            time.sleep(0.005)
        if pub.subscribers < 1:
            print(json.dumps({"error": "no subscriber within 30 s"}), flush=True)
            return 1
        dropped = 0
        start = time.perf_counter()
        if not paced:
            for _ in range(args.blocks):
                source.push(block, timeout=30)
        else:
            # The block's last sample is taken now: its first sample `samples` sample periods earlier.
            lead_ns = int(round(args.samples * 1e9 / rate_hz))
            pushed = 0
            end = start + args.seconds
            while True:
                due = start + pushed / args.rate
                if due > end:
                    break
                now = time.perf_counter()
                if due > now:
                    time.sleep(due - now)
                if not source.push(block, time_ns=time.time_ns() - lead_ns):
                    dropped += 1
                pushed += 1
        elapsed = time.perf_counter() - start
        print(json.dumps({"seconds": elapsed, "dropped": dropped, "pushed": source.pushed}), flush=True)
    return 0


# ---- the benchmark ------------------------------------------------------------------------------------
class PublishBench:
    def __init__(self, args):
        self.args = args
        self.pb = process_bench
        self.peers = process_bench.Bench(argparse.Namespace(tributary=args.tributary, python=args.python))
        self.tmp = tempfile.mkdtemp(prefix="tributary-publish-bench-")
        self.env = dict(os.environ, TRIBUTARY_LIBRARY=args.library,
                        PYTHONPATH=os.path.join(ROOT, "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.results = {}

    def start_pusher(self, *extra):
        """The pushing process with the library under test (TRIBUTARY_LIBRARY) and this checkout's package."""
        proc = self.pb.Proc([self.args.python, os.path.abspath(__file__), "push", *extra], env=self.env)
        address = proc.wait_line("listening on ").split()[-1]
        return proc, address

    # ---- 1. throughput --------------------------------------------------------------------------------
    def tributary_throughput(self, blocks):
        pusher, address = self.start_pusher("--blocks", str(blocks), "--samples", "1024")
        sub = self.pb.Proc([self.args.tributary, "subscribe", address, "--api-key", "bench", "--summary"])
        if pusher.finish(180) != 0 or sub.finish(60) != 0:
            raise RuntimeError(f"push -> subscribe failed: {''.join(pusher.err)[-600:]} {''.join(sub.err)[-600:]}")
        s = sub.json()
        if s["data_frames"] != blocks:
            raise RuntimeError(f"push -> subscribe: {s['data_frames']} of {blocks} blocks arrived")
        return {"mb_per_s": s["data_mb_per_s"], "push_seconds": pusher.json()["seconds"]}

    def throughput(self):
        a = self.args
        block_bytes = CHANNELS * 1024 * 8
        print(f"\n== Python pushing {a.blocks} blocks of {CHANNELS} x 1024 float64 ({block_bytes // 1024} KiB) to "
              f"`subscribe --summary`, {a.rounds} interleaved rounds (delivered MB/s) ==", flush=True)
        runs = {"tributary": [], "pyzmq": [], "lsl": []}
        versions = {}
        for r in range(a.rounds):
            order = ["tributary", "pyzmq", "lsl"] if r % 2 == 0 else ["lsl", "pyzmq", "tributary"]
            for system in order:
                if system == "tributary":
                    runs[system].append(self.tributary_throughput(a.blocks)["mb_per_s"])
                elif system == "pyzmq":
                    z = self.peers.pyzmq_pair(a.blocks, block_bytes)
                    versions["pyzmq"] = z["version"]
                    runs[system].append(z["mb_per_s"] if not z["lost"] else None)
                elif not a.no_lsl:
                    lsl = self.peers.lsl_pair(min(a.blocks, a.lsl_chunks), CHANNELS, 1024)
                    versions["lsl"] = lsl["version"]
                    runs[system].append(lsl["mb_per_s"] if not lsl["lost_samples"] else None)
            print(f"  round {r + 1}: " + ", ".join(f"{k} {v[-1]:.0f} MB/s" for k, v in runs.items() if v and v[-1]), flush=True)
        print(f"{'system':44} {'MB/s median (min-max)':28} Tributary is")
        print(f"{'tributary.Publisher -> subscribe --summary':44} {spread(runs['tributary']):28}")
        print(f"{'pyzmq DEALER -> ROUTER, ' + versions.get('pyzmq', ''):44} {spread(runs['pyzmq']):28} "
              f"{spread(ratios(runs['tributary'], runs['pyzmq']))}x  (target >= 1.0x)")
        if runs["lsl"]:
            print(f"{'LSL push_chunk -> pull_chunk, ' + versions.get('lsl', ''):44} {spread(runs['lsl']):28} "
                  f"{spread(ratios(runs['tributary'], runs['lsl']))}x  (target >= 5x)")
        self.results["throughput"] = {"runs": runs, "versions": versions}

    # ---- 2. latency -----------------------------------------------------------------------------------
    def tributary_latency(self, seconds, inline=False):
        """`inline`: the observer runs on the session's socket thread (`bench --inline`), not a callback thread."""
        pusher, address = self.start_pusher("--rate", "1000", "--samples", "16", "--seconds", str(seconds + 2.0))
        out = os.path.join(self.tmp, "latency.json")
        bench = self.pb.Proc([self.args.tributary, "bench", address, "--api-key", "bench", "--seconds", str(seconds),
                              "--json", out, *(["--inline"] if inline else [])])
        if bench.finish(120) != 0:
            raise RuntimeError(f"bench: {''.join(bench.err)[-600:]}")
        pusher.finish(60)
        with open(out) as f:
            p = json.load(f)["points"][0]
        return {**(p["latency_us"] or {}), "delivered": p["delivered_frames_per_s"], "lost": p["announced_lost"],
                "unaccounted": p["unaccounted_lost"]}

    def latency(self):
        a = self.args
        print(f"\n== Push -> observer latency between processes, 1000 blocks/s of {CHANNELS} x 16 float64, "
              f"{a.rounds} interleaved rounds of {a.latency_seconds} s (µs) ==", flush=True)
        ours, inline, lsl = [], [], []
        for r in range(a.rounds):
            order = ["tributary", "inline", "lsl"] if r % 2 == 0 else ["lsl", "inline", "tributary"]
            for system in order:
                if system == "tributary":
                    ours.append(self.tributary_latency(a.latency_seconds))
                elif system == "inline":
                    inline.append(self.tributary_latency(a.latency_seconds, inline=True))
                elif not a.no_lsl:
                    lsl.append(self.peers.latency_lsl(1000, a.latency_seconds))
            t = ours[-1]
            line = (f"  round {r + 1}: tributary p50 {t['p50']:.0f} p99 {t['p99']:.0f} ({t['delivered']:.0f} blocks/s, lost {t['lost']}); "
                    f"--inline p50 {inline[-1]['p50']:.0f} p99 {inline[-1]['p99']:.0f}")
            if lsl:
                line += f"; LSL p50 {lsl[-1]['p50']:.0f} p99 {lsl[-1]['p99']:.0f}"
            print(line, flush=True)
        print(f"{'system':36} {'p50 µs':24} {'p99 µs':24} {'p99.9 µs':24}")
        for name, rows in (("tributary.Publisher -> bench", ours), ("the same, bench --inline", inline), ("LSL outlet -> inlet", lsl)):
            if rows:
                print(f"{name:36} {spread([x['p50'] for x in rows]):24} {spread([x['p99'] for x in rows]):24} "
                      f"{spread([x['p999'] for x in rows]):24}")
        if lsl:
            p50 = ratios([x["p50"] for x in ours], [x["p50"] for x in lsl], higher_is_better=True)
            p50_inline = ratios([x["p50"] for x in inline], [x["p50"] for x in lsl], higher_is_better=True)
            print(f"p50 Tributary / LSL: {spread(p50)}, --inline {spread(p50_inline)} (target <= 0.6); p99 target <= 1000 µs")
        self.results["latency"] = {"tributary": ours, "inline": inline, "lsl": lsl}

    # ---- 3. C push ------------------------------------------------------------------------------------
    def build_push_cpu(self):
        binary = os.path.join(self.tmp, "push_cpu")
        # The library's SONAME is libtributary.so (`make lib` makes the same link).
        libdir = os.path.join(self.tmp, "lib")
        os.makedirs(libdir, exist_ok=True)
        os.symlink(self.args.library, os.path.join(libdir, "libtributary.so"))
        subprocess.run(["gcc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-I", os.path.join(ROOT, "include"),
                        os.path.join(HERE, "c", "push_cpu.c"), "-L", libdir, "-ltributary", f"-Wl,-rpath,{libdir}",
                        "-o", binary], check=True)
        return binary

    def c_push_run(self, binary, samples, blocks, rate):
        proc = self.pb.Proc([binary, str(CHANNELS), str(samples), str(blocks), str(rate)])
        address = proc.wait_line("listening on ").split()[-1]
        sub = self.pb.Proc([self.args.tributary, "subscribe", address, "--api-key", "bench", "--summary"])
        if proc.finish(180) != 0 or sub.finish(60) != 0:
            raise RuntimeError(f"push_cpu: {''.join(proc.err)[-600:]} {''.join(sub.err)[-600:]}")
        return proc.json()

    def c_push(self):
        a = self.args
        binary = self.build_push_cpu()
        cases = [(16, a.cpu_blocks * 4, 0), (1024, a.cpu_blocks, 0), (16, 1000 * a.cpu_seconds, 1000),
                 (1024, 1000 * a.cpu_seconds, 1000)]
        print(f"\n== C push (tributary_source_push) with one `subscribe --summary`, {a.rounds} runs ==", flush=True)
        results = {}
        for r in range(a.rounds):
            for samples, blocks, rate in (cases if r % 2 == 0 else cases[::-1]):
                results.setdefault((samples, rate), []).append(self.c_push_run(binary, samples, int(blocks), rate))
        print(f"{'block, pace':34} {'push µs (thread)':20} {'memcpy µs':20} {'push - copy µs':20} "
              f"{'process µs/block':20} allocs/push")
        table = []
        for (samples, rate), runs in sorted(results.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            label = f"{CHANNELS} x {samples} f64, " + ("unpaced lossless" if rate == 0 else f"{rate} blocks/s live")
            overhead = [x["push_cpu_us"] - x["copy_us"] for x in runs]
            print(f"{label:34} {spread([x['push_cpu_us'] for x in runs]):20} {spread([x['copy_us'] for x in runs]):20} "
                  f"{spread(overhead):20} {spread([x['process_cpu_us'] for x in runs]):20} "
                  f"{spread([x['push_allocs'] for x in runs])}")
            table.append({"samples": samples, "rate": rate, "runs": runs})
        print("target: the pushing thread <= 2 µs per block plus the copy; 0 allocations per push")
        self.results["c_push"] = table


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "push":
        parser = argparse.ArgumentParser(prog="publish_bench.py push")
        parser.add_argument("role")
        parser.add_argument("--blocks", type=int, default=1000)
        parser.add_argument("--samples", type=int, default=1024)
        parser.add_argument("--rate", type=float, default=0, help="blocks/s (0: unpaced, lossless)")
        parser.add_argument("--seconds", type=float, default=3)
        return push_role(parser.parse_args())
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tributary", required=True, help="the release `tributary` binary")
    parser.add_argument("--library", help="the C library the pushers use (default: libTributaryC.so beside --tributary)")
    parser.add_argument("--python", default=sys.executable, help="interpreter with numpy, pyzmq and pylsl (default: this one)")
    parser.add_argument("--only", default="throughput,latency,c_push", help="comma-separated suites")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--blocks", type=int, default=8000, help="64 KiB blocks per throughput round (default 8000)")
    parser.add_argument("--lsl-chunks", type=int, default=512, help="at most this many chunks for LSL (default 512)")
    parser.add_argument("--latency-seconds", type=float, default=3.0)
    parser.add_argument("--cpu-blocks", type=int, default=20000, help="unpaced 64 KiB C pushes per run (x4 for 1 KiB)")
    parser.add_argument("--cpu-seconds", type=int, default=3, help="seconds of a paced C run")
    parser.add_argument("--no-lsl", action="store_true", help="skip the LSL peer (pylsl missing)")
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--json", help="also write every measurement as JSON")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.blocks, args.lsl_chunks, args.latency_seconds = 2, 1000, 128, 1.0
        args.cpu_blocks, args.cpu_seconds = 2000, 1
    if not os.access(args.tributary, os.X_OK):
        parser.error(f"--tributary {args.tributary}: not an executable")
    args.library = os.path.abspath(args.library or os.path.join(os.path.dirname(args.tributary), "libTributaryC.so"))
    if not os.path.exists(args.library):
        parser.error(f"--library {args.library}: no such file")
    suites = args.only.split(",")
    for suite in suites:
        if suite not in ("throughput", "latency", "c_push"):
            parser.error(f"--only: unknown suite '{suite}' (throughput, latency, c_push)")
    bench = PublishBench(args)
    started = time.time()
    try:
        for suite in suites:
            getattr(bench, suite)()
    finally:
        shutil.rmtree(bench.tmp, ignore_errors=True)
    print(f"\npublish_bench: {time.time() - started:.0f} s (figures on a busy machine are noisy)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(bench.results, f, default=str, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

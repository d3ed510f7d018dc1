"""Tributary as separate processes against pyzmq and Lab Streaming Layer processes, in one run
(issue 12, items 2-4). Run by `make bench`; `--quick` for a short smoke run.

1. Throughput, process to process, 64 KiB frames (2 ch x 4096 float64, what `import` writes) and
   small frames (8 ch x 16 float64, 1 KiB):
   - lossless replay: `tributary serve --replay X --speed max` -> `tributary subscribe --summary`
     (and, 64 KiB, -> `tributary bench`: the library's Subject with an observer, no package stream;
     and `serve --preload`, which decodes the capture into memory before it starts, so that the
     transport, not the capture's decode on the same two cores, sets the pace — as the pyzmq
     peer's ready buffers do);
   - live: `tributary serve --simulate ...` at a high offered rate -> `subscribe --summary` for
     --live-seconds (what arrives and what the gap notices announce);
   - `tributary record` of the 64 KiB replay, default codec and --fast-codec, and --fast-codec from
     a preloaded replay (MB/s of data frames from the first one's arrival to the capture written and
     fdatasync'ed, from its summary line; also over its whole session and by the wall clock);
   - peers: a pyzmq DEALER process -> a ROUTER process (zero-copy sends and receives) moving the
     same number of messages of the same size; an LSL outlet process -> an inlet process pushing
     and pulling chunks of the same bytes (push_chunk / pull_chunk; at most 512 / 10 000 chunks, since
     LSL moves tens of MB/s and a round must stay short).
   Rounds interleave the systems; each figure is the median of the rounds with the spread (min-max),
   ratios are medians of per-round ratios.
2. Fan-out: 1, 8, 32, 128 subscribers (spread over up to 4 processes) on one publisher offering
   1000 frames/s of 8 x 16 float64: delivered frames/s per subscriber, publisher CPU per frame per
   subscriber (utime + stime of the publisher process from /proc/PID/stat over the measurement
   window, divided by the frames all subscribers received in it), p99 latency, loss; peers: a pyzmq PUB process with N SUB sockets, an LSL outlet with
   N inlets.
3. Latency against offered rate (100 ... 50 000 frames/s, 8 x 16 float64): `tributary bench`
   against `tributary serve --simulate` (callback latency), with observers on a callback thread and
   with `--inline` (on the socket thread), and LSL push_chunk -> pull_chunk in the same rounds.

4. Server-side decimation (issue 42 item 4): a live `serve --simulate` source of 8 channels at
   1 MS/s, 8 subscribers each asking for it decimated by 10 (`subscribe --decimate 10 --summary`):
   publisher CPU (utime + stime from /proc/PID/stat per wall second over the window) with the 8
   decimating subscribers, and with none (the simulated source alone), --decimate-rounds rounds.

Every loss is reported: Tributary's from its gap notices (and unaccounted loss, which must be 0),
pyzmq's and LSL's as messages / samples that did not arrive.
"""
import argparse
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.join(HERE, "peers")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# LSL moves tens of MB/s: the same chunk size, but at most this many chunks, so a round stays short.
LSL_MAX_CHUNKS_64K = 512
LSL_MAX_CHUNKS_SMALL = 10_000


def median_spread(values):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    return f"{statistics.median(values):.4g} ({min(values):.4g}-{max(values):.4g})"


def cpu_per_delivery(cpu_s, span, rates):
    """Publisher CPU µs per frame delivered to one subscriber: CPU seconds over the window divided by
    the frames all subscribers received in it (rates: frames/s of each subscriber)."""
    delivered = sum(rates) * span
    return cpu_s / delivered * 1e6 if cpu_s is not None and delivered > 0 else None


def ratio(a, b):
    return a / b if a and b else None


_children = []


@atexit.register
def _end_children():
    """A suite that fails part-way must not leave publishers and subscribers running (they would load
    the machine for whatever is measured next)."""
    for p in _children:
        if p.poll() is None:
            p.kill()
            p.wait()


class Proc:
    """A child process whose stdout lines are collected on a thread."""

    def __init__(self, argv, stdin=False, env=None):
        self.argv = argv
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, env=env)
        _children.append(self.p)
        self.lines = []
        self.err = []
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()
        self.te = threading.Thread(target=lambda: self.err.extend(self.p.stderr), daemon=True)
        self.te.start()

    def _read(self):
        for line in self.p.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_line(self, prefix, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for line in list(self.lines):
                if line.startswith(prefix):
                    return line
            if self.p.poll() is not None and not self.t.is_alive():
                break
            time.sleep(0.01)
        raise RuntimeError(f"{' '.join(self.argv[:3])}: no '{prefix}' line; stderr: {''.join(self.err)[-800:]}")

    def finish(self, timeout=120):
        try:
            self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            raise RuntimeError(f"{' '.join(self.argv[:3])}: did not finish in {timeout} s")
        self.t.join(5)
        self.te.join(5)
        return self.p.returncode

    def json(self):
        for line in reversed(self.lines):
            if line.startswith("{"):
                return json.loads(line)
        raise RuntimeError(f"{' '.join(self.argv[:3])}: no JSON line; stderr: {''.join(self.err)[-800:]}")

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
        self.finish(30)


class CPUSampler:
    """utime + stime of a process, sampled every 20 ms with the wall-clock time."""

    def __init__(self, pid):
        self.pid, self.samples, self.running = pid, [], True
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        while self.running:
            try:
                with open(f"/proc/{self.pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                self.samples.append((time.time(), (int(fields[11]) + int(fields[12])) / CLOCK_TICKS))
            except OSError:
                return
            time.sleep(0.02)

    def stop(self):
        self.running = False
        self.t.join()

    def cpu_between(self, start, end):
        inside = [s for s in self.samples if start <= s[0] <= end]
        if len(inside) < 2:
            return None, 0
        return inside[-1][1] - inside[0][1], inside[-1][0] - inside[0][0]


class Bench:
    def __init__(self, args):
        self.args = args
        self.tributary = args.tributary
        self.python = args.python
        self.tmp = tempfile.mkdtemp(prefix="tributary-process-bench-")
        self.results = {}

    def serve(self, *extra):
        proc = Proc([self.tributary, "serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "bench", *extra])
        address = proc.wait_line("listening on ").split()[-1]
        return proc, address

    # ---- captures -------------------------------------------------------------------------------
    def capture_64k(self, frames):
        """2 ch x (4096 x frames) float64 imported: frames of 2 x 4096 float64 = 64 KiB of samples."""
        path = os.path.join(self.tmp, "big.tcap")
        npy = os.path.join(self.tmp, "big.npy")
        t = np.arange(4096 * frames) / 100_000.0
        np.save(npy, np.vstack([np.sin(2 * np.pi * 50 * t), 0.5 * np.cos(2 * np.pi * 120 * t)]))
        subprocess.run([self.tributary, "import", npy, "--rate", "100000", "--out", path], check=True,
                       stdout=subprocess.DEVNULL)
        os.unlink(npy)
        return path

    def capture_small(self, seconds, rate):
        """8 ch x 16 float64 frames recorded live from `serve --simulate` (rate frames/s)."""
        path = os.path.join(self.tmp, "small.tcap")
        serve, address = self.serve("--simulate", f"id=1,name=small,rate={rate * 16},channels=8,block=16,noise=0")
        rec = Proc([self.tributary, "record", address, "--api-key", "bench", "--out", path, "--duration", str(seconds)])
        rec.finish(seconds + 60)
        serve.stop()
        summary = [line for line in rec.err if line.startswith("recorded ")]
        return path, (summary[-1].strip() if summary else "".join(rec.err)[-300:])

    # ---- 1. throughput --------------------------------------------------------------------------
    def tributary_replay(self, capture, *serve_extra):
        serve, address = self.serve("--replay", capture, "--speed", "max", "--linger", "0.2", *serve_extra)
        sub = Proc([self.tributary, "subscribe", address, "--api-key", "bench", "--summary"])
        sub.finish(300)
        serve.finish(60)
        s = sub.json()
        return {"mb_per_s": s["data_mb_per_s"], "frames": s["data_frames"], "announced": s["frames_announced_missing"],
                "unaccounted": s["unaccounted_loss"]}

    def tributary_replay_library(self, capture):
        """The same replay into `tributary bench`: the library's Subject with an observer (callbacks on
        the callback queue), without `subscribe`'s package stream; its point ends with the replay."""
        serve, address = self.serve("--replay", capture, "--speed", "max", "--linger", "0.2")
        out = os.path.join(self.tmp, f"replay-{uuid.uuid4().hex}.json")
        b = Proc([self.tributary, "bench", address, "--api-key", "bench", "--seconds", "600", "--warmup", "0", "--json", out])
        b.finish(300)
        serve.finish(60)
        if b.p.returncode != 0:
            raise RuntimeError(f"bench: exit {b.p.returncode}: {''.join(b.err)[-600:]}")
        with open(out) as f:
            p = json.load(f)["points"][0]
        if not p["publisher_closed"]:
            raise RuntimeError("bench against a replay: the replay did not end within the point")
        return {"mb_per_s": p["delivered_mb_per_s"], "frames": sum(p["delivered_frames_per_s_each"]) * p["seconds"],
                "announced": p["announced_lost"], "unaccounted": p["unaccounted_lost"]}

    def tributary_live(self, spec, seconds):
        serve, address = self.serve("--simulate", spec)
        sub = Proc([self.tributary, "subscribe", address, "--api-key", "bench", "--summary", "--duration", str(seconds)])
        sub.finish(seconds + 60)
        serve.stop()
        s = sub.json()
        # serve says when its simulated device cannot be computed in real time on this machine: then
        # the rate offered is what the simulator makes, not the spec's.
        behind = any("behind real time" in line for line in serve.err)
        return {"mb_per_s": s["data_mb_per_s"], "frames": s["data_frames"], "announced": s["frames_announced_missing"],
                "unaccounted": s["unaccounted_loss"], "behind": behind, "frames_per_s": s["data_frames"] / seconds}

    def tributary_record(self, capture, *extra, serve_extra=()):
        out = os.path.join(self.tmp, f"rec-{uuid.uuid4().hex}.tcap")
        serve, address = self.serve("--replay", capture, "--speed", "max", "--linger", "0.2", *serve_extra)
        started = time.perf_counter()
        rec = Proc([self.tributary, "record", address, "--api-key", "bench", "--out", out, *extra])
        rec.finish(300)
        serve.finish(60)
        elapsed = time.perf_counter() - started
        line = next((entry for entry in rec.err if entry.startswith("recorded ")), "")
        # "recorded X: N frames, M MB, G gaps (K frames missing), T s, D MB on disk; data recorded at
        # R MB/s (S s from the first data frame to the capture written and synced)": T runs from the
        # welcome to the close, so it holds the replay's start and its --linger wait; R is the data's
        # bytes over S, the recording's own pace (written to disk and fdatasync'ed).
        try:
            mb = float(line.split(" frames, ")[1].split(" MB")[0])
            seconds = float(line.split("missing), ")[1].split(" s")[0])
            gaps = int(line.split(" MB, ")[1].split(" gaps")[0])
            pace = float(line.split("data recorded at ")[1].split(" MB/s")[0])
        except (IndexError, ValueError):
            raise RuntimeError(f"record: unexpected summary {line!r}; stderr {''.join(rec.err)[-500:]}")
        if os.path.exists(out):
            os.unlink(out)
        return {"mb_per_s": pace, "session_mb_per_s": mb / seconds if seconds > 0 else None, "wall_mb_per_s": mb / elapsed,
                "gaps": gaps}

    def pyzmq_pair(self, messages, size):
        router = Proc([self.python, os.path.join(PEERS, "zmq_process_peer.py"), "router", "--messages", str(messages)])
        endpoint = router.wait_line("listening on ").split()[-1]
        dealer = Proc([self.python, os.path.join(PEERS, "zmq_process_peer.py"), "dealer", "--connect", endpoint,
                       "--messages", str(messages), "--size", str(size)])
        router.finish(120)
        dealer.finish(60)
        r = router.json()
        return {"mb_per_s": r["mb_per_s"], "lost": r["lost"], "version": f"pyzmq {r['pyzmq']} (libzmq {r['zmq']})"}

    def lsl_pair(self, chunks, channels, block):
        sid = f"tb-{uuid.uuid4().hex[:12]}"
        outlet = Proc([self.python, os.path.join(PEERS, "lsl_peer.py"), "outlet", "--source-id", sid, "--channels", str(channels),
                       "--block", str(block), "--chunks", str(chunks)], stdin=True)
        outlet.wait_line("ready")
        inlet = Proc([self.python, os.path.join(PEERS, "lsl_peer.py"), "inlet", "--source-id", sid, "--block", str(block),
                      "--expect", str(chunks * block), "--timeout", "120"])
        inlet.finish(180)
        outlet.p.stdin.write("done\n")
        outlet.p.stdin.flush()
        outlet.finish(30)
        r, o = inlet.json(), outlet.json()
        return {"mb_per_s": r["mb_per_s"], "lost_samples": r["lost"][0] if r.get("lost") else None, "chunks": chunks,
                "version": f"pylsl {o['pylsl']} (liblsl {o['liblsl']})"}

    def throughput(self):
        a = self.args
        rounds = a.rounds
        frames64 = 256 if a.quick else 4096
        print(f"preparing captures in {self.tmp} ...", flush=True)
        big = self.capture_64k(frames64)
        small_seconds, small_rate = (1, 5000) if a.quick else (4, 10000)
        small, small_summary = self.capture_small(small_seconds, small_rate)
        print(f"  64 KiB capture: {frames64} frames; small capture: {small_summary}", flush=True)
        small_frames = None
        rows = {}
        cases = [
            ("64 KiB lossless replay", lambda: self.tributary_replay(big), lambda: self.pyzmq_pair(frames64, 65536),
             lambda: self.lsl_pair(min(frames64, LSL_MAX_CHUNKS_64K), 2, 4096)),
            ("64 KiB lossless replay -> tributary bench (library Subject + observer, first to last frame)",
             lambda: self.tributary_replay_library(big), None, None),
            ("64 KiB lossless replay, preloaded (serve --preload: decoded into memory before it starts, as the pyzmq peer's buffers are)",
             lambda: self.tributary_replay(big, "--preload"), None, None),
            ("1 KiB (8x16) lossless replay", lambda: self.tributary_replay(small), None, None),
            ("1 KiB (8x16) lossless replay, preloaded (serve --preload)", lambda: self.tributary_replay(small, "--preload"), None, None),
            ("64 KiB live (simulate 8x1024, 5000 frames/s offered)",
             lambda: self.tributary_live("id=1,name=live64,rate=5120000,channels=8,block=1024,noise=0", a.live_seconds), None, None),
            ("1 KiB live (simulate 8x16, 20000 frames/s offered)",
             lambda: self.tributary_live("id=1,name=live1k,rate=320000,channels=8,block=16,noise=0", a.live_seconds), None, None),
            ("record of the 64 KiB replay (default codec: entropy coding, 2 compression threads)",
             lambda: self.tributary_record(big), None, None),
            ("record of the 64 KiB replay (--fast-codec: bit-shuffle + zstd, 2 compression threads)",
             lambda: self.tributary_record(big, "--fast-codec"), None, None),
            ("record of the preloaded 64 KiB replay (--fast-codec; serve --preload)",
             lambda: self.tributary_record(big, "--fast-codec", serve_extra=("--preload",)), None, None),
        ]
        for name, *_ in cases:
            rows[name] = {"tributary": [], "pyzmq": [], "lsl": [], "ratio_pyzmq": [], "ratio_lsl": []}
        for r in range(rounds):
            print(f"throughput round {r + 1}/{rounds}", flush=True)
            for name, trib, zmqf, lslf in cases:
                row = rows[name]
                if name.startswith("1 KiB (8x16) lossless replay, preloaded"):
                    # Against the peers of this round's 1 KiB case (the same frames).
                    t = trib()
                    z, lsl = rows["1 KiB (8x16) lossless replay"]["pyzmq"][-1], rows["1 KiB (8x16) lossless replay"]["lsl"][-1]
                    row["ratio_pyzmq"].append(ratio(t["mb_per_s"], z["mb_per_s"]))
                    row["ratio_lsl"].append(ratio(t["mb_per_s"], lsl["mb_per_s"]))
                    z, lsl = None, None
                elif name.startswith("1 KiB (8x16) lossless"):
                    t = trib()
                    small_frames = small_frames or t["frames"]
                    z = self.pyzmq_pair(small_frames, 8 * 16 * 8)
                    lsl = self.lsl_pair(min(small_frames, LSL_MAX_CHUNKS_SMALL), 8, 16)
                elif name.startswith("64 KiB lossless replay -> tributary bench") or name.startswith("64 KiB lossless replay, preloaded"):
                    # Compared with the pyzmq processes of this round's 64 KiB case (the same bytes).
                    t = trib()
                    z = rows["64 KiB lossless replay"]["pyzmq"][-1]
                    row["ratio_pyzmq"].append(ratio(t["mb_per_s"], z["mb_per_s"]))
                    z, lsl = None, None
                else:
                    t = trib()
                    z = zmqf() if zmqf else None
                    lsl = lslf() if lslf else None
                row["tributary"].append(t)
                if z:
                    row["pyzmq"].append(z)
                    row["ratio_pyzmq"].append(ratio(t["mb_per_s"], z["mb_per_s"]))
                if lsl:
                    row["lsl"].append(lsl)
                    row["ratio_lsl"].append(ratio(t["mb_per_s"], lsl["mb_per_s"]))
        print(f"\nProcess to process throughput, tcp loopback, {rounds} interleaved rounds: median (min-max) MB/s of samples")
        versions = ""
        for name, row in rows.items():
            t = row["tributary"]
            line = f"  {name}: tributary {median_spread([x['mb_per_s'] for x in t])}"
            if "announced" in t[0]:
                line += (f"; frames {median_spread([x['frames'] for x in t])}, lost (announced in gap notices) "
                         f"{sum(x['announced'] for x in t)}, unaccounted {sum(x['unaccounted'] for x in t)}")
            if any(x.get("behind") for x in t):
                line += (f"\n      the simulator fell behind real time in {sum(1 for x in t if x.get('behind'))} of {len(t)} rounds "
                         f"(serve's warning): it made {median_spread([x['frames_per_s'] for x in t])} frames/s here, "
                         f"less than the rate asked, and that is what was offered")
            if "gaps" in t[0]:
                line += (f" (its data's pace, first data frame to the capture written and synced; over its whole session, "
                         f"welcome to close, with the replay's start and --linger wait: {median_spread([x['session_mb_per_s'] for x in t])}; "
                         f"wall clock incl. connect: {median_spread([x['wall_mb_per_s'] for x in t])}), gaps {sum(x['gaps'] for x in t)}")
            if row["ratio_pyzmq"] and not row["pyzmq"]:
                line += f"\n      ratio to the pyzmq processes of the same round {median_spread(row['ratio_pyzmq'])}"
            if row["ratio_lsl"] and not row["lsl"]:
                line += f"\n      ratio to the LSL processes of the same round {median_spread(row['ratio_lsl'])}"
            if row["pyzmq"]:
                line += (f"\n      pyzmq DEALER->ROUTER processes {median_spread([x['mb_per_s'] for x in row['pyzmq']])}, lost "
                         f"{sum(x['lost'] for x in row['pyzmq'])}; ratio {median_spread(row['ratio_pyzmq'])}")
                versions = row["pyzmq"][0]["version"]
            if row["lsl"]:
                line += (f"\n      LSL outlet->inlet processes ({row['lsl'][0]['chunks']} chunks of the same size) {median_spread([x['mb_per_s'] for x in row['lsl']])}, samples lost "
                         f"{sum(x['lost_samples'] or 0 for x in row['lsl'])}; ratio {median_spread(row['ratio_lsl'])}")
                versions += ", " + row["lsl"][0]["version"]
            print(line)
        print(f"  peers: {versions}")
        self.results["throughput"] = rows

    # ---- 2. fan-out -----------------------------------------------------------------------------
    def spread(self, n):
        procs = min(4, n)
        return [n // procs + (1 if i < n % procs else 0) for i in range(procs)]

    def fanout_tributary(self, n, rate, seconds, setup=None):
        serve, address = self.serve("--simulate", f"id=1,name=fanout,rate={rate * 16},channels=8,block=16,noise=0")
        cpu = CPUSampler(serve.p.pid)
        # Every bench process measures the same window (--start-at), once all sessions are open.
        setup = setup or 2.0 + n / 16
        start_at = time.time() + setup
        benches = [Proc([self.tributary, "bench", address, "--api-key", "bench", "--subscribers", str(k), "--seconds", str(seconds),
                         "--start-at", f"{start_at:.3f}", "--json", os.path.join(self.tmp, f"fan-{n}-{i}.json")])
                   for i, k in enumerate(self.spread(n))]
        for b in benches:
            b.finish(120)
        cpu.stop()
        serve.stop()
        failed = [b for b in benches if b.p.returncode != 0]
        if any("--start-at" in "".join(b.err) for b in failed) and setup < 60:
            print(f"  ({n} sessions took longer than {setup:.1f} s to open; again with {2 * setup:.1f} s)", flush=True)
            return self.fanout_tributary(n, rate, seconds, 2 * setup)
        if failed:
            raise RuntimeError(f"bench: exit {failed[0].p.returncode}: {''.join(failed[0].err)[-600:]}")
        points = []
        for i in range(len(benches)):
            with open(os.path.join(self.tmp, f"fan-{n}-{i}.json")) as f:
                points.append(json.load(f)["points"][0])
        cpu_s, span = cpu.cpu_between(start_at, start_at + seconds)
        each = [r for p in points for r in p["delivered_frames_per_s_each"]]
        p99 = max((p["latency_us"] or {}).get("p99") or 0 for p in points)
        return {"per_subscriber": statistics.median(each), "min": min(each),
                "cpu_us_per_frame_per_sub": cpu_per_delivery(cpu_s, span, each),
                "p99_us": p99, "announced": sum(p["announced_lost"] for p in points),
                "unaccounted": sum(p["unaccounted_lost"] for p in points)}

    def synchronised_peers(self, publisher_argv, subscriber_argvs, seconds):
        """Starts the publisher, then the subscriber processes; once every subscriber says 'ready',
        tells the publisher to start and every subscriber when its window starts."""
        pub = Proc(publisher_argv, stdin=True)
        first = pub.wait_line("listening on ") if "pub" in publisher_argv else pub.wait_line("ready")
        endpoint = first.split()[-1]
        cpu = CPUSampler(pub.p.pid)
        subs = [Proc([a.replace("ENDPOINT", endpoint) for a in argv], stdin=True) for argv in subscriber_argvs]
        for s in subs:
            s.wait_line("ready", timeout=120)
        start = time.time() + 0.5
        pub.p.stdin.write("start\n")
        pub.p.stdin.flush()
        for s in subs:
            s.p.stdin.write(f"{start}\n")
            s.p.stdin.flush()
        for s in subs:
            s.finish(120)
        pub.wait_line("{", timeout=120)
        cpu.stop()
        try:
            pub.p.stdin.write("done\n")  # the LSL outlet waits for it; the pyzmq publisher has exited
            pub.p.stdin.flush()
        except BrokenPipeError:
            pass
        pub.finish(30)
        cpu_s, span = cpu.cpu_between(start, start + seconds)
        return [s.json() for s in subs], cpu_s, span

    def fanout_pyzmq(self, n, rate, seconds):
        peer = os.path.join(PEERS, "zmq_process_peer.py")
        results, cpu_s, span = self.synchronised_peers(
            [self.python, peer, "pub", "--size", "1024", "--rate", str(rate), "--start-on-stdin", "--seconds", str(seconds + 1.0)],
            [[self.python, peer, "sub", "--connect", "ENDPOINT", "--sockets", str(k), "--seconds", str(seconds), "--start-on-stdin"]
             for k in self.spread(n)], seconds)
        each = [c / seconds for r in results for c in r["counts"]]
        return {"per_subscriber": statistics.median(each), "min": min(each),
                "cpu_us_per_frame_per_sub": cpu_per_delivery(cpu_s, span, each),
                "p99_us": max(r["latency_us"]["p99"] or 0 for r in results), "lost": sum(sum(r["missed"]) for r in results)}

    def fanout_lsl(self, n, rate, seconds):
        peer = os.path.join(PEERS, "lsl_peer.py")
        sid = f"tb-{uuid.uuid4().hex[:12]}"
        results, cpu_s, span = self.synchronised_peers(
            [self.python, peer, "outlet", "--source-id", sid, "--block", "16", "--rate", str(rate), "--start-on-stdin",
             "--seconds", str(seconds + 1.0)],
            [[self.python, peer, "inlet", "--source-id", sid, "--block", "16", "--inlets", str(k), "--seconds", str(seconds),
              "--start-on-stdin"] for k in self.spread(n)], seconds)
        each = [c / 16 / seconds for r in results for c in r["counts"]]
        return {"per_subscriber": statistics.median(each), "min": min(each),
                "cpu_us_per_frame_per_sub": cpu_per_delivery(cpu_s, span, each),
                "p99_us": max(r["latency_us"]["p99"] or 0 for r in results),
                "lost": sum(max(0, rate * seconds - c / 16) for r in results for c in r["counts"])}

    def fanout(self):
        a = self.args
        counts = [1, 8] if a.quick else [int(n) for n in a.fanout_subscribers.split(",")]
        rate, seconds = 1000, a.fanout_seconds
        print(f"\nFan-out: one publisher offering {rate} frames/s of 8x16 float64, {seconds} s windows "
              f"(subscribers over up to 4 processes; CPU of the publisher process from /proc/PID/stat)")
        rows = {}
        for n in counts:
            t = self.fanout_tributary(n, rate, seconds)
            z = self.fanout_pyzmq(n, rate, seconds)
            lsl = self.fanout_lsl(n, rate, seconds) if not a.no_lsl else None
            rows[n] = {"tributary": t, "pyzmq": z, "lsl": lsl}

            def fmtcpu(v):
                return f"{v:.2f}" if v is not None else "-"
            print(f"  {n:3d} subscribers: tributary {t['per_subscriber']:.0f} frames/s each (min {t['min']:.0f}), "
                  f"{fmtcpu(t['cpu_us_per_frame_per_sub'])} µs CPU/frame/subscriber, p99 {t['p99_us']:.0f} µs, "
                  f"lost {t['announced']} announced / {t['unaccounted']} unaccounted")
            print(f"                   pyzmq PUB/SUB {z['per_subscriber']:.0f} (min {z['min']:.0f}), "
                  f"{fmtcpu(z['cpu_us_per_frame_per_sub'])} µs, p99 {z['p99_us']:.0f} µs, lost {z['lost']}; "
                  f"tributary's CPU {fmtcpu(ratio(t['cpu_us_per_frame_per_sub'], z['cpu_us_per_frame_per_sub']))}x pyzmq's")
            if lsl:
                print(f"                   LSL {lsl['per_subscriber']:.0f} (min {lsl['min']:.0f}), "
                      f"{fmtcpu(lsl['cpu_us_per_frame_per_sub'])} µs, p99 {lsl['p99_us']:.0f} µs, lost {lsl['lost']:.0f} chunks")
        self.results["fanout"] = rows

    # ---- 3. latency curve -----------------------------------------------------------------------
    def latency_tributary(self, rate, seconds, inline=False):
        """serve --simulate -> bench; `inline`: the observers run on the socket thread (bench --inline)."""
        serve, address = self.serve("--simulate", f"id=1,name=lat,rate={rate * 16},channels=8,block=16,noise=0")
        out = os.path.join(self.tmp, f"lat-{rate}.json")
        b = Proc([self.tributary, "bench", address, "--api-key", "bench", "--seconds", str(seconds), "--json", out,
                  *(["--inline"] if inline else [])])
        b.finish(120)
        serve.stop()
        if b.p.returncode != 0:
            raise RuntimeError(f"bench: exit {b.p.returncode}: {''.join(b.err)[-600:]}")
        with open(out) as f:
            p = json.load(f)["points"][0]
        return {**(p["latency_us"] or {}), "delivered": p["delivered_frames_per_s"], "arrived": p["arrived_frames_per_s"],
                "announced": p["announced_lost"],
                "unaccounted": p["unaccounted_lost"]}

    def latency_lsl(self, rate, seconds):
        peer = os.path.join(PEERS, "lsl_peer.py")
        sid = f"tb-{uuid.uuid4().hex[:12]}"
        results, _, _ = self.synchronised_peers(
            [self.python, peer, "outlet", "--source-id", sid, "--block", "16", "--rate", str(rate), "--start-on-stdin",
             "--seconds", str(seconds + 1.0)],
            [[self.python, peer, "inlet", "--source-id", sid, "--block", "16", "--seconds", str(seconds), "--start-on-stdin"]],
            seconds)
        r = results[0]
        return {**r["latency_us"], "delivered": r["counts"][0] / 16 / seconds}

    def latency(self):
        a = self.args
        rates = [1000] if a.quick else [100, 1000, 10000, 50000]
        rounds = max(1, a.latency_rounds)
        print(f"\nCallback latency vs offered rate, 8x16 float64 frames, {rounds} interleaved rounds of {a.latency_seconds} s: "
              "median (min-max) µs")
        rows = {}
        for rate in rates:
            rows[rate] = {"tributary": [], "inline": [], "lsl": [], "p50_ratio": [], "inline_p50_ratio": []}
        for r in range(rounds):
            for rate in rates:
                t = self.latency_tributary(rate, a.latency_seconds)
                rows[rate]["tributary"].append(t)
                i = self.latency_tributary(rate, a.latency_seconds, inline=True)
                rows[rate]["inline"].append(i)
                if not a.no_lsl:
                    lsl = self.latency_lsl(rate, a.latency_seconds)
                    rows[rate]["lsl"].append(lsl)
                    rows[rate]["p50_ratio"].append(ratio(t.get("p50"), lsl.get("p50")))
                    rows[rate]["inline_p50_ratio"].append(ratio(i.get("p50"), lsl.get("p50")))
        for rate, row in rows.items():
            t = row["tributary"]
            print(f"  {rate:6d} frames/s: tributary serve -> bench p50 {median_spread([x.get('p50') for x in t])}, "
                  f"p99 {median_spread([x.get('p99') for x in t])}, p99.9 {median_spread([x.get('p999') for x in t])}; "
                  f"delivered {median_spread([x['delivered'] for x in t])} frames/s, lost {sum(x['announced'] for x in t)} announced / "
                  f"{sum(x['unaccounted'] for x in t)} unaccounted")
            i = row["inline"]
            print(f"                    bench --inline p50 {median_spread([x.get('p50') for x in i])}, "
                  f"p99 {median_spread([x.get('p99') for x in i])}, p99.9 {median_spread([x.get('p999') for x in i])}; "
                  f"lost {sum(x['announced'] for x in i)} announced / {sum(x['unaccounted'] for x in i)} unaccounted"
                  + (f"; p50 ratio to LSL {median_spread(row['inline_p50_ratio'])}" if row["lsl"] else ""))
            if statistics.median(x["arrived"] for x in t) < 0.95 * rate:
                print("                    (serve's simulated source produced fewer frames than offered (delivered + announced "
                      "lost): it could not generate them in time, and the latency includes how far behind it fell)")
            if row["lsl"]:
                lsl = row["lsl"]
                print(f"                    LSL push_chunk -> pull_chunk p50 {median_spread([x['p50'] for x in lsl])}, "
                      f"p99 {median_spread([x['p99'] for x in lsl])}, p99.9 {median_spread([x['p999'] for x in lsl])}; "
                      f"delivered {median_spread([x['delivered'] for x in lsl])} chunks/s; p50 ratio {median_spread(row['p50_ratio'])}")
        self.results["latency"] = rows


def decimate_round(bench, subscribers, seconds):
    """One publisher (8 ch at 1 MS/s, blocks of 10 000 samples) and `subscribers` decimating by 10:
    the publisher's CPU seconds per wall second over the middle of the window, and the samples a
    second each subscriber received (from its --summary)."""
    serve, address = bench.serve("--simulate", "id=1,name=fast,rate=1000000,channels=8,block=10000,noise=0", "--no-announce")
    try:
        cpu = CPUSampler(serve.p.pid)
        subs = [Proc([bench.tributary, "subscribe", address, "--api-key", "bench", "--summary", "--decimate", "10",
                      "--duration", str(seconds + 1.0)]) for _ in range(subscribers)]
        time.sleep(0.5)
        start = time.time()
        time.sleep(seconds)
        end = time.time()
        for sub in subs:
            sub.finish(60)
        cpu.stop()
        used, span = cpu.cpu_between(start, end)
        received = []
        for sub in subs:
            if sub.p.returncode != 0:
                raise RuntimeError(f"subscribe --decimate: exit {sub.p.returncode}: {''.join(sub.err)[-600:]}")
            summary = sub.json()
            received.append(summary)
        return (used / span if used is not None and span > 0 else None), received
    finally:
        serve.stop()


def decimate_suite(bench):
    a = bench.args
    print(f"\nServer-side decimation: serve --simulate 8 ch x 1 MS/s, 8 subscribers with --decimate 10, "
          f"{a.decimate_seconds} s windows, {a.decimate_rounds} rounds (publisher CPU from /proc/PID/stat)")
    loaded, idle, summaries = [], [], []
    for _ in range(a.decimate_rounds):
        cores, received = decimate_round(bench, 8, a.decimate_seconds)
        loaded.append(cores)
        summaries.append(received)
        cores, _ = decimate_round(bench, 0, a.decimate_seconds)
        idle.append(cores)
    print(f"  8 decimating subscribers: publisher {median_spread(loaded)} cores (CPU s per wall s)")
    print(f"  no subscriber (the source alone): {median_spread(idle)} cores")
    print(f"  one subscriber's last summary: {json.dumps(summaries[-1][0]) if summaries and summaries[-1] else '-'}")
    bench.results["decimate"] = {"cores_8_subscribers": loaded, "cores_no_subscriber": idle, "summaries": summaries}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tributary", required=True, help="the release `tributary` binary")
    parser.add_argument("--python", default=sys.executable, help="interpreter with pyzmq and pylsl (default: this one)")
    parser.add_argument("--only", default="throughput,fanout,latency,decimate", help="comma-separated suites")
    parser.add_argument("--rounds", type=int, default=5, help="throughput rounds (default 5)")
    parser.add_argument("--live-seconds", type=float, default=1.5)
    parser.add_argument("--fanout-seconds", type=float, default=2.0)
    parser.add_argument("--fanout-subscribers", default="1,8,32,128", help="fan-out: comma-separated subscriber counts")
    parser.add_argument("--latency-seconds", type=float, default=1.5)
    parser.add_argument("--latency-rounds", type=int, default=3)
    parser.add_argument("--decimate-seconds", type=float, default=3.0)
    parser.add_argument("--decimate-rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="a short smoke run (small data, 2 rounds, fewer points)")
    parser.add_argument("--no-lsl", action="store_true", help="skip the LSL peer (pylsl missing)")
    parser.add_argument("--json", help="also write every measurement as JSON")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.live_seconds, args.fanout_seconds, args.latency_seconds, args.latency_rounds = 2, 1.0, 1.0, 1.0, 1
        args.decimate_seconds, args.decimate_rounds = 1.5, 2
    if not os.access(args.tributary, os.X_OK):
        parser.error(f"--tributary {args.tributary}: not an executable")
    suites = args.only.split(",")
    if not all(n.isdigit() and 0 < int(n) <= 1024 for n in args.fanout_subscribers.split(",")):
        parser.error(f"--fanout-subscribers {args.fanout_subscribers}: expected counts from 1 to 1024, comma-separated")
    for suite in suites:
        if suite not in ("throughput", "fanout", "latency", "decimate"):
            parser.error(f"--only: unknown suite '{suite}' (throughput, fanout, latency, decimate)")
    bench = Bench(args)
    started = time.time()
    try:
        for suite in suites:
            if suite == "decimate":
                decimate_suite(bench)
            else:
                getattr(bench, suite)()
    finally:
        shutil.rmtree(bench.tmp, ignore_errors=True)  # the captures: hundreds of MB
    print(f"\nprocess_bench: {time.time() - started:.0f} s (figures on a busy machine are noisy)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(bench.results, f, default=str, indent=1)


if __name__ == "__main__":
    main()

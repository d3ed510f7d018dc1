"""Where a pushed frame's latency goes, thread by thread (issue 40): the scheduler's own record of
every thread a frame passes through, from perf's sched:sched_waking and sched:sched_switch events.

    .venv/bin/python Benchmarks/hop_trace.py --tributary .build/release/tributary [--mode push,simulate]

`push`: the Python pusher of publish_bench.py (1 000 blocks/s of 8 x 16 float64, live) -> `tributary
bench`; `simulate`: `serve --simulate` at the same rate and block -> `tributary bench`. perf records
every CPU for --seconds while bench runs. Each frame is followed along its threads:

    push:     pusher (woken from its sleep) -> tributary-pub (the publisher's loop) -> ZMQbg/IO/0 (the
              publisher's libzmq I/O thread) -> ZMQbg/IO/0 (bench's) -> tributary-sub (bench's
              socket loop) -> tributary-cb (bench's callback thread, where the observer runs)
    simulate: tributary-pub (woken by its due-time timer) -> the same threads from ZMQbg/IO/0 on

and the median of each step is printed: "wake X" is when the previous thread woke X (the work of the
previous thread since it ran), "run X" when X got a CPU (the wake-up's latency). The pusher takes its
block's time stamp during its first step. Needs perf and the sched tracepoints (root).
"""
import argparse
import bisect
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import process_bench  # noqa: E402  (child processes with collected output)

EVENT = re.compile(r"^\s*(.+?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+sched:(sched_\w+):\s*(.*)$")
WAKING = re.compile(r"comm=(.+?) pid=(\d+) prio=")
SWITCH = re.compile(r"next_comm=(.+?) next_pid=(\d+) ")
WINDOW_US = 5000.0


def read_events(path):
    """(time µs, 'wake' | 'run', thread id) for every wake-up and switch-in, and each thread's (name, pid)."""
    out = subprocess.run(["perf", "script", "-F", "comm,pid,tid,cpu,time,event,trace", "-i", path],
                         capture_output=True, text=True, check=True).stdout
    events, threads = [], {}
    for line in out.splitlines():
        m = EVENT.match(line)
        if not m:
            continue
        comm, pid, tid, _cpu, stamp, kind, rest = m.groups()
        threads[int(tid)] = (comm, int(pid))
        t = float(stamp) * 1e6
        if kind == "sched_waking":
            w = WAKING.search(rest)
            if w:
                events.append((t, "wake", int(w.group(2))))
        elif kind == "sched_switch":
            s = SWITCH.search(rest)
            if s:
                events.append((t, "run", int(s.group(2))))
    return events, threads


def follow(events, chain):
    """Per frame, the times (µs after the first thread ran) of each later thread's wake-up and run."""
    index = {}
    for k, tid in enumerate(chain):
        for t, kind, target in events:
            if target == tid:
                index.setdefault((k, kind), []).append(t)
    starts = index.get((0, "run"), [])
    rows = []
    for t0 in starts:
        row, t = [], t0
        for k in range(1, len(chain)):
            wake = first_at_or_after(index.get((k, "wake"), []), t)
            run = first_at_or_after(index.get((k, "run"), []), wake) if wake is not None else None
            if run is None or run - t0 > WINDOW_US:
                row = None
                break
            row += [wake - t0, run - t0]
            t = run
        if row:
            rows.append(row)
    return rows, len(starts)


def first_at_or_after(times, t):
    i = bisect.bisect_left(times, t)
    return times[i] if i < len(times) else None


def thread_named(threads, name, pid):
    found = [tid for tid, (comm, p) in threads.items() if comm == name and p == pid]
    if not found:
        raise RuntimeError(f"no thread '{name}' of process {pid} in the trace")
    return found[0]


def trace(args, mode, tmp):
    """Runs one producer -> bench pair under perf and prints the chain's steps."""
    env = dict(os.environ, TRIBUTARY_LIBRARY=args.library,
               PYTHONPATH=os.path.join(ROOT, "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    seconds = args.seconds + 4.0
    if mode == "push":
        producer = process_bench.Proc([args.python, os.path.join(HERE, "publish_bench.py"), "push", "--rate", "1000",
                                       "--samples", "16", "--seconds", str(seconds + 2)], env=env)
        address = producer.wait_line("listening on ").split()[-1]
    else:
        producer = process_bench.Proc([args.tributary, "serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "bench",
                                       "--no-announce", "--simulate", "id=1,name=lat,rate=16000,channels=8,block=16,noise=0"])
        address = producer.wait_line("listening on ").split()[-1]
    bench = process_bench.Proc([args.tributary, "bench", address, "--api-key", "bench", "--seconds", str(seconds)])
    data = os.path.join(tmp, f"{mode}.perf")
    time.sleep(2.0)
    subprocess.run(["perf", "record", "-q", "-e", "sched:sched_waking,sched:sched_switch", "-a", "-o", data, "--",
                    "sleep", str(args.seconds)], check=True, capture_output=True)
    bench.finish(120)
    producer.p.terminate()
    producer.finish(30)
    events, threads = read_events(data)
    pid, bench_pid = producer.p.pid, bench.p.pid
    names = ["tributary-pub", "ZMQbg/IO/0", "ZMQbg/IO/0 (bench)", "tributary-sub (bench)", "tributary-cb (bench)"]
    chain = [thread_named(threads, "tributary-pub", pid), thread_named(threads, "ZMQbg/IO/0", pid),
             thread_named(threads, "ZMQbg/IO/0", bench_pid), thread_named(threads, "tributary-sub", bench_pid),
             thread_named(threads, "tributary-cb", bench_pid)]
    if mode == "push":
        chain.insert(0, pid)  # the pusher's main thread
        names.insert(0, "pusher")
    rows, starts = follow(events, chain)
    print(f"\n== {mode}: {len(rows)} frames followed of {starts} wake-ups of {names[0]} in {args.seconds} s ==")
    if not rows:
        return
    print(f"{'step':34} {'median µs':>10} {'p90 µs':>8} {'since ' + names[0] + ' ran':>22}")
    for k in range(len(rows[0])):
        label = ("wake " if k % 2 == 0 else "run ") + names[k // 2 + 1]
        steps = sorted(r[k] - (r[k - 1] if k else 0) for r in rows)
        total = statistics.median(r[k] for r in rows)
        print(f"{label:34} {statistics.median(steps):10.1f} {steps[int(0.9 * (len(steps) - 1))]:8.1f} {total:22.1f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tributary", required=True, help="the `tributary` binary")
    parser.add_argument("--library", help="the C library the pusher uses (default: libTributaryC.so beside --tributary)")
    parser.add_argument("--python", default=sys.executable, help="interpreter with numpy (default: this one)")
    parser.add_argument("--mode", default="push,simulate", help="comma-separated: push, simulate")
    parser.add_argument("--seconds", type=float, default=2.0, help="seconds recorded by perf")
    args = parser.parse_args()
    args.library = os.path.abspath(args.library or os.path.join(os.path.dirname(args.tributary), "libTributaryC.so"))
    modes = args.mode.split(",")
    if any(m not in ("push", "simulate") for m in modes):
        parser.error("--mode: push, simulate")
    if not 0.5 <= args.seconds <= 60:
        parser.error("--seconds: 0.5 to 60")
    with tempfile.TemporaryDirectory(prefix="tributary-hop-trace-") as tmp:
        for mode in modes:
            trace(args, mode, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())

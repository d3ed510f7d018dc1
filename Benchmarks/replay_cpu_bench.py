"""CPU per MB of `tributary serve --replay` -> `subscribe` / `record`, as processes, for one or more binaries.

What process_bench.py measures as MB/s depends on how busy the machine is; the CPU each process spends
per MB of frames does much less. This runs interleaved rounds (the binaries alternate inside each round)
of the 64 KiB replay of process_bench.py (a 2 x 16 777 216 float64 NPY imported: 4 096 frames of
2 x 4 096 float64) into `subscribe --summary`, `record --fast-codec` and `record`, and prints for each
binary and client the median (min-max), after one uncounted warm-up run per binary, of:
  MB/s        subscribe: its summary's data MB/s; record: MB over the seconds of its summary line
              (0.1 s resolution)
  serve ms/MB utime + stime of the whole `serve` process (os.wait4) per MB of frames received
  client ms/MB the same for the subscribe / record process
  unaccounted subscribe's unaccounted loss (must be 0)

  .venv/bin/python Benchmarks/replay_cpu_bench.py .build/release/tributary [OTHER_BINARY ...] [--rounds 5]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def run_pair(binary, capture, client, work):
    """One serve -> client run; returns (MB/s, serve CPU s, client CPU s, MB, unaccounted loss)."""
    serve_log = open(os.path.join(work, "serve.log"), "w+")
    serve = subprocess.Popen([binary, "serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "bench", "--replay", capture,
                              "--speed", "max", "--linger", "0.2"], stdout=serve_log, stderr=subprocess.STDOUT)
    try:
        address = None
        deadline = time.monotonic() + 30
        while address is None and time.monotonic() < deadline and serve.poll() is None:
            serve_log.seek(0)
            found = [line for line in serve_log.read().splitlines() if "listening on" in line]
            if found:
                address = found[0].split()[-1]
            else:
                time.sleep(0.02)
        if address is None:
            raise RuntimeError(f"{binary} serve printed no 'listening on' line")
        out = os.path.join(work, "rec.tcap")
        for leftover in (out, out + ".partial"):
            if os.path.exists(leftover):
                os.unlink(leftover)
        argv = {"subscribe": [binary, "subscribe", address, "--api-key", "bench", "--summary"],
                "record-fast": [binary, "record", address, "--api-key", "bench", "--out", out, "--fast-codec"],
                "record": [binary, "record", address, "--api-key", "bench", "--out", out]}[client]
        with open(os.path.join(work, "client.out"), "w+") as stdout, open(os.path.join(work, "client.err"), "w+") as stderr:
            child = subprocess.Popen(argv, stdout=stdout, stderr=stderr)
            _, status, client_usage = os.wait4(child.pid, 0)  # the rusage of this process alone
            child.returncode = os.waitstatus_to_exitcode(status)
            stdout.seek(0)
            stderr.seek(0)
            out_text, err_text = stdout.read(), stderr.read()
    except BaseException:
        serve.kill()
        raise
    finally:
        serve_log.close()
    try:
        _, _, serve_usage = os.wait4(serve.pid, 0)
    except ChildProcessError:
        raise RuntimeError("serve was reaped before its usage was read")
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:2])} exit {child.returncode}: {err_text[-400:]}")
    serve_cpu = serve_usage.ru_utime + serve_usage.ru_stime
    client_cpu = client_usage.ru_utime + client_usage.ru_stime
    if client == "subscribe":
        summary = json.loads(out_text.strip().splitlines()[-1])
        return summary["data_mb_per_s"], serve_cpu, client_cpu, summary["data_bytes"] / 1e6, summary["unaccounted_loss"]
    m = re.search(r"recorded \S+: \d+ frames?, ([0-9.]+) MB, \d+ gaps? \(\d+ frames? missing\), ([0-9.]+) s", err_text)
    if not m:
        raise RuntimeError(f"record: no summary line in {err_text[-400:]!r}")
    mb, seconds = float(m.group(1)), float(m.group(2))
    return (mb / seconds if seconds > 0 else float("nan")), serve_cpu, client_cpu, mb, 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("binaries", nargs="+", help="tributary binaries to compare")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--clients", default="subscribe,record-fast,record", help="comma-separated: subscribe, record-fast, record")
    args = parser.parse_args()
    clients = args.clients.split(",")
    tmp = tempfile.mkdtemp(prefix="tributary-replay-cpu-")
    try:
        npy, capture = os.path.join(tmp, "big.npy"), os.path.join(tmp, "big.tcap")
        t = np.arange(4096 * 4096) / 100_000.0
        np.save(npy, np.vstack([np.sin(2 * np.pi * 50 * t), 0.5 * np.cos(2 * np.pi * 120 * t)]))
        subprocess.run([args.binaries[0], "import", npy, "--rate", "100000", "--out", capture], check=True, stdout=subprocess.DEVNULL)
        os.unlink(npy)
        for binary in args.binaries:  # warm-up (page cache, first start of each binary), not counted
            run_pair(binary, capture, "subscribe", tmp)
        results = {}
        for r in range(args.rounds):
            for client in clients:
                for binary in args.binaries:
                    mbs, serve_cpu, client_cpu, mb, unaccounted = run_pair(binary, capture, client, tmp)
                    results.setdefault((client, binary), []).append((mbs, serve_cpu / mb * 1e3, client_cpu / mb * 1e3, unaccounted))
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)

        def spread(values, digits):
            return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"

        print(f"serve --replay (64 KiB frames, 268 MB) -> client, {args.rounds} interleaved rounds: median (min-max)")
        for (client, binary), rows in results.items():
            print(f"  {client:12s} {binary}: MB/s {spread([x[0] for x in rows], 0)}; serve CPU ms/MB {spread([x[1] for x in rows], 2)}; "
                  f"client CPU ms/MB {spread([x[2] for x in rows], 2)}; unaccounted {sum(x[3] for x in rows)}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

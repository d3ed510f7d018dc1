"""Lab Streaming Layer (pylsl, whose wheel bundles liblsl) as separate processes: the peer of
Benchmarks/process_bench.py.

Roles (one process each):
  outlet  a float64 stream of --channels channels with --source-id; pushes chunks of --block samples
          (push_chunk, the timestamp of the chunk's last sample = local_clock() at the push).
          --rate 0: --chunks chunks as fast as push_chunk takes them, once a consumer is connected;
          --rate R: R chunks/s for --seconds, after --wait-subscribers seconds. Then waits for a line
          on stdin (or 60 s) before it closes, so that nothing queued for an inlet is cut off.
  inlet   opens --inlets inlets on the stream with --source-id and pulls chunks (pull_chunk into a
          preallocated array) round-robin; counts samples per inlet inside the measurement window and
          the push -> pull latency of each chunk's last sample; with --expect N stops once each inlet
          has N samples (or after --timeout). Prints one JSON object.
"""
import argparse
import json
import sys
import time

import numpy as np
import pylsl

from latency_window import add_window_options, latency_percentiles_us


def outlet(args):
    rate = args.rate * args.block if args.rate > 0 else pylsl.IRREGULAR_RATE
    info = pylsl.StreamInfo("tributary-bench", "bench", args.channels, rate, pylsl.cf_double64, args.source_id)
    # Irregular rate: buffers are counted in hundreds of samples; make them hold the whole run.
    # Paced: 10 s of buffer per consumer (LSL's default 360 s costs ~370 MB per inlet at 16 000 samples/s x 8 ch).
    buffered = 10 if args.rate > 0 else max(360, args.chunks * args.block // 100 + 100)
    out = pylsl.StreamOutlet(info, chunk_size=args.block, max_buffered=buffered)
    chunk = np.random.default_rng(1).standard_normal((args.block, args.channels))
    print("ready", flush=True)
    pushed = 0
    start = time.perf_counter()
    if args.rate <= 0:
        out.wait_for_consumers(30)
        start = time.perf_counter()
        for _ in range(args.chunks):
            out.push_chunk(chunk, pylsl.local_clock())
            pushed += 1
    else:
        if args.start_on_stdin:
            sys.stdin.readline()  # the inlets are open
        else:
            time.sleep(args.wait_subscribers)
        period = 1.0 / args.rate
        start = time.perf_counter()
        end = start + args.seconds
        while True:
            due = start + pushed * period
            if due > end:
                break
            now = time.perf_counter()
            if due > now:
                time.sleep(due - now)
            out.push_chunk(chunk, pylsl.local_clock())
            pushed += 1
    elapsed = time.perf_counter() - start
    print(json.dumps({"chunks": pushed, "seconds": elapsed, "liblsl": pylsl.library_version(),
                      "pylsl": getattr(pylsl, "__version__", "?")}), flush=True)
    sys.stdin.readline()
    del out


def inlet(args):
    streams = pylsl.resolve_byprop("source_id", args.source_id, minimum=1, timeout=10)
    if not streams:
        print(json.dumps({"error": f"no LSL stream with source_id {args.source_id}"}), flush=True)
        return 1
    inlets = []
    for _ in range(args.inlets):
        # Irregular rate (--expect runs): the buffer is counted in hundreds of samples; let it hold the whole run.
        # Paced runs: 10 s.
        buflen = max(360, args.expect // 100 + 100) if args.expect else 10
        i = pylsl.StreamInlet(streams[0], max_buflen=buflen, max_chunklen=args.block, recover=False)
        i.open_stream(timeout=10)
        inlets.append(i)
    print("ready", flush=True)
    if args.start_on_stdin:
        args.start_unix = float(sys.stdin.readline())  # when every inlet of the run is open
    channels = streams[0].channel_count()
    buf = np.empty((max(args.block * 64, 4096), channels))
    counts = [0] * len(inlets)
    latencies = []
    first = last = None
    deadline = time.time() + args.timeout
    window_start = time.time() + args.warmup if args.expect == 0 else 0.0
    if args.start_unix:
        window_start = args.start_unix
    window_end = window_start + args.seconds if args.expect == 0 else float("inf")
    # Inlets opened after the window began would under-count: say so rather than report a low rate.
    late = time.time() - window_start if args.expect == 0 and time.time() > window_start else 0.0
    while time.time() < deadline:
        now_wall = time.time()
        if now_wall >= window_end:
            break
        got = False
        for k, i in enumerate(inlets):
            _, stamps = i.pull_chunk(timeout=0.0, max_samples=buf.shape[0], dest_obj=buf)
            if not stamps:
                continue
            got = True
            now = pylsl.local_clock()
            if now_wall >= window_start:
                counts[k] += len(stamps)
                latencies.append(now - stamps[-1])
            t = time.perf_counter()
            first = t if first is None else first
            last = t
        if args.expect and all(c >= args.expect for c in counts):
            break
        if not got:
            time.sleep(0.0002)
    sample_bytes = 8 * channels
    total = counts[0] if counts else 0
    print(json.dumps({
        "counts": counts, "lost": [max(0, args.expect - c) for c in counts] if args.expect else None,
        "mb_per_s": (total - args.block) * sample_bytes / (last - first) / 1e6 if args.expect and last and last > first else None,
        "late_s": late, "seconds": args.seconds, "window_start_unix": window_start, "window_end_unix": window_end,
        "latency_us": latency_percentiles_us(latencies, lambda s: s * 1e6)}), flush=True)
    for i in inlets:
        i.close_stream()
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=["outlet", "inlet"])
    parser.add_argument("--source-id", required=True)
    parser.add_argument("--channels", type=int, default=8)
    parser.add_argument("--block", type=int, default=16)
    parser.add_argument("--rate", type=float, default=0)
    parser.add_argument("--chunks", type=int, default=1000)
    parser.add_argument("--inlets", type=int, default=1)
    add_window_options(parser, "outlet: start pushing on a line from stdin; inlet: after 'ready', read the window's start (unix s)")
    parser.add_argument("--expect", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args()
    return {"outlet": outlet, "inlet": inlet}[args.role](args)


if __name__ == "__main__":
    sys.exit(main())

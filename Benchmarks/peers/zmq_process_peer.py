"""pyzmq as separate processes: the peer of Benchmarks/process_bench.py.

Roles (one process each, started by process_bench.py):
  router   binds a ROUTER on tcp://127.0.0.1:0, prints 'listening on ENDPOINT', receives --messages
           messages with copy=False and prints one JSON object: MB/s from the first message to the last.
  dealer   connects a DEALER to --connect and sends --messages messages of --size bytes, zero-copy
           (copy=False) of one pre-built payload, as fast as the socket takes them.
  pub      binds a PUB, prints 'listening on ENDPOINT', waits --wait-subscribers seconds, then sends
           --size-byte messages at --rate messages/s for --seconds; the first 8 bytes of each are the
           wall-clock send time (ns) and the next 8 its sequence number. Prints a JSON object at the end.
  sub      opens --sockets SUB sockets (one context, one I/O thread) on --connect and counts, inside a
           measurement window, the messages each receives, the sequence numbers it missed and the
           send -> receive latency; prints one JSON object.
"""
import argparse
import json
import struct
import sys
import time

import zmq

from latency_window import add_window_options, latency_percentiles_us


def listening(kind, option, value):
    """A context and a socket of `kind` (`option` set to `value`, no linger) bound to a free port of
    127.0.0.1, which it prints ("listening on ENDPOINT") for the benchmark to connect to."""
    context = zmq.Context(io_threads=1)
    sock = context.socket(kind)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(option, value)
    sock.bind("tcp://127.0.0.1:0")
    print("listening on", sock.getsockopt(zmq.LAST_ENDPOINT).decode(), flush=True)
    return context, sock


def router(args):
    context, sock = listening(zmq.ROUTER, zmq.RCVTIMEO, 30_000)
    received, size = 0, 0
    try:
        frames = sock.recv_multipart(copy=False)
        start = time.perf_counter()
        received = 1
        size = len(frames[-1].buffer)
        for _ in range(args.messages - 1):
            frames = sock.recv_multipart(copy=False)
            received += 1
        elapsed = time.perf_counter() - start
    except zmq.Again:
        elapsed = time.perf_counter() - start
    print(json.dumps({"messages": received, "lost": args.messages - received,
                      "mb_per_s": (received - 1) * size / elapsed / 1e6 if received > 1 else 0.0,
                      "zmq": zmq.zmq_version(), "pyzmq": zmq.pyzmq_version()}), flush=True)
    sock.close()
    context.term()


def dealer(args):
    context = zmq.Context(io_threads=1)
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 30_000)  # everything queued is delivered before close returns
    sock.connect(args.connect)
    payload = bytes(args.size)
    for _ in range(args.messages):
        sock.send(payload, copy=False)
    sock.close()
    context.term()


def pub(args):
    context, sock = listening(zmq.PUB, zmq.SNDHWM, 1000)
    if args.start_on_stdin:
        sys.stdin.readline()  # the subscribers are connected
    else:
        time.sleep(args.wait_subscribers)
    body = bytearray(args.size)
    period = 1.0 / args.rate
    start = time.perf_counter()
    sent = 0
    end = start + args.seconds
    while True:
        due = start + sent * period
        now = time.perf_counter()
        if due > end:
            break
        if due > now:
            time.sleep(due - now)
        struct.pack_into("<qQ", body, 0, time.time_ns(), sent)
        sock.send(body)
        sent += 1
    print(json.dumps({"sent": sent, "seconds": time.perf_counter() - start}), flush=True)
    sock.close()
    context.term()


def sub(args):
    context = zmq.Context(io_threads=1)
    poller = zmq.Poller()
    sockets = []
    for _ in range(args.sockets):
        s = context.socket(zmq.SUB)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.RCVHWM, 1000)
        s.setsockopt(zmq.SUBSCRIBE, b"")
        s.connect(args.connect)
        poller.register(s, zmq.POLLIN)
        sockets.append(s)
    index = {s: i for i, s in enumerate(sockets)}
    if args.start_on_stdin:
        time.sleep(0.2)  # let the subscriptions reach the publisher
        print("ready", flush=True)
        args.start_unix = float(sys.stdin.readline())
    counts = [0] * len(sockets)
    last_seq = [None] * len(sockets)
    missed = [0] * len(sockets)
    latencies = []
    window_start = time.time() + args.warmup
    if args.start_unix:
        window_start = args.start_unix
    window_end = window_start + args.seconds
    while time.time() < window_end:
        for s, _ in poller.poll(100):
            while True:
                try:
                    msg = s.recv(zmq.NOBLOCK)
                except zmq.Again:
                    break
                now = time.time_ns()
                sent_ns, seq = struct.unpack_from("<qQ", msg, 0)
                i = index[s]
                if last_seq[i] is not None and seq > last_seq[i] + 1:
                    missed[i] += seq - last_seq[i] - 1
                last_seq[i] = seq
                if window_start * 1e9 <= now < window_end * 1e9:
                    counts[i] += 1
                    latencies.append(now - sent_ns)
    print(json.dumps({"counts": counts, "missed": missed, "seconds": args.seconds,
                      "window_start_unix": window_start, "window_end_unix": window_end,
                      "latency_us": latency_percentiles_us(latencies, lambda ns: ns / 1e3)}), flush=True)
    for s in sockets:
        s.close()
    context.term()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=["router", "dealer", "pub", "sub"])
    parser.add_argument("--connect")
    parser.add_argument("--messages", type=int, default=4096)
    parser.add_argument("--size", type=int, default=65536)
    parser.add_argument("--rate", type=float, default=1000)
    parser.add_argument("--sockets", type=int, default=1)
    add_window_options(parser, "pub: start sending on a line from stdin; sub: after 'ready', read the window's start (unix s)")
    args = parser.parse_args()
    {"router": router, "dealer": dealer, "pub": pub, "sub": sub}[args.role](args)


if __name__ == "__main__":
    sys.exit(main())

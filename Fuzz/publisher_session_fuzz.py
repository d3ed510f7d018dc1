"""A stateful fuzzer of the publisher's session state machine: seeded random sequences of hello,
start/stop, source selections, filters, credit, packages, file chunks, closes and frames a
subscriber never sends, with every header field drawn towards its edges, from several peers at once
against a real `tributary serve`, while a victim subscriber streams.

Nothing a peer sends may end `serve` or disturb the victim (consecutive sequence numbers, no error,
no gap). It is not coverage-guided (the publisher's engine owns its sockets); it is bounded in time
and reproducible: a finding prints the seed and the frames of the round, saved under
Fuzz/artifacts/, and `--seed N --rounds 1` replays that round.

    python Fuzz/publisher_session_fuzz.py --tributary .build/release/tributary --seconds 60
"""
import argparse
import os
import random
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "Tests", "Interop"))

import zmq  # noqa: E402

import wire_spec as w  # noqa: E402

U64 = (1 << 64) - 1
EDGES64 = [0, 1, 2, U64, U64 - 1, 1 << 63, (1 << 63) - 1]
EDGES32 = [0, 1, 2, 0xFFFFFFFF, 0xFFFFFFFE, 0x7FFFFFFF, 65535, 65536]
KEY = "k"


def edgy(r, edges, bits):
    return r.choice(edges) if r.random() < 0.5 else r.getrandbits(bits)


def small_or_edge(r):
    return r.randrange(0, 8) if r.random() < 0.6 else edgy(r, EDGES32, 32)


def payload_for(r, kind):
    """A payload for `kind`: mostly well-formed with hostile numbers, sometimes random bytes."""
    if r.random() < 0.1:
        return bytes(r.getrandbits(8) for _ in range(r.randrange(0, 64)))
    if kind == "hello":
        timeout = r.choice([10.0, 2e10, 1e308, float("inf"), float("nan"), -1.0, 1.0, 1.0000001, 3600.0, 1e-300])
        key = KEY if r.random() < 0.8 else r.choice(["", "K", "k" * 1000, "x"])
        return w.hello(key, "f" * r.randrange(0, 40), timeout=timeout, source_filter=r.random() < 0.5)
    if kind == "select-sources":
        return w.select_sources([small_or_edge(r) for _ in range(r.randrange(0, 6))])
    if kind == "analog-filter":
        mode = r.choice([0, 1, 2, 3, 255])
        lo, hi = small_or_edge(r), small_or_edge(r)
        return w.analog_filter(mode, lo, hi, channels=[small_or_edge(r) for _ in range(r.randrange(0, 5))],
                               sources=[small_or_edge(r) for _ in range(r.randrange(0, 3))], replaces=small_or_edge(r))
    if kind == "array-filter":
        return w.array_filter(r.choice([0, 1, 2, 3, 4, 5, 6, 7, 8]), small_or_edge(r), small_or_edge(r), small_or_edge(r),
                              small_or_edge(r), replaces=small_or_edge(r))
    if kind == "signal-filter":
        # Mostly sources the publisher has (1) and in-range fields, with hostile numbers mixed in.
        return w.signal_filter(r.choice([1, 1, 1, 0, 2, small_or_edge(r)]), r.choice([0, 2, 10, 1, 1 << 20, (1 << 20) + 1]),
                               r.choice([0, 0, 1, 2]), r.choice([0, 0, 2, 8, 16, 17, 255]), r.choice([0, 0, 8, 17, 400, 65535]),
                               r.choice([0.0, 0.0, 10.0, 100.0, 1e12, -1.0, float("nan"), float("inf"), -0.0]),
                               reserved=0 if r.random() < 0.9 else 1)
    if kind == "credit":
        return w.credit(edgy(r, EDGES32, 32))
    if kind == "message":
        return w.message(r.choice([0, -1, (1 << 31) - 1, -(1 << 31)]), "m" * r.randrange(0, 50))
    if kind == "xml":
        return w.xml("<a>" + "x" * r.randrange(0, 50) + "</a>")
    if kind == "error":
        return w.error(edgy(r, EDGES32, 32), "e")
    if kind == "analog":
        n, c = r.randrange(0, 5), r.randrange(0, 3)
        return w.analog_f64(list(range(c)), [[r.random()] * n for _ in range(c)], edgy(r, EDGES64, 64))
    if kind == "digital":
        return w.digital([0], [[1, 0, 1]], edgy(r, EDGES64, 64))
    if kind == "array":
        return w.numeric_array(1, "d", [[1.0, 2.0]] * r.randrange(0, 3), small_or_edge(r), small_or_edge(r))
    if kind in ("file", "image"):
        content = bytes(r.getrandbits(8) for _ in range(r.randrange(0, 200)))
        total = len(content) if r.random() < 0.5 else edgy(r, EDGES64, 64)
        count = r.choice([1, 2, 3, 0, 0xFFFFFFFF])
        return w.blob(r.randrange(0, 3), total, 0 if r.random() < 0.5 else edgy(r, EDGES64, 64), r.randrange(0, 3), count,
                      None, r.randrange(0, 5), content, "../" * r.randrange(0, 3) + "f")
    if kind == "close":
        return w.close(edgy(r, EDGES32, 32), "bye")
    if kind == "gap":
        return w.gap(edgy(r, EDGES64, 64), edgy(r, EDGES64, 64))
    if kind == "configuration":
        return w.configuration("d", "t", [(0, 0, r.choice([1000.0, float("nan"), float("inf")]), -1.0, 1.0, "c", "V")], [])
    if kind == "welcome":
        return w.welcome(edgy(r, EDGES64, 64), "w", [(1, "s")])
    return b""


KINDS = ["start", "stop", "select-sources", "analog-filter", "array-filter", "remove-filter", "signal-filter", "credit",
         "message", "xml",
         "error", "analog", "digital", "array", "file", "image", "close", "hello", "gap", "configuration", "welcome"]


def round_frames(r):
    """One peer's frames: a hello (usually first), then a random session."""
    frames = []
    if r.random() < 0.9:
        frames.append(("hello", payload_for(r, "hello"), 0))
    for i in range(r.randrange(1, 30)):
        kind = r.choice(KINDS)
        frames.append((kind, payload_for(r, kind), i + 1))
    return frames


def encode(r, kind, payload, sequence):
    seq = sequence if r.random() < 0.8 else edgy(r, EDGES64, 64)
    ts = time.time_ns() if r.random() < 0.8 else struct.unpack("<q", struct.pack("<Q", edgy(r, EDGES64, 64)))[0]
    flags = 0 if r.random() < 0.85 else r.choice([1, 1 << 7, 1 << 9, 0xFFFF])
    data = w.frame(kind, payload, sequence=seq, timestamp_ns=ts, source_id=small_or_edge(r) if r.random() < 0.3 else 0,
                   filter_id=small_or_edge(r) if r.random() < 0.3 else 0, flags=flags)
    if r.random() < 0.5 and len(data) > 40:
        return [data[:40], data[40:]]
    return [data]


class Victim:
    def __init__(self, context, port):
        self.socket = context.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.connect(f"tcp://127.0.0.1:{port}")
        self.socket.send(w.frame("hello", w.hello(KEY, "victim", timeout=60.0), timestamp_ns=time.time_ns()))
        self.socket.send(w.frame("start", b"", sequence=1))
        self.sequences, self.problems = [], []
        self.last_keepalive = time.monotonic()

    def keepalive(self):
        """A keepalive (PROTOCOL.md §4.4: kind 128, header only, the next sequence number, not consumed)
        every 5 s: the victim's session (timeout 60 s) must not expire however long the fuzzer runs."""
        if time.monotonic() - self.last_keepalive < 5:
            return
        header = w.MAGIC + struct.pack("<BBHHHIQqII", 1, 128, 0, 40, 0, 0, 2, time.time_ns(), 0, 0)
        self.socket.send(header)
        self.last_keepalive = time.monotonic()

    def drain(self):
        while True:
            try:
                data = b"".join(self.socket.recv_multipart(zmq.NOBLOCK))
            except zmq.Again:
                return
            kind = data[5]
            self.sequences.append(struct.unpack_from("<Q", data, 16)[0])
            if kind in (w.KINDS["error"], w.KINDS["gap"], w.KINDS["close"]):
                self.problems.append(f"victim got frame kind {kind}: {data[40:100]!r}")
        if self.sequences and self.sequences != list(range(self.sequences[0], self.sequences[0] + len(self.sequences))):
            self.problems.append("victim's sequence numbers have a hole")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tributary", required=True)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args()
    import subprocess
    import tempfile
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    # serve's output goes to a file: a pipe nobody reads would fill and stop it.
    output = tempfile.TemporaryFile(mode="w+")
    serve = subprocess.Popen([args.tributary, "serve", "--bind", "tcp://127.0.0.1:0", "--api-key", KEY, "--simulate",
                              "id=1,name=victim-feed,rate=2000,channels=4,freq=50,block=100"],
                             stdout=output, stderr=subprocess.STDOUT, text=True)
    port, started = None, time.monotonic()
    while port is None and time.monotonic() - started < 10:
        time.sleep(0.05)
        output.seek(0)
        for line in output.read().splitlines():
            if line.startswith("listening on "):
                port = int(line.strip().rsplit(":", 1)[1])
    if port is None:
        output.seek(0)
        print("publisher-session-fuzz: serve did not start:", output.read()[-2000:])
        return 1

    def serve_output():
        output.seek(0)
        return output.read()[-3000:]
    context = zmq.Context()
    victim = Victim(context, port)
    deadline, rounds, sent = time.monotonic() + args.seconds, 0, 0
    finding = None
    try:
        while time.monotonic() < deadline and (args.rounds is None or rounds < args.rounds):
            r = random.Random(seed + rounds)
            peers = []
            log = []
            for p in range(r.randrange(1, 4)):
                s = context.socket(zmq.DEALER)
                s.setsockopt(zmq.LINGER, 0)
                # A DEALER blocks a send while it has no connection: the publisher may close one at any time.
                s.setsockopt(zmq.SNDTIMEO, 200)
                s.setsockopt(zmq.IMMEDIATE, 1)
                s.connect(f"tcp://127.0.0.1:{port}")
                peers.append((s, round_frames(r)))
            for s, frames in peers:
                for kind, payload, sequence in frames:
                    parts = encode(r, kind, payload, sequence)
                    log.append((kind, [part.hex() for part in parts]))
                    try:
                        s.send_multipart(parts)
                        sent += 1
                    except zmq.Again:
                        break  # the publisher closed this peer's connection, as it may
            time.sleep(0.02)
            for s, _ in peers:
                s.close()
            victim.drain()
            victim.keepalive()
            if serve.poll() is not None:
                finding = f"serve ended with status {serve.returncode} in round {rounds}: {serve_output()}"
            elif victim.problems:
                finding = f"round {rounds}: " + "; ".join(victim.problems[:3])
            if finding:
                os.makedirs(os.path.join(HERE, "artifacts"), exist_ok=True)
                path = os.path.join(HERE, "artifacts", f"publisher-session-{seed + rounds}.txt")
                with open(path, "w") as f:
                    f.write(finding + "\n" + "\n".join(f"{k} {' '.join(parts)}" for k, parts in log) + "\n")
                print(f"publisher-session-fuzz: FINDING with seed {seed + rounds} (replay: --seed {seed + rounds} --rounds 1): "
                      f"{finding[:500]}\n  frames: {path}")
                return 1
            rounds += 1
    finally:
        if serve.poll() is None:
            serve.terminate()
            serve.wait(timeout=10)
        victim.socket.close()
        context.term()
    print(f"publisher-session-fuzz: seed {seed}, {rounds} rounds, {sent} frames, victim received "
          f"{len(victim.sequences)} frames in order; no finding")
    return 0


if __name__ == "__main__":
    sys.exit(main())

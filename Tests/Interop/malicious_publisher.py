"""A fake publisher written from docs/PROTOCOL.md (through wire_spec.py) that sends extreme and
inconsistent values in every header and package field, for the malicious-publisher suite.

It binds a ROUTER on 127.0.0.1, answers the first hello with a welcome and the configurations of
its sources, then plays a script: a list of frames, each a function of the session's next sequence
number (so that a script can also forge sequence numbers). It ends with a normal close unless the
script says otherwise. Everything is bounded in time.
"""
import threading
import time

import zmq

import wire_spec as w

KEY = "k"


def channel_config(rate=1000.0, channels=2, lo=-10.0, hi=10.0, name="dev", unit="V"):
    return w.configuration(name, "fake", [(i, 0, rate, lo, hi, f"ai{i}", unit) for i in range(channels)], [])


def analog(rows, first_sample=0):
    return w.analog_f64(list(range(len(rows))), rows, first_sample)


class Step:
    """One frame of a script. `sequence` None means the session's next number; a number forges it."""

    def __init__(self, kind, payload=b"", sequence=None, timestamp_ns=None, source_id=1, filter_id=0, flags=0,
                 raw=None, pause=0.0):
        self.kind, self.payload, self.sequence = kind, payload, sequence
        self.timestamp_ns, self.source_id, self.filter_id, self.flags = timestamp_ns, source_id, filter_id, flags
        self.raw, self.pause = raw, pause


class MaliciousPublisher:
    """Serves one script to every session that says hello (each session gets the whole script), from
    its start (as a publisher streams data only after start), or at once with wait_for_start=False."""

    def __init__(self, script, sources=((1, "dev", None),), close=True, wait_for_start=True):
        self.script, self.sources, self.close, self.wait_for_start = script, sources, close, wait_for_start
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.LINGER, 2000)
        self.socket.setsockopt(zmq.SNDHWM, 0)
        port = self.socket.bind_to_random_port("tcp://127.0.0.1")
        self.address = f"tcp://127.0.0.1:{port}"
        self.sessions = 0
        self.sent = 0
        self.received = []
        self.frames = []  # every frame received whole (header and payload parts joined), in order
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _send(self, peer, step, sequence):
        if step.raw is not None:
            data = step.raw(sequence) if callable(step.raw) else step.raw
        else:
            payload = step.payload(sequence) if callable(step.payload) else step.payload
            data = w.frame(step.kind, payload, sequence=sequence if step.sequence is None else step.sequence,
                           timestamp_ns=time.time_ns() if step.timestamp_ns is None else step.timestamp_ns,
                           source_id=step.source_id, filter_id=step.filter_id, flags=step.flags)
        self.socket.send_multipart([peer, data])
        self.sent += 1

    def _welcome(self, peer):
        self.sessions += 1
        sequence = 0
        sources = [(sid, name) for sid, name, _ in self.sources]
        self._send(peer, Step("welcome", w.welcome(self.sessions, "malicious", sources), source_id=0), sequence)
        sequence += 1
        for sid, name, config in self.sources:
            self._send(peer, Step("configuration", config or channel_config(name=name), source_id=sid), sequence)
            sequence += 1
        return sequence

    def _play(self, peer, sequence):
        for step in self.script:
            if not self.running:
                return
            self._send(peer, step, sequence)
            sequence = (step.sequence if step.sequence is not None else sequence) + 1
            sequence &= (1 << 64) - 1
            if step.pause:
                time.sleep(step.pause)
        if self.close:
            time.sleep(0.2)
            self._send(peer, Step("close", w.close(0, "the script ended"), source_id=0), sequence)

    def _run(self):
        poller = zmq.Poller()
        poller.register(self.socket, zmq.POLLIN)
        deadline = time.monotonic() + 60
        sequences = {}
        while self.running and time.monotonic() < deadline:
            if not poller.poll(50):
                continue
            parts = self.socket.recv_multipart()
            peer, head = parts[0], parts[1] if len(parts) > 1 else b""
            if len(head) < 6 or head[:4] != w.MAGIC:
                continue
            kind = head[5]
            self.received.append(kind)
            self.frames.append(b"".join(parts[1:]))
            if kind == w.KINDS["hello"]:
                sequences[peer] = self._welcome(peer)
                if not self.wait_for_start:
                    self._play(peer, sequences.pop(peer))
            elif kind == w.KINDS["start"] and peer in sequences:
                self._play(peer, sequences.pop(peer))

    def stop(self):
        self.running = False
        self.thread.join(timeout=5)
        self.socket.close(linger=0)
        self.context.term()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


U64 = (1 << 64) - 1
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1


def block(n=100, value=0.5, channels=2):
    return analog([[value] * n for _ in range(channels)])


def scripts():
    """Every attack the suite runs: name -> (script, sources). Each is hostile in one field."""
    good = [Step("analog", block()) for _ in range(5)]
    def nan_config(rate):
        return ((1, "dev", channel_config(rate=rate)),)
    out = {
        # Gap notices whose missing counts add up past 2^64.
        "gap-counts-overflow": (good + [Step("gap", w.gap(10, U64)), Step("gap", w.gap(10, U64))] + good, None),
        # Sequence numbers 2^64-2, 2^64-1, 0, then 10.
        "sequence-wrap": (good + [Step("analog", block(), sequence=U64 - 1), Step("analog", block(), sequence=U64),
                                   Step("analog", block(), sequence=0), Step("analog", block(), sequence=10)] + good, None),
        "sequence-jump-max": (good + [Step("analog", block(), sequence=U64)] + good, None),
        "gap-sequence-max": (good + [Step("gap", w.gap(0, 1), sequence=U64)] + good, None),
        "gap-zero-count": (good + [Step("gap", w.gap(7, 0))] + good, None),
        # Timestamps at the ends of Int64.
        "timestamp-min": (good + [Step("analog", block(), timestamp_ns=I64_MIN)] + good, None),
        "timestamp-max": (good + [Step("analog", block(), timestamp_ns=I64_MAX)] + good, None),
        "timestamp-zigzag": (good + [Step("analog", block(), timestamp_ns=t) for t in (I64_MAX, I64_MIN, 0, I64_MAX)] + good, None),
        # Sample numbers at the end of u64.
        "first-sample-max": (good + [Step("analog", analog([[1.0] * 10, [2.0] * 10], first_sample=U64))] + good, None),
        # Non-finite and huge values in samples and in the configuration.
        "samples-nonfinite": (good + [Step("analog", analog([[float("nan"), float("inf")] * 50, [float("-inf"), 1e308] * 50]))] + good, None),
        "config-empty-device": (good + [Step("configuration", w.configuration("", "", [], []))] + good, None),
        # A configuration change mid-stream with extreme channel counts and indexes.
        "config-index-max": (good + [Step("configuration", w.configuration("d", "t", [(0xFFFFFFFF, 0, 1000.0, -1.0, 1.0, "x", "V")], []))] + good, None),
        # Source ids that were never announced.
        "unknown-source": (good + [Step("analog", block(), source_id=0xFFFFFFFF)] + good, None),
        # Filter ids nobody asked for.
        "filter-id-max": (good + [Step("analog", block(), filter_id=0xFFFFFFFF)] + good, None),
        # Error and close frames with codes outside the table.
        "error-code-max": (good + [Step("error", w.error(0xFFFFFFFF, "x" * 1000))] + good, None),
        # A file announced with an absurd size and chunk counts.
        "blob-absurd": (good + [Step("file", w.blob(1, U64, U64 - 5, 0xFFFFFFFF, 0xFFFFFFFF, None, 0, b"abc", "f"))] + good, None),
        "blob-offset-overflow": (good + [Step("file", w.blob(2, 100, U64 - 1, 1, 2, None, 0, b"abcdef", "f"))] + good, None),
        # Digital frames with the most samples for no lines.
        "digital-empty": (good + [Step("digital", w.digital([], []))] + good, None),
        # A message with an extreme code.
        "message-code": (good + [Step("message", w.message(-(1 << 31), "m")), Step("message", w.message((1 << 31) - 1, "m"))] + good, None),
        # Properties (extension kind 129) at their bounds, for unknown sources and channels, with forged sequences.
        "properties-extreme": (good + [
            Step("properties", w.properties([("k" * 256, "v" * 16384)] + [(f"p{i}", "") for i in range(1023)],
                                            [(0xFFFFFFFF, [("x", "y")])])),
            Step("properties", w.properties([("a", "b")], []), source_id=0xFFFFFFFF),
            Step("properties", w.properties([], [(i, [("c", "d")]) for i in range(0, 60000, 7)]), sequence=U64),
        ] + good, None),
    }
    # Resources: source ids without end, and configurations of 1 MB each (issue 38 item 4).
    big = w.configuration("d", "t", [(i, 0, 1000.0, -1.0, 1.0, "c" * 1000, "V") for i in range(1000)], [])
    out["many-sources"] = (good + [Step("configuration", channel_config(), source_id=100 + k) for k in range(3000)] + good, None)
    out["huge-configurations"] = (good + [Step("configuration", big, source_id=100 + k) for k in range(60)] + good, None)
    out["many-source-ids-data"] = (good + [Step("analog", block(n=1), source_id=1000 + k) for k in range(3000)] + good, None)
    for rate in (float("inf"), float("-inf"), float("nan"), 1e300, -1000.0, 0.0, 5e-324, 1e-300):
        out[f"config-rate-{rate!r}"] = (good, nan_config(rate))
    for lo, hi in ((float("nan"), 1.0), (float("-inf"), float("inf")), (1e308, -1e308)):
        out[f"config-range-{lo!r}-{hi!r}"] = (good, ((1, "dev", channel_config(lo=lo, hi=hi)),))
    return out

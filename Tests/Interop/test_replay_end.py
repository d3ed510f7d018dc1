"""The end of a replay reaches a slow subscriber whole (issue 8, item 12).

A subscriber whose receive queue is full stops reading its connection; if the publisher's process
ends then, libzmq on the subscriber's side discards what it had not read yet, the final close
included, and the subscriber reports a lost connection although the publisher sent everything.
The publisher must keep the connection until the subscriber has read its close (or a deadline).
"""
import os
import tempfile
import time
import unittest

import numpy as np
import zmq

import wire_spec as w
from test_transport_cli import Server, run

HERE = os.path.dirname(os.path.abspath(__file__))


def replayed_frames(capture_bytes: bytes, description: str) -> list:
    """Every frame a fast subscriber receives from `serve --replay` of these capture bytes, up to
    and including the close."""
    with tempfile.TemporaryDirectory() as directory:
        capture = os.path.join(directory, "replayed.tcap")
        with open(capture, "wb") as f:
            f.write(capture_bytes)
        replay = Server("--replay", capture, "--speed", "max", "--linger", "0.1")
        try:
            s = zmq.Context.instance().socket(zmq.DEALER)
            s.setsockopt(zmq.LINGER, 0)
            s.setsockopt(zmq.RCVTIMEO, 5000)
            s.connect(replay.address)
            s.send(w.frame("hello", w.hello("k", description, timeout=60.0), timestamp_ns=time.time_ns()))
            s.send(w.frame("credit", w.credit(1000), sequence=1))
            s.send(w.frame("start", b"", sequence=2))
            frames = []
            while not frames or frames[-1][5] != w.KINDS["close"]:
                frames.append(b"".join(s.recv_multipart()))
            s.close()
        finally:
            replay.stop()
    return frames


class ReplayEndTests(unittest.TestCase):
    def test_a_slow_subscriber_receives_every_frame_and_the_close(self):
        with tempfile.TemporaryDirectory() as directory:
            npy = os.path.join(directory, "signal.npy")
            capture = os.path.join(directory, "signal.tcap")
            np.save(npy, np.random.default_rng(7).standard_normal((8, 1_000_000)))
            result = run("import", npy, "--rate", "100000", "--out", capture)
            self.assertEqual(result.returncode, 0, result.stderr)
            for attempt in range(2):
                replay = Server("--replay", capture, "--speed", "max", "--linger", "0.1")
                try:
                    context = zmq.Context()
                    s = context.socket(zmq.DEALER)
                    s.setsockopt(zmq.LINGER, 0)
                    s.setsockopt(zmq.RCVHWM, 10)  # a small queue: it fills while the subscriber sleeps
                    s.connect(replay.address)
                    s.send(w.frame("hello", w.hello("k", "slow reader", timeout=60.0), timestamp_ns=time.time_ns()))
                    s.send(w.frame("credit", w.credit(1_000_000), sequence=1))
                    s.send(w.frame("start", b"", sequence=2))
                    time.sleep(1.0)  # the replay is delivered to libzmq and the publisher stops meanwhile
                    s.setsockopt(zmq.RCVTIMEO, 5000)
                    kinds = []
                    while True:
                        try:
                            kinds.append(b"".join(s.recv_multipart())[5])
                        except zmq.Again:
                            break
                        if kinds[-1] == w.KINDS["close"]:
                            break
                    s.close()
                    context.term()
                    analog = kinds.count(w.KINDS["analog"])
                    self.assertEqual(kinds[-1:], [w.KINDS["close"]],
                                     f"attempt {attempt + 1}: no close after {analog} analog frames")
                    self.assertGreater(analog, 100)
                    replay.process.wait(timeout=20)
                    self.assertEqual(replay.process.returncode, 0)
                finally:
                    replay.stop()


class SourceZeroReplayTests(unittest.TestCase):
    def test_application_packages_of_source_0_are_replayed_and_nothing_else_of_it(self):
        """CAPTURE.md §9: source 0 gets no replay source of its own; its array, message, XML, file and
        image frames are replayed under id 0 by the replay source of the lowest id, its other frames
        (analog, error, …) are not."""
        import struct

        import capture_spec as cs
        t0 = 1_764_489_600_000_000_000
        config = w.frame("configuration", w.configuration("daq", "sim", [(0, 0, 100.0, -1.0, 1.0, "a", "V")], []),
                         sequence=1, timestamp_ns=t0, source_id=3)
        source3 = [config] + [w.frame("analog", w.analog_f64([0], [[float(i)] * 10], first_sample=10 * i), sequence=2 + 2 * i,
                                      timestamp_ns=t0 + 100_000_000 * i, source_id=3) for i in range(3)]
        source0 = [w.frame("message", w.message(7, "of no source"), sequence=3, timestamp_ns=t0 + 50_000_000),
                   w.frame("analog", w.analog_f64([0], [[9.0] * 4]), sequence=5, timestamp_ns=t0 + 60_000_000),
                   w.frame("error", w.error(13, "recorded session error"), sequence=7, timestamp_ns=t0 + 70_000_000),
                   w.frame("xml", w.xml("<a/>"), sequence=9, timestamp_ns=t0 + 150_000_000)]
        frames = replayed_frames(cs.capture([source3, source0]), "zero")
        data = [(f[5], struct.unpack_from("<I", f, 32)[0], struct.unpack_from("<H", f, 6)[0])
                for f in frames if f[5] in (w.KINDS["analog"], w.KINDS["message"], w.KINDS["xml"], w.KINDS["error"])]
        replayed = 1 << 8  # PROTOCOL.md §2.3
        self.assertEqual([(kind, source) for kind, source, _ in data],
                         # Index order, chunk by chunk: source 3's chunk is first in the file, then source 0's.
                         [(w.KINDS["analog"], 3)] * 3 + [(w.KINDS["message"], 0), (w.KINDS["xml"], 0)])
        self.assertTrue(all(flags & replayed for _, _, flags in data), data)


class ReplayedConfigurationTests(unittest.TestCase):
    def test_a_configuration_change_back_to_the_first_is_replayed(self):
        """CAPTURE.md §9: a recorded configuration is sent when it differs from the one subscribers last
        received. Compared with the first one only, a change A -> B -> A replayed as A, B: the
        subscribers were left with B for data recorded under A."""
        import struct

        import capture_spec as cs
        t0 = 1_764_489_600_000_000_000

        def configuration(name, sequence, i):
            return w.frame("configuration", w.configuration(name, "sim", [(0, 0, 100.0, -1.0, 1.0, "a", "V")], []),
                           sequence=sequence, timestamp_ns=t0 + 100_000_000 * i, source_id=3)

        def analog(sequence, i):
            return w.frame("analog", w.analog_f64([0], [[float(i)] * 10], first_sample=10 * i), sequence=sequence,
                           timestamp_ns=t0 + 100_000_000 * i, source_id=3)

        recorded = [configuration("daq-a", 0, 0), analog(1, 0), configuration("daq-b", 2, 1), analog(3, 1),
                    configuration("daq-b", 4, 2), analog(5, 2), configuration("daq-a", 6, 3), analog(7, 3)]
        frames = replayed_frames(cs.capture([recorded]), "changes")

        def device(frame):
            length = struct.unpack_from("<I", frame, 40)[0]
            return frame[44:44 + length].decode()
        seen = [device(f) if f[5] == w.KINDS["configuration"] else "analog"
                for f in frames if f[5] in (w.KINDS["configuration"], w.KINDS["analog"])]
        # The welcome's configuration, then each change where it was recorded; the unchanged repeat is not sent.
        self.assertEqual(seen, ["daq-a", "analog", "daq-b", "analog", "analog", "daq-a", "analog"])


if __name__ == "__main__":
    unittest.main()

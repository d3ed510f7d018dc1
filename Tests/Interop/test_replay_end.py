"""The end of a replay reaches a slow subscriber whole (issue 8, item 12).

A subscriber whose receive queue is full stops reading its connection; if the publisher's process
ends then, libzmq on the subscriber's side discards what it had not read yet, the final close
included, and the subscriber reports a lost connection although the publisher sent everything.
The publisher must keep the connection until the subscriber has read its close (or a deadline).
"""
import os
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np
import zmq

import wire_spec as w
from test_transport_cli import Server, run

HERE = os.path.dirname(os.path.abspath(__file__))


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


if __name__ == "__main__":
    unittest.main()

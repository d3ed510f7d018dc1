"""The publisher's session guards against a key holder (issue 38): hello timeouts from outside the
range a clock can hold, API keys that differ only after their first bytes, and credit counted
exactly. Each runs against a real `tributary serve` on 127.0.0.1 while a victim subscriber streams;
the victim must lose nothing.
"""
import struct
import time
import unittest

import zmq

import wire_spec as w
from test_hostile import DEVICE, KEY, Victim, receive_kinds
from test_transport_cli import Server


def dealer(port):
    s = zmq.Context.instance().socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.setsockopt(zmq.RCVTIMEO, 3000)
    s.connect(f"tcp://127.0.0.1:{port}")
    return s


def hello(port, key=KEY, timeout=10.0):
    """A session attempt: the kinds received until a welcome or a close, and the error, if any."""
    s = dealer(port)
    s.send(w.frame("hello", w.hello(key, "guard-test", timeout=timeout), timestamp_ns=time.time_ns()))
    kinds, error = receive_kinds(s, {w.KINDS["welcome"], w.KINDS["close"]}, seconds=5)
    return s, kinds, error


class HelloGuards(unittest.TestCase):
    def test_timeouts_a_clock_cannot_hold_do_not_stop_the_publisher(self):
        # 2e10 s and 1e308 s trapped where the seconds became nanoseconds, before the clamp to the
        # maximum session timeout: every session died with the publisher.
        server = Server("--simulate", DEVICE)
        victim = Victim(server.port)
        try:
            for timeout in (2e10, 1e19, 1e308, float("inf"), float("nan"), -1.0, 1.0):
                s, kinds, error = hello(server.port, timeout=timeout)
                s.close()
                self.assertIsNone(server.process.poll(), f"serve ended after a hello with timeout {timeout}")
                if timeout == timeout and 1 < timeout < float("inf"):
                    self.assertIn(w.KINDS["welcome"], kinds, f"timeout {timeout}: lowered to the maximum, not refused")
                else:
                    self.assertNotIn(w.KINDS["welcome"], kinds, f"timeout {timeout} was accepted")
                    self.assertEqual(error[0], 2, f"timeout {timeout}: error {error}")
            time.sleep(0.5)
            # The victim streamed through it all without a hole, a gap or an error.
            self.assertGreater(victim.analog_frames(), 3)
            self.assertEqual(victim.errors, [])
            self.assertEqual(victim.sequences, list(range(victim.sequences[0], victim.sequences[0] + len(victim.sequences))))
        finally:
            victim.stop()
            server.stop()

    def test_keys_that_differ_anywhere_are_refused(self):
        # A comparison of the first bytes only accepted 'secrXXXXXXXXX' for 'secret-key'.
        self.server = Server("--simulate", DEVICE, api_key="secret-key")
        self.addCleanup(self.server.stop)
        for key in ("secrXXXXXXXXX", "secret-kez", "secret-keyX", "secret-ke", "secret-key\0", "", "s",
                    "Secret-key", "secret-key" * 100, "xecret-key"):
            s, kinds, error = hello(self.server.port, key=key)
            s.close()
            self.assertNotIn(w.KINDS["welcome"], kinds, f"key {key!r} was accepted for 'secret-key'")
            self.assertIsNotNone(error, f"key {key!r}: no error")
            self.assertEqual(error[0], 1, f"key {key!r}: {error}")
        s, kinds, _ = hello(self.server.port, key="secret-key")
        s.close()
        self.assertIn(w.KINDS["welcome"], kinds)


class CreditIsExact(unittest.TestCase):
    """A lossless (replay) source sends exactly N data frames after credit(N), then exactly M more
    after credit(M): never one frame beyond what each credit grants."""

    def setUp(self):
        import subprocess
        import tempfile

        from test_transport_cli import TRIBUTARY
        self.directory = tempfile.TemporaryDirectory()
        capture = f"{self.directory.name}/replay.tcap"
        # About 100 frames (import writes 4096 samples a frame): more than the credits granted below.
        import numpy as np
        np.save(f"{self.directory.name}/x.npy", np.arange(400_000, dtype=np.float64).reshape(1, -1))
        made = subprocess.run([TRIBUTARY, "import", f"{self.directory.name}/x.npy", "--rate", "1000",
                               "--out", capture], capture_output=True, text=True, timeout=60)
        self.assertEqual(made.returncode, 0, made.stderr)
        self.server = Server("--replay", capture, "--speed", "max")

    def tearDown(self):
        self.server.stop()
        self.directory.cleanup()

    def data_frames(self, s, seconds):
        count, deadline = 0, time.monotonic() + seconds
        s.setsockopt(zmq.RCVTIMEO, 100)
        while time.monotonic() < deadline:
            try:
                data = b"".join(s.recv_multipart())
            except zmq.Again:
                continue
            if data[5] in (w.KINDS["analog"], w.KINDS["digital"], w.KINDS["message"], w.KINDS["array"]):
                count += 1
        return count

    def test_exactly_the_credit_granted(self):
        s, kinds, error = hello(self.server.port)
        self.assertIn(w.KINDS["welcome"], kinds, error)
        s.send(w.frame("start", b"", sequence=1))
        # Credit 0 so far: nothing may arrive.
        self.assertEqual(self.data_frames(s, 0.5), 0, "data frames sent without credit")
        s.send(w.frame("credit", w.credit(7), sequence=2))
        self.assertEqual(self.data_frames(s, 1.0), 7, "credit(7) must bring exactly 7 data frames")
        s.send(w.frame("credit", w.credit(5), sequence=3))
        self.assertEqual(self.data_frames(s, 1.0), 5, "credit(5) must bring exactly 5 more")
        s.close()


class AfterASessionEnds(unittest.TestCase):
    """PROTOCOL.md §4.3, "After the publisher ends a session with an error": after a timeout (error 4)
    the connection stays open 0.5 s, what the peer sends meanwhile is not answered, then the
    connection is closed; a DEALER that reconnects under a new routing id gets error 12 for its next
    frame, one that chose its own routing id gets its session's code (4) again."""

    def setUp(self):
        self.server = Server("--simulate", DEVICE)
        self.addCleanup(self.server.stop)

    @staticmethod
    def next_frame(s, seconds):
        """(kind, error code or None) of the next frame other than a keepalive, or None after `seconds`."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            s.setsockopt(zmq.RCVTIMEO, max(1, int((deadline - time.monotonic()) * 1000)))
            try:
                data = b"".join(s.recv_multipart())
            except zmq.Again:
                return None
            if data[5] >= 128:
                continue  # keepalive (§4.4)
            return data[5], (struct.unpack_from("<I", data, 40)[0] if data[5] in (w.KINDS["error"], w.KINDS["close"]) else None)
        return None

    def wait_event(self, monitor, event, seconds=5.0):
        from zmq.utils.monitor import recv_monitor_message
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if monitor.poll(int((deadline - time.monotonic()) * 1000) + 1):
                if recv_monitor_message(monitor)["event"] == event:
                    return time.monotonic()
        self.fail(f"no monitor event {event} within {seconds} s")

    def timed_out_session(self, routing_id=None):
        # A context of its own, ended with the test: the monitored, reconnecting DEALER and its
        # monitor leave nothing behind in the shared context the other tests use.
        context = zmq.Context()
        self.addCleanup(context.term)
        s = context.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        if routing_id:
            s.setsockopt(zmq.ROUTING_ID, routing_id)
        monitor = s.get_monitor_socket(zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED)
        monitor.setsockopt(zmq.LINGER, 0)
        self.addCleanup(s.close)
        self.addCleanup(monitor.close)
        self.addCleanup(s.disable_monitor)
        s.connect(f"tcp://127.0.0.1:{self.server.port}")
        self.wait_event(monitor, zmq.EVENT_CONNECTED)
        s.send(w.frame("hello", w.hello(KEY, "timeout-test", timeout=1.5), timestamp_ns=time.time_ns()))
        frame = self.next_frame(s, 5)
        self.assertEqual(frame, (w.KINDS["welcome"], None))
        while frame != (w.KINDS["error"], 4):  # configurations, then the timeout 1.5 s later
            frame = self.next_frame(s, 5)
            self.assertIsNotNone(frame, "no error 4 after the session's timeout")
        ended = time.monotonic()
        self.assertEqual(self.next_frame(s, 1), (w.KINDS["close"], 4))
        return s, monitor, ended

    def test_a_timed_out_dealer_is_closed_half_a_second_later_then_is_a_new_peer(self):
        s, monitor, ended = self.timed_out_session()
        s.send(w.frame("start", b"", sequence=1))
        self.assertIsNone(self.next_frame(s, 0.3), "a frame right after the error is answered")
        closed = self.wait_event(monitor, zmq.EVENT_DISCONNECTED)
        self.assertGreater(closed - ended, 0.35, "the connection was closed before the error could leave")
        self.assertLess(closed - ended, 1.5, "the connection was not closed 0.5 s after the error")
        self.wait_event(monitor, zmq.EVENT_CONNECTED)  # libzmq reconnects: a new routing id
        s.send(w.frame("start", b"", sequence=2))
        self.assertEqual(self.next_frame(s, 3), (w.KINDS["error"], 12))
        self.assertEqual(self.next_frame(s, 1), (w.KINDS["close"], 12))

    def test_a_peer_with_its_own_routing_id_gets_its_sessions_code_again(self):
        s, monitor, ended = self.timed_out_session(routing_id=b"own-routing-id")
        self.wait_event(monitor, zmq.EVENT_DISCONNECTED)
        self.wait_event(monitor, zmq.EVENT_CONNECTED)
        time.sleep(max(0.0, ended + 1.2 - time.monotonic()))  # past the one-answer-a-second limit
        s.send(w.frame("start", b"", sequence=1))
        self.assertEqual(self.next_frame(s, 3), (w.KINDS["error"], 4))
        self.assertEqual(self.next_frame(s, 1), (w.KINDS["close"], 4))
        # That connection is refused in turn (closed 0.5 s later, nothing on it read); on the next one a
        # hello opens a new session under the same routing id.
        self.wait_event(monitor, zmq.EVENT_DISCONNECTED)
        self.wait_event(monitor, zmq.EVENT_CONNECTED)
        s.send(w.frame("hello", w.hello(KEY, "again", timeout=10.0), timestamp_ns=time.time_ns()))
        self.assertEqual(self.next_frame(s, 3), (w.KINDS["welcome"], None))

if __name__ == "__main__":
    unittest.main()

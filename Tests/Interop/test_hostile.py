"""Hostile peers against a real `tributary serve` on 127.0.0.1 (issue 8, items 1-6).

Each attack runs while a victim subscriber (a pyzmq DEALER speaking the protocol from wire_spec.py)
streams from the same publisher. After every attack: the publisher is still running, its resident
memory stayed within the budget, and the victim lost nothing (consecutive sequence numbers, no gap
notice, no error). Every loop is bounded in count and time; the whole suite takes about a minute.
"""
import math
import os
import socket
import struct
import subprocess
import threading
import time
import unittest

import zmq

import wire_spec as w
from test_transport_cli import TRIBUTARY, Server

KEY = "k"
DEVICE = "id=1,name=victim-feed,rate=2000,channels=4,freq=50,amp=1,noise=0.01,block=100"
MIB = 1 << 20


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


class PeakRSS:
    """Samples a process's resident memory every 20 ms while active."""

    def __init__(self, pid):
        self.pid, self.peak, self.running = pid, rss_bytes(pid), True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while self.running:
            try:
                self.peak = max(self.peak, rss_bytes(self.pid))
            except (OSError, AssertionError):
                return
            time.sleep(0.02)

    def stop(self):
        self.running = False
        self.thread.join(timeout=2)
        return self.peak


class Victim:
    """An authenticated subscriber that must see every frame: sequence numbers without holes."""

    def __init__(self, port):
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.connect(f"tcp://127.0.0.1:{port}")
        self.socket.send(w.frame("hello", w.hello(KEY, "victim", timeout=60.0), timestamp_ns=time.time_ns()))
        self.socket.send(w.frame("start", b"", sequence=1))
        self.sequences, self.kinds, self.errors = [], [], []
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        poller = zmq.Poller()
        poller.register(self.socket, zmq.POLLIN)
        while self.running:
            if not poller.poll(100):
                continue
            parts = self.socket.recv_multipart()
            data = b"".join(parts)
            kind = data[5]
            self.sequences.append(struct.unpack_from("<Q", data, 16)[0])
            self.kinds.append(kind)
            if kind in (w.KINDS["error"], w.KINDS["gap"], w.KINDS["close"]):
                self.errors.append(data[40:120])

    def analog_frames(self):
        return self.kinds.count(w.KINDS["analog"])

    def wait_for_analog_frames(self, count, seconds):
        """Waits until `count` analog frames have arrived or `seconds` pass; returns how many have."""
        deadline = time.monotonic() + seconds
        while self.analog_frames() < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.analog_frames()

    def holes(self):
        """Pairs of consecutive sequence numbers that are not one apart (frames lost)."""
        return [(a, b) for a, b in zip(self.sequences, self.sequences[1:]) if b != a + 1]

    def stop(self):
        self.running = False
        self.thread.join(timeout=5)
        self.socket.close()
        self.context.term()


class RawZMTP:
    """A raw TCP peer that speaks just enough ZMTP 3.0 (NULL mechanism, DEALER) to reach the ROUTER."""

    def __init__(self, port, identity=b""):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        greeting = b"\xff" + b"\0" * 8 + b"\x7f" + bytes([3, 0]) + b"NULL".ljust(20, b"\0") + b"\0" + b"\0" * 31
        self.sock.sendall(greeting)
        body = b"\x05READY" + b"\x0bSocket-Type" + struct.pack(">I", 6) + b"DEALER"
        if identity:
            body += b"\x08Identity" + struct.pack(">I", len(identity)) + identity
        self.sock.sendall(b"\x04" + bytes([len(body)]) + body)
        received = b""
        while len(received) < 64:
            chunk = self.sock.recv(64 - len(received))
            if not chunk:
                raise ConnectionError("the publisher closed during the greeting")
            received += chunk

    @staticmethod
    def message(body, more=False):
        flags = 0x01 if more else 0x00
        if len(body) < 256:
            return bytes([flags, len(body)]) + body
        return bytes([flags | 0x02]) + struct.pack(">Q", len(body)) + body

    def send_some(self, data, seconds=0.5):
        """Sends what the publisher takes within `seconds` (it stops reading when its pipe is full)."""
        self.sock.settimeout(seconds)
        try:
            self.sock.sendall(data)
            return len(data)
        except (socket.timeout, OSError):
            return -1

    def received_bytes(self, seconds):
        self.sock.settimeout(0.05)
        total, deadline = 0, time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                chunk = self.sock.recv(65536)
                if not chunk:
                    break
                total += len(chunk)
            except socket.timeout:
                continue
            except OSError:
                break
        return total

    @staticmethod
    def ping(ttl_deciseconds=100):
        """A ZMTP 3.1 PING command (libzmq answers it with a PONG from its I/O thread)."""
        return bytes([0x04, 7]) + b"\x04PING" + struct.pack(">H", ttl_deciseconds)

    def reset(self):
        """Closes with RST (SO_LINGER 0) while the publisher may still hold what was sent."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()


def authenticated(port, description="attacker", timeout=60.0):
    context = zmq.Context.instance()
    s = context.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.setsockopt(zmq.RCVTIMEO, 3000)
    s.connect(f"tcp://127.0.0.1:{port}")
    s.send(w.frame("hello", w.hello(KEY, description, timeout=timeout), timestamp_ns=time.time_ns()))
    kinds = []
    while w.KINDS["welcome"] not in kinds:
        kinds.append(s.recv()[5])
    return s


def receive_kinds(s, until_kind, seconds=3.0):
    """Frame kinds received until `until_kind` (a kind, or a set of kinds) arrives or `seconds` pass, and
    the error (code, text), if any."""
    until = {until_kind} if isinstance(until_kind, int) else set(until_kind)
    kinds, error, deadline = [], None, time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            data = b"".join(s.recv_multipart())
        except zmq.Again:
            break
        kinds.append(data[5])
        if data[5] == w.KINDS["error"]:
            error = (struct.unpack_from("<I", data, 40)[0], data[48:48 + struct.unpack_from("<I", data, 44)[0]].decode())
        if data[5] in until:
            break
    return kinds, error


class HostilePeerTests(unittest.TestCase):
    def setUp(self):
        self.server = Server("--simulate", DEVICE)
        self.victim = Victim(self.server.port)
        self.assertGreaterEqual(self.victim.wait_for_analog_frames(3, 10), 3, "the victim receives nothing")
        self.baseline_rss = rss_bytes(self.server.process.pid)

    def tearDown(self):
        self.victim.stop()
        self.server.stop()

    def assert_survived(self, what, rss_budget=64 * MIB, peak=None):
        if self.server.process.poll() is not None:
            self.fail(f"serve died during {what}: {self.server.process.stderr.read()}")
        before = self.victim.analog_frames()
        self.assertGreaterEqual(self.victim.wait_for_analog_frames(before + 3, 5), before + 3, f"the victim stopped receiving after {what}")
        self.assertEqual(self.victim.holes(), [], f"the victim lost frames during {what}")
        self.assertEqual(self.victim.errors, [], f"the victim got a gap, error or close during {what}")
        if peak is not None:
            grown = peak - self.baseline_rss
            print(f"\n  {what}: publisher RSS {self.baseline_rss / MIB:.1f} MiB -> peak {peak / MIB:.1f} MiB "
                  f"(+{grown / MIB:.1f} MiB; budget {rss_budget / MIB:.0f} MiB)", flush=True)
            self.assertLess(grown, rss_budget, f"{what} made the publisher hold {grown / MIB:.0f} MiB")

    def test_1_malformed_bursts_then_reset_never_crash_the_publisher(self):
        """Item 1: 20 NULL-handshaked connections x 5 000 bad-magic frames, closed with RST, 10 rounds."""
        burst = RawZMTP.message(b"XXXX" + b"\x01" * 36) * 5000
        meter = PeakRSS(self.server.process.pid)
        for round_number in range(10):
            peers = []
            opened = time.monotonic()
            for _ in range(20):
                try:
                    peers.append(RawZMTP(self.server.port))
                except OSError:
                    pass  # closed at once: the pending-peer limit at work
            # The bursts arrive just before a 1 s heartbeat tick would fire on these connections, and
            # the resets right after, while the publisher still holds the bursts: libzmq 4.3.4's
            # heartbeat timer asserts on a connection whose input has already failed. The moment
            # shifts a little each round.
            time.sleep(max(0.0, opened + 0.80 + 0.01 * round_number - time.monotonic()))
            senders = [threading.Thread(target=peer.send_some, args=(burst, 0.3)) for peer in peers]
            for sender in senders:
                sender.start()
            time.sleep(max(0.0, opened + 0.95 + 0.01 * round_number - time.monotonic()))
            for peer in peers:
                peer.reset()
            for sender in senders:
                sender.join()
            self.assertIsNone(self.server.process.poll(), f"serve died in round {round_number + 1}")
        time.sleep(0.5)
        self.assert_survived("10 rounds of malformed bursts and resets", peak=meter.stop())

    def test_2_pending_peers_hold_a_bounded_amount_of_memory(self):
        """Item 2: 40 connections each park an unfinished message as large as they may (and larger)."""
        meter = PeakRSS(self.server.process.pid)
        peers, refused = [], 0
        for index in range(40):
            try:
                peer = RawZMTP(self.server.port)
            except OSError:
                refused += 1
                continue
            # Half announce 16 MiB (over the limit: libzmq drops them), half just under the 1 MiB limit.
            size = 16 * MIB if index % 2 else MIB - 64
            head = bytes([0x02]) + struct.pack(">Q", size)
            if peer.send_some(head + bytes(min(size, 4 * MIB) - 1), seconds=0.5) < 0:
                refused += 1
            peers.append(peer)
        time.sleep(1.0)
        self.assert_survived("40 pending peers with parked messages", peak=meter.stop())
        for peer in peers:
            peer.reset()

    def test_3_replies_to_sessionless_peers_are_rate_limited(self):
        """Item 3: malformed frames without a session get at most one answer a second per peer."""
        peers = [RawZMTP(self.server.port) for _ in range(5)]
        frames = RawZMTP.message(b"YYYY" + b"\x02" * 60) * 400
        sent = sum(max(0, peer.send_some(frames, seconds=0.5)) for peer in peers)
        received = sum(peer.received_bytes(0.4) for peer in peers)
        print(f"\n  amplification: sent {sent} bytes, answered with {received} bytes", flush=True)
        self.assertGreater(sent, 0)
        self.assertLess(received, sent / 20, "replies to sessionless peers are amplified")
        for peer in peers:
            peer.reset()
        self.assert_survived("a flood of sessionless frames")

    def test_4_sessions_of_vanished_peers_are_removed_and_timeouts_checked(self):
        """Item 4: hellos with huge timeouts, then the peer disconnects before start: no session stays."""
        context = zmq.Context()
        try:
            bad = context.socket(zmq.DEALER)
            bad.setsockopt(zmq.LINGER, 0)
            bad.setsockopt(zmq.RCVTIMEO, 3000)
            bad.connect(f"tcp://127.0.0.1:{self.server.port}")
            bad.send(w.frame("hello", w.hello(KEY, "inf", timeout=math.inf), timestamp_ns=time.time_ns()))
            kinds, error = receive_kinds(bad, w.KINDS["close"])
            self.assertIsNotNone(error, f"an infinite timeout was accepted: {kinds}")
            self.assertEqual(error[0], 2, error)
            bad.close()
            for index in range(150):
                s = context.socket(zmq.DEALER)
                s.setsockopt(zmq.LINGER, 0)
                s.connect(f"tcp://127.0.0.1:{self.server.port}")
                s.send(w.frame("hello", w.hello(KEY, f"churn-{index}", timeout=1e9), timestamp_ns=time.time_ns()))
                if index % 10 == 0:
                    time.sleep(0.05)
                s.close()
        finally:
            context.term()
        # Their sessions asked for the longest timeout (an hour once clamped): one kept would still be
        # listed long after the 10 s allowed here for a loaded machine to read the connection events.
        deadline = time.monotonic() + 10
        while True:
            time.sleep(1.0)
            self.server.process.send_signal(10)  # SIGUSR1: the subscriber list
            line = self.server.wait_for("subscribers: ")
            if line.strip() == "subscribers: 1" or time.monotonic() > deadline:
                break
        self.assertEqual(line.strip(), "subscribers: 1", "sessions of vanished peers were kept")
        self.assert_survived("session churn")

    def test_5_filters_are_validated_and_bounded(self):
        """Item 5: a filter listing channel 0 8 192 times, channels that do not exist, too many filters."""
        meter = PeakRSS(self.server.process.pid)
        s = authenticated(self.server.port)
        s.send(w.frame("start", b"", sequence=1))
        s.send(w.frame("analog-filter", w.analog_filter(2, channels=[0] * 8192), sequence=2, filter_id=1))
        kinds, error = receive_kinds(s, w.KINDS["close"])
        self.assertIsNotNone(error, "a filter repeating channel 0 8 192 times was accepted")
        self.assertEqual(error[0], 12)
        self.assertIn("listed twice", error[1])
        s.close()
        s = authenticated(self.server.port)
        s.send(w.frame("analog-filter", w.analog_filter(2, channels=[9]), sequence=1, filter_id=1))
        kinds, error = receive_kinds(s, w.KINDS["close"])
        self.assertIsNotNone(error)
        self.assertIn("channel 9 does not exist", error[1])
        s.close()
        s = authenticated(self.server.port)
        for filter_id in range(1, 18):
            s.send(w.frame("analog-filter", w.analog_filter(0), sequence=filter_id, filter_id=filter_id))
        kinds, error = receive_kinds(s, w.KINDS["close"])
        self.assertIsNotNone(error, "17 filters were accepted")
        self.assertIn("at most 16 filters", error[1])
        s.close()
        time.sleep(0.5)
        self.assert_survived("filter amplification", peak=meter.stop())

    def test_6_file_chunks_cost_what_they_carry(self):
        """Item 6: chunks announcing the largest transfer allowed, 120 bytes each."""
        meter = PeakRSS(self.server.process.pid)
        s = authenticated(self.server.port)
        total = 64 * MIB
        started = time.process_time()
        cpu_before = self.server_cpu()
        count = 400
        for index in range(count):
            chunk = w.blob(7, total, index * 120, index, total // 120 + 1, None, 0, b"z" * 120, "big.bin", [])
            s.send(w.frame("file", chunk, sequence=index + 1))
        # A transfer over the limit is refused with error 11.
        over = w.blob(8, total + 1, 0, 0, 2, None, 0, b"z" * 120, "over.bin", [])
        s.send(w.frame("file", over, sequence=count + 1))
        kinds, error = receive_kinds(s, w.KINDS["close"], seconds=5)
        self.assertIsNotNone(error, "a transfer over the limit was accepted")
        self.assertEqual(error[0], 11)
        cpu = self.server_cpu() - cpu_before
        print(f"\n  {count} file chunks of 120 bytes announcing 64 MiB: publisher CPU {cpu * 1000:.0f} ms", flush=True)
        self.assertLess(cpu, 2.0, "file chunks cost far more than their size")
        s.close()
        time.sleep(0.3)
        self.assert_survived("file-chunk amplification", rss_budget=16 * MIB, peak=meter.stop())
        del started

    def test_7_a_ping_behind_a_stalled_burst_and_a_reset_never_crashes_the_publisher(self):
        """libzmq 4.3.4 aborts (`!_io_error`, stream_engine_base.cpp:331) when a connection whose
        reading it stopped (receive queue full) is reset and then resumed with a PING among the bytes
        it had buffered. A bounded receive queue let any peer do this without a key: 30 connections
        x (a burst of small frames, a PING, RST) killed the publisher within two rounds."""
        junk = RawZMTP.message(b"XXXX" + b"\x01" * 36)
        for round_number in range(12):
            peers = []
            for _ in range(30):
                try:
                    peers.append(RawZMTP(self.server.port))
                except OSError:
                    pass  # closed at once: the pending-peer limit at work
            payload = junk * (120 + 5 * round_number) + RawZMTP.ping()
            for peer in peers:
                try:
                    peer.sock.sendall(payload)
                except OSError:
                    pass
            for peer in peers:
                peer.reset()
            time.sleep(0.05)
            self.assertIsNone(self.server.process.poll(), f"serve died in round {round_number + 1}")
        self.assert_survived("12 rounds of bursts ending in a PING, then resets")

    def flood(self, make_peer, data, seconds, threads=4):
        """Peers from `make_peer` each send `data` over and over for `seconds` (a new peer when the
        publisher closes one); returns how many peers were closed by the publisher."""
        closed, stop = [0], time.monotonic() + seconds

        def blast():
            while time.monotonic() < stop:
                try:
                    peer = make_peer()
                except OSError:
                    time.sleep(0.01)
                    continue
                peer.sock.settimeout(0.5)
                try:
                    while time.monotonic() < stop:
                        peer.sock.sendall(data)
                except OSError:
                    closed[0] += 1
                peer.reset()

        workers = [threading.Thread(target=blast) for _ in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        return closed[0]

    def test_8_floods_without_a_session_are_cut_off(self):
        """Peers without a session that flood (tiny frames; or a duplicate routing id, whose frames
        libzmq keeps without ever handing them to the publisher) are closed within the 64 KiB a
        connection may send before its session opens, and what they cost stays bounded."""
        meter = PeakRSS(self.server.process.pid)
        port = self.server.port
        closed = self.flood(lambda: RawZMTP(port), RawZMTP.message(b"") * 20_000, seconds=2.0)
        self.assertGreater(closed, 0, "no flooding connection was closed")
        anchor = RawZMTP(port, identity=b"same")
        closed = self.flood(lambda: RawZMTP(port, identity=b"same"), RawZMTP.message(b"same") * 20_000, seconds=2.0)
        anchor.reset()
        self.assertGreater(closed, 0, "no connection flooding under a duplicate routing id was closed")
        time.sleep(0.5)
        self.assert_survived("floods of tiny frames and under a duplicate routing id", rss_budget=128 * MIB,
                             peak=meter.stop())

    def test_9_a_session_that_floods_gets_error_16_and_is_closed(self):
        """A subscriber with the key that sends faster than the publisher reads: error 16 (too many
        frames), then its connection is closed; the other subscribers lose nothing."""
        meter = PeakRSS(self.server.process.pid)
        s = authenticated(self.server.port, description="flooder")
        burst = [w.frame("credit", w.credit(1), sequence=n + 1) for n in range(2_000)]
        error, deadline = None, time.monotonic() + 10
        s.setsockopt(zmq.SNDTIMEO, 100)
        while error is None and time.monotonic() < deadline:
            for frame in burst:
                try:
                    s.send(frame, zmq.DONTWAIT)
                except zmq.Again:
                    break
            while error is None:
                try:
                    data = b"".join(s.recv_multipart(zmq.DONTWAIT))
                except zmq.Again:
                    break
                if data[5] == w.KINDS["error"]:
                    error = (struct.unpack_from("<I", data, 40)[0], data[48:48 + struct.unpack_from("<I", data, 44)[0]].decode())
        s.close()
        self.assertIsNotNone(error, "a session sending 2 000 frames at a time for 10 s was never stopped")
        self.assertEqual(error[0], 16, error)
        time.sleep(0.5)
        self.assert_survived("a flooding session", rss_budget=128 * MIB, peak=meter.stop())

    def server_cpu(self):
        with open(f"/proc/{self.server.process.pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class DyingPublisherTests(unittest.TestCase):
    def test_a_paused_subscriber_outlives_its_publisher(self):
        """A subscriber too slow for its publisher pauses (its queue is full, libzmq stops reading);
        its publisher then dies. With ZMTP heartbeats on, libzmq 4.3.4 aborted the subscriber at the
        next PING (`!_io_error`, stream_engine_base.cpp:331). It must instead deliver what it had and
        end with error 5."""
        server = Server("--simulate", "id=1,name=fast,rate=400000,channels=8,block=100")
        subscriber = subprocess.Popen([TRIBUTARY, "subscribe", f"127.0.0.1:{server.port}", "--api-key", KEY],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            time.sleep(3.0)  # nobody reads its output: its observer blocks, its queues fill
            server.stop()
            time.sleep(3.0)  # a PING timer (1 s) would have fired on the dead connection by now
            died = subscriber.poll()
            output, errors = subscriber.communicate(timeout=60)
            self.assertIsNone(died, f"the paused subscriber died ({died}): {errors.decode()[:300]}")
        finally:
            if subscriber.poll() is None:
                subscriber.kill()
                subscriber.communicate()
        self.assertGreater(len(output), 0)
        self.assertEqual(subscriber.returncode, 1, errors.decode()[-300:])
        self.assertIn("error 5 (lost connection)", errors.decode())


if __name__ == "__main__":
    unittest.main()

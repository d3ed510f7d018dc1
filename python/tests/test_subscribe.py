"""The Python package subscribed to `tributary serve --simulate` on 127.0.0.1 (port 0), bounded in time."""
import os
import queue
import re
import subprocess
import sys
import threading
import time
import unittest

import numpy as np

import tributary

BIN = os.environ.get("TRIBUTARY", ".build/release/tributary")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Tests", "Interop"))
from test_transport_cli import dominant_frequency  # noqa: E402 (the interop tests' helper)

TIMEOUT = 20
# Channel k carries a sine of freq × (k+1) Hz.
DEVICE_1 = "id=1,name=USB-6009,rate=1000,channels=4,freq=50,amp=1,noise=0.01,block=100"
DEVICE_2 = "id=2,name=PCI-6024,rate=2000,channels=2,freq=10,amp=2,noise=0.01,bits=16,block=200"


class Server:
    """A `tributary serve` process; its first line gives the endpoint."""

    def __init__(self, *args):
        self.process = subprocess.Popen([BIN, "serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k", *args],
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.lines = lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(output_line) for output_line in self.process.stdout], daemon=True).start()
        deadline = time.monotonic() + TIMEOUT
        while True:
            line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
            if line.startswith("listening on "):
                self.address = line.split("listening on ", 1)[1].strip()
                break

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=TIMEOUT)
        self.process.stdout.close()


class SubscribeTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server("--simulate", DEVICE_1, "--simulate", DEVICE_2)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def collect(self, sub, samples, source):
        blocks, others = [], []
        deadline = time.monotonic() + TIMEOUT
        while sum(b.data.shape[1] for b in blocks) < samples and time.monotonic() < deadline:
            package = sub.next(timeout=1)
            if package is None:
                continue
            (blocks if package.kind == "analog" and package.source_id == source else others).append(package)
        return blocks, others

    def test_filtered_channels_and_frequencies(self):
        with tributary.subscribe(self.server.address, api_key="k", channels=[1, 3], sources=[1]) as sub:
            self.assertEqual(sub.filter_ids, [1])
            self.assertEqual(sorted(s["id"] for s in sub.sources), [1, 2])
            blocks, others = self.collect(sub, 2000, source=1)
        self.assertGreaterEqual(sum(b.data.shape[1] for b in blocks), 2000)
        self.assertTrue(all(b.filter_id == 1 for b in blocks))
        self.assertTrue(all(b.channel_indexes == [1, 3] for b in blocks))
        self.assertFalse([p for p in others if p.kind == "analog"])  # source 2 was not selected
        self.assertIn("configuration", [p.kind for p in others])
        data = np.hstack([b.data for b in blocks])
        self.assertEqual(data.dtype, np.float64)
        self.assertEqual(dominant_frequency(data[0], 1000), 100.0)
        self.assertEqual(dominant_frequency(data[1], 1000), 200.0)
        sequences = [b.sequence for b in blocks]
        self.assertEqual(sequences, sorted(sequences))

    def test_int16_source_in_volts_and_counts(self):
        with tributary.subscribe(self.server.address, api_key="k", sources=[2]) as sub:
            volts, _ = self.collect(sub, 400, source=2)
        with tributary.subscribe(self.server.address, api_key="k", sources=[2], counts=True) as sub:
            counts, _ = self.collect(sub, 400, source=2)
        self.assertEqual(volts[0].data.dtype, np.float64)
        self.assertEqual(counts[0].data.dtype, np.int16)
        self.assertEqual(volts[0].data.shape[0], 2)
        self.assertLess(np.abs(volts[0].data).max(), 2.2)
        self.assertGreater(np.abs(counts[0].data).max(), 1000)
        data = np.hstack([b.data for b in volts])
        self.assertEqual(dominant_frequency(data[0][:2000], 2000), 10.0)

    def test_source_0_selects_only_the_publishers_own_packages(self):
        # Issue 43 item 10: source 0 stands for the publisher's own packages (PROTOCOL.md §4.1).
        with tributary.subscribe(self.server.address, api_key="k", sources=[0]) as sub:
            packages = list(sub.packages(duration=0.5))
        self.assertFalse([p for p in packages if p.kind == "analog"])

    def test_int32_counts_arrive_as_int32_or_as_values(self):
        # Wire sample format 4: counts=True hands the int32 counts over, else count × scale + offset.
        import tempfile
        counts = np.random.default_rng(9).integers(-(1 << 23), 1 << 23, (2, 3000), dtype=np.int32)
        with tempfile.TemporaryDirectory() as directory:
            np.save(os.path.join(directory, "c.npy"), counts)
            capture = os.path.join(directory, "c.tcap")
            subprocess.run([BIN, "import", os.path.join(directory, "c.npy"), "--rate", "1000", "--out", capture],
                           check=True, capture_output=True, timeout=TIMEOUT)
            got = {}
            for as_counts in (True, False):
                replay = Server("--replay", capture, "--speed", "max", "--linger", "0.1", "--wait-subscribers", "1")
                try:
                    with tributary.subscribe(replay.address, api_key="k", counts=as_counts) as sub:
                        got[as_counts] = [p.data for p in sub.packages(duration=5) if p.kind == "analog"]
                finally:
                    replay.stop()
        self.assertEqual({b.dtype for b in got[True]}, {np.dtype(np.int32)})
        np.testing.assert_array_equal(np.hstack(got[True]), counts)
        self.assertEqual({b.dtype for b in got[False]}, {np.dtype(np.float64)})
        np.testing.assert_array_equal(np.hstack(got[False]), counts.astype(np.float64))

    def test_a_replays_end_is_a_close_not_error_5(self):
        # Issue 43 item 7: the publisher's normal end arrives as the close it sent.
        import tempfile
        with tempfile.TemporaryDirectory() as directory:
            np.save(os.path.join(directory, "x.npy"), np.zeros((2, 2000)))
            capture = os.path.join(directory, "x.tcap")
            subprocess.run([BIN, "import", os.path.join(directory, "x.npy"), "--rate", "1000", "--out", capture],
                           check=True, capture_output=True, timeout=TIMEOUT)
            replay = Server("--replay", capture, "--speed", "max", "--linger", "0.1")
            try:
                with tributary.subscribe(replay.address, api_key="k") as sub:
                    packages = list(sub.packages(duration=5))
                    ended = [p for p in packages if p.kind in ("close", "error")]
            finally:
                replay.stop()
        self.assertTrue(any(p.kind == "analog" for p in packages))
        self.assertEqual([(p.kind, p.content) for p in ended], [("close", {"code": 0, "reason": "the replay has ended"})])

    def test_the_publisher_decimates_for_this_session(self):
        # Issue 42 item 4: source 1 (1000 S/s, 50 Hz on channel 0) decimated by 5 on the publisher.
        with tributary.subscribe(self.server.address, api_key="k", sources=[1], decimate=5) as sub:
            blocks, others = self.collect(sub, 400, source=1)
        rates = [c["sampling_rate"] for p in others if p.kind == "configuration" and p.source_id == 1
                 for c in p.content["channels"]]
        self.assertEqual(rates[-1], 200.0)
        data = np.hstack([b.data for b in blocks])
        self.assertGreaterEqual(data.shape[1], 400)
        self.assertEqual(dominant_frequency(data[0][:400], 200), 50.0)
        firsts = [b.first_sample for b in blocks]
        self.assertEqual(firsts[1:], [b.first_sample + b.data.shape[1] for b in blocks[:-1]])

    def test_signal_filter_arguments_are_checked(self):
        for options, error in [({"decimate": 1}, ValueError), ({"decimate": 2.5}, TypeError),
                               ({"lowpass": float("nan")}, ValueError), ({"decimate": 4, "decimate_ftype": "x"}, ValueError),
                               ({"lowpass": 10.0, "lowpass_order": 17}, ValueError), ({"lowpass": -1.0}, tributary.TributaryError),
                               ({"lowpass_order": 2}, tributary.TributaryError)]:
            with self.subTest(options=options), self.assertRaises(error):
                tributary.subscribe(self.server.address, api_key="k", sources=[1], **options)
        # A cutoff above half the source's rate: the publisher ends the session with error 12 — as the
        # subscription's error package, or, when its refusal arrives before the open returns, as the
        # open's SCCTError (both are the publisher's answer; which comes first is a race).
        try:
            with tributary.subscribe(self.server.address, api_key="k", sources=[1], lowpass=600.0) as sub:
                packages = list(sub.packages(duration=2))
        except tributary.SCCTError as refused:
            self.assertEqual(refused.code, 12, str(refused))
            self.assertIn("is not below half the rate", str(refused))
        else:
            errors = [p.content for p in packages if p.kind == "error"]
            self.assertTrue(errors and errors[0]["code"] == 12, errors)

    def test_clock_estimate_of_a_publisher_on_this_host(self):
        # Same host, same clock: the offset is within the probes' round trip of 0 (PROTOCOL.md §4.9).
        with tributary.subscribe(self.server.address, api_key="k", sources=[1]) as sub:
            deadline = time.monotonic() + 5
            while sub.clock is None and time.monotonic() < deadline:
                time.sleep(0.05)
            clock = sub.clock
        self.assertIsNotNone(clock)
        self.assertGreater(clock["rtt_s"], 0)
        self.assertLess(abs(clock["offset_s"]), max(clock["rtt_s"], 1e-3))
        self.assertEqual(clock["estimates"], 1)
        with self.assertRaises(tributary.HandleError):
            sub.clock

    def test_iteration_is_bounded(self):
        start = time.monotonic()
        with tributary.subscribe(self.server.address, api_key="k", sources=[1]) as sub:
            packages = list(sub.packages(duration=0.5))
        self.assertLess(time.monotonic() - start, 5)
        self.assertTrue(any(p.kind == "analog" for p in packages))

    def test_refusals_and_misuse(self):
        with self.assertRaises(tributary.SCCTError) as e:
            tributary.subscribe(self.server.address, api_key="wrong")
        self.assertEqual(e.exception.code, 1)
        self.assertIn("wrong API key", str(e.exception))
        with self.assertRaises(tributary.SCCTError) as e:
            tributary.subscribe("127.0.0.1:0", api_key="k")
        self.assertEqual(e.exception.code, 9)
        with self.assertRaises(tributary.ArgumentError):
            tributary.subscribe(self.server.address, api_key="k", timeout=0.5)
        with self.assertRaises(tributary.ArgumentError):
            tributary.subscribe("udp://127.0.0.1:1", api_key="k")
        sub = tributary.subscribe(self.server.address, api_key="k")
        sub.close()
        sub.close()
        with self.assertRaises(tributary.HandleError):
            sub.next(timeout=0.1)

    def test_numbers_are_checked_before_they_reach_the_library(self):
        with tributary.subscribe(self.server.address, api_key="k", sources=[np.int64(1)], channels=np.array([0, 1])) as sub:
            for timeout, error, text in (("1", TypeError, r"timeout must be a number, not str '1'"),
                                         (True, TypeError, r"timeout must be a number, not a bool"),
                                         (float("nan"), ValueError, r"timeout must be a finite number, not nan")):
                with self.subTest(timeout=timeout), self.assertRaisesRegex(error, text):
                    sub.next(timeout=timeout)
            # Refused when called, not at the first package (a NaN duration never ended the loop).
            with self.assertRaisesRegex(ValueError, r"duration must be a finite number, not nan"):
                sub.packages(duration=float("nan"), count=1)
            with self.assertRaisesRegex(ValueError, r"duration must be at least 0"):
                sub.packages(duration=-1, count=1)
            with self.assertRaisesRegex(TypeError, r"count must be an integer, not float 1\.5"):
                sub.packages(duration=1, count=1.5)
            self.assertEqual(len(list(sub.packages(duration=TIMEOUT, count=np.int8(2)))), 2)
            self.assertIsNotNone(sub.next(timeout=float("inf")))  # infinity: until a package arrives

    def test_waiting_forever_does_not_crash(self):
        # tributary_subscription_next waited with NSCondition.wait(until:), which converts its date to
        # int64 nanoseconds and traps on one past 2262: a negative timeout ("forever", the package's
        # next() without a timeout), an infinite one or 1e300 s killed the process whenever no package
        # was waiting. Run in a child process, so that a crash is a failure, not the end of the tests.
        server = Server("--simulate", "id=1,name=slow,rate=10,channels=1,freq=1,block=10")  # a package a second
        script = """if True:
            import ctypes, sys, time
            import tributary
            with tributary.subscribe(sys.argv[1], api_key="k") as sub:
                lib = tributary._native.lib()
                for timeout in (-1.0, float("inf"), 1e300, 1e10, None):
                    while sub.next(timeout=0.05) is not None:  # nothing left waiting
                        pass
                    start = time.monotonic()
                    if timeout is None:
                        got = sub.next()
                    else:
                        kind, text = ctypes.c_int(), ctypes.c_char_p()
                        status = lib.tributary_subscription_next(sub._handle, timeout, ctypes.byref(kind), ctypes.byref(text))
                        got = status == 0 and text.value
                    print(timeout, bool(got), round(time.monotonic() - start, 1), flush=True)
            """
        try:
            proc = subprocess.run([sys.executable, "-c", script, server.address], capture_output=True, text=True, timeout=60)
        finally:
            server.stop()
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr[-3000:])
        lines = proc.stdout.split("\n")[:5]
        self.assertEqual([line.split()[:2] for line in lines], [["-1.0", "True"], ["inf", "True"], ["1e+300", "True"],
                                                                ["10000000000.0", "True"], ["None", "True"]])

    def test_a_caller_that_stops_pulling_sees_the_losses_as_gaps(self):
        server = Server("--simulate", "id=1,name=fast,rate=400000,channels=2,freq=50,block=100", "--status-interval", "0.5")
        try:
            with tributary.subscribe(server.address, api_key="k", capacity=1, description="stalled") as sub:
                self.assertIsNotNone(sub.next(timeout=TIMEOUT))
                # Not pulling: the subscriber stops reading its socket, the publisher drops and counts
                # (its status lines say so); however loaded the machine, wait for that, not for a time.
                deadline = time.monotonic() + 60
                dropped = 0
                while not dropped and time.monotonic() < deadline:
                    try:
                        line = server.lines.get(timeout=1)
                    except queue.Empty:
                        continue
                    match = re.search(r"'stalled' .* (\d+) dropped", line)
                    dropped = int(match.group(1)) if match else 0
                self.assertGreater(dropped, 0, "the publisher never dropped")
                gaps, analog_after = [], []
                deadline = time.monotonic() + 60
                while not analog_after and time.monotonic() < deadline:
                    package = sub.next(timeout=1)
                    if package is None:
                        continue
                    if package.kind == "gap":
                        gaps.append(package)
                    elif gaps and package.kind == "analog":
                        analog_after.append(package)
        finally:
            server.stop()
        self.assertTrue(gaps, "no gap package")
        self.assertGreater(gaps[0].content["missing_count"], 0)
        self.assertTrue(analog_after)
        self.assertGreaterEqual(analog_after[0].sequence, gaps[0].content["first_missing_sequence"] + gaps[0].content["missing_count"])

    def test_curve_keys(self):
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            def path(name):
                return os.path.join(tmp, name)
            for name in ("server", "client", "other"):
                subprocess.run([BIN, "keygen", "--out", path(name)], check=True, capture_output=True, timeout=TIMEOUT)
            with open(path("client.pub"), encoding="utf-8") as source, open(path("allowed.txt"), "w", encoding="utf-8") as out:
                out.writelines(line for line in source if not line.startswith("#"))
            server = Server("--simulate", DEVICE_1, "--curve-secret", path("server.key"), "--curve-clients", path("allowed.txt"))
            try:
                with tributary.subscribe(server.address, api_key="k", curve_server_key=path("server.pub"),
                                         curve_key=path("client.key")) as sub:
                    blocks, _ = self.collect(sub, 100, source=1)
                    self.assertTrue(blocks)
                with self.assertRaises(tributary.SCCTError) as e:
                    tributary.subscribe(server.address, api_key="k", curve_server_key=path("server.pub"),
                                        curve_key=path("other.key"), timeout=2)
                self.assertEqual(e.exception.code, 1)
                with self.assertRaises(tributary.ArgumentError):
                    tributary.subscribe(server.address, api_key="k", curve_key=path("client.key"))
                with self.assertRaises(tributary.ArgumentError):
                    tributary.subscribe(server.address, api_key="k", curve_server_key=path("missing.pub"))
                # The key files are checked as the command line checks them: the wrong half of a pair is refused.
                with self.assertRaisesRegex(tributary.ArgumentError, r"curve_key.*this is a public key file"):
                    tributary.subscribe(server.address, api_key="k", curve_server_key=path("server.pub"),
                                        curve_key=path("client.pub"))
                with self.assertRaisesRegex(tributary.ArgumentError, r"curve_server_key.*this is a secret key file"):
                    tributary.subscribe(server.address, api_key="k", curve_server_key=path("server.key"))
            finally:
                server.stop()

    def test_publisher_going_away_is_an_error_package(self):
        server = Server("--simulate", DEVICE_1)
        try:
            with tributary.subscribe(server.address, api_key="k", timeout=2) as sub:
                first, _ = self.collect(sub, 100, source=1)
                self.assertTrue(first)
                server.process.kill()
                errors = []
                deadline = time.monotonic() + TIMEOUT
                while not errors and time.monotonic() < deadline:
                    package = sub.next(timeout=0.5)
                    if package is not None and package.kind == "error":
                        errors.append(package)
                self.assertTrue(errors, "no error package after the publisher died")
                self.assertIn(errors[0].content["code"], (4, 5))  # expired timeout or lost connection
        finally:
            server.stop()


if __name__ == "__main__":
    unittest.main()

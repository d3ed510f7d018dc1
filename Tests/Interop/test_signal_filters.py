"""Server-side signal filters (issue 42 item 4, PROTOCOL.md §5.18 and §6.2): a subscription decimated
or low-passed by the publisher, recorded, equals `tributary process` of the full-rate recording of
the same replay; requests past the CPU budget end the session with error 17; malformed requests
(every field bad) end it with error 10 and never stop the publisher. Real processes on loopback."""
import struct
import subprocess
import time
import unittest

import numpy as np
import zmq

import wire_spec as w
from tool_process import TIMEOUT, TRIBUTARY, ScratchDirectory, Serve, import_noisy_tones

RATE = 10_000.0


def run(*args):
    result = subprocess.run([TRIBUTARY, *map(str, args)], capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise AssertionError(f"tributary {' '.join(map(str, args))} failed ({result.returncode}): {result.stderr}")
    return result.stdout


def record(address, out, *options):
    return subprocess.Popen([TRIBUTARY, "record", address, "--api-key", "k", "--out", out, *map(str, options)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class SignalFilterRecordings(ScratchDirectory, unittest.TestCase):
    """One replay, published to a full-rate and a filtered recorder at once (--wait-subscribers 2)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        import_noisy_tones(cls.path("in.npy"), cls.path("in.tcap"), 50_003, RATE, seed=7)


    def export(self, capture):
        name = capture[:-5] + ".npy"
        run("export", capture, "--format", "npy", "--out", name, "--force")
        return np.load(name)

    def recorded_pair(self, name, *options):
        """Records the replay at full rate and with `options` at the same time; returns both paths."""
        serve = Serve("--replay", self.path("in.tcap"), "--speed", "max", "--wait-subscribers", 2, "--no-announce")
        try:
            full, filtered = self.path(name + "-full.tcap"), self.path(name + "-filtered.tcap")
            recorders = [record(serve.address, full), record(serve.address, filtered, *options)]
            for r in recorders:
                out, err = r.communicate(timeout=60)
                self.assertEqual(r.returncode, 0, err)
        finally:
            serve.stop()
        return full, filtered

    def assertSame(self, got, want):
        self.assertEqual(got.shape, want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.max(np.abs(want)))

    def test_decimated_subscription_equals_process_decimate(self):
        full, filtered = self.recorded_pair("dec", "--decimate", 10)
        run("process", full, "--out", self.path("dec-processed.tcap"), "--decimate", 10)
        got, want = self.export(filtered), self.export(self.path("dec-processed.tcap"))
        self.assertEqual(got.shape, (3, 5_001))
        self.assertSame(got, want)
        # The configuration the session was sent last gives the decimated rate.
        info = run("inspect", filtered)
        self.assertIn("rate 10000.0 Hz -> 1000.0 Hz", info)

    def test_lowpass_then_fir_decimation_equals_process(self):
        full, filtered = self.recorded_pair("lpfir", "--lowpass", "800:6", "--decimate", "4:fir")
        # process has no FIR decimation: the low-pass by process, then decimate(ftype='fir', zero_phase=False) by scipy.
        from scipy import signal
        run("process", full, "--out", self.path("lp-processed.tcap"), "--filter", "butter:6:lowpass:800")
        lowpassed = self.export(self.path("lp-processed.tcap"))
        want = signal.decimate(lowpassed, 4, ftype="fir", zero_phase=False, axis=1)
        self.assertSame(self.export(filtered), want)

    def test_lowpass_alone_keeps_the_rate(self):
        full, filtered = self.recorded_pair("lp", "--lowpass", "1000")
        run("process", full, "--out", self.path("lp4-processed.tcap"), "--filter", "butter:4:lowpass:1000")
        self.assertSame(self.export(filtered), self.export(self.path("lp4-processed.tcap")))


class SignalFilterRefusals(unittest.TestCase):
    """A live publisher (1 source, 4 channels at 2 kS/s) with a small budget."""

    @classmethod
    def setUpClass(cls):
        # Budget per session 100 000 operations a second: a decimate by 10 (4 sections × 5 × 4 channels ×
        # 2000 S/s = 160 000) is past it, a low-pass of order 2 (1 section: 40 000) is not.
        cls.server = Serve("--simulate", "id=1,name=feed,rate=2000,channels=4,freq=50,amp=1,noise=0.01,block=100",
                           "--signal-budget", "100000:150000", "--status-interval", "0.3", "--no-announce")

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def subscribe(self, *options, duration=1):
        return subprocess.run([TRIBUTARY, "subscribe", self.server.address, "--api-key", "k", "--summary",
                               "--duration", str(duration), *map(str, options)], capture_output=True, text=True, timeout=TIMEOUT)

    def test_past_the_session_budget_is_error_17(self):
        result = self.subscribe("--decimate", 10)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("17", result.stderr)
        self.assertIn("budget", result.stderr)

    def test_within_the_budget_is_accepted_and_listed(self):
        result = self.subscribe("--lowpass", "100:2", "--description", "listed", duration=2)
        self.assertEqual(result.returncode, 0, result.stderr)
        # The publisher's subscriber list (--status-interval) showed the session's signal filter.
        while True:
            line = self.server.wait_for("  session")
            if "'listed'" in line and "signal filter" in line:
                break
        self.assertIn("signal filter source 1: low-pass 100.0 Hz, Butterworth order 2", line)

    def test_past_the_publishers_budget_is_error_17(self):
        # Two sessions of 80 000 each (order 4: 2 sections) pass the session budget, not the publisher's 150 000.
        first = subprocess.Popen([TRIBUTARY, "subscribe", self.server.address, "--api-key", "k", "--summary",
                                  "--duration", "4", "--lowpass", "100:4"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
        time.sleep(1.5)
        second = self.subscribe("--lowpass", "100:4")
        out, err = first.communicate(timeout=TIMEOUT)
        self.assertEqual(first.returncode, 0, err)
        self.assertNotEqual(second.returncode, 0)
        self.assertIn("publisher's budget", second.stderr)

    def test_a_cutoff_above_nyquist_is_error_12(self):
        result = self.subscribe("--lowpass", "1500")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("12", result.stderr)
        self.assertIn("half the rate", result.stderr)

    def test_bad_options_are_usage_errors(self):
        for options in (["--decimate", "1"], ["--decimate", "10:xyz"], ["--decimate", "2000000"], ["--lowpass", "0"],
                        ["--lowpass", "100:17"], ["--lowpass", "nan"]):
            with self.subTest(options=options):
                result = self.subscribe(*options)
                self.assertEqual(result.returncode, 2, result.stderr)

    def session(self):
        s = zmq.Context.instance().socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.RCVTIMEO, 3000)
        s.connect(self.server.address)
        s.send(w.frame("hello", w.hello("k", "raw"), timestamp_ns=time.time_ns()))
        return s

    def answer(self, s, kinds):
        """The first frame of one of `kinds` (its kind and, for an error, code and text)."""
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            data = b"".join(s.recv_multipart())
            if data[5] in kinds:
                if data[5] == w.KINDS["error"]:
                    length = struct.unpack_from("<I", data, 44)[0]
                    return data[5], struct.unpack_from("<I", data, 40)[0], data[48:48 + length].decode()
                return data[5], data
        raise AssertionError(f"no frame of kinds {kinds}")

    def test_every_malformed_field_ends_the_session_with_error_10(self):
        bad = {
            "source_id": w.signal_filter(0, decimate=10),
            "decimate": w.signal_filter(1, decimate=1),
            "decimate large": w.signal_filter(1, decimate=(1 << 20) + 1),
            "decimate_ftype": w.signal_filter(1, decimate=10, ftype=2),
            "decimate_order": w.signal_filter(1, decimate=10, decimate_order=17),
            "decimate_order fir": w.signal_filter(1, decimate=10, ftype=1, decimate_order=16_385),
            "ftype without decimation": w.signal_filter(1, ftype=1, lowpass_order=2, lowpass_cutoff=10.0),
            "lowpass_order": w.signal_filter(1, lowpass_order=17, lowpass_cutoff=10.0),
            "lowpass_cutoff nan": w.signal_filter(1, lowpass_order=2, lowpass_cutoff=float("nan")),
            "lowpass_cutoff inf": w.signal_filter(1, lowpass_order=2, lowpass_cutoff=float("inf")),
            "lowpass_cutoff negative": w.signal_filter(1, lowpass_order=2, lowpass_cutoff=-5.0),
            "cutoff without lowpass": w.signal_filter(1, decimate=10, lowpass_cutoff=5.0),
            "reserved": w.signal_filter(1, decimate=10, reserved=1),
            "truncated": w.signal_filter(1, decimate=10)[:16],
        }
        for name, payload in bad.items():
            with self.subTest(field=name):
                s = self.session()
                self.answer(s, {w.KINDS["welcome"]})
                s.send(w.frame("signal-filter", payload))
                kind, code, text = self.answer(s, {w.KINDS["error"]})
                self.assertEqual(code, 10, text)
                self.assertIn("signal_filter", text)
                s.close()
        # The publisher still serves: a good request is answered with the decimated configuration.
        s = self.session()
        self.answer(s, {w.KINDS["welcome"]})
        self.answer(s, {w.KINDS["configuration"]})
        s.send(w.frame("signal-filter", w.signal_filter(1, lowpass_order=2, lowpass_cutoff=100.0)))
        kind, data = self.answer(s, {w.KINDS["configuration"], w.KINDS["error"]})
        self.assertEqual(kind, w.KINDS["configuration"])
        s.close()

    def test_an_unknown_source_is_error_12(self):
        s = self.session()
        self.answer(s, {w.KINDS["welcome"]})
        s.send(w.frame("signal-filter", w.signal_filter(9, decimate=10)))
        kind, code, text = self.answer(s, {w.KINDS["error"]})
        self.assertEqual(code, 12, text)
        self.assertIn("source 9", text)
        s.close()


if __name__ == "__main__":
    unittest.main()

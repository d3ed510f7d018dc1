"""`tributary serve --alsa DEVICE,...` (issue 40, item 4): a sound card captured through libasound
becomes a source, recorded by a real `record` and exported by `export`, bit for bit.

No sound card is needed: each test writes raw interleaved samples with numpy and an ALSA
configuration in its own directory that defines a capture PCM of ALSA's `file` plugin reading them
(`infile`, over the `null` PCM), and points libasound at it with ALSA_CONFIG_PATH (the system's
alsa.conf, then the test's file). `serve` opens, configures and reads that PCM through the real
library. Such a PCM is not paced by a clock and never ends (past its file it repeats the last data),
so the tests give `samples=N` (the file's length) to end the source, and the lossless source starts
reading once `--wait-subscribers` subscribers have started. Overruns cannot be provoked here (the
file PCM never overruns); the gap they declare is tested in Swift (InterleavedBlocksTests).
"""
import json
import os
import threading
import unittest

import numpy as np

from tool_process import TIMEOUT, RecordedSourceTest, Serve

SYSTEM_ALSA_CONF = "/usr/share/alsa/alsa.conf"


class AlsaSource(RecordedSourceTest, unittest.TestCase):
    directory_prefix = "tributary-alsa-"

    def setUp(self):
        super().setUp()
        self.env = dict(os.environ, ALSA_CONFIG_PATH=f"{SYSTEM_ALSA_CONF}:{self.path('asound.conf')}")
        self.pcms = []

    def file_pcm(self, name, interleaved):
        """Defines capture PCM `name` reading the bytes of `interleaved` (samples, channels) and returns `name`."""
        raw = self.path(f"{name}.raw")
        with open(raw, "wb") as f:
            f.write(np.ascontiguousarray(interleaved).tobytes())
        self.pcms.append(f'pcm.{name} {{\n    type file\n    slave.pcm null\n    file "/dev/null"\n'
                         f'    infile "{raw}"\n    format raw\n}}\n')
        with open(self.path("asound.conf"), "w") as f:
            f.write("".join(self.pcms))
        return name

    def publish_and_record(self, spec, *serve_args):
        """`serve --alsa SPEC` recorded by `record` until the source ends; returns serve's stdout lines,
        its stderr, record's result and the capture."""
        serve = Serve("--alsa", spec, "--linger", "0.5", *serve_args, env=self.env)
        capture = self.path("alsa.tcap")
        lines, errors, recorded = self.record_until_the_source_ends(serve, capture)
        self.assertEqual(recorded.returncode, 0, recorded.stderr)
        return lines, errors, recorded, capture

    def assert_refused(self, cases):
        """Each `serve --alsa SPEC` of `cases` is a usage error (2) whose message contains the case's text."""
        for spec, message in cases.items():
            with self.subTest(spec=spec):
                result = self.run_tool("serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k", "--alsa", spec)
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertIn("option --alsa", result.stderr)
                self.assertIn(message, result.stderr)

    def test_s16_counts_with_scale_are_recorded_bit_exact(self):
        rng = np.random.default_rng(1)
        counts = rng.integers(-32768, 32767, size=(2, 10_050), dtype=np.int16)  # not a whole number of blocks
        pcm = self.file_pcm("mic", counts.T.astype("<i2"))
        lines, errors, recorded, capture = self.publish_and_record(
            f"{pcm},id=3,name=Mic,channels=2,rate=8000,format=S16_LE,scale=0.001,offset=0.5,unit=Pa,block=100,samples=10050")
        self.assertIn("the capture has ended", recorded.stderr)
        self.assertTrue(any("source 3 'Mic': sound card 'mic', 2 channels at 8000 S/s, S16_LE, 100 samples per frame, lossless" in line
                            for line in lines), lines)
        self.assertTrue(any(line.startswith("capture complete (source 3): 101 frames, 10050 samples per channel") for line in lines), lines)
        self.assert_counts_recorded(capture, counts, rate=8000, name="Mic", scale=0.001, offset=0.5, unit="Pa")

    def test_default_scale_is_a_fraction_of_full_scale(self):
        counts = np.array([[-32768, 32767, 0, 1, -1] * 100], dtype=np.int16)
        pcm = self.file_pcm("mono", counts.T.astype("<i2"))
        lines, errors, recorded, capture = self.publish_and_record(f"{pcm},channels=1,rate=1000,samples=500")
        np.testing.assert_array_equal(self.export(capture, "--counts"), counts)
        with open(self.path("out.npy.json")) as f:
            sidecar = json.load(f)
        self.assertEqual((sidecar["scale"], sidecar["offset"], sidecar["units"]), ([2.0 ** -15], [0.0], ["FS"]))
        np.testing.assert_array_equal(self.export(capture), counts / 32768.0)

    def test_s32_and_s24_counts_are_recorded_as_int32_counts(self):
        rng = np.random.default_rng(3)
        s32 = rng.integers(-(2 ** 31), 2 ** 31 - 1, size=(3, 2_000), dtype=np.int64).astype(np.int32)
        s32[0, :2] = [-(2 ** 31), 2 ** 31 - 1]
        pcm = self.file_pcm("s32", s32.T.astype("<i4"))
        lines, errors, recorded, capture = self.publish_and_record(f"{pcm},channels=3,rate=48000,format=S32_LE,scale=1e-6,block=480,samples=2000")
        self.assertTrue(any("S32_LE (sent as int32 counts)" in line for line in lines), lines)
        self.assert_values_and_counts(capture, s32, scale=1e-6)
        os.remove(capture)

        # S24_LE: 24-bit counts in the low three bytes; the high byte is ignored (here not the sign's extension).
        s24 = rng.integers(-(2 ** 23), 2 ** 23 - 1, size=(2, 1_500), dtype=np.int32)
        s24[0, :2] = [-(2 ** 23), 2 ** 23 - 1]
        words = (s24.astype(np.int64) & 0xFFFFFF) | (0xA5 << 24)
        pcm = self.file_pcm("s24", words.astype(np.uint32).T.astype("<u4"))
        lines, errors, recorded, capture = self.publish_and_record(f"{pcm},channels=2,rate=48000,format=S24_LE,samples=1500")
        np.testing.assert_array_equal(self.export(capture), s24.astype(np.float64) / 2 ** 23)
        # Sign-extended int32 counts with scale 2^-23 (full scale = 1.0).
        np.testing.assert_array_equal(self.export(capture, "--counts", "--force"), s24)
        with open(self.path("out.npy") + ".json") as f:
            self.assertEqual(json.load(f)["scale"], [2.0 ** -23] * 2)

    def test_float_samples_are_recorded_bit_exact_and_frames_are_contiguous(self):
        rng = np.random.default_rng(2)
        values = rng.standard_normal((2, 4_000)).astype(np.float32)
        values[0, 5] = np.inf
        values[1, 7] = -0.0
        pcm = self.file_pcm("float", values.T.astype("<f4"))
        lines, errors, recorded, capture = self.publish_and_record(f"{pcm},channels=2,rate=2000,format=FLOAT_LE,block=250,samples=4000")
        got = self.export(capture)
        self.assertEqual(got.dtype, np.float32)
        self.assertEqual(got.tobytes(), values.tobytes())
        # Frame times follow the sample index: time_s of the CSV is n / rate, to the nanosecond.
        csv = self.path("t.csv")
        result = self.run_tool("export", capture, "--format", "csv", "--time-column", "--out", csv, "--force")
        self.assertEqual(result.returncode, 0, result.stderr)
        times = np.loadtxt(csv, delimiter=",", skiprows=1, usecols=0)
        np.testing.assert_allclose(times, np.arange(4_000) / 2000, atol=2e-9)

    def test_capture_waits_for_the_subscribers(self):
        # Two subscribers to wait for: the first one alone receives nothing until the second starts.
        values = np.arange(2 * 3_000, dtype="<f4").reshape(3_000, 2)
        pcm = self.file_pcm("wait", values)
        serve = Serve("--alsa", f"{pcm},channels=2,rate=1000,format=FLOAT_LE,samples=3000", "--wait-subscribers", "2", "--linger", "0.5",
                      env=self.env)
        try:
            results = {}
            def record(name):
                results[name] = self.run_tool("record", serve.address, "--api-key", "k", "--out", self.path(name))
            first = threading.Thread(target=record, args=("a.tcap",))
            first.start()
            first.join(timeout=1.5)
            self.assertTrue(first.is_alive(), "the capture ended with one subscriber of the two it waits for")
            second = threading.Thread(target=record, args=("b.tcap",))
            second.start()
            serve.process.wait(timeout=TIMEOUT)
            first.join(timeout=60)
            second.join(timeout=60)
        finally:
            serve.stop(kill_if_hung=True)
        for name in ("a.tcap", "b.tcap"):
            self.assertEqual(results[name].returncode, 0, results[name].stderr)
            np.testing.assert_array_equal(self.export(self.path(name)), values.T)

    def test_live_capture_does_not_wait(self):
        pcm = self.file_pcm("live", np.zeros((5_000, 1), dtype="<i2"))
        serve = Serve("--alsa", f"{pcm},channels=1,rate=1000,mode=live,samples=5000", "--linger", "0", env=self.env)
        line = serve.wait_for("capture complete")
        self.assertIn("5000 samples per channel", line)
        serve.process.wait(timeout=TIMEOUT)
        self.assertEqual(serve.process.returncode, 0, serve.stop())

    def test_devices_that_cannot_give_the_stream_are_refused(self):
        # Plugins over a file PCM that take less than the null PCM (which takes anything): a rate
        # converter (4000...768000 Hz), integer-only format conversion, two channels.
        self.file_pcm("tone", np.zeros((100, 2), dtype="<i2"))
        self.pcms.append('pcm.resampled { type rate; slave { pcm "tone"; rate 8000 } }\n'
                         'pcm.integers { type linear; slave { pcm "tone"; format S16_LE } }\n'
                         'pcm.two { type multi; slaves.a { pcm "tone"; channels 2 }\n'
                         '          bindings.0 { slave a; channel 0 } bindings.1 { slave a; channel 1 } }\n')
        self.file_pcm("unused", np.zeros((1, 1), dtype="<i2"))  # writes the configuration again
        cases = {
            "nosuchdevice,channels=2": "cannot open ALSA capture device 'nosuchdevice'",
            "resampled,rate=1": "ALSA device 'resampled' does not capture at 1 Hz: the nearest rate it gives is 4000 Hz (it takes 4000...",
            "integers,format=FLOAT_LE": "ALSA device 'integers' does not deliver format FLOAT_LE; it offers S8, U8, S16_LE",
            "two,channels=3": "ALSA device 'two' does not capture 3 channels; it takes 2...2",
        }
        self.assert_refused(cases)

    def test_bad_specs_are_usage_errors(self):
        pcm = self.file_pcm("tone", np.zeros((100, 2), dtype="<i2"))
        cases = {
            "channels=2": "the spec starts with the ALSA device",
            f"{pcm},channels=0": "channels=0",
            f"{pcm},rate=44100.5": "rate=44100.5",
            f"{pcm},format=S8": "format=S8: expected one of S16_LE, S24_LE, S32_LE, FLOAT_LE",
            f"{pcm},format=FLOAT_LE,scale=2": "scale and offset apply to counts",
            f"{pcm},colour=red": "unknown key 'colour'",
            f"{pcm},mode=fast": "mode=fast",
            f"{pcm},samples=0": "samples=0",
            f"{pcm},channels=4000,block=16777216": "more than the format's limit",
        }
        self.assert_refused(cases)
        result = self.run_tool("serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k", "--alsa", f"{pcm},id=1", "--simulate", "id=1")
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("source id 1 is taken", result.stderr)

    def test_device_names_may_hold_commas(self):
        # hw:1,0 and plughw:CARD=X,DEV=0 keep their commas: the device runs up to the first of our keys.
        result = self.run_tool("serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k", "--alsa", "plughw:CARD=NoSuchCard,DEV=0,channels=1")
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("cannot open ALSA capture device 'plughw:CARD=NoSuchCard,DEV=0'", result.stderr)


if __name__ == "__main__":
    unittest.main()

"""`tributary serve --stdin SPEC` (issue 40, item 3): interleaved little-endian samples read from a
pipe become a source, recorded by a real `record` and exported by `export`, bit for bit.

Each test starts `serve` with its standard input a pipe the test writes, records the stream with
`record`, and compares the exported matrix with the samples written: int16 counts (and their
physical values through scale and offset), float32 and float64 bit-exact, int32 counts as int32
counts (wire sample format 4) and their values. The end of the input ends the source: `serve` prints what it published and exits 0 by
itself, `record` ends with the publisher's close and keeps every frame. Bad specs are usage errors.
"""
import json
import os
import subprocess
import time
import unittest

import numpy as np

from tool_process import TIMEOUT, TRIBUTARY, RecordedSourceTest, Serve


def run(*args, **kw):
    return subprocess.run([TRIBUTARY, *map(str, args)], capture_output=True, text=True, timeout=60, **kw)


class PipeSource(RecordedSourceTest, unittest.TestCase):
    directory_prefix = "tributary-pipe-"

    def publish_and_record(self, spec, data, *serve_args, trailing=b"", chunk=4096):
        """Starts `serve --stdin SPEC`, records it, writes `data` (then `trailing`) into its input in
        chunks and closes it; returns (serve's stdout lines and stderr, record's result, capture)."""
        serve, pipe = self.serve_reading_a_pipe("--stdin", spec, "--linger", "0.5", *serve_args)
        capture = self.path("pipe.tcap")

        def feed():
            # The lossless pipe waits for a started subscriber before reading: writing first is fine
            # (the pipe's buffer holds it, or the writer waits).
            raw = data.tobytes() + trailing
            for at in range(0, len(raw), chunk):
                os.write(pipe, raw[at:at + chunk])
            os.close(pipe)

        lines, errors, recorded = self.record_until_the_source_ends(serve, capture, feed)
        return lines, errors, recorded, capture

    @staticmethod
    def serve_reading_a_pipe(*args):
        """`serve ARGS` whose standard input is a pipe; returns it and the pipe's write end (raw bytes)."""
        read_end, write_end = os.pipe()
        try:
            serve = Serve(*args, stdin=read_end)
        finally:
            os.close(read_end)
        return serve, write_end

    def test_int16_counts_with_scale_and_offset_are_recorded_bit_exact(self):
        rng = np.random.default_rng(1)
        counts = rng.integers(-32768, 32767, size=(2, 10_050), dtype=np.int16)  # not a whole number of blocks
        interleaved = np.ascontiguousarray(counts.T).astype("<i2")
        lines, errors, recorded, capture = self.publish_and_record(
            "id=3,name=mic,channels=2,rate=1000,type=int16,scale=0.001,offset=0.5,unit=Pa,block=100", interleaved)
        self.assertEqual(recorded.returncode, 0, recorded.stderr)
        self.assertIn("the input has ended", recorded.stderr)
        self.assertTrue(any("source 3 'mic': standard input, 2 channels at 1000.0 S/s, int16" in line for line in lines), lines)
        self.assertTrue(any(line.startswith("input complete: 101 frames, 10050 samples per channel") for line in lines), lines)
        self.assert_counts_recorded(capture, counts, rate=1000, name="mic", scale=0.001, offset=0.5, unit="Pa")

    def test_float_types_are_recorded_bit_exact_and_frames_are_contiguous(self):
        rng = np.random.default_rng(2)
        for dtype, name in ((np.float32, "float32"), (np.float64, "float64")):
            with self.subTest(type=name):
                values = rng.standard_normal((3, 4_000)).astype(dtype)
                values[0, 5] = np.inf
                values[1, 7] = -0.0
                lines, errors, recorded, capture = self.publish_and_record(
                    f"id=1,channels=3,rate=2000,type={name},block=250", np.ascontiguousarray(values.T).astype(np.dtype(dtype).newbyteorder("<")))
                self.assertEqual(recorded.returncode, 0, recorded.stderr)
                got = self.export(capture)
                self.assertEqual(got.dtype, dtype)
                self.assertEqual(got.tobytes(), values.tobytes())
                # Frame times follow the sample index: time_s of the CSV is n / rate, to the nanosecond.
                csv = self.path("t.csv")
                result = run("export", capture, "--format", "csv", "--time-column", "--out", csv, "--force")
                self.assertEqual(result.returncode, 0, result.stderr)
                times = np.loadtxt(csv, delimiter=",", skiprows=1, usecols=0)
                np.testing.assert_allclose(times, np.arange(4_000) / 2000, atol=2e-9)
                os.remove(capture)

    def test_int32_counts_are_recorded_as_int32_counts(self):
        counts = np.array([[-(2 ** 31), 2 ** 31 - 1, 0, 8_388_607], [1, -1, 123456, -8_388_608]], dtype=np.int32)
        lines, errors, recorded, capture = self.publish_and_record(
            "id=2,channels=2,rate=48000,type=int32,scale=1e-6", np.ascontiguousarray(counts.T).astype("<i4"))
        self.assertEqual(recorded.returncode, 0, recorded.stderr)
        self.assert_values_and_counts(capture, counts, scale=1e-6)
        with open(self.path("out.npy") + ".json") as f:
            sidecar = json.load(f)
        self.assertEqual((sidecar["dtype"], sidecar["scale"], sidecar["offset"]), ("int32", [1e-6, 1e-6], [0.0, 0.0]))

    def test_a_partial_sample_at_the_end_is_reported_and_not_published(self):
        data = np.arange(2 * 500, dtype="<f8").reshape(500, 2)
        lines, errors, recorded, capture = self.publish_and_record("id=1,channels=2,rate=100", data, trailing=b"\x01\x02\x03")
        self.assertIn("standard input (source 1): the input ended with 3 bytes that are not a whole sample of every channel", errors)
        got = self.export(capture)
        np.testing.assert_array_equal(got, data.T)

    def test_live_mode_reads_without_waiting_for_subscribers(self):
        # Live, nobody listening: the input is read to its end at once and serve ends by itself.
        serve, pipe = self.serve_reading_a_pipe("--stdin", "id=1,channels=1,rate=1000,mode=live", "--linger", "0")
        os.write(pipe, np.zeros(5000, dtype="<f8").tobytes())
        os.close(pipe)
        line = serve.wait_for("input complete: ")
        self.assertIn("5000 samples per channel", line)
        serve.process.wait(timeout=TIMEOUT)
        self.assertEqual(serve.process.returncode, 0, serve.stop())

    def test_sigterm_while_the_pipe_is_quiet_stops_serve(self):
        serve, pipe = self.serve_reading_a_pipe("--stdin", "id=1,channels=1,rate=1000", "--wait-subscribers", "0")
        time.sleep(0.3)
        started = time.monotonic()
        errors = serve.stop()
        os.close(pipe)
        self.assertEqual(serve.process.returncode, 0, errors)
        self.assertLess(time.monotonic() - started, 5)

    def test_bad_specs_are_usage_errors(self):
        cases = {
            "id=1,rate=1000": "channels is required",
            "id=1,channels=2": "rate is required",
            "channels=2,rate=10": "id is required",
            "id=1,channels=2,rate=inf": "rate=inf",
            "id=1,channels=2,rate=1e300": "rate=1e300",
            "id=1,channels=0,rate=10": "channels=0",
            "id=1,channels=2,rate=10,type=int24": "type=int24: expected one of int16, int32, float32, float64",
            "id=1,channels=2,rate=10,type=float32,scale=2": "scale and offset apply to counts",
            "id=1,channels=2,rate=10,colour=red": "unknown key 'colour'",
            "id=1,channels=2,rate=10,range=5:1": "range=5:1",
            "id=1,channels=2,rate=10,mode=fast": "mode=fast",
            "id=1,channels=2,rate=10,block=99999999999": "block=99999999999",
            "id=1,channels=4000,rate=10,block=16777216": "more than the format's limit",
        }
        for spec, message in cases.items():
            with self.subTest(spec=spec):
                result = run("serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k", "--stdin", spec, stdin=subprocess.DEVNULL)
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertIn("option --stdin", result.stderr)
                self.assertIn(message, result.stderr)
        result = run("serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k", "--stdin", "id=1,channels=1,rate=10", "--control", "-",
                     stdin=subprocess.DEVNULL)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("both read standard input", result.stderr)
        result = run("serve", "--bind", "tcp://127.0.0.1:0", "--api-key", "k", "--stdin", "id=1,channels=1,rate=10",
                     "--simulate", "id=1", stdin=subprocess.DEVNULL)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("source id 1 is taken", result.stderr)


if __name__ == "__main__":
    unittest.main()

"""Interop: captures made by `tributary import` export back to files that numpy/scipy read exactly."""
import json
import os
import subprocess
import unittest

import numpy as np
from scipy.io import wavfile

from tool_process import TRIBUTARY, ScratchTest, tool


def run(*args):
    return tool(*args).stdout


class CaptureInteropTests(ScratchTest, unittest.TestCase):
    def imported_and_exported_as_wav(self, name, array, rate):
        """`array` saved as NAME.npy, imported at `rate` into NAME.tcap and exported to NAME.wav, as
        scipy reads it: (rate, data)."""
        np.save(self.path(f"{name}.npy"), array)
        run("import", self.path(f"{name}.npy"), "--rate", str(rate), "--out", self.path(f"{name}.tcap"))
        run("export", self.path(f"{name}.tcap"), "--format", "wav", "--out", self.path(f"{name}.wav"))
        return wavfile.read(self.path(f"{name}.wav"))

    def roundtrip_npy(self, array):
        np.save(self.path("in.npy"), array)
        # --force: called more than once per test, and import refuses an existing capture without it.
        run("import", self.path("in.npy"), "--rate", "1000", "--out", self.path("x.tcap"), "--force")
        # int16 is stored as counts (scale 1, offset 0): --counts gives them back as they were.
        counts = ("--counts",) if array.dtype == np.int16 else ()
        run("export", self.path("x.tcap"), "--format", "npy", *counts, "--out", self.path("out.npy"), "--force")
        back = np.load(self.path("out.npy"))
        self.assertEqual(back.dtype, array.dtype)
        self.assertEqual(back.shape, array.shape)
        self.assertEqual(back.tobytes(), array.tobytes())  # bit-exact, NaN payloads included
        return back

    def test_npy_float64_adc_bit_exact(self):
        rng = np.random.default_rng(7)
        self.roundtrip_npy(np.round(rng.normal(size=(4, 30000)) * 3000) * (20 / 65536))

    def test_npy_float64_arbitrary_bits_exact(self):
        rng = np.random.default_rng(8)
        a = rng.normal(size=(2, 9000))
        a[0, 5] = np.nan
        a[1, 7] = -0.0
        a[1, 8] = np.inf
        self.roundtrip_npy(a)

    def test_npy_float32_and_int16_exact(self):
        rng = np.random.default_rng(9)
        self.roundtrip_npy(rng.normal(size=(3, 5000)).astype(np.float32))
        counts = rng.integers(-32768, 32767, size=(5, 7001), dtype=np.int16)
        self.roundtrip_npy(counts)
        # Without --counts an int16 source is exported in physical units (count × 1 + 0), and no sidecar.
        os.remove(self.path("out.npy.json"))
        run("export", self.path("x.tcap"), "--format", "npy", "--out", self.path("phys.npy"))
        physical = np.load(self.path("phys.npy"))
        self.assertEqual(physical.dtype, np.float64)
        np.testing.assert_array_equal(physical, counts.astype(np.float64))
        self.assertFalse(os.path.exists(self.path("phys.npy.json")))

    def test_wav_export_reads_with_scipy(self):
        counts = (np.arange(2 * 8000).reshape(2, 8000) % 2000 - 1000).astype(np.int16)
        rate, data = self.imported_and_exported_as_wav("c", counts, 8000)
        self.assertEqual(rate, 8000)
        self.assertEqual(data.dtype, np.int16)
        np.testing.assert_array_equal(data.T, counts)
        # WAV in, WAV out: 16-bit PCM stays bit-exact.
        run("import", self.path("c.wav"), "--out", self.path("w.tcap"))
        run("export", self.path("w.tcap"), "--format", "wav", "--out", self.path("w.wav"), "--channels", "1")
        rate2, data2 = wavfile.read(self.path("w.wav"))
        self.assertEqual(rate2, 8000)
        np.testing.assert_array_equal(data2, counts[1])

    def test_float64_wav_and_csv_exact(self):
        rng = np.random.default_rng(10)
        a = rng.normal(size=(3, 4000))
        rate, data = self.imported_and_exported_as_wav("f", a, 48000)
        self.assertEqual(rate, 48000)
        self.assertEqual(data.dtype, np.float64)
        np.testing.assert_array_equal(data.T, a)
        run("export", self.path("f.tcap"), "--format", "csv", "--out", self.path("f.csv"), "--channels", "0,2")
        csv = np.loadtxt(self.path("f.csv"), delimiter=",", skiprows=1, ndmin=2)
        np.testing.assert_array_equal(csv.T, a[[0, 2]])

    def test_csv_import_and_inspect_json(self):
        a = np.round(np.random.default_rng(11).normal(size=(2, 500)), 6)
        np.savetxt(self.path("in.csv"), a.T, delimiter=",", header="left,right", comments="", fmt="%.17g")
        run("import", self.path("in.csv"), "--rate", "250", "--unit", "Pa", "--source-id", "3", "--out", self.path("s.tcap"))
        info = json.loads(run("inspect", self.path("s.tcap"), "--json"))
        self.assertTrue(info["footer"])
        self.assertFalse(info["recovered"])
        self.assertEqual(info["damage"], [])
        source = info["sources"][0]
        self.assertEqual(source["id"], 3)
        self.assertEqual([c["name"] for c in source["channels"]], ["left", "right"])
        self.assertEqual({c["unit"] for c in source["channels"]}, {"Pa"})
        self.assertEqual(source["samples"], 500)
        self.assertEqual(source["duration_s"], 2.0)
        run("export", self.path("s.tcap"), "--format", "npy", "--out", self.path("s.npy"))
        np.testing.assert_array_equal(np.load(self.path("s.npy")), a)

    def test_torn_capture_is_reported_and_repaired(self):
        a = np.round(np.random.default_rng(12).normal(size=(2, 40000)) * 1000) / 1024
        np.save(self.path("t.npy"), a)
        run("import", self.path("t.npy"), "--rate", "1000", "--out", self.path("t.tcap"))
        data = open(self.path("t.tcap"), "rb").read()
        with open(self.path("cut.tcap.partial"), "wb") as f:
            f.write(data[: len(data) * 2 // 3])
        info = json.loads(run("inspect", self.path("cut.tcap.partial"), "--json"))
        self.assertFalse(info["footer"])
        self.assertTrue(info["recovered"])
        self.assertEqual(len(info["damage"]), 1)
        run("repair", self.path("cut.tcap.partial"))
        info = json.loads(run("inspect", self.path("cut.tcap"), "--json"))
        self.assertTrue(info["footer"] and info["repaired"])
        self.assertEqual(info["damage"], [])
        run("export", self.path("cut.tcap"), "--format", "npy", "--out", self.path("cut.npy"))
        part = np.load(self.path("cut.npy"))
        np.testing.assert_array_equal(part, a[:, : part.shape[1]])
        self.assertGreater(part.shape[1], 0)


class CaptureSpecInteropTests(ScratchTest, unittest.TestCase):
    """Captures written by hand from docs/CAPTURE.md (capture_spec.py, chunks stored with codec 0)
    must be read by tributary exactly: the per-channel regrouping of §4.3 included."""

    def export(self, data, source, *options):
        with open(self.path("spec.tcap"), "wb") as f:
            f.write(data)
        run("export", self.path("spec.tcap"), "--format", "npy", "--source", str(source), *options, "--out", self.path("out.npy"), "--force")
        return np.load(self.path("out.npy"))

    def test_regrouped_streams_decode_exactly(self):
        import capture_spec as cs
        import wire_spec as ws
        rng = np.random.default_rng(11)
        order = [2, 0, 1]  # rows in the frames; the stream holds channel 0, then 1, then 2
        f64 = [rng.normal(size=(3, 5 + i)) for i in range(3)]
        i16 = [rng.integers(-32768, 32767, size=(2, 7), dtype=np.int16) for _ in range(4)]
        f32 = [rng.normal(size=(3, 4)).astype(np.float32) for _ in range(2)]
        chunk1 = [ws.frame("analog", ws.analog_f64(order, m.tolist()), sequence=i, source_id=1) for i, m in enumerate(f64)]
        chunk1.insert(1, ws.frame("message", ws.message(7, "between"), sequence=9, source_id=1))
        chunk2 = [ws.frame("analog", ws.analog_i16([1, 0], m.tolist(), [0.5, 0.25], [0.0, 1.0]), sequence=i, source_id=2)
                  for i, m in enumerate(i16)]
        chunk3 = [ws.frame("analog", ws.analog_f32(order, m.tolist()), sequence=i, source_id=3) for i, m in enumerate(f32)]
        for footer in (True, False):
            for delta in (False, True):
                data = cs.capture([chunk1, chunk2, chunk3], footer=footer, delta_int16=delta)
                np.testing.assert_array_equal(self.export(data, 1), np.concatenate(f64, axis=1))
                self.assertEqual(self.export(data, 2, "--counts").tobytes(), np.concatenate(i16, axis=1).tobytes())
                # By default the counts come out as physical values: count × scale + offset per row.
                physical = np.concatenate(i16, axis=1) * np.array([[0.5], [0.25]]) + np.array([[0.0], [1.0]])
                np.testing.assert_array_equal(self.export(data, 2), physical)
                self.assertEqual(self.export(data, 3).tobytes(), np.concatenate(f32, axis=1).tobytes())

    def test_mixed_chunk_decodes_without_damage(self):
        import capture_spec as cs
        import wire_spec as ws
        frames = [
            ws.frame("analog", ws.analog_f64([5, 1], [[1.0, 2.0], [3.0, 4.0]]), source_id=4),
            ws.frame("analog", ws.analog_i16([1], [[1, 2, 3]], [0.1], [0.0]), source_id=4),
            ws.frame("analog", ws.analog_f64([], []), source_id=4),                 # no channels
            ws.frame("analog", ws.analog_f32([3, 4], [[], []]), source_id=4),      # no samples
            ws.frame("analog", ws.analog_i16([9, 1], [[4, 5, 6], [7, 8, 9]], [0.2, 0.3], [1.0, 2.0]), source_id=4),
            ws.frame("analog", ws.analog_f64([1], [[9.0, 8.0]]), source_id=4),
        ]
        with open(self.path("mixed.tcap"), "wb") as f:
            f.write(cs.capture([frames], footer=False, delta_int16=True))
        description = json.loads(run("inspect", self.path("mixed.tcap"), "--json"))
        self.assertEqual(description["damage"], [])
        self.assertEqual(description["sources"][0]["frames"], len(frames))

    def test_int32_frames_beside_other_formats_come_back_as_counts(self):
        """Sample format 4 (PROTOCOL.md §5.3) in a chunk written from CAPTURE.md alone, beside float64
        and int16 frames of the same channels: a fourth numeric stream; export gives the counts."""
        import capture_spec as cs
        import wire_spec as ws
        rng = np.random.default_rng(4)
        i32 = [rng.integers(-(2 ** 31), 2 ** 31 - 1, size=(2, 7), endpoint=True, dtype=np.int64).astype(np.int32) for _ in range(3)]
        mixed = [ws.frame("analog", ws.analog_f64([0, 1], [[1.0, 2.0], [3.0, 4.0]]), source_id=5),
                 ws.frame("analog", ws.analog_i32([1, 0], [[-(2 ** 31), 5], [2 ** 31 - 1, 6]], [0.5, 0.25], [0.0, 1.0]), source_id=5),
                 ws.frame("analog", ws.analog_i16([1, 0], [[4, 5], [6, 7]], [0.2, 0.3], [1.0, 2.0]), source_id=5)]
        frames = [ws.frame("analog", ws.analog_i32([0, 1], m.tolist(), [2.0 ** -23, 1e-6], [0.0, 0.5], first_sample=7 * k),
                           sequence=k + 1, source_id=6) for k, m in enumerate(i32)]
        with open(self.path("i32.tcap"), "wb") as f:
            f.write(cs.capture([mixed, frames], footer=False))
        description = json.loads(run("inspect", self.path("i32.tcap"), "--json"))
        self.assertEqual(description["damage"], [])
        out = self.path("i32.npy")
        run("export", self.path("i32.tcap"), "--format", "npy", "--source", "6", "--counts", "--out", out)
        got = np.load(out)
        self.assertEqual(got.dtype, np.int32)
        np.testing.assert_array_equal(got, np.concatenate(i32, axis=1))
        run("export", self.path("i32.tcap"), "--format", "npy", "--source", "6", "--out", self.path("v.npy"))
        np.testing.assert_array_equal(np.load(self.path("v.npy")),
                                      np.concatenate(i32, axis=1) * np.array([[2.0 ** -23], [1e-6]]) + np.array([[0.0], [0.5]]))

    def test_inspect_gives_the_format_version_and_each_configuration_change(self):
        """Issue 38 item 17: `inspect` said "capture v1" of every capture, and described a source by its
        first configuration only when the configuration changed during the recording."""
        import capture_spec as cs
        import wire_spec as ws
        t0 = 1_764_489_600_000_000_000
        first = ws.frame("configuration", ws.configuration("daq", "sim", [(0, 0, 100.0, -1.0, 1.0, "a", "V"),
                                                                         (1, 0, 100.0, -1.0, 1.0, "b", "V")], []),
                         sequence=1, timestamp_ns=t0, source_id=2)
        again = ws.frame("configuration", ws.configuration("daq", "sim", [(0, 0, 100.0, -1.0, 1.0, "a", "V"),
                                                                         (1, 0, 100.0, -1.0, 1.0, "b", "V")], []),
                         sequence=4, timestamp_ns=t0 + 500_000_000, source_id=2)
        second = ws.frame("configuration", ws.configuration("daq", "sim", [(0, 0, 200.0, -1.0, 1.0, "a", "V"),
                                                                          (1, 0, 200.0, -1.0, 1.0, "x", "mV"),
                                                                          (2, 0, 200.0, -1.0, 1.0, "c", "V")], []),
                          sequence=5, timestamp_ns=t0 + 1_000_000_000, source_id=2)
        two = [ws.frame("analog", ws.analog_f64([0, 1], [[1.0] * 10, [2.0] * 10], first_sample=10 * i), sequence=2 + i,
                        timestamp_ns=t0 + 100_000_000 * i, source_id=2) for i in range(2)]
        three = [ws.frame("analog", ws.analog_f64([0, 1, 2], [[1.0] * 20] * 3, first_sample=20 * i), sequence=6 + i,
                          timestamp_ns=t0 + 1_000_000_000 + 100_000_000 * i, source_id=2) for i in range(2)]
        with open(self.path("changed.tcap"), "wb") as f:
            f.write(cs.capture([[first] + two + [again], [second] + three]))
        text = run("inspect", self.path("changed.tcap"))
        self.assertIn("capture v1,", text)  # capture_spec.py writes version 1
        changed = [line for line in text.splitlines() if "configuration changed" in line]
        self.assertEqual(len(changed), 1, text)  # the same configuration sent again is no change
        for needle in ("2025-11-30T08:00:01.000000000Z", "sequence 5", "rate 100.0 Hz -> 200.0 Hz", "channels 0-1 -> 0-2",
                       'added 2 "c" [V]', 'channel 1 name "b" -> "x"', 'channel 1 unit "V" -> "mV"'):
            self.assertIn(needle, changed[0])
        info = json.loads(run("inspect", self.path("changed.tcap"), "--json"))
        self.assertEqual(info["version"], 1)
        source = info["sources"][0]
        self.assertEqual(source["rate"], 100.0)
        self.assertEqual([c["name"] for c in source["channels"]], ["a", "b"])
        [change] = source["configuration_changes"]
        self.assertEqual((change["time_ns"], change["sequence"], change["rate"]), (t0 + 1_000_000_000, 5, 200.0))
        self.assertEqual([(c["name"], c["unit"]) for c in change["channels"]], [("a", "V"), ("x", "mV"), ("c", "V")])
        self.assertIn("rate 100.0 Hz -> 200.0 Hz", change["changes"])
        # A capture this tributary writes: the version it writes.
        written = int(run("--version").split("capture format version ")[1].split(")")[0])
        self.assertGreaterEqual(written, 4)
        np.save(self.path("in.npy"), np.zeros((1, 10)))
        run("import", self.path("in.npy"), "--rate", "10", "--out", self.path("new.tcap"))
        self.assertIn(f"capture v{written},", run("inspect", self.path("new.tcap")))
        self.assertEqual(json.loads(run("inspect", self.path("new.tcap"), "--json"))["version"], written)


    def test_a_source_without_a_configuration_is_read_whole_and_says_what_is_unknown(self):
        """CAPTURE.md §6, "A source without a configuration": readable chunks and no configuration frame
        or record are not damage; what needs the configuration (names, rate) is absent or refused."""
        import capture_spec as cs
        import wire_spec as ws
        t0 = 1_764_489_600_000_000_000
        frames = [ws.frame("analog", ws.analog_i16([4, 2], [[1, 2, 3], [4, 5, 6]], [0.5, 2.0], [1.0, 0.0], first_sample=3 * i),
                           sequence=i, timestamp_ns=t0 + 250_000_000 * i, source_id=7) for i in range(3)]
        with open(self.path("bare.tcap"), "wb") as f:
            f.write(cs.capture([frames]))
        info = json.loads(run("inspect", self.path("bare.tcap"), "--json"))
        self.assertEqual(info["damage"], [])
        [source] = info["sources"]
        self.assertEqual((source["id"], source["name"], source["channels"], source["rate"]), (7, None, [], None))
        self.assertEqual((source["samples"], source["frames"], source["duration_s"]), (9, 3, 0.5))
        self.assertEqual(source["first_time"], "2025-11-30T08:00:00.000000000Z")
        self.assertEqual(source["compression_ratio"], source["frame_bytes"] / source["stored_bytes"])
        # Values come out with each frame's own scale and offset, the channels named by index.
        run("export", self.path("bare.tcap"), "--format", "npy", "--out", self.path("bare.npy"))
        np.testing.assert_array_equal(np.load(self.path("bare.npy")),
                                      [[1.5, 2.0, 2.5] * 3, [8.0, 10.0, 12.0] * 3])
        run("export", self.path("bare.tcap"), "--format", "csv", "--out", self.path("bare.csv"))
        with open(self.path("bare.csv")) as f:
            self.assertEqual(f.readline().strip(), "ch4,ch2")
        # What needs the rate is refused, saying so.
        for args in (("--format", "wav", "--out", self.path("bare.wav")),
                     ("--format", "csv", "--time-column", "--out", self.path("t.csv")),
                     ("--format", "npy", "--start", "0.1", "--out", self.path("s.npy"))):
            result = subprocess.run([TRIBUTARY, "export", self.path("bare.tcap"), *args], capture_output=True, text=True)
            self.assertNotEqual(result.returncode, 0, args)
            self.assertIn("rate", result.stderr, args)


if __name__ == "__main__":
    unittest.main()

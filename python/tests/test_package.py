"""Tests of the Python package `tributary` (ctypes over libtributary.so) against the command-line tool.

The release binary is named by the environment variable TRIBUTARY, the library by TRIBUTARY_LIBRARY
(`make python-tests` sets both). Captures are made with `tributary import`; what the package reads
must be bit-exact to `tributary export`, what it analyses equal to `tributary analyze --json`.
"""
import hashlib
import json
import os
import sys
import unittest

import numpy as np

import tributary

# The independent capture writer of the interop tests (written from docs/CAPTURE.md alone).
INTEROP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Tests", "Interop")
sys.path.insert(0, INTEROP)
import tool_process as tp  # noqa: E402 (the interop tests' helpers: the tool run to its end, a scratch directory)

cli, cli_analyze, ScratchDirectory = tp.tool, tp.analyze_json, tp.ScratchDirectory


class PackageTests(ScratchDirectory, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(7)
        n = 30_001  # several frames of 4096 samples and a partial one
        t = np.arange(n) / 48_000.0
        cls.arrays = {
            "f64": np.vstack([np.sin(2 * np.pi * 1000 * t), rng.normal(0, 1, n), 0.25 * np.cos(2 * np.pi * 3000 * t)]),
            "f32": rng.normal(0, 2, (2, n)).astype(np.float32),
            "i16": rng.integers(-32768, 32767, (4, n), dtype=np.int16),
        }
        # Arbitrary float64 bit patterns (NaN payloads, denormals, infinities) must survive too.
        bits = rng.integers(0, 2**63, (2, 5000), dtype=np.int64).view(np.float64)
        cls.arrays["bits"] = bits
        cls.captures = {}
        for name, array in cls.arrays.items():
            npy = cls.path(f"{name}.npy")
            np.save(npy, array)
            tcap = cls.path(f"{name}.tcap")
            cli("import", npy, "--rate", 48000, "--out", tcap)
            cls.captures[name] = tcap

    def export(self, name, *args):
        out = self.path(f"{name}-export-{len(args)}.npy")
        cli("export", self.captures[name], "--format", "npy", "--out", out, *args)
        return np.load(out)

    # -- reading --

    def test_read_is_bit_exact_to_export(self):
        for name, array in self.arrays.items():
            with self.subTest(name), tributary.open(self.captures[name]) as cap:
                stored = cap.read(counts=True)
                # export writes physical values unless --counts (int16 sources store counts)
                exported = self.export(name, *(("--counts",) if array.dtype == np.int16 else ()))
                self.assertEqual(stored.dtype, exported.dtype)
                self.assertEqual(stored.shape, exported.shape)
                self.assertEqual(stored.tobytes(), exported.tobytes())
                self.assertEqual(stored.tobytes(), array.tobytes())
                self.assertTrue(stored.flags.c_contiguous and stored.flags.owndata)

    def test_physical_values(self):
        with tributary.open(self.captures["i16"]) as cap:
            src = cap.source()
            self.assertEqual(src.sample_type, "int16")
            counts = cap.read(counts=True)
            volts = cap.read()
            self.assertEqual(volts.dtype, np.float64)
            scale = np.array([c.scale for c in src.channels])[:, None]
            offset = np.array([c.offset for c in src.channels])[:, None]
            np.testing.assert_array_equal(volts, counts * scale + offset)
        with tributary.open(self.captures["f32"]) as cap:
            np.testing.assert_array_equal(cap.read(), self.arrays["f32"].astype(np.float64))

    def test_channel_and_sample_ranges(self):
        array = self.arrays["f64"]
        with tributary.open(self.captures["f64"]) as cap:
            for start, stop in [(0, 1), (4095, 4097), (8190, 20_000), (29_999, 30_001), (30_000, 40_000), (5, 5)]:
                got = cap.read(channels=[2, 0], start=start, stop=stop)
                np.testing.assert_array_equal(got, array[[2, 0], start:min(stop, array.shape[1])])
            np.testing.assert_array_equal(cap.read(channels=1), array[1:2])
            np.testing.assert_array_equal(cap.read(channels=slice(1, 3), start=100, stop=200), array[1:3, 100:200])
            exported = self.export("f64", "--channels", "1,2")
            self.assertEqual(cap.read(channels=[1, 2]).tobytes(), exported.tobytes())

    def test_read_into_an_array_given(self):
        array = self.arrays["f64"]
        with tributary.open(self.captures["f64"]) as cap:
            block = np.full((2, 4096), np.nan)
            for start in range(0, 20_000, 4096):
                got = cap.read(channels=[2, 0], start=start, stop=start + 4096, out=block)
                self.assertIs(got, block)
                np.testing.assert_array_equal(block, array[[2, 0], start:start + 4096])
            with self.assertRaisesRegex(ValueError, r"out must be float64 shaped \(2, 4096\) for this read, not float64 shaped \(2, 100\)"):
                cap.read(channels=[2, 0], start=0, stop=4096, out=np.empty((2, 100)))
            with self.assertRaisesRegex(ValueError, "not float32"):
                cap.read(channels=[2, 0], start=0, stop=4096, out=np.empty((2, 4096), dtype=np.float32))
            with self.assertRaisesRegex(ValueError, "C-contiguous and writeable"):
                cap.read(channels=[2, 0], start=0, stop=4096, out=np.empty((2, 8192))[:, ::2])
            frozen = np.empty((2, 4096))
            frozen.setflags(write=False)
            with self.assertRaisesRegex(ValueError, "C-contiguous and writeable"):
                cap.read(channels=[2, 0], start=0, stop=4096, out=frozen)
            with self.assertRaisesRegex(TypeError, "out must be a numpy array, not list"):
                cap.read(channels=[0], start=0, stop=2, out=[[0.0, 0.0]])
        with tributary.open(self.captures["i16"]) as cap:
            counts = np.empty((len(cap.source().channels), self.arrays["i16"].shape[1]), dtype=np.int16)
            self.assertIs(cap.read(counts=True, out=counts), counts)
            self.assertEqual(counts.tobytes(), self.arrays["i16"].tobytes())

    def test_metadata(self):
        with tributary.open(self.captures["f64"]) as cap:
            self.assertEqual([s.id for s in cap.sources], [1])
            src = cap.sources[0]
            self.assertEqual((src.sample_rate, src.sample_type, src.samples, len(src.channels)), (48000.0, "float64", 30_001, 3))
            self.assertEqual([c.row for c in src.channels], [0, 1, 2])
            self.assertEqual(src.channels[0].unit, "V")
            self.assertEqual(src.gaps, [])
            self.assertFalse(cap.recovered)
            self.assertEqual(cap.damage, [])
            packages = list(cap.packages())
            self.assertEqual([p.kind for p in packages], ["configuration"])
            self.assertEqual(len(packages[0].content["channels"]), 3)
            self.assertEqual(list(cap.packages(kinds=["message"])), [])

    def test_to_pandas(self):
        with tributary.open(self.captures["f64"]) as cap:
            df = cap.to_pandas(channels=[0, 2], start=48, stop=96)
        self.assertEqual(list(df.columns), ["ch0", "ch2"])
        self.assertEqual(df.shape, (48, 2))
        self.assertAlmostEqual(df.index[0].total_seconds(), 0.001)
        np.testing.assert_array_equal(df.to_numpy().T, self.arrays["f64"][[0, 2], 48:96])

    def test_packages_of_every_kind_from_a_spec_capture(self):
        sys.path.insert(0, INTEROP)
        import capture_spec as cs
        import wire_spec as ws

        content = bytes(range(200))
        def channel(i):
            return (i, 0, 1000.0, -1.0, 1.0, f"ai{i}", "V")
        frames = [
            ws.frame("configuration", ws.configuration("dev", "sim", [channel(0), channel(1)], [(0, 1, "do0")]), sequence=0, source_id=1),
            ws.frame("analog", ws.analog_f64([0, 1], [[1.0, 2.0], [3.0, 4.0]]), sequence=1, source_id=1),
            ws.frame("message", ws.message(3, "hello"), sequence=2, source_id=1),
            ws.frame("xml", ws.xml("<a x='1'>ü</a>"), sequence=3, source_id=1),
            ws.frame("file", ws.blob(1, 200, 0, 0, 1, hashlib.md5(content).digest(), 0, content, "f.bin", ["a=b"]),
                     sequence=4, source_id=1),
            ws.frame("array", ws.numeric_array(1, "d", [[1.0, 2.0], [3.0, 4.0]]), sequence=5, source_id=1),
            ws.frame("array", ws.string_array([["a", "bc"], ["", "温"]]), sequence=6, source_id=1),
            ws.frame("digital", ws.digital([0, 1], [[1, 0, 1], [0, 1, 1]]), sequence=7, source_id=1),
            ws.frame("error", ws.error(5, "lost connection"), sequence=8, source_id=1),
            ws.frame("analog", ws.analog_f64([0, 1], [[5.0], [6.0]]), sequence=9, source_id=1),
        ]
        for footer in (True, False):
            path = self.path(f"kinds-{footer}.tcap")
            with open(path, "wb") as f:
                f.write(cs.capture([frames[:5], frames[5:]], footer=footer))
            with self.subTest(footer=footer), tributary.open(path) as cap:
                self.assertEqual(cap.recovered, not footer)
                np.testing.assert_array_equal(cap.read(1), [[1.0, 2.0, 5.0], [3.0, 4.0, 6.0]])
                np.testing.assert_array_equal(cap.read(1, start=1, stop=3), [[2.0, 5.0], [4.0, 6.0]])
                self.assertEqual([c.name for c in cap.source(1).channels], ["ai0", "ai1"])
                packages = list(cap.packages())
                self.assertEqual([p.kind for p in packages],
                                 ["configuration", "message", "xml", "file", "array", "array", "digital", "error"])
                self.assertEqual([p.sequence for p in packages], [0, 2, 3, 4, 5, 6, 7, 8])
                self.assertEqual((packages[1].content["code"], packages[1].content["text"]), (3, "hello"))
                self.assertEqual(packages[2].content["xml"], "<a x='1'>ü</a>")
                self.assertEqual(packages[3].data, content)
                self.assertEqual(packages[3].content["name"], "f.bin")
                np.testing.assert_array_equal(packages[4].array, [[1.0, 2.0], [3.0, 4.0]])
                self.assertEqual(packages[5].array.tolist(), [["a", "bc"], ["", "温"]])
                np.testing.assert_array_equal(packages[6].states, [[True, False, True], [False, True, True]])
                self.assertEqual(packages[7].content["code"], 5)
                self.assertEqual([p.kind for p in cap.packages(kinds=["xml", "error"])], ["xml", "error"])

    def test_gap_records(self):
        import struct

        sys.path.insert(0, INTEROP)
        import capture_spec as cs
        import wire_spec as ws

        frames = [ws.frame("analog", ws.analog_f64([0], [[float(i)] * 10]), sequence=i, source_id=2) for i in (1, 2, 5, 6)]
        payload = struct.pack("<QQII", 3, 2, 2, 0)  # sequences 3-4 missing, seen as a sequence jump
        gap = cs.record(cs.envelope(2, 0, payload, source_id=2, first_sequence=3, last_sequence=4, first_time_ns=7), payload)
        path = self.path("gaps.tcap")
        with open(path, "wb") as f:
            f.write(cs.header() + cs.chunk_record(frames[:2]) + gap + cs.chunk_record(frames[2:]))  # no footer: scanned
        with tributary.open(path) as cap:
            self.assertTrue(cap.recovered)
            src = cap.source(2)
            self.assertEqual(src.gaps, [tributary.Gap(first_missing_sequence=3, missing_count=2, cause="sequence jump", time_ns=7)])
            self.assertEqual(src.samples, 40)
            np.testing.assert_array_equal(cap.read(2)[0], np.repeat([1.0, 2.0, 5.0, 6.0], 10))

    def test_a_source_that_changes_format_is_a_clear_error(self):
        sys.path.insert(0, INTEROP)
        import capture_spec as cs
        import wire_spec as ws

        frames = [ws.frame("analog", ws.analog_f64([0], [[1.0, 2.0]]), sequence=1, source_id=4),
                  ws.frame("analog", ws.analog_i16([0], [[1, 2, 3]], [0.1], [0.0]), sequence=2, source_id=4)]
        path = self.path("mixed.tcap")
        with open(path, "wb") as f:
            f.write(cs.capture([frames]))
        with tributary.open(path) as cap:
            np.testing.assert_array_equal(cap.read(4, stop=2), [[1.0, 2.0]])  # the part before the change reads
            with self.assertRaises(tributary.FormatError) as e:
                cap.read(4)
            self.assertIn("change", str(e.exception))

    # -- times --

    T0 = 1_764_489_600_123_456_789  # ns since 1970

    def gap_capture(self, name, timestamps=None, rate=1000.0, gap_record=True):
        """A capture (written by the spec writer of Tests/Interop) of source 3, two channels at 1 kHz:
        12.0 s of recording with a 3.6 s outage, i.e. 84 frames of 100 samples (8.4 s of samples),
        42 before the outage and 42 after it (36 frames lost, with their gap record). The recorded
        frame times jitter by up to 1 us, as a real clock's do. Returns the path and the frame times."""
        import struct

        sys.path.insert(0, INTEROP)
        import capture_spec as cs
        import wire_spec as ws

        def channel(i):
            return (i, 0, rate, -10.0, 10.0, f"ai{i}", "V")
        frames = [ws.frame("configuration", ws.configuration("dev", "sim", [channel(0), channel(1)], []), sequence=0,
                           source_id=3, timestamp_ns=self.T0)]
        if timestamps is None:
            timestamps = [self.T0 + round((k / 10 + (3.6 if k >= 42 else 0.0)) * 1e9) + (k * 7919) % 1000 for k in range(84)]
        for k, ts in enumerate(timestamps):
            lost = 36 if k >= 42 else 0
            values = [[float(k * 100 + j) for j in range(100)], [-float(k * 100 + j) for j in range(100)]]
            frames.append(ws.frame("analog", ws.analog_f64([0, 1], values, first_sample=(k + lost) * 100),
                                   sequence=k + 1 + lost, source_id=3, timestamp_ns=ts))
        records = [cs.chunk_record(frames[i:min(i + 10, 43)]) for i in range(0, 43, 10)]
        if gap_record:
            payload = struct.pack("<QQII", 43, 36, 2, 0)  # sequences 43-78 missing, seen as a sequence jump
            records.append(cs.record(cs.envelope(2, 0, payload, source_id=3, first_sequence=43, last_sequence=78,
                                                 first_time_ns=timestamps[41]), payload))
        records += [cs.chunk_record(frames[i:i + 10]) for i in range(43, len(frames), 10)]
        out, entries = cs.header(), b""
        for rec in records:
            entries += struct.pack("<Q", len(out)) + rec[8:88]
            out += rec
        payload = struct.pack("<IIQ", len(records), 0, 0) + entries
        offset = len(out)
        out += cs.record(cs.envelope(4, 0, payload), payload) + struct.pack("<Q", offset) + cs.TRAILER_MAGIC
        path = self.path(name)
        with open(path, "wb") as f:
            f.write(out)
        return path, timestamps

    def export_times(self, capture):
        """The time_s column of `tributary export --format csv --time-column`, as the doubles it prints."""
        out = self.path(os.path.basename(capture) + ".csv")
        cli("export", capture, "--format", "csv", "--time-column", "--out", out, "--force")
        with open(out) as f:
            header = f.readline().strip().split(",")
            self.assertEqual(header[0], "time_s")
            return np.array([float(line.split(",", 1)[0]) for line in f], dtype=np.float64)

    def test_to_pandas_follows_the_recorded_frame_times_across_a_gap(self):
        path, timestamps = self.gap_capture("outage.tcap")
        exported = self.export_times(path)
        self.assertEqual(len(exported), 8400)
        with tributary.open(path) as cap:
            src = cap.source(3)
            self.assertEqual((src.samples, src.sample_rate, len(src.gaps)), (8400, 1000.0, 1))
            df = cap.to_pandas(3)
            part = cap.to_pandas(3, channels=[1], start=4150, stop=4250)
            self.assertEqual(df.index.name, "time")
            ns = df.index.asi8
            # To the nanosecond: export's times, and each frame's first sample at its recorded time.
            np.testing.assert_array_equal(ns, np.rint(exported * 1e9).astype(np.int64))
            np.testing.assert_array_equal(ns[::100], np.array(timestamps) - timestamps[0])
            np.testing.assert_array_equal(ns[1:100] - ns[0], np.arange(1, 100) * 1_000_000)
            # The times themselves are export's, bit for bit.
            times = cap.times(3)
            self.assertEqual(times.dtype, np.float64)
            self.assertEqual(times.tobytes(), exported.tobytes())
            np.testing.assert_array_equal(cap.times(3, start=4150, stop=4250), exported[4150:4250])
        # 12.0 s of recording, not the 8.4 s an even index over 8400 samples at 1 kHz would give;
        # the sample after the outage at 7.8 s, not at 4.2 s.
        self.assertEqual(round(ns[-1] / 1e6), 11_999)
        self.assertEqual(round(ns[4200] / 1e6), 7_800)
        self.assertEqual(round((ns[4200] - ns[4199]) / 1e6), 3_601)
        np.testing.assert_array_equal(df["ai0"].to_numpy(), np.arange(8400.0))
        # A part of the source: the same times as the whole (counted from the source's first sample).
        self.assertEqual(list(part.columns), ["ai1"])
        np.testing.assert_array_equal(part.index.asi8, ns[4150:4250])
        np.testing.assert_array_equal(part["ai1"].to_numpy(), -np.arange(4150.0, 4250.0))

    def test_times_of_an_imported_capture_and_of_far_apart_frames(self):
        # An imported capture (frames stamped by their rate): export's times, and to_pandas as before.
        with tributary.open(self.captures["f64"]) as cap:
            times = cap.times()
            np.testing.assert_array_equal(cap.to_pandas().index.asi8, np.rint(times * 1e9).astype(np.int64))
            self.assertEqual(len(cap.times(start=30_000, stop=2**70)), 1)
            self.assertEqual(len(cap.times(start=2**64 + 5)), 0)  # past the end: none (no wrap-around to 5)
        self.assertEqual(times.tobytes(), self.export_times(self.captures["f64"]).tobytes())
        # Frame times from the ends of int64 (a damaged or hostile file): no overflow, no crash (export
        # subtracted them as int64s and trapped); a TimedeltaIndex cannot span them, which is said.
        stamps = [-2**63] * 42 + [2**63 - 1] * 42
        path, _ = self.gap_capture("far.tcap", timestamps=stamps)
        with tributary.open(path) as cap:
            times = cap.times(3)
            self.assertTrue(np.isfinite(times).all())
            self.assertAlmostEqual(times[4200] / 1.8446744073709552e10, 1.0)
            with self.assertRaisesRegex(tributary.FormatError, "span more than a TimedeltaIndex holds"):
                cap.to_pandas(3)
        self.assertEqual(times.tobytes(), self.export_times(path).tobytes())
        # No single rate: the samples have numbers, not times.
        path, _ = self.gap_capture("norate.tcap", rate=0.0)
        with tributary.open(path) as cap:
            self.assertFalse(cap.source(3).sample_rate)  # 0 Hz configured: no rate
            self.assertEqual(cap.to_pandas(3).index.name, "sample")
            with self.assertRaisesRegex(tributary.FormatError, "no single sampling rate"):
                cap.times(3)
            self.assertEqual(tributary._native.lib().tributary_capture_times(cap._handle, 3, 0, 0, None, 0, None),
                             tributary._native.E_FORMAT)  # a count of 0 checks just that

    def test_c_capture_times_reports_misuse(self):
        import ctypes
        from ctypes import byref, c_uint64, c_void_p

        from tributary import _native

        lib = _native.lib()
        path, _ = self.gap_capture("outage-c.tcap")
        handle = c_void_p()
        self.assertEqual(lib.tributary_capture_open(path.encode(), byref(handle)), _native.OK)
        try:
            buffer = (ctypes.c_double * 8)()
            got = c_uint64()

            def status(call, expected, read=None):
                self.assertEqual(call, expected, lib.tributary_last_error())
                if expected != _native.OK:
                    self.assertIn(b"tributary_capture_times", lib.tributary_last_error())
                if read is not None:
                    self.assertEqual(got.value, read)

            def times(source, first, count, buf, size):
                return lib.tributary_capture_times(handle, source, first, count, buf, size, byref(got))
            status(times(3, 4196, 8, buffer, 64), _native.OK, 8)
            self.assertEqual([round(t * 1e3) for t in buffer], [4196, 4197, 4198, 4199, 7800, 7801, 7802, 7803])
            status(times(3, 8398, 8, buffer, 64), _native.OK, 2)             # the data ends first
            status(times(3, 2**64 - 1, 8, buffer, 64), _native.OK, 0)        # past the end: nothing
            status(times(3, 0, 9, buffer, 64), _native.E_BUFFER, 0)          # 9 doubles > 64 bytes
            status(times(3, 0, 8, None, 64), _native.E_ARGUMENT)             # NULL buffer
            status(times(3, 0, 2**63, buffer, 64), _native.E_RANGE)          # absurd count
            status(times(9, 0, 8, buffer, 64), _native.E_RANGE)              # no such source
            status(times(3, 0, 0, None, 0), _native.OK, 0)                   # nothing asked, nothing written
            self.assertEqual(lib.tributary_capture_times(handle, 3, 0, 1, buffer, 8, None), _native.OK)  # samples_read may be NULL
            self.assertEqual(buffer[0], 0.0)
        finally:
            self.assertEqual(lib.tributary_capture_close(handle), _native.OK)
        self.assertEqual(lib.tributary_capture_times(handle, 3, 0, 1, buffer, 8, None), _native.E_HANDLE)

    # -- arguments --

    def test_indexes_must_be_integers(self):
        # int() read 0.5, "0" and True as channel 0: each is refused, naming the argument and the value.
        array = self.arrays["f64"]
        with tributary.open(self.captures["f64"]) as cap:
            for call in (cap.read, cap.to_pandas, cap.read_raw):
                for bad, text in (([0.5], r"channels\[0\] must be an integer, not float 0\.5"),
                                  ("0", r"channels must be an integer, not str '0'"),
                                  (True, r"channels must be an integer, not a bool"),
                                  ([1, False], r"channels\[1\] must be an integer, not a bool"),
                                  (np.array([0.0, 1.0]), r"channels\[0\] must be an integer, not float64"),
                                  (1.0, r"channels must be an integer, not float 1\.0"),
                                  (slice(0.5, 2), r"channels start must be an integer")):
                    with self.subTest(call=call.__name__, channels=bad), self.assertRaisesRegex(TypeError, text):
                        call(channels=bad, stop=4)
            for bad, text in ((1.0, r"source must be an integer, not float"), (True, "source must be an integer, not a bool"),
                              ("1", r"source must be an integer, not str '1'")):
                with self.subTest(source=bad), self.assertRaisesRegex(TypeError, text):
                    cap.read(source=bad)
                with self.subTest(source=bad), self.assertRaisesRegex(TypeError, text):
                    cap.times(source=bad)
            for kwargs, text in ((dict(start=1.5), r"start must be an integer, not float 1\.5"),
                                 (dict(stop=True), r"stop must be an integer, not a bool"),
                                 (dict(start="2"), r"start must be an integer, not str '2'"),
                                 (dict(stop=np.float64(3)), r"stop must be an integer, not float64")):
                with self.subTest(**kwargs), self.assertRaisesRegex(TypeError, text):
                    cap.read(**kwargs)
                with self.subTest(**kwargs), self.assertRaisesRegex(TypeError, text):
                    cap.to_pandas(**kwargs)
            # numpy integers are integers.
            np.testing.assert_array_equal(cap.read(source=np.uint32(1), channels=[np.int64(2), np.uint8(0)],
                                                   start=np.int16(3), stop=np.int64(9)), array[[2, 0], 3:9])
            np.testing.assert_array_equal(cap.read(channels=np.array([1, 2]), stop=5), array[1:3, :5])
            np.testing.assert_array_equal(cap.read(channels=np.int32(1), stop=5), array[1:2, :5])
            np.testing.assert_array_equal(cap.read(channels=slice(np.int64(1), None), stop=5), array[1:, :5])
            self.assertEqual(list(cap.to_pandas(channels=np.array([2]), stop=3).columns), ["ch2"])
            # Past the C types: range errors, never a wrapped value (2**32 + 1 would be channel 1).
            with self.assertRaises(tributary.RangeError):
                cap.read(channels=[2**32 + 1])
            with self.assertRaises(tributary.RangeError):
                cap.read(source=2**32 + 1)
            self.assertEqual(cap.read(start=2**64 + 1).shape, (3, 0))
        # The analysis options and the subscriber's selection: the same checks before the JSON.
        f64 = self.captures["f64"]
        for kwargs, error, text in ((dict(channels=[0.5]), TypeError, r"channels\[0\] must be an integer, not float 0\.5"),
                                    (dict(channels=[True]), TypeError, r"channels\[0\] must be an integer, not a bool"),
                                    (dict(channels=0.5), TypeError, r"channels must be a sequence of integers"),
                                    (dict(channels=[2**40]), ValueError, r"channels\[0\] must be an integer from 0 to 4294967295"),
                                    (dict(welch=1024.0), TypeError, r"welch must be an integer, not float"),
                                    (dict(welch=True), TypeError, r"welch must be an integer, not a bool"),
                                    (dict(spectrum=2**70), ValueError, r"spectrum must be an integer from"),
                                    (dict(rate=float("nan")), ValueError, r"rate must be a finite number, not nan"),
                                    (dict(rate="1000"), TypeError, r"rate must be a number, not str"),
                                    (dict(full_scale=float("inf"), measure="thd"), ValueError, r"full_scale must be a finite number")):
            with self.subTest(**kwargs), self.assertRaisesRegex(error, text):
                tributary.analyze(f64, **kwargs)
        with self.assertRaisesRegex(ValueError, r"rate must be a finite number, not nan"):
            tributary.analyze(self.arrays["f64"], rate=float("nan"))
        self.assertEqual(tributary.analyze(f64, channels=np.array([1]), welch=np.int64(256))["sources"][0]["channels"][0]["index"], 1)
        for kwargs, error, text in ((dict(channels=[0.5]), TypeError, r"channels\[0\] must be an integer, not float"),
                                    (dict(channels=["0"]), TypeError, r"channels\[0\] must be an integer, not str '0'"),
                                    (dict(sources=[1.0]), TypeError, r"sources\[0\] must be an integer, not float"),
                                    (dict(sources=[2**32 + 1]), ValueError, r"sources\[0\] must be an integer from 0 to 4294967295"),
                                    (dict(sources=1), TypeError, r"sources must be a sequence of integers, not int"),
                                    (dict(timeout=float("nan")), ValueError, r"timeout must be a finite number"),
                                    (dict(capacity=2**70), ValueError, r"capacity must be an integer from 0 to"),
                                    (dict(capacity=8.0), TypeError, r"capacity must be an integer, not float")):
            # Refused before any connection (port 1 is closed: a check that let it through meets an SCCTError).
            with self.subTest(**kwargs), self.assertRaisesRegex(error, text):
                tributary.subscribe("tcp://127.0.0.1:1", api_key="k", **kwargs)

    def test_kind_numbers_are_the_librarys_vocabulary(self):
        # The kinds are declared once (Swift's FrameKind + ExtensionKind); the library names them
        # (tributary_kind_name), and every number the package spells out must be the library's.
        import ctypes

        from tributary import _native, capture

        kinds = _native.kinds()
        self.assertEqual((kinds["analog"], kinds["analog-filter"], kinds["keepalive"]), (3, 10, 128))
        self.assertEqual(len(set(kinds.values())), len(kinds))
        constants = {name[len("KIND_"):].lower().replace("_", "-"): value
                     for name, value in vars(_native).items() if name.startswith("KIND_")}
        self.assertGreater(len(constants), 5)
        for name, value in list(constants.items()) + list(capture._KINDS.items()):
            with self.subTest(name):
                self.assertEqual(kinds.get(name), value, f"{name} = {value}, the library declares {kinds.get(name)}")
        text = ctypes.c_char_p(b"unchanged")
        for undeclared in (0, 24, 127, -1, 256):
            with self.subTest(undeclared=undeclared):
                self.assertEqual(_native.lib().tributary_kind_name(undeclared, ctypes.byref(text)), _native.E_ARGUMENT)
                self.assertIsNone(text.value)
                self.assertIn("no declared package kind", _native.lib().tributary_last_error().decode())
        self.assertEqual(_native.lib().tributary_kind_name(3, None), _native.E_ARGUMENT)

    def test_native_constants_and_signatures_match_the_header(self):
        # _native.py copies the header's numbers and declares its functions by hand: both against the header.
        import ctypes
        import re

        from tributary import _native, publisher, subscription

        with open(os.path.join(INTEROP, "..", "..", "include", "tributary.h")) as f:
            header = f.read()
        defines = dict(re.findall(r"^#define TRIBUTARY_(\w+)\s+(\d+)\b", header, re.M))
        self.assertGreater(len(defines), 25)
        for name, value in defines.items():
            with self.subTest(name):
                self.assertTrue(hasattr(_native, name), f"_native has no {name} (TRIBUTARY_{name} = {value})")
                self.assertEqual(getattr(_native, name), int(value), f"TRIBUTARY_{name}")
        from tributary import capture
        self.assertEqual({k: getattr(_native, "KIND_" + k.upper()) for k in capture._KINDS}, capture._KINDS)
        # Every function the package declares: the header's result and parameter types.
        lib = _native.lib()
        subscription._declare(lib)
        publisher._declare(lib)
        body = re.sub(r"/\*.*?\*/", "", header, flags=re.S)
        prototypes = {m.group(2): (m.group(1), m.group(3)) for m in
                      re.finditer(r"^\s*([\w ]+?\s*\**)\s*(tributary_\w+)\s*\(([^)]*)\)\s*;", body, re.M)}
        self.assertIn("tributary_capture_times", prototypes)
        P = ctypes.POINTER
        scalars = {"int": ctypes.c_int, "uint32_t": ctypes.c_uint32, "uint64_t": ctypes.c_uint64, "size_t": ctypes.c_size_t,
                   "int64_t": ctypes.c_int64, "double": ctypes.c_double, "void": None}

        def accepts(c_type, declared):
            """Whether ctypes type `declared` passes or returns the C type `c_type` ("const uint32_t *")."""
            t = re.sub(r"\bconst\b", "", c_type).replace(" ", "")
            base, stars = t.rstrip("*"), len(t) - len(t.rstrip("*"))
            if stars == 0:
                return declared is scalars[base]
            if stars == 1 and base == "char":
                return declared is ctypes.c_char_p
            if stars == 1:  # a handle or a buffer: an address
                return declared is ctypes.c_void_p or (base in scalars and declared is P(scalars[base]))
            if stars == 2:  # an out-parameter receiving an address (char ** strings are freed by address)
                return declared in (P(ctypes.c_void_p), P(ctypes.c_char_p))
            return False

        declared = [name for name in prototypes if getattr(lib, name, None) is not None and getattr(lib, name).argtypes is not None]
        self.assertIn("tributary_capture_read", declared)
        self.assertIn("tributary_capture_times", declared)
        self.assertIn("tributary_source_push", declared)
        for name in declared:
            result, parameters = prototypes[name]
            fn = getattr(lib, name)
            parameters = [] if parameters.strip() == "void" else [p.strip() for p in parameters.split(",")]
            with self.subTest(name):
                self.assertEqual(len(fn.argtypes), len(parameters), f"{name}: {parameters}")
                for parameter, argtype in zip(parameters, fn.argtypes):
                    c_type = re.sub(r"\w+$", "", parameter)  # without its name
                    self.assertTrue(accepts(c_type, argtype), f"{name}: {parameter} declared as {argtype}")
                self.assertTrue(accepts(result, fn.restype), f"{name} returns {result}, declared as {fn.restype}")

    # -- analysis --

    def assert_same_document(self, ours, theirs, ignore=()):
        ours, theirs = json.loads(json.dumps(ours)), json.loads(json.dumps(theirs))
        for doc in (ours, theirs):
            for key in ignore:
                if key == "file":
                    doc.pop("file", None)
                else:
                    for s in doc["sources"]:
                        s.pop(key, None)
        self.assertEqual(ours, theirs)

    def test_analyze_file_equals_cli(self):
        cases = [
            ({}, []),
            (dict(welch=1024, overlap=0.25, window="hamming"), ["--welch", 1024, "--overlap", 0.25, "--window", "hamming"]),
            (dict(measure=["tone", "thd", "sinad", "enob"], channels=[0]), ["--measure", "tone,thd,sinad,enob", "--channels", 0]),
            (dict(stats=True, spectrum=4096, rate=1000), ["--stats", "--spectrum", 4096, "--rate", 1000]),
        ]
        for name in ("f64", "i16"):
            for options, args in cases:
                with self.subTest(name=name, options=options):
                    ours = tributary.analyze(self.captures[name], **options)
                    (theirs,) = cli_analyze(self.captures[name], *args)
                    self.assert_same_document(ours, theirs)

    def test_analyze_array_equals_cli_on_its_npy(self):
        array = self.arrays["f64"]
        ours = tributary.analyze(array, rate=48000, welch=2048, measure="all", name="f64.npy")
        (theirs,) = cli_analyze(self.path("f64.npy"), "--rate", 48000, "--welch", 2048, "--measure", "all")
        self.assert_same_document(ours, theirs, ignore=["file"])
        tone = ours["sources"][0]["channels"][0]["tone"]
        self.assertAlmostEqual(tone["frequency"], 1000.0, places=6)
        # A 1-D array is one channel; a non-contiguous one is copied once.
        one = tributary.analyze(array[0], rate=48000)
        self.assertEqual(one["sources"][0]["channel_count"], 1)
        strided = tributary.analyze(array[:, ::2], rate=24000)
        self.assertEqual(strided["sources"][0]["channels"][0]["samples"], 15_001)
        # int16 counts times int16_scale, as analyze reads an int16 NPY file.
        ours = tributary.analyze(self.arrays["i16"], rate=48000, int16_scale=0.001)
        (theirs,) = cli_analyze(self.path("i16.npy"), "--rate", 48000, "--int16-scale", 0.001)
        self.assertEqual([c["stats"] for c in ours["sources"][0]["channels"]],
                         [c["stats"] for c in theirs["sources"][0]["channels"]])

    def test_spectrogram_coherence_and_transfer_equal_the_cli(self):
        """Issue 42 item 3: analyze's spectrogram, coherence and transfer options reach Python (and C)
        through the options the command checks (one model, TributaryAnalysis.AnalysisOptionValues):
        the same documents as `analyze --json`, arrays as ndarrays with arrays="numpy", the same refusals."""
        f64 = self.captures["f64"]
        for options, flags in ((dict(spectrogram=1024), ["--spectrogram", 1024]),
                               (dict(spectrogram=512, overlap=0.5, scaling="spectrum"), ["--spectrogram", 512, "--overlap", 0.5, "--scaling", "spectrum"]),
                               (dict(coherence=0, welch=1024), ["--coherence", 0, "--welch", 1024]),
                               (dict(transfer=1), ["--transfer", 1])):
            with self.subTest(**options):
                (theirs,) = cli_analyze(f64, *flags)
                self.assert_same_document(tributary.analyze(f64, **options), theirs)
        ours = tributary.analyze(f64, spectrogram=1024, arrays="numpy")["sources"][0]["channels"][0]["spectrogram"]
        self.assertIsInstance(ours["frequencies"], np.ndarray)
        self.assertEqual(len(ours["psd"]), len(ours["times"]))
        self.assertTrue(all(isinstance(row, np.ndarray) and row.shape == ours["frequencies"].shape for row in ours["psd"]))
        for options, text in ((dict(coherence=0, transfer=0), "give coherence or transfer, not both"),
                              (dict(spectrogram=0), "spectrogram must be an integer from 1 to"),
                              (dict(coherence=-1), "coherence must be a channel index from 0 to 4294967295, not -1"),
                              (dict(overlap=0.5), "overlap needs welch, spectrogram, coherence or transfer"),
                              (dict(full_scale=1.0), "harmonics, fold_aliases, measure_window and full_scale need measure")):
            with self.subTest(**options), self.assertRaisesRegex(tributary.ArgumentError, text):
                tributary.analyze(f64, **options)
        with self.assertRaisesRegex(TypeError, "spectrogram must be an integer, not float"):
            tributary.analyze(f64, spectrogram=1024.0)

    def test_analyze_numpy_arrays_are_the_json_values_exactly(self):
        # The package asks the library for its arrays in a block after the text (docs/C_API.md); lists
        # and ndarrays hold the same float64 values as the command's decimal JSON.
        options = dict(welch=1024, spectrum=4096, rate=1000)
        lists = tributary.analyze(self.captures["f64"], **options)
        arrays = tributary.analyze(self.captures["f64"], arrays="numpy", **options)
        (cli,) = cli_analyze(self.captures["f64"], "--welch", 1024, "--spectrum", 4096, "--rate", 1000)
        for listed, a, c in zip(lists["sources"][0]["channels"], arrays["sources"][0]["channels"], cli["sources"][0]["channels"]):
            for group, member in (("welch", "frequencies"), ("welch", "psd"), ("spectrum", "amplitude_rms")):
                self.assertIsInstance(a[group][member], np.ndarray)
                self.assertEqual(a[group][member].dtype, np.float64)
                self.assertEqual(listed[group][member], c[group][member])
                self.assertEqual(a[group][member].tolist(), c[group][member])
        with self.assertRaises(ValueError):
            tributary.analyze(self.captures["f64"], arrays="dict")

    def test_c_analysis_array_block_holds_the_base64_values_bit_for_bit(self):
        # docs/C_API.md: with "arrays": "block" each array is {"offset", "count"} into the float64
        # block that starts at the first multiple of 8 after the text's NUL (zeros between).
        import base64
        import ctypes
        lib = tributary._native.lib()
        documents = {}
        for encoding in ("base64", "block"):
            out = ctypes.c_void_p()
            options = json.dumps({"welch": 1024, "spectrum": 4096, "rate": 1000, "arrays": encoding}).encode()
            self.assertEqual(lib.tributary_analyze_file(self.captures["f64"].encode(), options, ctypes.byref(out)), 0)
            text = ctypes.string_at(out.value)
            document = json.loads(text)
            if encoding == "block":
                self.assertEqual(list(document)[:3], ["file", "array_encoding", "array_block_bytes"])
                self.assertEqual(document["array_encoding"], "float64le-block")
                start = (len(text) + 1 + 7) & ~7
                self.assertEqual(ctypes.string_at(out.value + len(text), start - len(text)), bytes(start - len(text)))
                block = ctypes.string_at(out.value + start, document["array_block_bytes"])
                document["block"] = block
            lib.tributary_free(out)
            documents[encoding] = document
        used = 0
        for b, k in zip(documents["base64"]["sources"][0]["channels"], documents["block"]["sources"][0]["channels"]):
            for group, member in (("welch", "frequencies"), ("welch", "psd"), ("spectrum", "frequencies"), ("spectrum", "amplitude_rms")):
                place = k[group][member]
                self.assertEqual(place["offset"] % 8, 0)
                values = documents["block"]["block"][place["offset"]:place["offset"] + 8 * place["count"]]
                self.assertEqual(values, base64.b64decode(b[group][member]), f"{group}.{member}")
                used += 8 * place["count"]
        self.assertEqual(used, documents["block"]["array_block_bytes"])

    def test_c_analysis_option_arrays_is_checked(self):
        import ctypes
        out = ctypes.c_void_p()
        status = tributary._native.lib().tributary_analyze_file(self.captures["f64"].encode(), b'{"arrays": "hex"}', ctypes.byref(out))
        self.assertNotEqual(status, 0)
        self.assertIn("arrays must be", tributary._native.lib().tributary_last_error().decode())

    # -- misuse --

    def test_closed_capture(self):
        cap = tributary.open(self.captures["f64"])
        cap.close()
        cap.close()  # idempotent
        with self.assertRaises(tributary.HandleError) as e:
            cap.read()
        self.assertIn("closed", str(e.exception))
        with self.assertRaises(tributary.HandleError):
            next(cap.packages())

    def test_the_c_interface_reports_misuse_instead_of_crashing(self):
        import ctypes
        from ctypes import byref, c_uint32, c_uint64, c_void_p

        from tributary import _native, subscription

        lib = _native.lib()
        subscription._declare(lib)
        handle = c_void_p()

        def status(call, expected):
            self.assertEqual(call, expected, lib.tributary_last_error())
            self.assertTrue(lib.tributary_last_error())

        status(lib.tributary_capture_open(None, byref(handle)), _native.E_ARGUMENT)
        status(lib.tributary_capture_open(self.captures["f64"].encode(), None), _native.E_ARGUMENT)
        status(lib.tributary_capture_close(None), _native.E_HANDLE)
        status(lib.tributary_capture_close(c_void_p(0xDEAD0)), _native.E_HANDLE)  # made up: looked up, never dereferenced
        status(lib.tributary_capture_open(self.captures["f64"].encode(), byref(handle)), _native.OK)
        try:
            buffer = (ctypes.c_double * 8)()
            read = c_uint64()
            two = (c_uint32 * 2)(0, 1)
            def r(channels, n, first, count, type_, buf, size):
                return lib.tributary_capture_read(handle, 1, channels, n, first, count, type_, buf, size, byref(read))
            status(r(None, 2, 0, 1, _native.FLOAT64, buffer, 64), _native.E_ARGUMENT)       # channels NULL, count 2
            status(r(two, 2, 0, 8, _native.FLOAT64, buffer, 64), _native.E_BUFFER)          # 2 x 8 doubles > 64 bytes
            status(r(two, 2, 0, 4, _native.FLOAT64, None, 64), _native.E_ARGUMENT)          # NULL buffer
            status(r(two, 2, 0, 4, 7, buffer, 64), _native.E_ARGUMENT)                      # no such sample type
            status(r(two, 2, 0, 4, _native.INT16, buffer, 64), _native.E_TYPE)             # float64 data
            status(r(two, 2, 2**64 - 1, 4, _native.FLOAT64, buffer, 64), _native.OK)        # past the end: nothing read
            self.assertEqual(read.value, 0)
            status(r(two, 2, 0, 2**63, _native.FLOAT64, buffer, 64), _native.E_RANGE)       # absurd count
            status(lib.tributary_capture_read(handle, 99, None, 0, 0, 1, _native.FLOAT64, buffer, 64, None), _native.E_RANGE)
            # A capture handle is not a subscription handle.
            status(lib.tributary_subscription_close(handle), _native.E_HANDLE)
            self.assertIn("not a subscription handle", lib.tributary_last_error().decode())
        finally:
            self.assertEqual(lib.tributary_capture_close(handle), _native.OK)
        status(lib.tributary_capture_close(handle), _native.E_HANDLE)  # twice
        json_out = c_void_p()
        samples = (ctypes.c_double * 4)(1, 2, 3, 4)
        status(lib.tributary_analyze_buffer(samples, 0, 4, 1.0, None, byref(json_out)), _native.E_ARGUMENT)
        status(lib.tributary_analyze_buffer(None, 1, 4, 1.0, None, byref(json_out)), _native.E_ARGUMENT)
        status(lib.tributary_analyze_buffer(samples, 1, 4, float("nan"), None, byref(json_out)), _native.E_ARGUMENT)
        status(lib.tributary_analyze_buffer(samples, 1, 2**62, 1.0, None, byref(json_out)), _native.E_ARGUMENT)
        status(lib.tributary_analyze_buffer(samples, 1, 4, 1.0, b"[1, 2]", byref(json_out)), _native.E_ARGUMENT)
        status(lib.tributary_analyze_buffer(samples, 1, 4, 1.0, b"{\"stats\": 3}", byref(json_out)), _native.E_ARGUMENT)
        status(lib.tributary_analyze_file(None, None, byref(json_out)), _native.E_ARGUMENT)
        self.assertIsNone(json_out.value)
        status(lib.tributary_subscription_next(None, 0.0, None, None), _native.E_HANDLE)
        status(lib.tributary_subscription_open(b"", b"k", None, byref(handle)), _native.E_ARGUMENT)
        status(lib.tributary_subscription_open(b"tcp://127.0.0.1:1", b"k", b"{\"bogus\": 1}", byref(handle)), _native.E_ARGUMENT)
        # The last error copied into a caller's buffer (LabVIEW): cut to the buffer, NUL-terminated, full length returned.
        _native.declare(lib, "tributary_last_error_copy", ctypes.c_size_t, c_void_p, ctypes.c_size_t)
        message = lib.tributary_last_error()
        self.assertIn(b"bogus", message)
        small = ctypes.create_string_buffer(b"\xff" * 8, 8)
        self.assertEqual(lib.tributary_last_error_copy(small, 8), len(message))
        self.assertEqual(small.raw, message[:7] + b"\0")
        whole = ctypes.create_string_buffer(len(message) + 1)
        self.assertEqual(lib.tributary_last_error_copy(whole, len(whole)), len(message))
        self.assertEqual(whole.value, message)
        self.assertEqual(lib.tributary_last_error_copy(None, 0), len(message))

    def test_bad_arguments(self):
        with tributary.open(self.captures["f64"]) as cap:
            with self.assertRaises(tributary.RangeError) as e:
                cap.read(channels=[3])
            self.assertIn("channel 3", str(e.exception))
            with self.assertRaises(IndexError):  # RangeError is an IndexError too
                cap.read(channels=[-1])
            with self.assertRaises(tributary.RangeError):
                cap.read(source=9)
            with self.assertRaises(tributary.SampleTypeError) as e:
                cap.read_raw(dtype=np.int16)
            self.assertIn("float64", str(e.exception))
            with self.assertRaises(TypeError):  # SampleTypeError is a TypeError too
                cap.read_raw(dtype=np.int32)
            with self.assertRaises(ValueError):
                cap.read(start=-1)
            with self.assertRaises(ValueError):
                list(cap.packages(kinds=["analog"]))
        with tributary.open(self.captures["i16"]) as cap:
            self.assertEqual(cap.read_raw(dtype=np.int16, stop=3).dtype, np.int16)
        with self.assertRaises(tributary.CaptureIOError):
            tributary.open(self.path("missing.tcap"))
        with self.assertRaises(OSError):
            tributary.open(self.path("missing.tcap"))
        with self.assertRaises(tributary.FormatError):
            tributary.open(self.path("f64.npy"))
        with self.assertRaises(tributary.ArgumentError) as e:
            tributary.analyze(self.captures["f64"], welch=-4)
        self.assertIn("welch", str(e.exception))
        with self.assertRaises(tributary.ArgumentError):
            tributary.analyze(self.captures["f64"], overlap=0.5)
        with self.assertRaises(TypeError):
            tributary.analyze(self.captures["f64"], bogus=1)
        with self.assertRaises(TypeError):
            tributary.analyze(np.array(["a", "b"]))
        with self.assertRaises(tributary.AnalysisError) as e:
            tributary.analyze(self.captures["f64"], channels=[7])
        # The same failure, with the same message, as the command's.
        proc = cli("analyze", self.captures["f64"], "--channels", 7, expect=1)
        self.assertIn(str(e.exception).split(": ", 1)[1], proc.stderr)
        with self.assertRaises(tributary.AnalysisError):
            tributary.analyze(self.path("missing.npy"))



class WelchWarning(unittest.TestCase):
    """Issue 43 item 9: a Welch segment longer than the input is shortened to it with a UserWarning,
    as ``scipy.signal.welch`` warns; a segment that fits gives none."""

    def test_a_shortened_segment_warns_like_scipy(self):
        import warnings
        x = np.sin(np.arange(100) / 3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            document = tributary.analyze(x, welch=256)
            tributary.analyze(x, welch=64)
        self.assertEqual(document["sources"][0]["channels"][0]["welch"]["nperseg"], 100)
        self.assertEqual([(w.category, str(w.message)) for w in caught],
                         [(UserWarning, "source 1 channel 0: nperseg = 256 is greater than input length = 100, using nperseg = 100")])
        self.assertEqual(caught[0].filename, __file__)  # the warning points at the caller, as scipy's does

if __name__ == "__main__":
    unittest.main()

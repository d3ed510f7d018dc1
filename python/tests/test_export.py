"""`Capture.export` (Python) and `tributary_capture_export` (C) against `tributary export`: the same
options write the same bytes, in every format; bad arguments are refused with errors naming them.

The release binary is named by the environment variable TRIBUTARY, the library by TRIBUTARY_LIBRARY
(`make python-tests` sets both). The capture is the two-source one of Tests/Interop/test_formats.py
(float64 with a lost frame, int16 counts with scales), written by the independent capture writer.
"""
import ctypes
import itertools
import json
import os
import sys
import unittest
import warnings

import numpy as np

import tributary
from tributary import _native

INTEROP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Tests", "Interop")
sys.path.insert(0, INTEROP)
import capture_spec as cs  # noqa: E402 (the independent capture writer)
import test_formats as formats_spec  # noqa: E402 (the spec capture of the interop tests)
import tool_process as tp  # noqa: E402 (the interop tests' helpers: the tool run to its end, a scratch directory)
import wire_spec as ws  # noqa: E402

cli, ScratchDirectory = tp.tool, tp.ScratchDirectory

# Options as Python keywords and as the command's flags.
FLAGS = {"source": "--source", "channels": "--channels", "start": "--start", "duration": "--duration",
         "counts": "--counts", "time_column": "--time-column", "allow_damage": "--allow-damage",
         "align": "--align", "dejitter": "--dejitter"}

# Option sets tried with every format that takes them.
OPTION_SETS = [
    {},
    {"source": 1},
    {"source": 2},
    {"source": 2, "counts": True},
    {"counts": True},
    {"source": 1, "channels": [2, 0]},
    {"source": 2, "channels": "7"},
    {"start": 0.25, "duration": 0.3},
    {"source": 1, "start": 0.1234567, "duration": 0.5},
    {"source": 2, "start": 0.2, "counts": True},
    {"source": 1, "time_column": True},
    {"source": 1, "start": 0.5, "time_column": True},
]



def flags(options):
    out = []
    for name, value in options.items():
        if value is True:
            out.append(FLAGS[name])
        elif name == "channels":
            out += [FLAGS[name], value if isinstance(value, str) else ",".join(map(str, value))]
        else:
            out += [FLAGS[name], repr(value)]
    return out


def applies(fmt, options):
    if options.get("time_column") and fmt != "csv":
        return False
    if options.get("counts") and fmt in ("csv", "wav"):
        return False
    # NPY counts of the (default) float64 source are refused, by both (test_counts_of_float_sources).
    if options.get("counts") and fmt == "npy" and options.get("source") != 2:
        return False
    return True


def spec_chunks():
    """Three chunks of source 1 (float64, 2 channels at 1000 Hz), two frames of 100 samples each."""
    rng = np.random.default_rng(11)
    config = ws.frame("configuration", ws.configuration("dev", "sim", [(0, 0, 1000.0, -1, 1, "a", "V"), (1, 0, 1000.0, -1, 1, "b", "V")], []),
                      sequence=0, timestamp_ns=formats_spec.T0, source_id=1)
    chunks = [[config]]
    for k in range(6):
        if k and k % 2 == 0:
            chunks.append([])
        chunks[-1].append(ws.frame("analog", ws.analog_f64([0, 1], rng.normal(size=(2, 100)).tolist(), first_sample=100 * k),
                                   sequence=k + 1, timestamp_ns=formats_spec.T0 + k * 100_000_000, source_id=1))
    return chunks


def read(path):
    with open(path, "rb") as f:
        return f.read()


class ExportTests(ScratchDirectory, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        data, cls.expected = formats_spec.test_capture()
        cls.capture = cls.path("c.tcap")
        with open(cls.capture, "wb") as f:
            f.write(data)
        # A capture of three chunks of one source: without its footer (a recording that did not close),
        # and with its second chunk damaged.
        chunks = spec_chunks()
        cls.open_ended = cls.path("open.tcap")
        with open(cls.open_ended, "wb") as f:
            f.write(cs.capture(chunks, footer=False))
        cls.damaged = cls.path("damaged.tcap")
        damaged = bytearray(cs.capture(chunks))
        damaged[len(cs.capture(chunks[:1], footer=False)) + 200] ^= 0xFF
        with open(cls.damaged, "wb") as f:
            f.write(damaged)
        np.save(cls.path("f32.npy"), np.random.default_rng(3).normal(size=(2, 5000)).astype(np.float32))
        cls.f32 = cls.path("f32.tcap")
        cli("import", cls.path("f32.npy"), "--rate", 8000, "--out", cls.f32)

    def assertSameExport(self, capture, fmt, options, tag):
        """Exports with the tool and with Capture.export and compares the files (and the NPY sidecar)."""
        by_cli, by_python = self.path(f"cli-{tag}.{fmt}"), self.path(f"py-{tag}.{fmt}")
        printed = cli("export", capture, "--format", fmt, "--out", by_cli, "--force", *flags(options)).stdout
        with tributary.open(capture) as cap, warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            report = cap.export(by_python, fmt, replace=True, **options)
        self.assertEqual(read(by_cli), read(by_python), f"{fmt} {options}")
        if fmt == "npy" and options.get("counts"):
            self.assertEqual(read(by_cli + ".json"), read(by_python + ".json"))
        # The report is what the tool prints.
        lines = [f"{by_python}: source {s['source']}, {s['channels']} channels × {s['samples']} samples" for s in report["sources"]]
        self.assertEqual(printed.replace(by_cli, by_python).splitlines(), lines)
        return report

    def test_every_format_and_option_set_writes_the_bytes_of_the_tool(self):
        compared = set()
        for k, (fmt, options) in enumerate(itertools.product(tributary.capture._EXPORT_FORMATS, OPTION_SETS)):
            if not applies(fmt, options):
                continue
            with self.subTest(fmt=fmt, options=options):
                self.assertSameExport(self.capture, fmt, options, k)
                compared.add(fmt)
        self.assertEqual(compared, {"npy", "csv", "wav", "tdms", "xdf", "hdf5"})

    def test_align_and_dejitter_write_the_bytes_of_the_tool(self):
        # The spec capture with two clock-offset records (docs/CAPTURE.md §6): the publisher 1.5 s ahead, then 1.5002 s.
        offsets = [dict(offset_ns=1_500_000_000, rtt_ns=1, measured_at_ns=formats_spec.T0 - 1_500_000_000, sources=(1,)),
                   dict(offset_ns=1_500_200_000, rtt_ns=1, measured_at_ns=formats_spec.T0 - 1_000_000_000, sources=(1,))]
        capture = self.path("offsets.tcap")
        with open(capture, "wb") as f:
            f.write(cs.capture(spec_chunks(), clock_offsets=offsets))
        for options in ({"align": True}, {"align": True, "dejitter": True}, {"dejitter": True}):
            with self.subTest(options=options):
                self.assertSameExport(capture, "xdf", options, "aligned-" + "-".join(options))
        plain, aligned = self.path("plain.h5"), self.path("aligned.h5")
        with tributary.open(capture) as cap:
            cap.export(plain, "hdf5")
            cap.export(aligned, "hdf5", align=True)
        import h5py
        with h5py.File(plain) as p, h5py.File(aligned) as a:
            shift = int(a["dev"].attrs["start_time_ns"]) - int(p["dev"].attrs["start_time_ns"])
        # At the first frame (T0 on the publisher's clock) the line of the two offsets gives 1.5 s.
        self.assertEqual(shift, -1_500_000_000)
        with tributary.open(capture) as cap, self.assertRaises(TypeError):
            cap.export(self.path("x.xdf"), "xdf", align=1)

    def test_a_capture_without_footer_exports_the_same_with_its_warning(self):
        for fmt in ("npy", "hdf5"):
            with self.subTest(fmt):
                with tributary.open(self.open_ended) as cap, warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    report = cap.export(self.path(f"open.{fmt}"), fmt, replace=True)
                self.assertTrue(any("has no footer" in w for w in report["warnings"]), report)
                self.assertTrue(any("has no footer" in str(w.message) and w.category is RuntimeWarning for w in caught))
                self.assertSameExport(self.open_ended, fmt, {}, f"open-{fmt}")

    def test_a_capture_opened_by_a_relative_path_after_a_change_of_directory(self):
        """The library reads the capture afresh for an export: by the path as it was when opened."""
        here = os.getcwd()
        try:
            os.chdir(self.directory)
            cap = tributary.open("c.tcap")
            os.chdir(INTEROP)
            with cap:
                cap.export(self.path("relative.xdf"), "xdf", replace=True)
        finally:
            os.chdir(here)
        cli("export", self.capture, "--format", "xdf", "--out", self.path("absolute.xdf"), "--force")
        self.assertEqual(read(self.path("relative.xdf")), read(self.path("absolute.xdf")))

    def test_float32_source_in_wav_npy_and_hdf5(self):
        for fmt in ("wav", "npy", "hdf5", "csv"):
            with self.subTest(fmt):
                self.assertSameExport(self.f32, fmt, {"channels": [1]}, f"f32-{fmt}")

    def test_counts_of_float_sources(self):
        """Refused when no exported source stores int16 counts (the option would change nothing); with
        int16 sources beside float ones, the float ones are written as values, with a warning."""
        with tributary.open(self.capture) as cap:
            with self.assertRaisesRegex(tributary.SampleTypeError, "counts=true: source 1 is stored as float64, not int16 counts"):
                cap.export(self.path("f.tdms"), "tdms", source=1, counts=True)
            self.assertFalse(os.path.exists(self.path("f.tdms")))
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                report = cap.export(self.path("mixed.xdf"), "xdf", counts=True)
            self.assertEqual(report["warnings"], ["warning: counts=true: source 1 is stored as float64, not int16 counts; "
                                                  "exported as float64 values"])
            self.assertEqual(len(caught), 1)
        with tributary.open(self.f32) as cap, self.assertRaises(tributary.SampleTypeError):
            cap.export(self.path("f32.npy.out"), "npy", counts=True)

    def test_time_column_from_a_start_gives_the_recorded_times(self):
        """`--start 0.5 --time-column`: the times of the samples selected since the source's first
        sample (those of Capture.times), not a column restarted at 0; 0.6 s after the lost frame."""
        with tributary.open(self.capture) as cap:
            cap.export(self.path("t.csv"), "csv", source=1, start=0.5, time_column=True, replace=True)
            times = cap.times(1, start=500)
        table = np.loadtxt(self.path("t.csv"), delimiter=",", skiprows=1)
        self.assertEqual(table[0, 0], 0.6)
        np.testing.assert_array_equal(table[:, 0], times)
        np.testing.assert_array_equal(table[:, 1:].T, self.expected["f64"][:, 500:])

    # -- bad arguments --

    def test_bad_arguments_are_refused_before_the_library(self):
        with tributary.open(self.capture) as cap:
            out = self.path("bad.npy")
            cases = [
                ({"format": "mat"}, ValueError, "format must be one of npy, csv, wav, tdms, xdf, hdf5, not 'mat'"),
                ({"format": b"npy"}, TypeError, "format must be a str"),
                ({"format": "npy", "source": -1}, ValueError, "source must be an integer from 0 to 4294967295, not -1"),
                ({"format": "npy", "source": 2**32}, ValueError, "source must be an integer from 0"),
                ({"format": "npy", "source": 1.0}, TypeError, "source must be an integer, not float"),
                ({"format": "npy", "source": True}, TypeError, "source must be an integer, not a bool"),
                ({"format": "npy", "channels": [0, 1.5]}, TypeError, r"channels\[1\] must be an integer"),
                ({"format": "npy", "channels": -1}, ValueError, "channels must be an integer from 0"),
                ({"format": "npy", "start": float("nan")}, ValueError, "start must be a finite number, not nan"),
                ({"format": "npy", "start": -0.5}, ValueError, "start must be at least 0.0, not -0.5"),
                ({"format": "npy", "duration": float("inf")}, ValueError, "duration must be a finite number"),
                ({"format": "npy", "duration": "1"}, TypeError, "duration must be a number, not str"),
                ({"format": "npy", "counts": 1}, TypeError, "counts must be True or False, not int 1"),
                ({"format": "npy", "replace": "yes"}, TypeError, "replace must be True or False"),
            ]
            for kwargs, error, message in cases:
                with self.subTest(kwargs):
                    with self.assertRaisesRegex(error, message):
                        cap.export(out, **kwargs)
            with self.assertRaisesRegex(TypeError, "path must be a str or os.PathLike, not int"):
                cap.export(3, "npy")
            with self.assertRaisesRegex(ValueError, "path is empty"):
                cap.export("", "npy")
            self.assertFalse(os.path.exists(out))

    def test_refusals_of_the_library(self):
        with tributary.open(self.capture) as cap:
            out = self.path("refused.csv")
            cases = [
                ({"format": "npy", "time_column": True}, tributary.ArgumentError, "time_column=true applies to format csv only"),
                ({"format": "wav", "counts": True}, tributary.ArgumentError, "counts=true applies to npy, tdms, xdf and hdf5"),
                ({"format": "csv", "channels": "0-"}, tributary.ArgumentError, "option 'channels'"),
                ({"format": "csv", "source": 9}, tributary.RangeError, "source 9 has no analog data .sources with analog data: 1, 2."),
                ({"format": "csv", "source": 1, "channels": [5]}, tributary.RangeError, "source 1 has no channel 5"),
                ({"format": "wav", "source": 2, "channels": [4], "start": 10}, None, None),
            ]
            for kwargs, error, message in cases:
                with self.subTest(kwargs):
                    if error is None:  # past the end: an empty selection is written, as the tool writes it
                        cap.export(out + ".wav", replace=True, **kwargs)
                        continue
                    with self.assertRaisesRegex(error, message):
                        cap.export(out, **kwargs)
            cap.export(out, "csv")
            with self.assertRaisesRegex(tributary.ArgumentError, "exists; pass replace=true to replace it"):
                cap.export(out, "csv")
            with self.assertRaisesRegex(tributary.ArgumentError, "is the capture being exported"):
                cap.export(self.capture, "csv", replace=True)
            with self.assertRaisesRegex(tributary.ArgumentError, "is a directory"):
                cap.export(self.directory, "csv", replace=True)
            self.assertEqual([f for f in os.listdir(self.directory) if "partial-export" in f], [])
        with self.assertRaises(tributary.HandleError):
            cap.export(out, "csv", replace=True)

    def test_a_damaged_capture_is_refused_unless_allowed(self):
        with tributary.open(self.damaged) as cap:
            with self.assertRaisesRegex(tributary.FormatError, r"is damaged .*allow_damage=true.*; damage: byte \d+ .*CRC32C"):
                cap.export(self.path("d.npy"), "npy")
            self.assertFalse(os.path.exists(self.path("d.npy")))
            # From the first chunk only: the damaged one is not read, by the tool or the library.
            cap.export(self.path("first.npy"), "npy", duration=0.15)
        cli("export", self.damaged, "--format", "npy", "--out", self.path("d.npy"), expect=3)
        self.assertSameExport(self.damaged, "npy", {"duration": 0.15}, "damaged-first")
        for fmt in ("npy", "tdms", "csv"):
            with self.subTest(fmt):
                report = self.assertSameExport(self.damaged, fmt, {"allow_damage": True}, f"damaged-{fmt}")
                self.assertTrue(any("exported what is intact" in w for w in report["warnings"]), report)
                self.assertEqual(report["sources"], [{"source": 1, "channels": 2, "samples": 400}])

    def test_read_and_export_agree_on_a_truncated_and_a_damaged_capture(self):
        """`Capture.read` (the C interface's window read) and `tributary export --format npy` give the
        same samples of a capture cut off in its last chunk (a recording killed mid-write: the torn
        record is damage, so export needs --allow-damage; the read sees the intact chunks only) and
        of one with a damaged chunk (exported around with --allow-damage; read around by windows),
        and the same sample times (`Capture.times` and the CSV time column) across a lost frame."""
        rng = np.random.default_rng(11)
        config = ws.frame("configuration", ws.configuration("dev", "sim", [(0, 0, 1000.0, -1, 1, "a", "V"), (1, 0, 1000.0, -1, 1, "b", "V")], []),
                          sequence=0, timestamp_ns=formats_spec.T0, source_id=1)
        chunks = [[config]]
        for k in range(8):
            if k == 3:
                continue  # a lost frame: samples 300-399 missing, a jump in first_sample and in time
            if k and k % 2 == 0:
                chunks.append([])
            chunks[-1].append(ws.frame("analog", ws.analog_f64([0, 1], rng.normal(size=(2, 100)).tolist(), first_sample=100 * k),
                                       sequence=k + 1, timestamp_ns=formats_spec.T0 + k * 100_000_000, source_id=1))
        whole = cs.capture(chunks, footer=False)
        truncated = self.path("truncated.tcap")
        with open(truncated, "wb") as f:
            f.write(whole[:-300])  # the last chunk cut off: its frames are lost to both
        for path in (truncated, self.damaged):
            with self.subTest(path=os.path.basename(path)):
                out = self.path(os.path.basename(path) + ".npy")
                cli("export", path, "--format", "npy", "--out", out, "--force", "--allow-damage")
                exported = np.load(out)
                with tributary.open(path) as cap:
                    src = cap.source(1)
                    if path == truncated:
                        self.assertEqual(cap.read().shape, exported.shape)
                        np.testing.assert_array_equal(cap.read(), exported)
                        times = cap.times()
                        self.assertEqual([g.missing_count for g in src.gaps], [])
                    else:
                        # The damaged second chunk (samples 200-399 by the seek table) is refused by
                        # the read; the samples around it are those that export writes closed up.
                        with self.assertRaises(tributary.FormatError):
                            cap.read()
                        self.assertEqual(exported.shape, (2, 400))
                        np.testing.assert_array_equal(cap.read(start=0, stop=200), exported[:, :200])
                        np.testing.assert_array_equal(cap.read(start=400, stop=600), exported[:, 200:])
                if path == truncated:
                    csv_out = self.path("truncated.csv")
                    cli("export", path, "--format", "csv", "--time-column", "--out", csv_out, "--force", "--allow-damage")
                    column = np.loadtxt(csv_out, delimiter=",", skiprows=1, usecols=0, ndmin=1)
                    np.testing.assert_allclose(column, times, rtol=0, atol=1e-9)
                    # The lost frame shows in both: a 0.101 s step from the 300th sample read to the next.
                    self.assertEqual(len(times), 500)
                    self.assertAlmostEqual(times[300] - times[299], 0.101, places=9)

    def test_the_c_call_checks_and_marshals(self):
        """tributary_capture_export through ctypes: NULL arguments, a bad format, unknown or mistyped
        JSON members, and the report, each with its status and message."""
        lib = _native.lib()
        handle = ctypes.c_void_p()
        _native.check(lib.tributary_capture_open(self.capture.encode(), ctypes.byref(handle)))
        try:
            def call(path, fmt, options, want_report=True):
                report = ctypes.c_void_p()
                status = lib.tributary_capture_export(handle, path, fmt, options, ctypes.byref(report) if want_report else None)
                text = _native.take_string(report) if report.value else None
                return status, lib.tributary_last_error().decode(), text

            out = self.path("c-call.csv").encode()
            cases = [
                ((None, b"csv", None), _native.E_ARGUMENT, "tributary_capture_export: path is NULL"),
                ((out, None, None), _native.E_ARGUMENT, "format is NULL"),
                ((out, b"CSV", None), _native.E_ARGUMENT, "format 'CSV' is not one of npy, csv, wav, tdms, xdf, hdf5"),
                ((out, b"csv", b"[1]"), _native.E_ARGUMENT, "the options are not a JSON object"),
                ((out, b"csv", b'{"force": true}'), _native.E_ARGUMENT, "unknown option 'force' (options: align, allow_damage, channels"),
                ((out, b"csv", b'{"source": -1}'), _native.E_ARGUMENT, "option 'source' must be a source id"),
                ((out, b"csv", b'{"source": 4294967296}'), _native.E_ARGUMENT, "option 'source' must be a source id"),
                ((out, b"csv", b'{"start": "1"}'), _native.E_ARGUMENT, "option 'start' must be a time in seconds >= 0"),
                ((out, b"csv", b'{"start": -1}'), _native.E_ARGUMENT, "start: -1.0 is not a time in seconds >= 0"),
                ((out, b"csv", b'{"counts": 1}'), _native.E_ARGUMENT, "option 'counts' must be true or false"),
                ((out, b"csv", b'{"channels": [0, 2.5]}'), _native.E_ARGUMENT, "option 'channels' must be a channel list"),
                ((out, b"npy", b'{"source": 1, "counts": true}'), _native.E_TYPE, "source 1 is stored as float64"),
            ]
            for args, status, message in cases:
                with self.subTest(args):
                    got, error, report = call(*args)
                    self.assertEqual(got, status, error)
                    self.assertIn(message, error)
                    self.assertIsNone(report)
            self.assertFalse(os.path.exists(out))
            status, error, report = call(out, b"csv", b'{"source": 2, "channels": [7, 4], "duration": 0.1}')
            self.assertEqual(status, _native.OK, error)
            self.assertEqual(json.loads(report), {"path": out.decode(), "format": "csv", "warnings": [],
                                                  "sources": [{"source": 2, "channels": 2, "samples": 200}]})
            cli("export", self.capture, "--format", "csv", "--source", 2, "--channels", "7,4", "--duration", 0.1,
                "--out", self.path("c-cli.csv"))
            self.assertEqual(read(out), read(self.path("c-cli.csv")))
            self.assertEqual(call(out, b"csv", b'{"replace": true}', want_report=False)[0], _native.OK)
        finally:
            lib.tributary_capture_close(handle)
        self.assertEqual(lib.tributary_capture_export(handle, out, b"csv", None, None), _native.E_HANDLE)


if __name__ == "__main__":
    unittest.main()

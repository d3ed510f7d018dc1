"""`tributary process` against scipy: an imported NPY filtered (sosfilt of the same butter design),
notched (lfilter of iirnotch), decimated (decimate(x, q, ftype='iir', zero_phase=False)) and all
three chained, frame by frame, equal to scipy on the whole signal; a capture with a gap keeps it,
with its times and the new rate; bad specs are usage errors."""
import os
import subprocess
import unittest

import numpy as np
from scipy import signal

from test_formats import test_capture
from tool_process import TRIBUTARY, ScratchDirectory, import_noisy_tones, tool

RATE = 10_000.0


def run(*args):
    return tool(*args).stdout


class ProcessTests(ScratchDirectory, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # 3 channels: tones at 50, 400 and 3000 Hz plus noise (20 011 samples: frames of 4096 and an odd tail).
        cls.x = import_noisy_tones(cls.path("in.npy"), cls.path("in.tcap"), 20_011, RATE, seed=42)


    def process(self, name, *options):
        out = self.path(name + ".tcap")
        run("process", self.path("in.tcap"), "--out", out, *options)
        run("export", out, "--format", "npy", "--out", self.path(name + ".npy"))
        return np.load(self.path(name + ".npy"))

    def assertClose(self, got, want):
        self.assertEqual(got.shape, want.shape)
        self.assertEqual(got.dtype, np.float64)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.max(np.abs(want)))

    def test_filter_equals_sosfilt(self):
        sos = signal.butter(8, 1000, "lowpass", fs=RATE, output="sos")
        self.assertClose(self.process("lp", "--filter", "butter:8:lowpass:1000"), signal.sosfilt(sos, self.x, axis=1))
        sos = signal.butter(4, [10, 200], "bandpass", fs=RATE, output="sos")
        self.assertClose(self.process("bp", "--filter", "butter:4:bandpass:10-200"), signal.sosfilt(sos, self.x, axis=1))
        sos = signal.cheby1(6, 1, 50, "highpass", fs=RATE, output="sos")
        self.assertClose(self.process("hp", "--filter", "cheby1:6:highpass:50:rp=1"), signal.sosfilt(sos, self.x, axis=1))

    def test_notch_equals_lfilter(self):
        b, a = signal.iirnotch(50, 30, fs=RATE)
        self.assertClose(self.process("notch", "--notch", "50:30"), signal.lfilter(b, a, self.x, axis=1))

    def test_decimate_equals_scipy_and_divides_the_rate(self):
        got = self.process("dec", "--decimate", "10")
        self.assertClose(got, signal.decimate(self.x, 10, ftype="iir", zero_phase=False, axis=1))
        info = run("inspect", self.path("dec.tcap"))
        self.assertIn("1000", info)
        self.assertNotIn("10000", info)

    def test_resample_equals_resample_poly(self):
        for up, down in [(3, 2), (1, 4), (5, 7)]:
            with self.subTest(up=up, down=down):
                got = self.process(f"rs{up}-{down}", "--resample", f"{up}/{down}")
                self.assertClose(got, signal.resample_poly(self.x, up, down, axis=1))
        sos = signal.butter(8, 1000, "lowpass", fs=RATE, output="sos")
        self.assertClose(self.process("lp-rs", "--filter", "butter:8:lowpass:1000", "--resample", "2/5"),
                         signal.resample_poly(signal.sosfilt(sos, self.x, axis=1), 2, 5, axis=1))
        info = run("inspect", self.path("lp-rs.tcap"))
        self.assertIn("4000", info)

    def test_filter_notch_decimate_chained(self):
        sos = signal.butter(8, 1000, "lowpass", fs=RATE, output="sos")
        b, a = signal.iirnotch(50, 30, fs=RATE)
        want = signal.decimate(signal.lfilter(b, a, signal.sosfilt(sos, self.x, axis=1), axis=1), 7, ftype="iir", zero_phase=False, axis=1)
        # the options in another order: the chain is always filter, notch, decimate
        self.assertClose(self.process("chain", "--decimate", "7", "--notch", "50:30", "--filter", "butter:8:lowpass:1000"), want)

    def test_a_gap_restarts_the_filters_and_stays_a_gap_with_its_times(self):
        data, expected = test_capture()
        with open(self.path("gap.tcap"), "wb") as f:
            f.write(data)
        out = self.path("gap-out.tcap")
        run("process", self.path("gap.tcap"), "--out", out, "--filter", "butter:4:lowpass:100", "--decimate", "10")
        sos = signal.butter(4, 100, fs=1000.0, output="sos")
        # source 1: samples 0-499 and 600-999 (block 5 lost): each part filtered from rest.
        x = expected["f64"]
        want = np.concatenate([signal.decimate(signal.sosfilt(sos, part, axis=1), 10, ftype="iir", zero_phase=False, axis=1)
                               for part in (x[:, :500], x[:, 500:])], axis=1)
        run("export", out, "--format", "npy", "--source", "1", "--out", self.path("gap1.npy"))
        self.assertClose(np.load(self.path("gap1.npy")), want)
        # the times: 0.00-0.49 s, then 0.60-0.99 s, every 10 ms (the output rate is 100 Hz)
        run("export", out, "--format", "csv", "--source", "1", "--time-column", "--out", self.path("gap1.csv"))
        times = np.loadtxt(self.path("gap1.csv"), delimiter=",", skiprows=1)[:, 0]
        np.testing.assert_allclose(times, np.concatenate([np.arange(50), 60 + np.arange(40)]) / 100.0, atol=1e-9)
        # without --decimate the gap is one too: each part filtered from rest, the times kept
        run("process", self.path("gap.tcap"), "--out", self.path("gap-f.tcap"), "--filter", "butter:4:lowpass:100")
        run("export", self.path("gap-f.tcap"), "--format", "npy", "--source", "1", "--out", self.path("gapf.npy"))
        self.assertClose(np.load(self.path("gapf.npy")),
                         np.concatenate([signal.sosfilt(sos, x[:, :500], axis=1), signal.sosfilt(sos, x[:, 500:], axis=1)], axis=1))
        # source 2, int16 counts at 2000 Hz: filtered as physical values into float64, at 200 Hz
        sos2 = signal.butter(4, 100, fs=2000.0, output="sos")
        run("export", out, "--format", "npy", "--source", "2", "--out", self.path("gap2.npy"))
        self.assertClose(np.load(self.path("gap2.npy")),
                         signal.decimate(signal.sosfilt(sos2, expected["physical2"], axis=1), 10, ftype="iir", zero_phase=False, axis=1))
        first = run("export", out, "--format", "csv", "--source", "2", "--time-column", "--out", self.path("gap2.csv"))
        self.assertIn("source 2", first)
        times2 = np.loadtxt(self.path("gap2.csv"), delimiter=",", skiprows=1)[:, 0]
        np.testing.assert_allclose(times2, np.arange(100) / 200.0, atol=1e-9)
        # resampled: each part by resample_poly (its zeros beyond both ends), the times from each part's start
        run("process", self.path("gap.tcap"), "--out", self.path("gap-rs.tcap"), "--resample", "1/4", "--source", "1")
        run("export", self.path("gap-rs.tcap"), "--format", "npy", "--source", "1", "--out", self.path("gaprs.npy"))
        self.assertClose(np.load(self.path("gaprs.npy")),
                         np.concatenate([signal.resample_poly(x[:, :500], 1, 4, axis=1), signal.resample_poly(x[:, 500:], 1, 4, axis=1)], axis=1))
        run("export", self.path("gap-rs.tcap"), "--format", "csv", "--source", "1", "--time-column", "--out", self.path("gaprs.csv"))
        times = np.loadtxt(self.path("gaprs.csv"), delimiter=",", skiprows=1)[:, 0]
        np.testing.assert_allclose(times, np.concatenate([np.arange(125), 150 + np.arange(100)]) / 250.0, atol=1e-9)
        # --source 1: source 2 copied as it was (int16 counts, 2000 Hz)
        run("process", self.path("gap.tcap"), "--out", self.path("only1.tcap"), "--decimate", "10", "--source", "1")
        run("export", self.path("only1.tcap"), "--format", "npy", "--source", "2", "--counts", "--out", self.path("only2.npy"))
        np.testing.assert_array_equal(np.load(self.path("only2.npy")), expected["counts"])

    def test_bad_specs_are_usage_errors(self):
        cases = [
            (["--filter", "butter:8:lowpass"], "--filter 'butter:8:lowpass'"),
            (["--filter", "butter:0:lowpass:100"], "order '0'"),
            (["--filter", "butter:99999999999999999999:lowpass:100"], "order"),
            (["--filter", "butter:4:sideways:100"], "band 'sideways'"),
            (["--filter", "butter:4:bandpass:100"], "two frequencies"),
            (["--filter", "butter:4:bandpass:200-100"], "F1 must be below F2"),
            (["--filter", "butter:4:lowpass:0"], "frequency '0'"),
            (["--filter", "butter:4:lowpass:-5"], "lowpass takes one frequency F"),
            (["--filter", "butter:4:lowpass:nan"], "frequency 'nan'"),
            (["--filter", "cheby1:4:lowpass:100"], "needs rp=DB"),
            (["--filter", "cheby1:4:lowpass:100:rp=0"], "rp '0'"),
            (["--filter", "butter:4:lowpass:100:rp=1"], "takes no rp"),
            (["--filter", "sinc:4:lowpass:100"], "family 'sinc'"),
            (["--notch", "50"], "--notch '50'"),
            (["--notch", "50:inf"], "Q 'inf'"),
            (["--decimate", "1"], "--decimate"),
            (["--decimate", "1e3"], "--decimate"),
            (["--resample", "3"], "--resample '3'"),
            (["--resample", "0/2"], "--resample '0/2'"),
            (["--resample", "4/4"], "must change the rate"),
            (["--resample", "3/2", "--decimate", "2"], "not both"),
            ([], "at least one of --filter, --notch, --decimate and --resample"),
        ]
        for options, text in cases:
            with self.subTest(options=options):
                result = subprocess.run([TRIBUTARY, "process", self.path("in.tcap"), "--out", self.path("bad.tcap"), *options],
                                        capture_output=True, text=True)
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertIn(text, result.stderr)
                self.assertFalse(os.path.exists(self.path("bad.tcap")))
        # a frequency at or above half the rate of the data: an error naming the option, nothing written
        result = subprocess.run([TRIBUTARY, "process", self.path("in.tcap"), "--out", self.path("bad.tcap"), "--filter",
                                 "butter:4:lowpass:5000"], capture_output=True, text=True)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("--filter 'butter:4:lowpass:5000': every frequency must be below half the rate, 5000.0 Hz", result.stderr)
        self.assertFalse(os.path.exists(self.path("bad.tcap")))

    def test_other_formats_are_imported_then_processed(self):
        """An NPY (with --rate and --start-time), a WAV and an HDF5 file processed directly give the same
        capture contents as `import` then `process`; the temporary import beside OUT is removed; import's
        options are refused on a capture and a missing --rate for NPY is a usage error."""
        sos = signal.butter(8, 1000, "lowpass", fs=RATE, output="sos")
        out = self.path("direct.tcap")
        run("process", self.path("in.npy"), "--rate", str(RATE), "--start-time", "1764489600", "--out", out,
            "--filter", "butter:8:lowpass:1000")
        run("export", out, "--format", "npy", "--out", self.path("direct.npy"))
        self.assertClose(np.load(self.path("direct.npy")), signal.sosfilt(sos, self.x, axis=1))
        self.process("via-import", "--filter", "butter:8:lowpass:1000")
        for name in ("direct", "via-import"):
            run("export", self.path(name + ".tcap"), "--format", "csv", "--time-column", "--out", self.path(name + ".csv"))
        with open(self.path("direct.csv")) as direct, open(self.path("via-import.csv")) as via_import:
            self.assertEqual(direct.read(), via_import.read())
        self.assertEqual([n for n in os.listdir(self.directory) if n.startswith(".tributary-process")], [])
        # A 16-bit WAV carries its rate: counts scaled by 1/32768, then decimated as scipy decimates.
        from scipy.io import wavfile
        pcm = (self.x[:2].T / 4 * 32767).astype(np.int16)
        wavfile.write(self.path("in.wav"), int(RATE), pcm)
        run("process", self.path("in.wav"), "--out", self.path("wav.tcap"), "--decimate", "5")
        run("export", self.path("wav.tcap"), "--format", "npy", "--out", self.path("wav.npy"))
        self.assertClose(np.load(self.path("wav.npy")), signal.decimate(pcm.T / 32768.0, 5, ftype="iir", zero_phase=False, axis=1))
        # HDF5: the dataset's sample_rate attribute gives the rate.
        import h5py
        with h5py.File(self.path("in.h5"), "w") as f:
            f.create_dataset("daq", data=self.x).attrs["sample_rate"] = RATE
        run("process", self.path("in.h5"), "--out", self.path("h5.tcap"), "--notch", "50:30")
        run("export", self.path("h5.tcap"), "--format", "npy", "--out", self.path("h5.npy"))
        b, a = signal.iirnotch(50, 30, fs=RATE)
        self.assertClose(np.load(self.path("h5.npy")), signal.lfilter(b, a, self.x, axis=1))
        for args, status, text in [
            ([self.path("in.tcap"), "--rate", "100"], 2, "apply to an IN that is not a capture"),
            ([self.path("in.npy")], 2, "missing --rate HZ"),
            ([self.path("in.h5"), "--start-time", "0"], 2, "--start-time applies to NPY, WAV and CSV files"),
            ([self.path("nothing.npy"), "--rate", "100"], 1, "nothing.npy"),
        ]:
            with self.subTest(args=args):
                result = subprocess.run([TRIBUTARY, "process", *args, "--out", self.path("bad.tcap"), "--decimate", "2"],
                                        capture_output=True, text=True)
                self.assertEqual(result.returncode, status, result.stderr)
                self.assertIn(text, result.stderr)
                self.assertFalse(os.path.exists(self.path("bad.tcap")))
                self.assertEqual([n for n in os.listdir(self.directory) if n.startswith(".tributary-process")], [])


if __name__ == "__main__":
    unittest.main()

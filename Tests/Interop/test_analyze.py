"""Interop tests of `tributary analyze` against numpy and scipy.

Runs the release binary named by the environment variable TRIBUTARY on NPY files written by numpy
and compares its JSON output with numpy statistics and scipy.signal.welch.
Tolerances: stats and Welch 1e-9 relative (Welch on a tone: 1e-9 of the PSD's maximum absolute,
because bins 200 dB below the peak hold only FFT rounding); measurements as in the acceptance criteria.
"""
import json
import subprocess
import unittest

import numpy as np
from scipy import signal

from tool_process import TRIBUTARY as BIN, ScratchDirectory, analyze_json as run_json, tool


def run(*args, expect=0):
    return tool("analyze", *args, expect=expect)


class AnalyzeInterop(ScratchDirectory, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(1234)
        cls.random = rng.normal(0.3, 2.0, size=(4, 20_000))
        cls.random[2] += 1e6  # a large offset: the one-pass statistics must stay stable
        cls.random_path = cls.path("random.npy")
        np.save(cls.random_path, cls.random)
        cls.fs = 48_000.0
        t = np.arange(48_000) / cls.fs
        cls.tone = np.stack([
            0.8 * np.cos(2 * np.pi * 1000.3 * t + 0.4) + 0.01 * np.cos(2 * np.pi * 2000.6 * t) + 0.005 * np.cos(2 * np.pi * 3000.9 * t),
            0.5 * np.sin(2 * np.pi * 997.0 * t) + rng.normal(0, 1e-3, t.size),
        ])
        cls.tone_path = cls.path("tone.npy")
        np.save(cls.tone_path, cls.tone)

    def assert_close(self, actual, expected, rtol, atol=0.0, what=""):
        actual = np.asarray(actual, dtype=float)
        expected = np.asarray(expected, dtype=float)
        self.assertEqual(actual.shape, expected.shape, what)
        err = np.abs(actual - expected)
        bound = rtol * np.abs(expected) + atol
        worst = np.argmax(err - bound) if err.size else 0
        self.assertTrue(np.all(err <= bound), f"{what}: worst index {worst}: {actual.flat[worst]!r} vs {expected.flat[worst]!r}")

    def test_stats_equal_numpy(self):
        [doc] = run_json(self.random_path, "--stats")
        self.assertEqual(doc["file"], self.random_path)
        [source] = doc["sources"]
        self.assertEqual(source["id"], 1)
        self.assertEqual(len(source["channels"]), 4)
        for ch in source["channels"]:
            x = self.random[ch["index"]]
            s = ch["stats"]
            self.assertEqual(s["count"], x.size)
            self.assertEqual(s["min"], x.min())
            self.assertEqual(s["max"], x.max())
            for key, value in [("mean", x.mean()), ("std", x.std()), ("std_sample", x.std(ddof=1)),
                               ("rms", np.sqrt(np.mean(x * x))), ("peak_to_peak", np.ptp(x))]:
                self.assert_close(s[key], value, 1e-9, what=f"ch {ch['index']} {key}")

    def test_stats_float32_int16_and_1d(self):
        for dtype in (np.float32, np.int16):
            data = (self.random[:2] * 100).astype(dtype)
            p = self.path(f"d_{np.dtype(dtype).name}.npy")
            np.save(p, data)
            [doc] = run_json(p, "--stats")
            for ch in doc["sources"][0]["channels"]:
                x = data[ch["index"]].astype(np.float64)
                self.assert_close(ch["stats"]["mean"], x.mean(), 1e-9, what=f"{dtype} mean")
                self.assert_close(ch["stats"]["std"], x.std(), 1e-9, what=f"{dtype} std")
        p = self.path("one.npy")
        np.save(p, self.random[0])
        [doc] = run_json(p)
        self.assertEqual(len(doc["sources"][0]["channels"]), 1)
        self.assert_close(doc["sources"][0]["channels"][0]["stats"]["std"], self.random[0].std(), 1e-9)

    def test_fortran_order(self):
        p = self.path("fortran.npy")
        np.save(p, np.asfortranarray(self.random[:3, :1000]))
        [doc] = run_json(p, "--stats")
        for ch in doc["sources"][0]["channels"]:
            self.assert_close(ch["stats"]["mean"], self.random[ch["index"], :1000].mean(), 1e-12)

    def test_welch_defaults_equal_scipy(self):
        for nperseg in (256, 1000, 4096):
            [doc] = run_json(self.random_path, "--welch", nperseg, "--rate", 1000)
            for ch in doc["sources"][0]["channels"]:
                f, p = signal.welch(self.random[ch["index"]], fs=1000, nperseg=nperseg)
                self.assert_close(ch["welch"]["frequencies"], f, 1e-12, what=f"nperseg {nperseg} frequencies")
                self.assert_close(ch["welch"]["psd"], p, 1e-9, what=f"nperseg {nperseg} ch {ch['index']} psd")

    def test_welch_options_equal_scipy(self):
        cases = [
            (["--overlap", "0.75", "--window", "blackman-harris", "--detrend", "linear"], dict(noverlap=768, window="blackmanharris", detrend="linear")),
            (["--overlap", "0", "--window", "hamming", "--detrend", "none", "--scaling", "spectrum"], dict(noverlap=0, window="hamming", detrend=False, scaling="spectrum")),
            (["--average", "median", "--window", "flattop"], dict(average="median", window="flattop")),
            (["--window", "blackman", "--average", "median"], dict(window="blackman", average="median")),
            (["--window", "rectangular"], dict(window="boxcar")),
        ]
        for options, kwargs in cases:
            [doc] = run_json(self.random_path, "--welch", 1024, "--rate", 2.5, "--channels", "0,2", *options)
            chans = doc["sources"][0]["channels"]
            self.assertEqual([c["index"] for c in chans], [0, 2])
            for ch in chans:
                f, p = signal.welch(self.random[ch["index"]], fs=2.5, nperseg=1024, **kwargs)
                # With a rectangular window and constant detrend the DC bin is pure rounding (~1e-31):
                # such bins are compared with an absolute floor of 1e-15 of the maximum.
                self.assert_close(ch["welch"]["psd"], p, 1e-9, atol=1e-15 * p.max(), what=f"{options} ch {ch['index']}")

    def test_welch_tone_equal_scipy(self):
        [doc] = run_json(self.tone_path, "--welch", 4096, "--rate", self.fs)
        for ch in doc["sources"][0]["channels"]:
            f, p = signal.welch(self.tone[ch["index"]], fs=self.fs, nperseg=4096)
            self.assert_close(ch["welch"]["psd"], p, 1e-9, atol=1e-9 * p.max(), what="tone psd")

    def test_welch_float32_close_to_scipy(self):
        p32 = self.path("f32.npy")
        data = self.random[:2].astype(np.float32)
        np.save(p32, data)
        [doc] = run_json(p32, "--welch", 512)
        for ch in doc["sources"][0]["channels"]:
            f, p = signal.welch(data[ch["index"]].astype(np.float64), nperseg=512)
            # Transformed in single precision: float32 rounding of the data and the FFT.
            self.assert_close(ch["welch"]["psd"], p, 1e-4, atol=1e-6 * p.max(), what="float32 psd")

    def test_spectrum_equals_numpy(self):
        n = 4096
        [doc] = run_json(self.tone_path, "--spectrum", n, "--rate", self.fs)
        for ch in doc["sources"][0]["channels"]:
            x = self.tone[ch["index"]]
            w = signal.get_window("hann", n)
            blocks = x[: (x.size // n) * n].reshape(-1, n)
            mag = np.abs(np.fft.rfft(blocks * w, axis=1)) / w.sum()
            amp = mag * np.sqrt(2)
            amp[:, 0] = mag[:, 0]
            amp[:, -1] = mag[:, -1]
            expected = np.sqrt(np.mean(amp ** 2, axis=0))
            self.assertEqual(ch["spectrum"]["averages"], blocks.shape[0])
            self.assert_close(ch["spectrum"]["amplitude_rms"], expected, 1e-9, atol=1e-12 * expected.max())

    def test_measurements(self):
        [doc] = run_json(self.tone_path, "--rate", self.fs, "--measure", "all", "--harmonics", "5")
        ch0, ch1 = doc["sources"][0]["channels"]
        self.assertLess(abs(ch0["tone"]["frequency"] - 1000.3), 0.01)
        self.assertLess(abs(ch0["tone"]["amplitude"] - 0.8) / 0.8, 1e-4)
        self.assertLess(abs(ch0["tone"]["phase_deg"] - np.degrees(0.4)), 0.1)
        expected_thd = np.hypot(0.01, 0.005) / 0.8
        self.assertLess(abs(ch0["thd"] - expected_thd) / expected_thd, 1e-3)
        self.assertLess(abs(ch1["tone"]["frequency"] - 997.0), 0.01)
        # SNR of a 0.5-amplitude sine in 1e-3 RMS white noise: 10 log10(0.125 / 1e-6) = 50.97 dB.
        self.assertLess(abs(ch1["snr_db"] - 10 * np.log10(0.125 / 1e-6)), 0.3)
        for key in ("thd_n_db", "sinad_db", "enob", "sfdr_db"):
            self.assertIsInstance(ch1[key], float)

    def test_enob_of_quantised_sine(self):
        fs, n, bits = 1.0, 8192, 12
        cycles = 1021  # coprime with n: coherent, every code exercised
        t = np.arange(n)
        lsb = 2.0 / 2 ** bits
        x = (1 - lsb) * np.sin(2 * np.pi * cycles * t / n)
        q = np.clip(np.round(x / lsb), -(2 ** (bits - 1)), 2 ** (bits - 1) - 1) * lsb
        p = self.path("adc.npy")
        np.save(p, q[np.newaxis, :])
        [doc] = run_json(p, "--rate", fs, "--measure", "enob,sinad")
        enob = doc["sources"][0]["channels"][0]["enob"]
        self.assertLess(abs(enob - bits), 0.15, f"ENOB {enob}")

    def test_json_has_no_bare_nan(self):
        p = self.path("const.npy")
        np.save(p, np.ones((1, 1)))
        out = run(p, "--stats", "--json").stdout
        self.assertNotIn("nan", out.lower())
        self.assertNotIn("inf", out.lower())
        doc = json.loads(out)
        self.assertIsNone(doc["sources"][0]["channels"][0]["stats"]["std_sample"])

    def test_numbers_round_trip(self):
        [doc] = run_json(self.random_path, "--stats", "--channels", "1")
        self.assertEqual(doc["sources"][0]["channels"][0]["stats"]["max"], self.random[1].max())

    def test_table_and_plot(self):
        svg = self.path("plot.svg")
        out = run(self.tone_path, "--welch", 1024, "--rate", self.fs, "--stats", "--measure", "tone,thd", "--plot", svg).stdout
        self.assertIn("Welch", out)
        self.assertIn("THD", out)
        with open(svg) as f:
            text = f.read()
        self.assertTrue(text.startswith("<svg"))
        self.assertIn("Frequency (Hz)", text)
        self.assertEqual(text.count("<polyline"), 2)
        import xml.dom.minidom
        xml.dom.minidom.parseString(text)  # well-formed

    def test_errors(self):
        bad = self.path("bad.npy")
        np.save(bad, np.zeros((2, 10), dtype=np.int64))
        err = run(bad, expect=1).stderr
        self.assertIn("unsupported dtype '<i8' (supported: <f8, <f4, <i2, <i4)", err)
        self.assertIn(bad, err)
        trunc = self.path("trunc.npy")
        with open(self.random_path, "rb") as src, open(trunc, "wb") as dst:
            dst.write(src.read()[:1000])
        err = run(trunc, expect=1).stderr
        self.assertIn("truncated data at byte 1000", err)
        err = run(self.random_path, "--channels", "0,x", expect=2).stderr
        self.assertIn("character 3", err)
        err = run(self.random_path, "--channels", "0-9", expect=1).stderr
        self.assertIn("channel 4 is not in source 1 (4 channels)", err)
        run(self.random_path, "--welch", 0, expect=2)

    def test_captures_analyse_like_the_npy_they_were_imported_from(self):
        capture = self.path("random.tcap")
        subprocess.run([BIN, "import", self.random_path, "--rate", "1000", "--out", capture],
                       check=True, capture_output=True, timeout=120)
        args = ("--rate", 1000, "--stats", "--welch", 256, "--measure", "tone,thd,sinad")
        [from_npy] = run_json(self.random_path, *args)
        [from_capture] = run_json(capture, *args)
        def drop_units(channels):
            return [{k: v for k, v in c.items() if k != "unit"} for c in channels]
        self.assertEqual(drop_units(from_capture["sources"][0]["channels"]), from_npy["sources"][0]["channels"])
        self.assertEqual(from_capture["warnings"], [])
        # A damaged capture is still analysed: the damaged chunk is skipped and named.
        with open(capture, "rb") as f:
            data = bytearray(f.read())
        data[len(data) // 2] ^= 0x40
        damaged = self.path("damaged.tcap")
        with open(damaged, "wb") as f:
            f.write(bytes(data))
        result = run(damaged, "--stats", "--json")
        report = json.loads(result.stdout)
        self.assertTrue(report["warnings"])
        self.assertIn("warning", result.stderr)
        total = from_npy["sources"][0]["channels"][0]["samples"]
        self.assertLess(report["sources"][0]["channels"][0]["samples"], total)

    def test_a_damaged_capture_is_named_as_damaged(self):
        # Not "no analog data": the damage with its byte offset, as inspect says it, and what to do.
        capture = self.path("damage-source.tcap")
        subprocess.run([BIN, "import", self.tone_path, "--rate", "48000", "--out", capture, "--force"], check=True, capture_output=True)
        with open(capture, "rb") as f:
            data = bytearray(f.read())
        torn = self.path("torn.tcap")
        with open(torn, "wb") as f:
            f.write(data[:len(data) // 2])
        flipped = self.path("flipped.tcap")
        data[200] ^= 0xFF  # inside the only chunk's payload: its CRC fails
        with open(flipped, "wb") as f:
            f.write(data)
        for path, damage in ((torn, "torn tail"), (flipped, "chunk payload CRC32C mismatch")):
            with self.subTest(path=path):
                err = run(path, expect=1).stderr
                self.assertIn(f"{path}: no analog data could be read; the file is damaged: damage at byte 64", err)
                self.assertIn(damage, err)
                self.assertIn(f"'tributary repair {path} --out REPAIRED.tcap'", err)
                inspected = subprocess.run([BIN, "inspect", path], capture_output=True, text=True, timeout=60).stdout
                self.assertIn("damage at byte 64", inspected)

    def test_many_files_in_parallel_survive_a_broken_one(self):
        broken = self.path("broken.npy")
        with open(self.random_path, "rb") as src, open(broken, "wb") as dst:
            dst.write(src.read()[:200])
        files = [self.random_path, broken, self.random_path, self.random_path]
        result = run(*files, "--stats", "--json", "--jobs", 2, expect=1)
        lines = [json.loads(line) for line in result.stdout.splitlines()]
        self.assertEqual([line["file"] for line in lines], files)  # input order, one line per file
        self.assertIn("error", lines[1])
        self.assertIn(broken, result.stderr)
        self.assertIn("1 of 4 files failed", result.stderr)
        first = lines[0]["sources"][0]["channels"]
        self.assertEqual(lines[2]["sources"][0]["channels"], first)
        self.assertEqual(lines[3]["sources"][0]["channels"], first)
        run(self.random_path, "--window", "nope", "--welch", 64, expect=2)


if __name__ == "__main__":
    unittest.main()

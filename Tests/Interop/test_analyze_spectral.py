"""Interop tests of `tributary analyze --spectrogram / --coherence / --transfer` against scipy.signal.

A capture made by `tributary import` from an NPY file (an input channel, a filtered copy with noise,
unrelated noise) is analysed by the release binary named by TRIBUTARY; its JSON arrays are compared
with scipy.signal.spectrogram, coherence, csd and welch on the same samples (1e-12 relative to each
array's largest value), and the plots, usage errors and the record limit's message are checked.
"""
import os
import unittest

import numpy as np
from scipy import signal

from tool_process import ScratchDirectory, analyze_json, tool as tributary

RATE = 2000.0




class AnalyzeSpectralInterop(ScratchDirectory, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(42)
        x = rng.standard_normal(30_001)  # an odd length
        b, a = signal.butter(4, 0.15)
        y = signal.lfilter(b, a, x) + 0.05 * rng.standard_normal(x.size)
        t = np.arange(x.size) / RATE
        chirp = signal.chirp(t, 10, t[-1], 900) + 0.01 * rng.standard_normal(x.size)
        cls.data = np.vstack([x, y, chirp])
        npy = os.path.join(cls.directory, "in.npy")
        np.save(npy, cls.data)
        cls.capture = os.path.join(cls.directory, "in.tcap")
        tributary("import", npy, "--rate", RATE, "--out", cls.capture)

    def close(self, got, want, rtol=1e-12):
        got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
        self.assertEqual(got.shape, want.shape)
        finite = np.isfinite(want)
        np.testing.assert_array_equal(np.isfinite(got), finite)
        self.assertLessEqual(np.max(np.abs(got[finite] - want[finite])) / np.max(np.abs(want[finite])), rtol)

    def channels(self, document):
        return {c["index"]: c for c in document["sources"][0]["channels"]}

    def test_spectrogram_equals_scipy(self):
        for args, kwargs in [((), dict(window='hann', nperseg=512)),
                             (("--overlap", "0.5", "--window", "hamming", "--detrend", "linear"),
                              dict(window='hamming', nperseg=512, noverlap=256, detrend='linear')),
                             (("--scaling", "spectrum", "--detrend", "none"), dict(window='hann', nperseg=512, scaling='spectrum', detrend=False))]:
            with self.subTest(args=args):
                channels = self.channels(analyze_json(self.capture, "--spectrogram", 512, *args)[0])
                for k in range(3):
                    f, t, sxx = signal.spectrogram(self.data[k], RATE, **kwargs)
                    s = channels[k]["spectrogram"]
                    self.close(s["frequencies"], f)
                    self.close(s["times"], t)
                    self.close(np.array(s["psd"]).T, sxx)

    def test_coherence_and_transfer_equal_scipy(self):
        for args, kwargs in [((), dict(nperseg=256)), (("--welch", 1024, "--overlap", "0.25", "--window", "blackman"),
                                                       dict(nperseg=1024, noverlap=256, window='blackman'))]:
            with self.subTest(args=args):
                coherence = self.channels(analyze_json(self.capture, "--coherence", 0, *args)[0])
                transfer = self.channels(analyze_json(self.capture, "--transfer", 0, *args)[0])
                self.assertNotIn("coherence", coherence[0])
                self.assertNotIn("transfer", transfer[0])
                x = self.data[0]
                for k in (1, 2):
                    y = self.data[k]
                    f, cxy = signal.coherence(x, y, RATE, **kwargs)
                    _, pxy = signal.csd(x, y, RATE, **kwargs)
                    _, pyx = signal.csd(y, x, RATE, **kwargs)
                    _, pxx = signal.welch(x, RATE, **kwargs)
                    _, pyy = signal.welch(y, RATE, **kwargs)
                    self.close(coherence[k]["coherence"]["frequencies"], f)
                    self.close(coherence[k]["coherence"]["coherence"], cxy)
                    tr = transfer[k]["transfer"]
                    self.assertEqual(tr["reference"], 0)
                    self.close(tr["coherence"], cxy)
                    for name, h in (("h1", pxy / pxx), ("h2", pyy / pyx)):
                        self.close(tr[name]["real"], h.real)
                        self.close(tr[name]["imag"], h.imag)
                        self.close(tr[name]["magnitude_db"], 20 * np.log10(np.abs(h)), rtol=1e-11)
                        # The phase of a real negative value (DC, Nyquist) is pi or -pi by the sign of a zero.
                        wrapped = np.angle(np.exp(1j * (np.array(tr[name]["phase_rad"]) - np.angle(h))))
                        self.assertLess(np.max(np.abs(wrapped)), 1e-11)
                # The filtered channel's H1 is the filter's response where the input is coherent.
                b, a = signal.butter(4, 0.15)
                _, h = signal.freqz(b, a, worN=np.array(transfer[1]["transfer"]["frequencies"]), fs=RATE)
                h1 = np.array(transfer[1]["transfer"]["h1"]["real"]) + 1j * np.array(transfer[1]["transfer"]["h1"]["imag"])
                band = np.abs(h) > 0.5
                # (to the bias of short segments: a 256-point window smears the steep skirt)
                self.assertLess(np.max(np.abs(h1[band] - h[band]) / np.abs(h[band])), 0.1)

    def test_text_and_plots(self):
        out = tributary("analyze", self.capture, "--transfer", 0).stdout
        self.assertIn("ch 1 vs ch 0", out)
        self.assertIn("|H1|", out)
        for args, marks in [(("--spectrogram", 256), ["Spectrogram", "Time (s)", "Frequency (Hz)", "PSD (dB"]),
                            (("--transfer", 0), ["Magnitude (dB)", "Phase (degrees)", "Coherence", "H2"]),
                            (("--coherence", 0, "--welch", 512), ["Coherence"])]:
            with self.subTest(args=args):
                svg = os.path.join(self.directory, "plot.svg")
                tributary("analyze", self.capture, *args, "--plot", svg)
                with open(svg) as f:
                    text = f.read()
                self.assertTrue(text.startswith("<svg"))
                for mark in marks:
                    self.assertIn(mark, text)

    def test_usage_errors(self):
        for args, message in [(("--coherence", 0, "--transfer", 1), "not both"), (("--transfer", -1), "--transfer"),
                              (("--spectrogram", 0), "--spectrogram"), (("--spectrogram", 64, "--plot", "x.svg", "--log-frequency"), "--log-frequency")]:
            with self.subTest(args=args):
                proc = tributary("analyze", self.capture, *args, expect=2)
                self.assertIn(message, proc.stderr)
        proc = tributary("analyze", self.capture, "--transfer", 7, expect=1)
        self.assertIn("reference channel", proc.stderr)


if __name__ == "__main__":
    unittest.main()

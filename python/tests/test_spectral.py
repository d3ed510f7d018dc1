"""tributary._spectral against scipy.signal 1.17: spectrogram, stft, istft, welch, csd, coherence and
the H1/H2 transfer-function estimates, on random and adversarial inputs (impulses, steps, DC,
near-Nyquist tones, odd lengths, several axes and shapes). Values agree to 1e-12 relative to the
largest value of each array; shapes and dtypes are scipy's. Misuse is a ValueError with a message."""
import unittest
import warnings

import numpy as np
import scipy.signal as ss

from tributary import _spectral as ts

RTOL = 1e-12


def signals(n=1000, seed=1):
    """Random, impulse, step, DC, near-Nyquist tone and a large offset: adversarial inputs."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    impulse = np.zeros(n)
    impulse[n // 3] = 1
    step = (t >= n // 2).astype(float)
    return {
        "random": rng.standard_normal(n),
        "impulse": impulse,
        "step": step,
        "dc": np.full(n, 3.25),
        "nyquist": np.cos(np.pi * 0.999 * t) + 1e-3 * rng.standard_normal(n),
        "offset": 1e6 + rng.standard_normal(n),
    }


class Close:
    def close(self, got, want, rtol=RTOL, what=""):
        got, want = np.asarray(got), np.asarray(want)
        self.assertEqual(got.shape, want.shape, what)
        self.assertEqual(got.dtype, want.dtype, what)
        if want.size == 0:
            return
        finite = np.isfinite(want)
        np.testing.assert_array_equal(np.isfinite(got), finite, what)
        scale = np.max(np.abs(want[finite])) if finite.any() else 0
        if scale == 0:
            np.testing.assert_array_equal(got, want, what)
            return
        error = np.max(np.abs(got[finite] - want[finite])) / scale
        self.assertLessEqual(error, rtol, f"{what}: relative error {error:.3g}")

    def same(self, got, want, rtol=RTOL, what=""):
        self.assertEqual(len(got), len(want), what)
        for k, (g, w) in enumerate(zip(got, want)):
            self.close(g, w, rtol, f"{what} [{k}]")


def linear_tolerance(names, c):
    """Linear detrending of a 1e6 offset leaves residuals whose rounding (eps x offset) differs between
    any two least-squares implementations (scipy's is an SVD): 1e-12 times that conditioning (1e6)."""
    return 1e-6 if c.get('detrend') == 'linear' and 'offset' in names else RTOL


def quiet(f, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*a, **k)


class TestSTFT(Close, unittest.TestCase):
    def test_stft_signals_and_parameters(self):
        cases = [dict(), dict(nperseg=64), dict(nperseg=63, noverlap=20, nfft=100), dict(nperseg=128, detrend='linear'),
                 dict(nperseg=50, detrend='constant', return_onesided=False), dict(nperseg=32, boundary=None, padded=False),
                 dict(nperseg=32, boundary='even'), dict(nperseg=33, boundary='odd', scaling='psd'),
                 dict(nperseg=40, boundary='constant', padded=False), dict(window='hamming', nperseg=48),
                 dict(window=('tukey', 0.3), nperseg=57), dict(window='blackmanharris', nperseg=31),
                 dict(window=np.random.default_rng(5).random(45), nperseg=45), dict(window='boxcar', nperseg=1, noverlap=0),
                 dict(window='flattop_symmetric', nperseg=64, noverlap=63)]
        for name, x in signals(999).items():
            for c in cases:
                with self.subTest(signal=name, **{k: str(v)[:20] for k, v in c.items()}):
                    self.same(quiet(ts.stft, x, 1234.5, **c), quiet(ss.stft, x, 1234.5, **c))

    def test_spectrogram_modes(self):
        for name, x in signals(777).items():
            for mode in ['psd', 'complex', 'magnitude', 'angle', 'phase']:
                for c in [dict(), dict(nperseg=100, scaling='spectrum'), dict(nperseg=64, nfft=99, return_onesided=False),
                          dict(nperseg=20, noverlap=5, detrend='linear'), dict(window='hann', detrend=False)]:
                    if name == 'dc' and c.get('detrend') == 'linear':
                        continue  # a line fitted to a constant leaves rounding noise alone, scipy's and ours
                    with self.subTest(signal=name, mode=mode, **{k: str(v) for k, v in c.items()}):
                        got, want = quiet(ts.spectrogram, x, 48000, mode=mode, **c), quiet(ss.spectrogram, x, 48000, mode=mode, **c)
                        # Angles of bins that are rounding noise (a DC signal's, an impulse's zeros) are arbitrary.
                        if mode in ('angle', 'phase') and name in ('dc', 'impulse', 'step'):
                            self.same(got[:2], want[:2])
                            continue
                        rtol = linear_tolerance([name], c)
                        if mode in ('angle', 'phase'):
                            # An angle's error is the value's error over its magnitude: next to the leakage of a
                            # 1e6 offset (not detrended) the rounding of any FFT is 1e6 eps.
                            rtol = 1e-8 if name == 'offset' else 1e-9 if mode == 'phase' else RTOL
                        self.same(got, want, rtol=rtol)

    def test_axes_shapes_dtypes(self):
        rng = np.random.default_rng(2)
        x = rng.standard_normal((3, 4, 301))
        for axis in (-1, 0, 1, 2, -2):
            y = np.moveaxis(x, -1, axis) if axis not in (-1, 2) else x
            with self.subTest(axis=axis):
                self.same(quiet(ts.stft, y, nperseg=40, axis=axis), quiet(ss.stft, y, nperseg=40, axis=axis))
                self.same(quiet(ts.spectrogram, y, nperseg=40, axis=axis), quiet(ss.spectrogram, y, nperseg=40, axis=axis))
                self.same(quiet(ts.spectrogram, y, nperseg=40, axis=axis, mode='phase'),
                          quiet(ss.spectrogram, y, nperseg=40, axis=axis, mode='phase'), rtol=1e-9)
        # Integer input is float64's; float32 is computed in double and returned in complex64.
        xi = rng.integers(-1000, 1000, 500)
        self.same(ts.stft(xi, nperseg=50), ss.stft(xi, nperseg=50))
        xf = rng.standard_normal(500).astype(np.float32)
        self.same(ts.stft(xf, nperseg=50), ss.stft(xf, nperseg=50), rtol=1e-6)
        self.same(ts.spectrogram(xf, nperseg=50), ss.spectrogram(xf, nperseg=50), rtol=1e-6)

    def test_complex_input(self):
        rng = np.random.default_rng(3)
        z = rng.standard_normal(600) + 1j * rng.standard_normal(600)
        self.same(quiet(ts.stft, z, nperseg=64), quiet(ss.stft, z, nperseg=64))
        self.same(quiet(ts.spectrogram, z, nperseg=64), quiet(ss.spectrogram, z, nperseg=64))
        self.same(quiet(ts.spectrogram, z, nperseg=64, detrend='linear', mode='magnitude'),
                  quiet(ss.spectrogram, z, nperseg=64, detrend='linear', mode='magnitude'))

    def test_detrend_function(self):
        x = signals(500)["random"]
        f = lambda d: d - np.median(d, axis=-1, keepdims=True)  # noqa: E731
        self.same(ts.spectrogram(x, nperseg=50, detrend=f), ss.spectrogram(x, nperseg=50, detrend=f))

    def test_short_input_reduces_nperseg_with_warning(self):
        x = signals(100)["random"]
        with self.assertWarns(UserWarning):
            got = ts.spectrogram(x)
        self.same(got, quiet(ss.spectrogram, x))

    def test_istft_round_trip_and_equal(self):
        rng = np.random.default_rng(4)
        for n, c in [(1000, dict(nperseg=64)), (999, dict(nperseg=63, noverlap=40)), (1024, dict(nperseg=128, nfft=200)),
                     (777, dict(window='hamming', nperseg=50, noverlap=25)), (512, dict(nperseg=32, scaling='psd'))]:
            x = rng.standard_normal(n)
            with self.subTest(n=n, **{k: str(v) for k, v in c.items()}):
                f, t, Z = ss.stft(x, **c)
                ic = {k: v for k, v in c.items() if k != 'n'}
                got, want = ts.istft(Z, **ic), ss.istft(Z, **ic)
                self.same(got, want)
                np.testing.assert_allclose(got[1][:n], x, atol=1e-12)
                # Our own stft's output inverts as scipy's does.
                self.same(ts.istft(ts.stft(x, **c)[2], **ic), want)
        # Two-sided, no boundary, several axes, a modified STFT (not an exact STFT).
        x = rng.standard_normal((2, 3, 400))
        _, _, Z = ss.stft(x, nperseg=40, return_onesided=False, axis=-1)
        Z = Z * rng.random(Z.shape)
        self.same(quiet(ts.istft, Z, nperseg=40, input_onesided=False), quiet(ss.istft, Z, nperseg=40, input_onesided=False))
        self.same(quiet(ts.istft, Z[..., :30, :], nperseg=30, nfft=35, input_onesided=False),
                  quiet(ss.istft, Z[..., :30, :], nperseg=30, nfft=35, input_onesided=False))
        _, _, Z = ss.stft(np.moveaxis(x, -1, 1), nperseg=40, axis=1)
        self.same(quiet(ts.istft, Z, nperseg=40, time_axis=-1, freq_axis=1),
                  quiet(ss.istft, Z, nperseg=40, time_axis=-1, freq_axis=1))
        self.same(quiet(ts.istft, Z, nperseg=40, freq_axis=1, boundary=False), quiet(ss.istft, Z, nperseg=40, freq_axis=1, boundary=False))
        Zt = np.swapaxes(Z, 1, 3)
        self.same(quiet(ts.istft, Zt, nperseg=40, time_axis=1, freq_axis=3),
                  quiet(ss.istft, Zt, nperseg=40, time_axis=1, freq_axis=3))
        # complex64 in, float32 out.
        _, _, Z = ss.stft(rng.standard_normal(300), nperseg=30)
        self.same(ts.istft(Z.astype(np.complex64), nperseg=30), ss.istft(Z.astype(np.complex64), nperseg=30), rtol=1e-6)

    def test_nola_warning(self):
        Z = ss.stft(np.ones(100), window='boxcar', nperseg=10, noverlap=0)[2]
        with self.assertWarns(UserWarning):
            ts.istft(Z, window=np.r_[np.zeros(5), np.ones(5)], nperseg=10, noverlap=0)


class TestCrossSpectra(Close, unittest.TestCase):
    def pairs(self, n=2000):
        s = signals(n, seed=7)
        rng = np.random.default_rng(8)
        yield "random", s["random"], rng.standard_normal(n)
        yield "impulse", s["impulse"], s["random"]
        yield "dc", s["dc"], s["nyquist"]
        yield "step", s["step"], s["offset"]
        yield "nyquist", s["nyquist"], s["impulse"]

    CASES = [dict(), dict(nperseg=100), dict(nperseg=99, noverlap=10, nfft=150), dict(nperseg=64, detrend='linear'),
             dict(nperseg=64, detrend=False, scaling='spectrum'), dict(nperseg=64, average='median'),
             dict(nperseg=65, average='median', return_onesided=False), dict(window=('tukey', 0.25), nperseg=80),
             dict(window=np.hanning(70)), dict(window='hann', nperseg=3000)]

    def test_csd_welch(self):
        for name, x, y in self.pairs():
            for c in self.CASES:
                if name == 'dc' and c.get('detrend') == 'linear':
                    continue  # rounding noise alone
                with self.subTest(pair=name, **{k: str(v)[:20] for k, v in c.items()}):
                    rtol = linear_tolerance(['offset'] if name == 'step' else [], c)
                    self.same(quiet(ts.csd, x, y, 1000.0, **c), quiet(ss.csd, x, y, 1000.0, **c), rtol)
                    self.same(quiet(ts.csd, x, x, 1000.0, **c), quiet(ss.csd, x, x, 1000.0, **c))
                    self.same(quiet(ts.welch, y, 1000.0, **c), quiet(ss.welch, y, 1000.0, **c), rtol)

    def test_coherence(self):
        for name, x, y in self.pairs():
            for c in [dict(), dict(nperseg=100), dict(nperseg=99, noverlap=10, nfft=150), dict(nperseg=64, detrend='linear')]:
                with self.subTest(pair=name, **{k: str(v) for k, v in c.items()}):
                    got, want = quiet(ts.coherence, x, y, 10.0, **c), quiet(ss.coherence, x, y, 10.0, **c)
                    # A DC or impulse channel's coherence at bins of rounding noise is 0/0-like: compare where defined.
                    if name in ("dc", "step"):
                        self.close(got[0], want[0])
                        continue
                    self.same(got, want)

    def test_shapes_axes_broadcast_lengths_dtypes(self):
        rng = np.random.default_rng(9)
        x = rng.standard_normal((2, 1, 700))
        y = rng.standard_normal((3, 700))
        self.same(quiet(ts.csd, x, y, nperseg=64), quiet(ss.csd, x, y, nperseg=64))
        self.same(quiet(ts.coherence, x, y, nperseg=64), quiet(ss.coherence, x, y, nperseg=64))
        # Equal dimensions (coherence's one-pass path), broadcast and along another axis.
        y3 = rng.standard_normal((1, 3, 700))
        self.same(quiet(ts.coherence, x, y3, nperseg=64), quiet(ss.coherence, x, y3, nperseg=64))
        self.same(quiet(ts.coherence, np.moveaxis(x, -1, 0), np.moveaxis(y3, -1, 0), nperseg=64, axis=0),
                  quiet(ss.coherence, np.moveaxis(x, -1, 0), np.moveaxis(y3, -1, 0), nperseg=64, axis=0))
        with self.assertRaises(ValueError):
            ts.coherence(rng.standard_normal((2, 700)), rng.standard_normal((3, 700)), nperseg=64)
        # (scipy's csd cannot broadcast outer shapes along axis=0: equal shapes there.)
        xa, ya = np.moveaxis(x, -1, 0), rng.standard_normal((700, 2, 3))
        self.same(quiet(ts.csd, xa, ya, nperseg=64, axis=0), quiet(ss.csd, xa, ya, nperseg=64, axis=0))
        self.same(quiet(ts.welch, xa, nperseg=64, axis=0), quiet(ss.welch, xa, nperseg=64, axis=0))
        # Different lengths: the shorter one is zero-padded.
        a, b = rng.standard_normal(500), rng.standard_normal(433)
        self.same(quiet(ts.csd, a, b, nperseg=64), quiet(ss.csd, a, b, nperseg=64))
        self.same(quiet(ts.csd, b, a, nperseg=64), quiet(ss.csd, b, a, nperseg=64))
        # Complex and float32 inputs.
        z = rng.standard_normal(500) + 1j * rng.standard_normal(500)
        self.same(quiet(ts.csd, z, a, nperseg=64), quiet(ss.csd, z, a, nperseg=64))
        self.same(quiet(ts.csd, a, z, nperseg=64, return_onesided=False), quiet(ss.csd, a, z, nperseg=64, return_onesided=False))
        self.same(quiet(ts.csd, z, a, nperseg=64, average='median'), quiet(ss.csd, z, a, nperseg=64, average='median'))
        self.same(quiet(ts.welch, z, nperseg=64), quiet(ss.welch, z, nperseg=64))
        f32 = a.astype(np.float32)
        self.same(ts.csd(f32, f32 * 2, nperseg=64), ss.csd(f32, f32 * 2, nperseg=64), rtol=1e-6)
        self.same(ts.coherence(f32, b.astype(np.float32)[:500] if False else f32[::-1].copy(), nperseg=64),
                  ss.coherence(f32, f32[::-1].copy(), nperseg=64), rtol=1e-5)
        # Empty input: scipy's empty results.
        self.same(ts.csd(np.zeros((3, 0)), np.zeros((3, 0))), ss.csd(np.zeros((3, 0)), np.zeros((3, 0))))

    def test_detrend_function(self):
        rng = np.random.default_rng(10)
        x, y = rng.standard_normal(600), rng.standard_normal(600)
        f = lambda d: d - d[..., :1]  # noqa: E731
        self.same(ts.csd(x, y, nperseg=64, detrend=f), ss.csd(x, y, nperseg=64, detrend=f))


class TestTransfer(Close, unittest.TestCase):
    def test_h1_h2_equal_scipy_formulas(self):
        rng = np.random.default_rng(11)
        x = rng.standard_normal(20000)
        b, a = ss.butter(4, 0.2)
        y = np.vstack([ss.lfilter(b, a, x) + 0.1 * rng.standard_normal(x.size), ss.lfilter([1, -0.5], [1], x)])
        for c in [dict(), dict(nperseg=512), dict(nperseg=300, noverlap=100, nfft=512, detrend='linear'), dict(average='median')]:
            with self.subTest(**{k: str(v) for k, v in c.items()}):
                f, pxy = ss.csd(x, y, 100.0, **c)
                _, pyx = ss.csd(y, x, 100.0, **c)
                _, pxx = ss.welch(x, 100.0, **c)
                _, pyy = ss.welch(y, 100.0, **c)
                _, cxy = ss.coherence(x, y, 100.0, **{k: v for k, v in c.items() if k != 'average'})
                f1, h1, c1 = ts.transfer(x, y, 100.0, estimator='H1', **c)
                f2, h2, c2 = ts.transfer(x, y, 100.0, estimator='H2', **c)
                self.close(f1, f)
                self.close(f2, f)
                self.close(h1, pxy / pxx)
                self.close(h2, pyy / pyx)
                self.close(c1, np.abs(pxy) ** 2 / pxx / pyy)
                self.close(c2, c1)
                if 'average' not in c:
                    self.close(c1, cxy)

    def test_known_filter_against_freqz(self):
        rng = np.random.default_rng(12)
        x = rng.standard_normal(1 << 17)
        b, a = ss.butter(3, 0.3)
        y = ss.lfilter(b, a, x)
        f, h1, coh = ts.transfer(x, y, 2.0, nperseg=1024)
        _, h2, _ = ts.transfer(x, y, 2.0, estimator='H2', nperseg=1024)
        _, h = ss.freqz(b, a, worN=f, fs=2.0)
        # Noise-free: both estimators see the filter to the leakage of a 1024-point Hann window.
        band = np.abs(h) > 0.1
        for est in (h1, h2):
            self.assertLess(np.max(np.abs(est[band] - h[band]) / np.abs(h[band])), 2e-2)
        self.assertGreater(np.min(coh[band]), 0.99)
        # Noise on the output: H1 stays unbiased, H2 is biased upwards where the signal is weak.
        noisy = y + 0.3 * rng.standard_normal(y.size)
        _, n1, _ = ts.transfer(x, noisy, 2.0, nperseg=1024)
        _, n2, _ = ts.transfer(x, noisy, 2.0, estimator='H2', nperseg=1024)
        passband = np.abs(h) > 0.9
        self.assertLess(np.median(np.abs(np.abs(n1[passband]) / np.abs(h[passband]) - 1)), 0.02)
        self.assertGreater(np.median(np.abs(n2[passband]) / np.abs(h[passband])), 1.03)

    def test_axis_and_broadcast(self):
        rng = np.random.default_rng(13)
        x = rng.standard_normal(3000)
        y = rng.standard_normal((3000, 2))
        f, h, c = ts.transfer(x[:, None], y, nperseg=200, axis=0)
        _, pxy = ss.csd(x[:, None], y, nperseg=200, axis=0)
        _, pxx = ss.welch(x[:, None], nperseg=200, axis=0)
        self.close(h, pxy / pxx)
        self.assertEqual(c.shape, (101, 2))


class TestMisuse(unittest.TestCase):
    def bad(self, f, *a, match, **k):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with self.assertRaises(ValueError) as e:
                f(*a, **k)
        self.assertIn(match, str(e.exception))

    def test_errors(self):
        x = np.random.default_rng(0).standard_normal(100)
        self.bad(ts.stft, x, nperseg=64, noverlap=64, match="noverlap")
        self.bad(ts.stft, x, nperseg=0, match="nperseg")
        self.bad(ts.stft, x, nperseg=64, nfft=32, match="nfft")
        self.bad(ts.stft, x, window='nosuchwindow', match="nosuchwindow")
        self.bad(ts.stft, x, window=('hann', 3), match="parameters")
        self.bad(ts.stft, x, window=np.ones(200), nperseg=None, match="longer")
        self.bad(ts.stft, x, window=np.ones((2, 3)), match="1-D")
        self.bad(ts.stft, x, scaling='bad', match="scaling")
        self.bad(ts.stft, x, boundary='bad', match="boundary")
        self.bad(ts.spectrogram, x, mode='bad', match="mode")
        self.bad(ts.spectrogram, x, detrend='quadratic', match="Trend")
        self.bad(ts.csd, x, x[::-1].copy(), nperseg=64, noverlap=80, match="noverlap")
        self.bad(ts.csd, x, x[::-1].copy(), window=np.ones(200), match="longer")
        self.bad(ts.csd, x, x[::-1].copy(), average='mode', match="average")
        self.bad(ts.csd, x, x[::-1].copy(), fs=0, match="fs")
        self.bad(ts.csd, x, x[::-1].copy(), fs=float('nan'), match="fs")
        self.bad(ts.csd, np.ones((2, 100)), np.ones((3, 100)), match="broadcast")
        self.bad(ts.coherence, x, x[::-1].copy(), window=('tukey', 0.1, 0.2), match="tukey")
        self.bad(ts.istft, np.ones(10), match="2d")
        self.bad(ts.istft, np.ones((5, 4)), nperseg=8, noverlap=8, match="noverlap")
        self.bad(ts.istft, np.ones((5, 4)), time_axis=0, freq_axis=0, match="differing")
        self.bad(ts.transfer, x, x, estimator='H3', match="H1")
        self.bad(ts.transfer, x, x[:50], match="same length")
        self.bad(ts.get_window, 'hann', 0, match="positive")
        self.bad(ts.get_window, 2.5, 10, match="kaiser")
        self.bad(ts.stft, np.array(['a', 'b']), match="numbers")

    def test_c_arguments_are_checked(self):
        """The C functions refuse what would overrun or divide by nothing, with E_ARGUMENT naming it."""
        import ctypes

        from tributary._native import ArgumentError
        lib = ts._lib()
        x = np.zeros(100)
        w = np.hanning(16)
        out = np.zeros(10_000)
        p = ts._pointer
        size = ctypes.c_size_t()

        def refused(call, match):
            with self.assertRaises(ArgumentError) as e:
                from tributary._native import check
                check(call())
            self.assertIn(match, str(e.exception))

        refused(lambda: lib.tributary_stft(None, 1, 100, p(w), 16, 8, 16, 1, 0, 1.0, p(out), out.size, None), "x is NULL")
        refused(lambda: lib.tributary_stft(p(x), 1, 100, p(w), 16, 16, 16, 1, 0, 1.0, p(out), out.size, None), "noverlap")
        refused(lambda: lib.tributary_stft(p(x), 1, 100, p(w), 16, 8, 8, 1, 0, 1.0, p(out), out.size, None), "nfft")
        refused(lambda: lib.tributary_stft(p(x), 1, 100, p(w), 16, 8, 16, 7, 0, 1.0, p(out), out.size, None), "detrend")
        refused(lambda: lib.tributary_stft(p(x), 1, 100, p(w), 16, 8, 16, 1, 2, 1.0, p(out), out.size, None), "twosided")
        refused(lambda: lib.tributary_stft(p(x), 1, 100, p(w), 16, 8, 16, 1, 0, 1.0, p(out), 10, None), "out must hold")
        refused(lambda: lib.tributary_stft(p(x), 1, 10, p(w), 16, 8, 16, 1, 0, 1.0, p(out), out.size, None), "longer than the signal")
        refused(lambda: lib.tributary_stft(p(x), 2**62, 2**62, p(w), 16, 8, 16, 1, 0, 1.0, p(out), out.size, None), "")
        refused(lambda: lib.tributary_stft(p(x), 1, 100, p(w), 0, 0, 16, 1, 0, 1.0, p(out), out.size, None), "nperseg")
        bad = w.copy()
        bad[3] = np.nan
        refused(lambda: lib.tributary_stft(p(x), 1, 100, p(bad), 16, 8, 16, 1, 0, 1.0, p(out), out.size, None), "finite")
        refused(lambda: lib.tributary_spectrogram(None, 1, 100, p(w), 16, 8, 16, 1, 0, 1.0, p(out), out.size, None), "x is NULL")
        refused(lambda: lib.tributary_spectrogram(p(x), 1, 100, p(w), 16, 16, 16, 1, 0, 1.0, p(out), out.size, None), "noverlap")
        refused(lambda: lib.tributary_spectrogram(p(x), 1, 100, p(w), 16, 8, 16, 1, 0, 1.0, p(out), 10, None), "out must hold")
        refused(lambda: lib.tributary_spectrogram(p(x), 1, 100, p(w), 16, 8, 16, 1, 0, np.inf, p(out), out.size, None), "scale")
        refused(lambda: lib.tributary_spectrogram(p(x), 1, 10, p(w), 16, 8, 16, 1, 0, 1.0, p(out), out.size, None), "longer than")
        refused(lambda: lib.tributary_spectrogram(p(x), 2**62, 2**62, p(w), 16, 8, 16, 1, 0, 1.0, p(out), out.size, None), "")
        refused(lambda: lib.tributary_spectrogram(p(x), 1, 100, p(bad), 16, 8, 16, 1, 0, 1.0, p(out), out.size, None), "finite")
        refused(lambda: lib.tributary_cross_spectra(p(x), p(x), 1, 100, p(w), 16, 8, 16, 1, 0, 0, 0, 0.0, p(out), None, None, 9), "fs")
        refused(lambda: lib.tributary_cross_spectra(p(x), p(x), 1, 100, p(w), 16, 8, 16, 1, 0, 0, 0, 1.0, p(out), None, None, 10), "bins")
        refused(lambda: lib.tributary_cross_spectra(p(x), p(x), 1, 100, p(w), 16, 8, 16, 1, 2, 0, 0, 1.0, p(out), None, None, 9), "average")
        refused(lambda: lib.tributary_cross_spectra(p(x), None, 1, 100, p(w), 16, 8, 16, 1, 0, 0, 0, 1.0, None, None, p(out), 9), "need y")
        refused(lambda: lib.tributary_cross_spectra(p(x), p(x), 1, 100, p(w), 16, 8, 16, 1, 0, 0, 0, 1.0, None, None, None, 9), "NULL")
        z = np.zeros(9 * 5 * 2)
        refused(lambda: lib.tributary_istft(p(z), 1, 9, 5, p(w), 16, 8, 16, 1.0, 10, 5, p(out), ctypes.byref(size)), "end")
        refused(lambda: lib.tributary_istft(p(z), 1, 9, 5, p(w), 16, 8, 16, 1.0, 0, 1000, p(out), ctypes.byref(size)), "end")
        refused(lambda: lib.tributary_istft(p(z), 1, 8, 5, p(w), 16, 8, 16, 1.0, 0, 10, p(out), ctypes.byref(size)), "bins")
        refused(lambda: lib.tributary_istft(p(z), 1, 9, 0, p(w), 16, 8, 16, 1.0, 0, 10, p(out), ctypes.byref(size)), "segments")
        refused(lambda: lib.tributary_spectral_window(b"hann", None, 0, 0, 0, p(out)), "count")
        refused(lambda: lib.tributary_spectral_window(b"hann", None, 0, 8, 3, p(out)), "symmetric")
        refused(lambda: lib.tributary_spectral_window(b"tukey", None, 1, 8, 0, p(out)), "parameters is NULL")

    def test_windows_equal_scipy(self):
        for w in ['hann', 'hamming', 'blackman', 'blackmanharris', 'flattop', 'boxcar', 'bartlett', ('tukey', 0.25),
                  ('tukey', 0.0), ('tukey', 1.0), 'tukey', 'hann_symmetric', 'bartlett_periodic', 'rect', 'tuk']:
            for n in (1, 2, 7, 64, 101):
                for fftbins in (True, False):
                    with self.subTest(window=w, n=n, fftbins=fftbins):
                        got, want = ts.get_window(w, n, fftbins), ss.get_window(w, n, fftbins)
                        self.assertEqual(got.dtype, want.dtype)
                        np.testing.assert_allclose(got, want, rtol=0, atol=1e-15)


if __name__ == "__main__":
    unittest.main()

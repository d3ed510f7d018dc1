"""tributary.signal against scipy.signal 1.17 on the same inputs (docs/SIGNAL.md).

Random and adversarial signals (impulses, steps, DC, near-Nyquist tones, NaN and infinities, odd
lengths, several shapes and every axis): relative error max|a - b| / max|b| at most 1e-12 for
filters of order <= 8, the same shapes and dtypes; a stream filtered block by block equals the
whole filtered at once for any split; misuse gives ValueError (or TypeError) with a message.
"""
import ctypes
import unittest

import numpy as np
import scipy.signal as sp

import tributary.signal as ts

TOL = 1e-12


def relative_error(a, b, scale=0.0):
    """max|a - b| / max|b| over the finite values of b; with `scale` (the input's size) the
    denominator is at least that, for outputs that are zero but for rounding (a band-pass of DC)."""
    a = np.asarray(a)
    b = np.asarray(b)
    finite = np.isfinite(b)
    if not finite.any():
        return 0.0
    denominator = max(float(np.max(np.abs(b[finite]))), scale)
    return float(np.max(np.abs(a[finite] - b[finite])) / (denominator or 1.0))


class Case(unittest.TestCase):
    def same(self, ours, theirs, tol=TOL, what="", scale=0.0):
        """Equal within tol, same shape and dtype, NaN and infinities in the same places."""
        if isinstance(theirs, tuple):
            self.assertIsInstance(ours, tuple, what)
            self.assertEqual(len(ours), len(theirs), what)
            for k, (o, t) in enumerate(zip(ours, theirs)):
                self.same(o, t, tol, f"{what}[{k}]", scale)
            return
        ours = np.asarray(ours)
        theirs = np.asarray(theirs)
        self.assertEqual(ours.shape, theirs.shape, what)
        self.assertEqual(ours.dtype, theirs.dtype, what)
        np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs), err_msg=f"{what}: NaN places")
        np.testing.assert_array_equal(np.isposinf(ours), np.isposinf(theirs), err_msg=f"{what}: +inf places")
        np.testing.assert_array_equal(np.isneginf(ours), np.isneginf(theirs), err_msg=f"{what}: -inf places")
        error = relative_error(ours, theirs, scale)
        self.assertLessEqual(error, tol, f"{what}: relative error {error:.3g}")


# Band edges summing to Nyquist give mirror-symmetric poles, whose section order scipy decides by
# the last bit of their distances to the unit circle: those designs check the arithmetic is scipy's.
def agree(case, ours, theirs, **kwargs):
    """ours() equals theirs(), or both raise ValueError (a signal too short for the padding)."""
    try:
        expected = theirs()
    except ValueError:
        with case.assertRaises(ValueError):
            ours()
        return
    case.same(ours(), expected, **kwargs)


BANDS = [("lowpass", 0.2), ("highpass", 0.3), ("bandpass", [0.2, 0.5]), ("bandstop", [0.1, 0.6]),
         ("low", 0.01), ("high", 0.97), ("bp", [0.45, 0.55]), ("bs", [0.02, 0.98]), ("bandpass", [0.1, 0.9]),
         ("bandstop", [0.3, 0.7]), ("bandpass", [0.25, 0.75]), ("bandstop", [0.2, 0.8])]
FAMILIES = [("butter", ()), ("cheby1", (1.0,)), ("cheby1", (0.1,)), ("cheby2", (40.0,)), ("cheby2", (80.0,))]
# Elliptic and Bessel prototypes come from special functions (K, sn/cn/dn; the roots of y_N) whose
# last bits differ from scipy's: equal to 1e-12 all the same, but a mirror-symmetric band may order
# its (equal) sections differently, so there the filter is compared by what it does.
SPECIAL_FAMILIES = [("ellip", (1.0, 40.0), {}), ("ellip", (0.1, 80.0), {}), ("ellip", (3.0, 20.0), {}),
                    ("bessel", (), {}), ("bessel", (), {"norm": "delay"})]


class DesignTests(Case):
    def test_iir_designs_equal_scipy(self):
        for name, extra in FAMILIES:
            for order in range(1, 9):
                for btype, wn in BANDS:
                    what = f"{name}{extra} N={order} {btype} {wn}"
                    with self.subTest(what):
                        ours, theirs = getattr(ts, name), getattr(sp, name)
                        self.same(ours(order, *extra, wn, btype, output="sos"), theirs(order, *extra, wn, btype, output="sos"),
                                  what=what + " sos")
                        self.same(ours(order, *extra, wn, btype), theirs(order, *extra, wn, btype), what=what + " ba")

    def test_elliptic_and_bessel_designs_equal_scipy(self):
        x = np.random.default_rng(9).standard_normal(1000)
        for name, extra, kwargs in SPECIAL_FAMILIES:
            for order in range(1, 9):
                for btype, wn in BANDS:
                    what = f"{name}{extra}{kwargs} N={order} {btype} {wn}"
                    with self.subTest(what):
                        ours, theirs = getattr(ts, name), getattr(sp, name)
                        mine = ours(order, *extra, wn, btype, output="sos", **kwargs)
                        reference = theirs(order, *extra, wn, btype, output="sos", **kwargs)
                        self.same(ours(order, *extra, wn, btype, **kwargs), theirs(order, *extra, wn, btype, **kwargs),
                                  what=what + " ba")
                        if np.size(wn) == 2 and np.isclose(sum(wn), 1):
                            self.assertEqual(mine.shape, reference.shape)
                            self.same(sp.sosfilt(mine, x), sp.sosfilt(reference, x), what=what + " sos, by its output")
                        else:
                            self.same(mine, reference, what=what + " sos")
        self.same(ts.ellip(5, 0.5, 60, [100, 200], "bandpass", fs=1000, output="sos"),
                  sp.ellip(5, 0.5, 60, [100, 200], "bandpass", fs=1000, output="sos"))
        for order in (10, 12):
            self.same(ts.bessel(order, 0.2, output="sos"), sp.bessel(order, 0.2, output="sos"), tol=1e-11)
        for call in (lambda: ts.bessel(15, 0.2), lambda: ts.ellip(4, 1, 0.5, 0.2), lambda: ts.ellip(4, -1, 40, 0.2),
                     lambda: ts.bessel(4, 0.2, norm="other")):
            with self.assertRaises(ValueError):
                call()
        with self.assertRaises(NotImplementedError):
            ts.bessel(4, 0.2, norm="mag")

    def test_fs_in_hertz(self):
        self.same(ts.butter(4, 1000, fs=48000, output="sos"), sp.butter(4, 1000, fs=48000, output="sos"))
        self.same(ts.cheby1(5, 0.5, [300, 3400], "bandpass", fs=8000), sp.cheby1(5, 0.5, [300, 3400], "bandpass", fs=8000))
        self.same(ts.cheby2(6, 60, [49, 51], "bandstop", output="sos", fs=1000.0),
                  sp.cheby2(6, 60, [49, 51], "bandstop", output="sos", fs=1000.0))

    def test_higher_orders_still_close(self):
        # Past order 8 the ba form loses digits (in scipy too); the sections stay close.
        for order in (10, 16):
            self.same(ts.butter(order, [0.1, 0.3], "bandpass", output="sos"), sp.butter(order, [0.1, 0.3], "bandpass", output="sos"),
                      tol=1e-10)

    def test_butter_order_two_known_coefficients(self):
        # Half-band Butterworth low-pass of order 2: b = [1, 2, 1]·(2 - √2)/4·..., a = [1, 0, 3 - 2√2].
        b, a = ts.butter(2, 0.5)
        k = 1 / (2 + np.sqrt(2))
        np.testing.assert_allclose(b, [k, 2 * k, k], rtol=1e-15)
        np.testing.assert_allclose(a, [1, 0, (2 - np.sqrt(2)) / (2 + np.sqrt(2))], rtol=1e-15, atol=1e-15)

    def test_iirnotch(self):
        for w0, q, fs in [(50, 30, 1000), (0.3, 2, 2.0), (60, 0.5, 250), (1e-3, 100, 2.0)]:
            self.same(ts.iirnotch(w0, q, fs=fs), sp.iirnotch(w0, q, fs=fs), what=f"iirnotch({w0}, {q}, fs={fs})")
        self.same(ts.iirnotch(0.25, 10), sp.iirnotch(0.25, 10))

    def test_firwin(self):
        cases = [((31, 0.3), {}), ((30, [0.2, 0.5]), dict(pass_zero=False)), ((31, 0.3), dict(window="hann")),
                 ((31, [0.2, 0.5]), dict(window=("kaiser", 5.0))), ((64, 10), dict(fs=100, width=5)),
                 ((31, 0.3), dict(window="blackman", pass_zero="highpass")), ((1, 0.5), {}), ((2, 0.5), {}),
                 ((101, [0.1, 0.2, 0.4, 0.6]), dict(pass_zero="bandstop")), ((33, [0.1, 0.5]), dict(pass_zero="bandpass", scale=False)),
                 ((45, 0.7), dict(window="boxcar")), ((51, [100, 200]), dict(fs=1000, window="hamming", pass_zero=False)),
                 ((80, 0.25), dict(width=0.05))]
        for args, kwargs in cases:
            self.same(ts.firwin(*args, **kwargs), sp.firwin(*args, **kwargs), what=f"firwin{args} {kwargs}")

    def test_design_misuse(self):
        bad = [lambda: ts.butter(-1, 0.2), lambda: ts.butter(2.5, 0.2), lambda: ts.butter(4, 1.0), lambda: ts.butter(4, 0),
               lambda: ts.butter(4, -0.1), lambda: ts.butter(4, 0.2, "sideways"), lambda: ts.butter(4, [0.2, 0.1], "bandpass"),
               lambda: ts.butter(4, 0.2, "bandpass"), lambda: ts.butter(4, [0.1, 0.2]), lambda: ts.butter(4, 600, fs=1000),
               lambda: ts.butter(4, 0.2, fs=-1), lambda: ts.butter(4, np.nan), lambda: ts.butter(4, 0.2, output="xyz"),
               lambda: ts.cheby1(4, -1, 0.2), lambda: ts.cheby2(4, 0, 0.2), lambda: ts.butter(10**6, 0.2),
               lambda: ts.iirnotch(0, 30), lambda: ts.iirnotch(600, 30, fs=1000), lambda: ts.iirnotch(50, 0, fs=1000),
               lambda: ts.firwin(30, 0.5, pass_zero=False), lambda: ts.firwin(31, 1.0), lambda: ts.firwin(31, [0.5, 0.2]),
               lambda: ts.firwin(0, 0.2), lambda: ts.firwin(31, []), lambda: ts.firwin(31, 0.2, window="nope"),
               lambda: ts.firwin(31, 0.2, pass_zero="sideways")]
        for k, call in enumerate(bad):
            with self.subTest(k):
                with self.assertRaises(ValueError) as caught:
                    call()
                self.assertTrue(str(caught.exception), "the error has a message")
        with self.assertRaises(NotImplementedError):
            ts.butter(4, 0.2, analog=True)


def signals(rng):
    """(name, 1-D signal) pairs: random and adversarial."""
    n = 257
    t = np.arange(n)
    impulse = np.zeros(n)
    impulse[0] = 1
    late = np.zeros(n)
    late[200] = 1
    return [("noise", rng.standard_normal(n)), ("impulse", impulse), ("late impulse", late), ("step", np.ones(n)),
            ("dc", np.full(n, 3.25)), ("nyquist", np.cos(np.pi * t)), ("near nyquist", np.sin(0.999 * np.pi * t)),
            ("odd short", rng.standard_normal(61)), ("big", 1e12 * rng.standard_normal(n)),
            ("tiny", 1e-200 * rng.standard_normal(n))]


class ApplyTests(Case):
    @classmethod
    def setUpClass(cls):
        cls.rng = np.random.default_rng(2026)
        cls.sos_filters = [sp.butter(8, [0.1, 0.4], "bandpass", output="sos"), sp.cheby1(4, 1, 0.3, output="sos"),
                           sp.cheby2(5, 50, 0.6, "highpass", output="sos"), sp.butter(1, 0.2, output="sos"),
                           sp.cheby2(8, 40, [0.05, 0.95], "bandstop", output="sos")]
        cls.ba_filters = [sp.butter(4, 0.3), sp.cheby1(3, 0.5, [0.2, 0.4], "bandpass"), sp.cheby2(6, 60, 0.5, "high"),
                          (np.array([0.5, 0.5]), np.array([1.0])), (sp.firwin(21, 0.3), np.array([1.0])),
                          (np.array([2.0, 1.0]), np.array([4.0, -1.0, 0.5])), (np.array([1.0, 2.0, 3.0, 4.0]), np.array([2.0, 0.5]))]

    def test_sosfilt_and_sosfiltfilt(self):
        for k, sos in enumerate(self.sos_filters):
            for name, x in signals(self.rng):
                what = f"filter {k} on {name}"
                s = float(np.max(np.abs(x)))
                self.same(ts.sosfilt(sos, x), sp.sosfilt(sos, x), scale=s, what=what + " sosfilt")
                self.same(ts.sosfiltfilt(sos, x), sp.sosfiltfilt(sos, x), scale=s, what=what + " sosfiltfilt")
                for padtype in ("even", "constant", None):
                    self.same(ts.sosfiltfilt(sos, x, padtype=padtype), sp.sosfiltfilt(sos, x, padtype=padtype),
                              scale=s, what=f"{what} sosfiltfilt {padtype}")
                self.same(ts.sosfiltfilt(sos, x, padlen=7), sp.sosfiltfilt(sos, x, padlen=7), scale=s, what=what + " padlen 7")
                self.same(ts.sosfiltfilt(sos, x, padlen=0), sp.sosfiltfilt(sos, x, padlen=0), scale=s, what=what + " padlen 0")
                zi = sp.sosfilt_zi(sos) * x[0]
                self.same(ts.sosfilt(sos, x, zi=zi), sp.sosfilt(sos, x, zi=zi), scale=s, what=what + " zi")

    def test_lfilter_and_filtfilt(self):
        for k, (b, a) in enumerate(self.ba_filters):
            for name, x in signals(self.rng):
                what = f"filter {k} on {name}"
                s = float(np.max(np.abs(x)))
                self.same(ts.lfilter(b, a, x), sp.lfilter(b, a, x), scale=s, what=what + " lfilter")
                agree(self, lambda: ts.filtfilt(b, a, x), lambda: sp.filtfilt(b, a, x), scale=s, what=what + " filtfilt")
                for padtype in ("even", "constant", None):
                    agree(self, lambda: ts.filtfilt(b, a, x, padtype=padtype), lambda: sp.filtfilt(b, a, x, padtype=padtype),
                              scale=s, what=f"{what} filtfilt {padtype}")
                agree(self, lambda: ts.filtfilt(b, a, x, padlen=5), lambda: sp.filtfilt(b, a, x, padlen=5), scale=s, what=what + " padlen 5")
                zi = self.rng.standard_normal(max(len(a), len(b)) - 1)
                self.same(ts.lfilter(b, a, x, zi=zi), sp.lfilter(b, a, x, zi=zi), scale=s, what=what + " zi")

    def test_initial_states(self):
        for k, sos in enumerate(self.sos_filters):
            self.same(ts.sosfilt_zi(sos), sp.sosfilt_zi(sos), what=f"sosfilt_zi {k}")
        for k, (b, a) in enumerate(self.ba_filters):
            self.same(ts.lfilter_zi(b, a), sp.lfilter_zi(b, a), what=f"lfilter_zi {k}")
        self.same(ts.lfilter_zi([1, 2, 3], [1]), sp.lfilter_zi([1, 2, 3], [1]))
        self.same(ts.lfilter_zi([1.0, 1.0], [0.0, 2.0, -1.0]), sp.lfilter_zi([1.0, 1.0], [0.0, 2.0, -1.0]))
        # An order-0 filter has no state: scipy refuses its lfilter_zi and filtfilt, and so do we.
        x = self.rng.standard_normal(50)
        self.same(ts.lfilter([3.0], [2.0], x), sp.lfilter([3.0], [2.0], x))
        for module in (sp, ts):
            with self.assertRaises(ValueError):
                module.lfilter_zi([3.0], [2.0])
            with self.assertRaises(ValueError):
                module.filtfilt([3.0], [2.0], x)
        self.same(ts.sosfilt_zi(np.array([[1, 2, 1, 1, 0, 0]])), sp.sosfilt_zi(np.array([[1, 2, 1, 1, 0, 0]])))

    def test_every_axis_and_shape(self):
        sos = self.sos_filters[1]
        b, a = self.ba_filters[0]
        for shape in [(40,), (3, 40), (40, 3), (2, 40, 5), (2, 3, 40), (40, 1, 2), (1, 1, 40)]:
            x = self.rng.standard_normal(shape)
            for axis in range(-len(shape), len(shape)):
                what = f"shape {shape} axis {axis}"
                self.same(ts.sosfilt(sos, x, axis=axis), sp.sosfilt(sos, x, axis=axis), what=what + " sosfilt")
                self.same(ts.lfilter(b, a, x, axis=axis), sp.lfilter(b, a, x, axis=axis), what=what + " lfilter")
                zshape = list(x.shape)
                zshape[axis] = 2
                zi = self.rng.standard_normal([sos.shape[0]] + zshape)
                self.same(ts.sosfilt(sos, x, axis=axis, zi=zi), sp.sosfilt(sos, x, axis=axis, zi=zi), what=what + " sosfilt zi")
                zshape[axis] = 4
                zi = self.rng.standard_normal(zshape)
                self.same(ts.lfilter(b, a, x, axis=axis, zi=zi), sp.lfilter(b, a, x, axis=axis, zi=zi), what=what + " lfilter zi")
                padlen = min(x.shape[axis] - 1, 9)
                self.same(ts.sosfiltfilt(sos, x, axis=axis, padlen=padlen), sp.sosfiltfilt(sos, x, axis=axis, padlen=padlen),
                          what=what + " sosfiltfilt")
                self.same(ts.filtfilt(b, a, x, axis=axis, padlen=padlen), sp.filtfilt(b, a, x, axis=axis, padlen=padlen),
                          what=what + " filtfilt")
                if x.shape[axis] > 15:
                    self.same(ts.filtfilt(b, a, x, axis=axis), sp.filtfilt(b, a, x, axis=axis), what=what + " filtfilt default")

    def test_non_contiguous_and_other_dtypes(self):
        sos = self.sos_filters[0]
        b, a = self.ba_filters[1]
        x = self.rng.standard_normal((60, 400))[::2, ::3]
        self.same(ts.sosfilt(sos, x), sp.sosfilt(sos, x))
        self.same(ts.sosfiltfilt(sos, x.T[:, ::2], axis=0), sp.sosfiltfilt(sos, x.T[:, ::2], axis=0))
        ints = self.rng.integers(-1000, 1000, 300)
        self.same(ts.sosfilt(sos, ints), sp.sosfilt(sos, ints))
        self.same(ts.lfilter(b, a, ints), sp.lfilter(b, a, ints))
        self.same(ts.filtfilt(b, a, ints), sp.filtfilt(b, a, ints))
        self.same(ts.sosfilt(sos, [1.0, 2.0, 3.0]), sp.sosfilt(sos, [1.0, 2.0, 3.0]))
        # float32 in, float32 out as scipy (computed here in float64, so closer to the truth).
        x32 = self.rng.standard_normal(200).astype(np.float32)
        ours = ts.lfilter(b.astype(np.float32), a.astype(np.float32), x32)
        theirs = sp.lfilter(b.astype(np.float32), a.astype(np.float32), x32)
        self.assertEqual(ours.dtype, theirs.dtype)
        self.assertLess(relative_error(ours, theirs), 1e-5)
        self.assertEqual(ts.sosfilt(sos, x32).dtype, sp.sosfilt(sos, x32).dtype)

    def test_nan_and_infinity_propagate_as_scipy(self):
        for k, sos in enumerate(self.sos_filters):
            x = self.rng.standard_normal(100)
            x[37] = np.nan
            self.same(ts.sosfilt(sos, x), sp.sosfilt(sos, x), what=f"sos {k} NaN")
            self.same(ts.sosfiltfilt(sos, x), sp.sosfiltfilt(sos, x), what=f"sos {k} NaN filtfilt")
            x[37] = np.inf
            self.same(ts.sosfilt(sos, x), sp.sosfilt(sos, x), what=f"sos {k} inf")
        for k, (b, a) in enumerate(self.ba_filters):
            x = self.rng.standard_normal(100)
            x[50] = np.nan
            self.same(ts.lfilter(b, a, x), sp.lfilter(b, a, x), what=f"ba {k} NaN")
            self.same(ts.filtfilt(b, a, x), sp.filtfilt(b, a, x), what=f"ba {k} NaN filtfilt")

    def test_empty_and_short(self):
        sos = self.sos_filters[1]
        for shape in [(0,), (3, 0)]:
            x = np.zeros(shape)
            # scipy 1.17 fails on an empty signal ("cannot reshape array of size 0"); ours returns it empty.
            with self.assertRaises(ValueError):
                sp.sosfilt(sos, x)
            self.assertEqual(ts.sosfilt(sos, x).shape, shape)
            self.assertEqual(ts.lfilter([1, 2], [1, 0.5], x).shape, shape)
        zi = self.rng.standard_normal((sos.shape[0], 2))
        y, zf = ts.sosfilt(sos, np.zeros(0), zi=zi)
        self.assertEqual(y.shape, (0,))
        np.testing.assert_array_equal(zf, zi)
        self.same(ts.sosfilt(sos, [5.0]), sp.sosfilt(sos, [5.0]))
        for n in (2, 3, 4):
            x = self.rng.standard_normal(n)
            self.same(ts.sosfiltfilt(sos, x, padlen=n - 1), sp.sosfiltfilt(sos, x, padlen=n - 1), what=f"length {n}")

    def test_apply_misuse(self):
        sos = self.sos_filters[1]
        x = np.ones(100)
        bad = [lambda: ts.sosfilt(np.ones((2, 5)), x), lambda: ts.sosfilt(np.array([[1, 0, 0, 2, 0, 0]]), x),
               lambda: ts.sosfilt(sos, 3.0), lambda: ts.sosfilt(sos, x, zi=np.zeros((1, 2))),
               lambda: ts.sosfilt(sos, x, axis=1), lambda: ts.lfilter([1], [0, 1], x), lambda: ts.lfilter([], [1], x),
               lambda: ts.lfilter([1, 2], [1], x, zi=np.zeros(3)), lambda: ts.sosfiltfilt(sos, np.ones(10)),
               lambda: ts.filtfilt([1, 2], [1, 0.5], np.ones(6)), lambda: ts.sosfiltfilt(sos, x, padtype="wrap"),
               lambda: ts.filtfilt([1, 2], [1, 0.5], x, method="other"), lambda: ts.lfilter_zi([1, 1], [0, 0]),
               lambda: ts.sosfilt_zi(np.ones(6)), lambda: ts.lfilter_zi([1, 1], [1, -1])]
        for k, call in enumerate(bad):
            with self.subTest(k):
                with self.assertRaises(ValueError) as caught:
                    call()
                self.assertTrue(str(caught.exception))
        with self.assertRaises(TypeError):
            ts.sosfilt(sos, x.astype(complex))
        with self.assertRaises(TypeError):
            ts.sosfilt(sos, np.array(["a", "b"]))
        with self.assertRaises(NotImplementedError):
            ts.lfilter([1, 2], [1], np.arange(5))  # integer result type, as scipy refuses


class RawCallTests(unittest.TestCase):
    """The C functions called directly with NULLs, absurd counts and bad enums: an error status and
    a message, never a crash."""

    def test_raw_misuse(self):
        from tributary import _native
        lib = _native.lib()
        x = np.ones(64)
        y = np.empty(64)
        sos = np.ascontiguousarray(sp.butter(4, 0.2, output="sos"))
        def p(a):
            return a.ctypes.data
        calls = {
            "sosfilt NULL sos": lambda: lib.tributary_sosfilt(None, 2, p(x), p(y), 1, 64, 1, None, None),
            "sosfilt 0 sections": lambda: lib.tributary_sosfilt(p(sos), 0, p(x), p(y), 1, 64, 1, None, None),
            "sosfilt huge sections": lambda: lib.tributary_sosfilt(p(sos), 2**62, p(x), p(y), 1, 64, 1, None, None),
            "sosfilt NULL x": lambda: lib.tributary_sosfilt(p(sos), 2, None, p(y), 1, 64, 1, None, None),
            "sosfilt overflowing shape": lambda: lib.tributary_sosfilt(p(sos), 2, p(x), p(y), 2**40, 2**40, 2**40, None, None),
            "lfilter NULL a": lambda: lib.tributary_lfilter(p(x), 2, None, 2, p(x), p(y), 1, 64, 1, None, None),
            "sosfiltfilt bad padtype": lambda: lib.tributary_sosfiltfilt(p(sos), 2, p(x), p(y), 1, 64, 1, 9, -1),
            "filtfilt padlen -5": lambda: lib.tributary_filtfilt(p(x), 2, p(x), 2, p(x), p(y), 1, 64, 1, 1, -5),
            "design NULL family": lambda: lib.tributary_iir_design(None, 4, p(x), 1, b"low", 0.0, 0.0, 0.0, 0, p(y), 64,
                                                                   ctypes.byref(ctypes.c_size_t())),
            "design bad output": lambda: lib.tributary_iir_design(b"butter", 4, p(x), 1, b"low", 0.0, 0.0, 0.0, 7, p(y), 64,
                                                                  ctypes.byref(ctypes.c_size_t())),
            "design 3 frequencies": lambda: lib.tributary_iir_design(b"butter", 4, p(x), 3, b"low", 0.0, 0.0, 0.0, 0, p(y), 64,
                                                                     ctypes.byref(ctypes.c_size_t())),
            "design NULL count": lambda: lib.tributary_iir_design(b"butter", 4, p(x), 1, b"low", 0.0, 0.0, 0.0, 0, p(y), 64, None),
            "firwin NaN fs": lambda: lib.tributary_firwin(11, p(x), 1, b"hamming", 0.0, float("nan"), 1, 1, float("nan"), p(y)),
            "notch NULL b": lambda: lib.tributary_iirnotch(0.2, 10.0, 2.0, None, p(y)),
            "zi NULL out": lambda: lib.tributary_sosfilt_zi(p(sos), 2, None),
        }
        for name, call in calls.items():
            with self.subTest(name):
                self.assertEqual(call(), _native.E_ARGUMENT)
                self.assertTrue(lib.tributary_last_error())
        # A buffer too small: E_BUFFER and the count needed.
        count = ctypes.c_size_t()
        wn = np.array([0.2])
        self.assertEqual(lib.tributary_iir_design(b"butter", 8, p(wn), 1, b"low", 0.0, 0.0, 0.0, 0, p(y), 6,
                                                  ctypes.byref(count)), _native.E_BUFFER)
        self.assertEqual(count.value, 24)


class StreamTests(Case):
    def splits(self, rng, n):
        yield [n]
        yield [1] * n
        yield [0, n]
        for _ in range(20):
            cuts = np.sort(rng.integers(0, n + 1, rng.integers(1, 12)))
            yield list(np.diff(np.concatenate(([0], cuts, [n]))))

    def check_stream(self, make, whole, x, axis):
        rng = np.random.default_rng(5)
        n = x.shape[axis]
        for sizes in self.splits(rng, n):
            stream = make()
            blocks = []
            start = 0
            for size in sizes:
                blocks.append(stream.filter(np.take(x, range(start, start + size), axis=axis)))
                start += size
            streamed = np.concatenate(blocks, axis=axis)
            self.assertEqual(streamed.shape, whole.shape)
            error = np.max(np.abs(streamed - whole)) / np.max(np.abs(whole))
            self.assertLessEqual(error, 1e-13, f"split {sizes}")

    def test_sos_stream_equals_whole(self):
        rng = np.random.default_rng(11)
        sos = sp.butter(8, [0.1, 0.3], "bandpass", output="sos")
        x = rng.standard_normal((3, 500))
        self.check_stream(lambda: ts.StreamFilter(sos), sp.sosfilt(sos, x), x, 1)
        xt = np.ascontiguousarray(x.T)
        self.check_stream(lambda: ts.StreamFilter(sos, axis=0), sp.sosfilt(sos, xt, axis=0), xt, 0)
        zi = sp.sosfilt_zi(sos)[:, None, :] * x[:, :1][None]
        self.check_stream(lambda: ts.StreamFilter(sos, steady=True), sp.sosfilt(sos, x, zi=zi)[0], x, 1)

    def test_ba_stream_equals_whole(self):
        rng = np.random.default_rng(12)
        b, a = sp.cheby1(4, 1, 0.2)
        x = rng.standard_normal((2, 3, 400))
        self.check_stream(lambda: ts.StreamFilter(b=b, a=a), sp.lfilter(b, a, x), x, 2)
        h = sp.firwin(31, 0.2)
        self.check_stream(lambda: ts.StreamFilter(b=h, a=[1.0], axis=1), sp.lfilter(h, [1.0], x, axis=1), x, 1)
        zi = sp.lfilter_zi(b, a)[None, None, :] * x[..., :1]
        self.check_stream(lambda: ts.StreamFilter(b=b, a=a, steady=True), sp.lfilter(b, a, x, zi=zi)[0], x, 2)

    def test_stream_misuse(self):
        with self.assertRaises(ValueError):
            ts.StreamFilter()
        with self.assertRaises(ValueError):
            ts.StreamFilter(b=[1, 2])
        stream = ts.StreamFilter(sp.butter(2, 0.2, output="sos"))
        stream.filter(np.ones((2, 10)))
        with self.assertRaises(ValueError):
            stream.filter(np.ones((3, 10)))  # the other axes are fixed by the first block


if __name__ == "__main__":
    unittest.main()

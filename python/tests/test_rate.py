"""tributary.signal's rate change (upfirdn, resample_poly, decimate) against scipy.signal 1.17 on the
same inputs (docs/SIGNAL.md).

Random and adversarial signals (impulses, DC, near-Nyquist tones, odd lengths, signals shorter than
the filter, several shapes and every axis), factors 2, 3, 5, 10 and more: relative error
max|a - b| / max|b| at most 1e-12, the same shapes and dtypes; misuse gives ValueError (or
TypeError, NotImplementedError) with a message.
"""
import ctypes
import unittest

import numpy as np
import scipy.signal as sp
from test_signal import Case, agree

import tributary.signal as ts
from tributary._native import lib

FACTORS = [2, 3, 5, 10]


def signals(rng, n):
    """Adversarial 1-D signals of length n."""
    k = np.arange(n)
    impulse = np.zeros(n)
    impulse[n // 2] = 1.0
    return {
        "noise": rng.standard_normal(n),
        "impulse": impulse,
        "dc": np.full(n, 3.25),
        "nyquist": np.cos(np.pi * k) + 0.5 * np.cos(0.97 * np.pi * k),
        "step": (k >= n // 3).astype(np.float64) - 0.5,
    }


class UpfirdnTests(Case):
    rng = np.random.default_rng(42)

    def test_equals_scipy_on_signals_factors_and_lengths(self):
        for n in (1, 2, 3, 7, 30, 101, 256):
            for name, x in signals(self.rng, n).items():
                for up, down in [(1, 1), (2, 1), (1, 3), (3, 2), (5, 10), (10, 3), (2, 5), (7, 7)]:
                    for taps in (1, 4, 11, 40):
                        h = self.rng.standard_normal(taps)
                        self.same(ts.upfirdn(h, x, up, down), sp.upfirdn(h, x, up, down), what=f"{name} n={n} {up}/{down} taps={taps}")

    def test_every_mode_and_cval(self):
        h = self.rng.standard_normal(9)
        for n in (1, 2, 3, 5, 12, 40):
            x = self.rng.standard_normal(n)
            for mode in ("constant", "symmetric", "edge", "smooth", "wrap", "reflect", "antisymmetric", "antireflect", "line"):
                if n < 2 and mode in ("smooth", "reflect", "antireflect"):
                    with self.assertRaises(ValueError) as caught:
                        ts.upfirdn(h, x, 2, 3, mode=mode)
                    self.assertIn(mode, str(caught.exception))
                    continue
                for up, down in [(1, 1), (3, 2), (2, 5), (1, 10)]:
                    self.same(ts.upfirdn(h, x, up, down, mode=mode), sp.upfirdn(h, x, up, down, mode=mode), what=f"{mode} n={n} {up}/{down}")
            self.same(ts.upfirdn(h, x, 2, 3, cval=1.5), sp.upfirdn(h, x, 2, 3, cval=1.5), what="cval")
        self.same(ts.upfirdn(h, np.zeros(0), 2, 1), sp.upfirdn(h, np.zeros(0), 2, 1), what="empty signal")

    def test_every_axis_shapes_and_dtypes(self):
        h = self.rng.standard_normal(7)
        for shape in [(5, 31), (31, 4), (3, 4, 17), (2, 1, 9, 3)]:
            x = self.rng.standard_normal(shape)
            for axis in range(-len(shape), len(shape)):
                self.same(ts.upfirdn(h, x, 3, 2, axis=axis), sp.upfirdn(h, x, 3, 2, axis=axis), what=f"{shape} axis {axis}")
        xf = np.asfortranarray(self.rng.standard_normal((6, 20)))
        self.same(ts.upfirdn(h, xf, 2, 3, axis=0), sp.upfirdn(h, xf, 2, 3, axis=0), what="Fortran order")
        ints = self.rng.integers(-100, 100, 50)
        self.same(ts.upfirdn(h, ints, 2, 3), sp.upfirdn(h, ints, 2, 3), what="int64")
        self.same(ts.upfirdn([1, 2, 1], ints, 2, 1), sp.upfirdn([1, 2, 1], ints, 2, 1), what="int taps")
        x32, h32 = self.rng.standard_normal(60).astype(np.float32), h.astype(np.float32)
        # float32 in, float32 out as scipy (computed here in float64, so closer to the truth).
        self.same(ts.upfirdn(h32, x32, 3, 2), sp.upfirdn(h32, x32, 3, 2), tol=1e-6, what="float32")
        self.same(ts.upfirdn(h, x32, 3, 2), sp.upfirdn(h, x32, 3, 2), what="float32 x, float64 h")
        empty = np.zeros((0, 10))
        self.same(ts.upfirdn(h, empty, 2, 1), sp.upfirdn(h, empty, 2, 1), what="no lines")

    def test_nan_and_infinity_propagate_as_scipy(self):
        x = self.rng.standard_normal(50)
        x[10] = np.nan
        x[30] = np.inf
        h = self.rng.standard_normal(6)
        self.same(ts.upfirdn(h, x, 2, 3), sp.upfirdn(h, x, 2, 3), what="NaN/inf")

    def test_misuse(self):
        x = np.ones(10)
        for up, down in [(0, 1), (1, 0), (-2, 1), (1, 1 << 21)]:
            with self.assertRaises(ValueError) as caught:
                ts.upfirdn([1.0], x, up, down)
            self.assertTrue(str(caught.exception))
        with self.assertRaises(ValueError):
            ts.upfirdn([], x)
        with self.assertRaises(ValueError):
            ts.upfirdn(np.ones((2, 2)), x)
        with self.assertRaises(ValueError) as caught:
            ts.upfirdn([1.0], x, mode="nearest")
        self.assertIn("nearest", str(caught.exception))
        with self.assertRaises(ValueError):
            ts.upfirdn([1.0], x, axis=1)
        with self.assertRaises(TypeError):
            ts.upfirdn([1.0], x, up=2.5j)
        with self.assertRaises(NotImplementedError):
            ts.upfirdn([1.0], x + 1j)
        with self.assertRaises(ValueError):
            ts.upfirdn([1.0], 3.0)
        # scipy divides by zero (or reads nothing) extending an empty signal by any mode but 'constant'.
        with self.assertRaises(ValueError) as caught:
            ts.upfirdn([1.0, 2.0, 3.0], np.zeros(0), mode="wrap")
        self.assertIn("wrap", str(caught.exception))


class ResamplePolyTests(Case):
    rng = np.random.default_rng(7)

    def test_equals_scipy_on_signals_and_factors(self):
        for n in (1, 2, 5, 11, 64, 333):
            for name, x in signals(self.rng, n).items():
                for up in FACTORS + [1]:
                    for down in FACTORS + [1]:
                        self.same(ts.resample_poly(x, up, down), sp.resample_poly(x, up, down), what=f"{name} n={n} {up}/{down}")

    def test_windows_padtypes_and_cval(self):
        x = self.rng.standard_normal(97) + 2.0
        for window in [("kaiser", 5.0), ("kaiser", 8.6), "hamming", "hann", "blackman", "boxcar", sp.firwin(31, 0.3),
                       list(sp.firwin(8, 0.2)), np.array([1, 2, 3, 2, 1])]:
            self.same(ts.resample_poly(x, 3, 5, window=window), sp.resample_poly(x, 3, 5, window=window), what=f"window {window!r:.40}")
        for padtype in ("constant", "symmetric", "edge", "smooth", "wrap", "reflect", "antisymmetric", "antireflect", "line",
                        "mean", "median", "minimum", "maximum"):
            for up, down in [(2, 3), (10, 1), (1, 5)]:
                self.same(ts.resample_poly(x, up, down, padtype=padtype), sp.resample_poly(x, up, down, padtype=padtype),
                          what=f"padtype {padtype} {up}/{down}")
        self.same(ts.resample_poly(x, 5, 2, cval=2.0), sp.resample_poly(x, 5, 2, cval=2.0), what="cval")

    def test_axes_shapes_dtypes_and_reduction(self):
        for shape in [(40, 3), (3, 41), (4, 5, 23)]:
            x = self.rng.standard_normal(shape)
            for axis in range(-len(shape), len(shape)):
                self.same(ts.resample_poly(x, 2, 3, axis=axis), sp.resample_poly(x, 2, 3, axis=axis), what=f"{shape} axis {axis}")
        x = self.rng.standard_normal(50)
        self.same(ts.resample_poly(x, 6, 4), sp.resample_poly(x, 6, 4), what="reduced 6/4")
        self.same(ts.resample_poly(x, 3, 3), sp.resample_poly(x, 3, 3), what="3/3 copies")
        ints = self.rng.integers(-1000, 1000, 80)
        self.same(ts.resample_poly(ints, 3, 2), sp.resample_poly(ints, 3, 2), what="int64")
        self.same(ts.resample_poly(ints, 2, 2), sp.resample_poly(ints, 2, 2), what="int64 copy")
        x32 = x.astype(np.float32)
        self.same(ts.resample_poly(x32, 3, 2), sp.resample_poly(x32, 3, 2), tol=1e-6, what="float32")
        self.same(ts.resample_poly(np.zeros((3, 0)), 2, 3, axis=1), sp.resample_poly(np.zeros((3, 0)), 2, 3, axis=1), what="empty")

    def test_misuse(self):
        x = np.ones(20)
        for up, down in [(0, 1), (1, 0), (-1, 2), (2.5, 1), (1 << 21, 1)]:
            with self.assertRaises(ValueError) as caught:
                ts.resample_poly(x, up, down)
            self.assertTrue(str(caught.exception))
        with self.assertRaises(ValueError):
            ts.resample_poly(x, 2, 1, padtype="nearest")
        with self.assertRaises(ValueError):
            ts.resample_poly(x, 2, 1, padtype="edge", cval=1.0)
        with self.assertRaises(ValueError):
            ts.resample_poly(x, 2, 1, window=np.ones((2, 2)))
        with self.assertRaises(NotImplementedError):
            ts.resample_poly(x, 2, 1, window=("tukey", 0.5))
        with self.assertRaises(NotImplementedError):
            ts.resample_poly(x, 2, 1, window="flattop")
        with self.assertRaises(NotImplementedError):
            ts.resample_poly(x + 1j, 2, 1)
        # A factor so large its default filter would pass the tap limit.
        with self.assertRaises(ValueError) as caught:
            ts.resample_poly(x, 1 << 20, 1)
        self.assertIn("taps", str(caught.exception))
        with self.assertRaises(ValueError) as caught:
            ts.resample_poly(np.ones(1 << 20), 999_983, 1)   # refused before its 2^40-sample output is allocated
        self.assertIn("taps", str(caught.exception))


class DecimateTests(Case):
    rng = np.random.default_rng(3)

    def test_iir_equals_scipy(self):
        for n in (30, 31, 64, 101, 500):
            for name, x in signals(self.rng, n).items():
                for q in FACTORS + [1]:
                    for zero_phase in (True, False):
                        agree(self, lambda: ts.decimate(x, q, zero_phase=zero_phase), lambda: sp.decimate(x, q, zero_phase=zero_phase),
                              what=f"iir {name} n={n} q={q} zero_phase={zero_phase}")
        x = self.rng.standard_normal(200)
        for order in (2, 4, 6):
            self.same(ts.decimate(x, 3, n=order), sp.decimate(x, 3, n=order), what=f"iir n={order}")

    def test_fir_equals_scipy(self):
        for n in (1, 5, 19, 64, 101, 500):
            for name, x in signals(self.rng, n).items():
                for q in FACTORS:
                    for zero_phase in (True, False):
                        self.same(ts.decimate(x, q, ftype="fir", zero_phase=zero_phase),
                                  sp.decimate(x, q, ftype="fir", zero_phase=zero_phase), what=f"fir {name} n={n} q={q} {zero_phase}")
        x = self.rng.standard_normal(200)
        for order in (0, 1, 7, 30, 31):
            self.same(ts.decimate(x, 4, n=order, ftype="fir"), sp.decimate(x, 4, n=order, ftype="fir"), what=f"fir n={order}")

    def test_short_signals_are_refused_as_scipy_refuses_them(self):
        # sosfiltfilt's padding needs more samples than 3 × 17 for the default order 8.
        for n in (1, 10, 51, 52):
            x = self.rng.standard_normal(n)
            agree(self, lambda: ts.decimate(x, 2), lambda: sp.decimate(x, 2))

    def test_axes_shapes_and_dtypes(self):
        for shape in [(60, 3), (3, 61), (2, 3, 80)]:
            x = self.rng.standard_normal(shape)
            for axis in range(-len(shape), len(shape)):
                if shape[axis] < 60:
                    continue
                for ftype in ("iir", "fir"):
                    for zero_phase in (True, False):
                        self.same(ts.decimate(x, 3, ftype=ftype, axis=axis, zero_phase=zero_phase),
                                  sp.decimate(x, 3, ftype=ftype, axis=axis, zero_phase=zero_phase), what=f"{shape} {axis} {ftype}")
        ints = self.rng.integers(-1000, 1000, 120)
        self.same(ts.decimate(ints, 4), sp.decimate(ints, 4), what="int64")
        self.same(ts.decimate(ints.astype(np.int16), 4, ftype="fir"), sp.decimate(ints.astype(np.int16), 4, ftype="fir"), what="int16")
        x16 = self.rng.standard_normal(120).astype(np.float16)
        self.same(ts.decimate(x16, 2, ftype="fir"), sp.decimate(x16, 2, ftype="fir"), what="float16 to float64")
        # scipy's sosfiltfilt extends a float16 signal in float16 arithmetic; here in float64.
        self.same(ts.decimate(x16, 2), sp.decimate(x16, 2), tol=1e-3, what="float16 iir")
        x32 = self.rng.standard_normal(120).astype(np.float32)
        for ftype in ("iir", "fir"):
            self.same(ts.decimate(x32, 3, ftype=ftype), sp.decimate(x32, 3, ftype=ftype), tol=1e-5, what=f"float32 {ftype}")

    def test_nan_propagates_as_scipy(self):
        x = self.rng.standard_normal(200)
        x[77] = np.nan
        for ftype in ("iir", "fir"):
            for zero_phase in (True, False):
                self.same(ts.decimate(x, 5, ftype=ftype, zero_phase=zero_phase), sp.decimate(x, 5, ftype=ftype, zero_phase=zero_phase),
                          what=f"NaN {ftype} {zero_phase}")

    def test_misuse(self):
        x = np.ones(100)
        for q in (0, -3, 1 << 21):
            with self.assertRaises(ValueError) as caught:
                ts.decimate(x, q)
            self.assertIn("q", str(caught.exception))
        with self.assertRaises(TypeError):
            ts.decimate(x, 2.0)
        with self.assertRaises(ValueError):
            ts.decimate(x, 1, ftype="fir")
        with self.assertRaises(ValueError):
            ts.decimate(x, 2, ftype="bessel")
        with self.assertRaises(NotImplementedError):
            ts.decimate(x, 2, ftype=sp.dlti([1], [1, -0.5]))
        with self.assertRaises(ValueError):
            ts.decimate(x, 2, n=-1)
        with self.assertRaises(ValueError):
            ts.decimate(x, 2, n=0)
        with self.assertRaises(ValueError):
            ts.decimate(x, 2, axis=2)


class CArgumentTests(unittest.TestCase):
    """The C functions check every count before using it: no crash on absurd arguments."""

    def test_absurd_sizes_are_refused(self):
        huge = (1 << 64) - 1
        x = np.ones(10)
        y = np.empty(100)
        f = lib()
        h = np.ones(3)
        self.assertNotEqual(f.tributary_upfirdn(h.ctypes.data, 3, x.ctypes.data, y.ctypes.data, huge, 10, huge, 1, 1, 0, 0.0, 12), 0)
        self.assertNotEqual(f.tributary_upfirdn(h.ctypes.data, huge, x.ctypes.data, y.ctypes.data, 1, 10, 1, 1, 1, 0, 0.0, 12), 0)
        self.assertNotEqual(f.tributary_upfirdn(h.ctypes.data, 3, x.ctypes.data, y.ctypes.data, 1, 10, 1, huge, 1, 0, 0.0, 12), 0)
        self.assertNotEqual(f.tributary_upfirdn(h.ctypes.data, 3, x.ctypes.data, y.ctypes.data, 1, 10, 1, 1, 1, 99, 0.0, 12), 0)
        # The wrong output length is refused, not written past.
        self.assertNotEqual(f.tributary_upfirdn(h.ctypes.data, 3, x.ctypes.data, y.ctypes.data, 1, 10, 1, 1, 1, 0, 0.0, 13), 0)
        self.assertEqual(f.tributary_upfirdn(h.ctypes.data, 3, x.ctypes.data, y.ctypes.data, 1, 10, 1, 1, 1, 0, 0.0, 12), 0)
        self.assertNotEqual(f.tributary_upfirdn(None, 3, x.ctypes.data, y.ctypes.data, 1, 10, 1, 1, 1, 0, 0.0, 12), 0)
        self.assertNotEqual(f.tributary_upfirdn(h.ctypes.data, 3, None, y.ctypes.data, 1, 10, 1, 1, 1, 0, 0.0, 12), 0)
        self.assertNotEqual(f.tributary_resample_poly(x.ctypes.data, y.ctypes.data, 1, huge, 1, 2, 1, b"kaiser", 5.0, None, 0, 0, 0.0, 20), 0)
        self.assertNotEqual(f.tributary_resample_poly(x.ctypes.data, y.ctypes.data, 1, 10, 1, 2, 1, b"kaiser", float("nan"), None, 0, 0,
                                                      0.0, 20), 0)
        self.assertNotEqual(f.tributary_resample_poly(x.ctypes.data, y.ctypes.data, 1, 10, 1, 2, 1, None, 5.0, None, 0, 0, 0.0, 20), 0)
        self.assertEqual(f.tributary_resample_poly(x.ctypes.data, y.ctypes.data, 1, 10, 1, 2, 1, b"kaiser", 5.0, None, 0, 0, 0.0, 20), 0)
        self.assertNotEqual(f.tributary_decimate(x.ctypes.data, y.ctypes.data, 1, 10, 1, 0, -1, 1, 1, 10), 0)
        self.assertNotEqual(f.tributary_decimate(x.ctypes.data, y.ctypes.data, 1, 10, 1, 2, -1, 7, 1, 5), 0)
        self.assertNotEqual(f.tributary_decimate(x.ctypes.data, y.ctypes.data, 1, 10, 1, 2, -5, 1, 1, 5), 0)
        self.assertNotEqual(f.tributary_decimate(x.ctypes.data, y.ctypes.data, 1, 10, 1, 2, 1 << 62, 1, 1, 5), 0)
        self.assertEqual(f.tributary_decimate(x.ctypes.data, y.ctypes.data, 1, 10, 1, 2, -1, 1, 1, 5), 0)
        n = ctypes.c_size_t()
        self.assertNotEqual(f.tributary_upfirdn_length(3, 1 << 62, 1 << 20, 1, ctypes.byref(n)), 0)
        self.assertNotEqual(f.tributary_resample_length(1 << 62, 1 << 20, 1, ctypes.byref(n)), 0)
        self.assertEqual(f.tributary_upfirdn_length(3, 10, 2, 3, ctypes.byref(n)), 0)
        self.assertEqual(n.value, 7)
        self.assertNotEqual(f.tributary_resample_length(10, 2, 1, None), 0)


if __name__ == "__main__":
    unittest.main()

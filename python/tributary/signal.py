"""Digital filters with scipy.signal's names, arguments, defaults and return shapes (docs/SIGNAL.md).

``import tributary.signal as ss`` replaces ``import scipy.signal as ss`` for this subset:

- design: :func:`butter`, :func:`cheby1`, :func:`cheby2`, :func:`ellip`, :func:`bessel` (``output='ba'`` or ``'sos'``, digital,
  ``fs=``), :func:`iirnotch`, :func:`firwin`;
- apply: :func:`sosfilt`, :func:`lfilter` (``axis=``, ``zi=``), :func:`sosfiltfilt`,
  :func:`filtfilt` (``padtype``, ``padlen``), :func:`sosfilt_zi`, :func:`lfilter_zi`;
- rate change: :func:`upfirdn`, :func:`resample_poly`, :func:`decimate` (IIR and FIR);
- spectra: :func:`spectrogram`, :func:`stft`, :func:`istft`, :func:`welch`, :func:`csd`, :func:`coherence`,
  :func:`get_window`, and :func:`transfer` (H1/H2 transfer-function estimates with the coherence);
- streaming: :class:`StreamFilter`, whose state carries from block to block, so a stream filtered in
  blocks equals the stream filtered whole.

The arithmetic is libtributary's (TributaryDSP, the same code the C interface and the command line
use), done in float64; the results equal scipy 1.17's to rounding. A C-ordered float64 array is
filtered where it lies (no copy); the output is a new array.
"""
from __future__ import annotations

import ctypes
import math
import numbers
from ctypes import c_size_t
from typing import Callable, Optional

import numpy as np

from ._native import DECIMATE_FIR, DECIMATE_IIR, FILTER_BA, FILTER_SOS, PAD_CONSTANT, PAD_EVEN, PAD_NONE, PAD_ODD, check, integer, lib, real
from ._spectral import coherence, csd, get_window, istft, spectrogram, stft, transfer, welch

__all__ = ["butter", "cheby1", "cheby2", "ellip", "bessel", "iirnotch", "firwin", "sosfilt", "lfilter", "sosfiltfilt", "filtfilt",
           "sosfilt_zi", "lfilter_zi", "upfirdn", "resample_poly", "decimate", "StreamFilter",
           "spectrogram", "stft", "istft", "welch", "csd", "coherence", "transfer", "get_window"]

_PADTYPES = {None: PAD_NONE, "odd": PAD_ODD, "even": PAD_EVEN, "constant": PAD_CONSTANT}


def _pointer(array: np.ndarray) -> int:
    return array.ctypes.data


# -- design --


def _order(N) -> int:
    if isinstance(N, bool) or not isinstance(N, numbers.Real) or isinstance(N, float) and not math.isfinite(N):
        raise ValueError(f"Filter order must be a nonnegative integer, not {N!r}")
    if int(N) != N or N < 0:
        raise ValueError(f"Filter order must be a nonnegative integer, not {N!r}")
    return integer(int(N), "N", 0, 500)


def _iir(family: str, N, Wn, btype, analog, output, fs, rp=math.nan, rs=math.nan):
    if analog:
        raise NotImplementedError("tributary.signal designs digital filters only (analog=False)")
    if not isinstance(output, str) or output.lower() not in ("ba", "sos", "zpk"):
        raise ValueError(f"'{output}' is not a valid output form.")
    output = output.lower()
    if output == "zpk":
        raise NotImplementedError("output='zpk' is not supported: use 'ba' or 'sos'")
    if not isinstance(btype, str):
        raise ValueError(f"'{btype}' is an invalid bandtype for filter.")
    order = _order(N)
    wn = np.asarray(Wn, dtype=np.float64).reshape(-1)
    if wn.size not in (1, 2):
        raise ValueError(f"Wn must be one critical frequency or two (start, stop), not {wn.size} values")
    wn = np.ascontiguousarray(wn)
    if fs is not None:
        fs = real(fs, "fs")
        if fs <= 0:
            raise ValueError(f"Sampling frequency fs must be positive, not {fs}")
    bands = 2 if btype.lower() in ("bandpass", "band", "pass", "bp", "bandstop", "stop", "bands", "bs") else 1
    poles = order * bands
    capacity = ((poles + 1) // 2 or 1) * 6 if output == "sos" else 2 * (poles + 1)
    out = np.empty(capacity, dtype=np.float64)
    count = c_size_t()
    check(lib().tributary_iir_design(family.encode(), order, _pointer(wn), wn.size, btype.encode(), rp, rs,
                                     0.0 if fs is None else fs, FILTER_SOS if output == "sos" else FILTER_BA, _pointer(out), capacity,
                                     ctypes.byref(count)))
    out = out[:count.value]
    if output == "sos":
        return out.reshape(-1, 6)
    half = count.value // 2
    return out[:half].copy(), out[half:].copy()


def butter(N, Wn, btype="low", analog=False, output="ba", fs=None):
    """A Butterworth digital filter of order ``N`` (scipy.signal.butter): ``Wn`` one critical frequency
    (or two for 'bandpass'/'bandstop'), a fraction of Nyquist, or Hz with ``fs``.

    :returns: ``(b, a)`` for ``output='ba'``, the ``(n_sections, 6)`` array for ``'sos'``.
    """
    return _iir("butter", N, Wn, btype, analog, output, fs)


def cheby1(N, rp, Wn, btype="low", analog=False, output="ba", fs=None):
    """A Chebyshev type I digital filter with ``rp`` dB of pass-band ripple (scipy.signal.cheby1)."""
    return _iir("cheby1", N, Wn, btype, analog, output, fs, rp=real(rp, "rp"))


def cheby2(N, rs, Wn, btype="low", analog=False, output="ba", fs=None):
    """A Chebyshev type II digital filter with ``rs`` dB of stop-band attenuation (scipy.signal.cheby2)."""
    return _iir("cheby2", N, Wn, btype, analog, output, fs, rs=real(rs, "rs"))


def ellip(N, rp, rs, Wn, btype="low", analog=False, output="ba", fs=None):
    """An elliptic (Cauer) digital filter with ``rp`` dB of pass-band ripple and ``rs`` dB of stop-band
    attenuation (scipy.signal.ellip)."""
    return _iir("ellip", N, Wn, btype, analog, output, fs, rp=real(rp, "rp"), rs=real(rs, "rs"))


def bessel(N, Wn, btype="low", analog=False, output="ba", norm="phase", fs=None):
    """A Bessel–Thomson digital filter (scipy.signal.bessel), ``norm`` 'phase' (default) or 'delay'
    ('mag' is not supported: NotImplementedError); orders up to 14."""
    if norm not in ("phase", "delay", "mag"):
        raise ValueError(f"Parameter norm must be one of ['phase', 'delay', 'mag'], not {norm!r}")
    if norm == "mag":
        raise NotImplementedError("bessel norm='mag' is not supported: use 'phase' or 'delay'")
    return _iir("bessel" if norm == "phase" else "bessel_delay", N, Wn, btype, analog, output, fs)


def iirnotch(w0, Q, fs=2.0):
    """A second-order notch at ``w0`` (Hz for the sampling rate ``fs``; by default a fraction of
    Nyquist) with quality factor ``Q`` (scipy.signal.iirnotch). :returns: ``(b, a)``."""
    b = np.empty(3)
    a = np.empty(3)
    check(lib().tributary_iirnotch(real(w0, "w0"), real(Q, "Q"), real(fs, "fs"), _pointer(b), _pointer(a)))
    return b, a


# firwin's pass_zero names: whether the gain at 0 is 1, and whether the band takes a single cutoff.
_PASS_ZERO = {"lowpass": (True, True), "bandstop": (True, False), "highpass": (False, True), "bandpass": (False, False)}


def firwin(numtaps, cutoff, *, width=None, window="hamming", pass_zero=True, scale=True, fs=None):
    """A linear-phase FIR filter by the window method (scipy.signal.firwin). ``window`` is 'hamming',
    'hann', 'blackman', 'boxcar' or ``('kaiser', beta)``; ``width`` chooses a Kaiser window for that
    transition width; ``pass_zero`` True/False or 'lowpass', 'highpass', 'bandpass', 'bandstop'.
    :returns: the ``numtaps`` coefficients."""
    numtaps = integer(numtaps, "numtaps", 1, 1 << 24)
    fs = 2.0 if fs is None else real(fs, "fs")
    edges = np.atleast_1d(np.asarray(cutoff, dtype=np.float64))
    if edges.ndim > 1:
        raise ValueError("The cutoff argument must be at most one-dimensional.")
    if edges.size == 0:
        raise ValueError("At least one cutoff frequency must be given.")
    if isinstance(pass_zero, str):
        if pass_zero not in _PASS_ZERO:
            raise ValueError('pass_zero must be True, False, "bandpass", "lowpass", "highpass", or "bandstop", '
                             f"got {pass_zero}")
        zero, single = _PASS_ZERO[pass_zero]
        if single and edges.size != 1:
            raise ValueError(f'cutoff must have one element if pass_zero=="{pass_zero}", got {edges.shape}')
        if not single and edges.size <= 1:
            raise ValueError(f'cutoff must have at least two elements if pass_zero=="{pass_zero}", got {edges.shape}')
        pass_zero = zero
    pass_zero = bool(pass_zero)
    beta = math.nan
    if isinstance(window, tuple):
        if len(window) != 2 or window[0] not in ("kaiser", "ksr"):
            raise ValueError(f"window must be a name or ('kaiser', beta), not {window!r}")
        name, beta = "kaiser", real(window[1], "beta")
    elif isinstance(window, str):
        name = window
        if name in ("kaiser", "ksr"):
            raise ValueError("The 'kaiser' window needs a parameter: pass ('kaiser', beta)")
    else:
        raise ValueError(f"window must be a name or ('kaiser', beta), not {window!r}")
    width = math.nan if width is None else real(width, "width")
    edges = np.ascontiguousarray(edges)
    taps = np.empty(numtaps)
    check(lib().tributary_firwin(numtaps, _pointer(edges), edges.size, name.encode(), beta, width, int(pass_zero),
                                 int(bool(scale)), fs, _pointer(taps)))
    return taps


# -- arrays --


def _axis(axis, ndim: int) -> int:
    axis = integer(axis, "axis")
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    return axis % ndim


def _signal(x) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim == 0:
        raise ValueError("x must be at least 1-D")
    if x.dtype.kind not in "biuf":
        raise TypeError(f"tributary.signal filters real arrays (bool, integer or float), not {x.dtype}")
    return x


def _result_dtype(*arrays) -> np.dtype:
    dtype = np.result_type(*arrays)
    if dtype.kind == "c":
        raise TypeError(f"tributary.signal filters real arrays, not {dtype}")
    if dtype.char not in "fdg":
        raise NotImplementedError(f"input type '{dtype}' not supported")
    return dtype


def _layout(shape, axis):
    return (int(np.prod(shape[:axis], dtype=np.int64)), shape[axis], int(np.prod(shape[axis + 1:], dtype=np.int64)))


def _float64(x: np.ndarray) -> np.ndarray:
    """x itself when C-ordered float64 (no copy), else a C-ordered float64 copy."""
    return np.ascontiguousarray(x, dtype=np.float64)


def _real_state(zi) -> np.ndarray:
    """A filter's initial state as an array, which must be real."""
    zi = np.asarray(zi)
    if zi.dtype.kind not in "biuf":
        raise TypeError(f"zi must be real, not {zi.dtype}")
    return zi


def _run_filter(x: np.ndarray, axis: int, zi: Optional[np.ndarray], zshape: tuple, dtype: np.dtype, call: Callable[..., int]):
    """Filters ``x`` (along ``axis``) with ``call(data, y, outer, length, inner, zf)``, the library's
    function bound to its coefficients and initial state ``zi``; ``zshape`` is the final state's.

    :returns: ``y`` in ``dtype``, or ``(y, zf)`` when ``zi`` is given (an empty ``x``: ``zf`` = ``zi``).
    """
    data = _float64(x)
    y = np.empty(x.shape, dtype=np.float64)
    zf = np.empty(zshape, dtype=np.float64) if zi is not None else None
    if x.size == 0:
        if zf is not None:
            zf[...] = zi
    else:
        outer, length, inner = _layout(x.shape, axis)
        check(call(_pointer(data), _pointer(y), outer, length, inner, zf))
    if zi is None:
        return _finish(y, dtype)
    return _finish(y, dtype), _finish(zf, dtype)


def _finish(y: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return y if dtype == np.float64 else y.astype(dtype)


def _sos(sos) -> np.ndarray:
    sos = np.atleast_2d(np.asarray(sos))
    if sos.ndim != 2 or sos.shape[1] != 6 or sos.shape[0] < 1:
        raise ValueError("sos array must be 2D with shape (n_sections, 6)")
    if sos.dtype.kind not in "biuf":
        raise TypeError(f"sos must be real, not {sos.dtype}")
    return sos


def _coefficients(c, name: str) -> np.ndarray:
    c = np.atleast_1d(np.asarray(c))
    if c.ndim != 1 or c.size == 0:
        raise ValueError(f"Parameter {name} is not a non-empty 1d array, since {name}.shape={c.shape}!")
    if c.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be real, not {c.dtype}")
    return c


def sosfilt(sos, x, axis=-1, zi=None):
    """Filters ``x`` along ``axis`` through second-order sections (scipy.signal.sosfilt), each in
    direct form II transposed. ``zi`` (shape ``(n_sections, ..., 2, ...)``) is the initial state.

    :returns: ``y``, or ``(y, zf)`` when ``zi`` is given.
    """
    x = _signal(x)
    sos = _sos(sos)
    axis = _axis(axis, x.ndim)
    n = sos.shape[0]
    zshape = (n,) + x.shape[:axis] + (2,) + x.shape[axis + 1:]
    inputs = [sos, x] + ([np.asarray(zi)] if zi is not None else [])
    dtype = _result_dtype(*inputs)
    if zi is not None:
        zi = _real_state(zi)
        if zi.shape != zshape:
            raise ValueError(f"Invalid zi shape. With axis={axis!r}, an input with shape {x.shape!r}, and an sos array "
                             f"with {n} sections, zi must have shape {zshape!r}, got {zi.shape!r}.")
        zi = _float64(zi)
    coefficients = _float64(sos)
    return _run_filter(x, axis, zi, zshape, dtype, lambda data, y, outer, length, inner, zf: lib().tributary_sosfilt(
        _pointer(coefficients), n, data, y, outer, length, inner,
        _pointer(zi) if zi is not None else None, _pointer(zf) if zf is not None else None))


def lfilter(b, a, x, axis=-1, zi=None):
    """Filters ``x`` along ``axis`` through ``b/a`` in direct form II transposed (scipy.signal.lfilter).
    ``zi`` (``x``'s shape with ``max(len(a), len(b)) - 1`` along ``axis``) is the initial state.

    :returns: ``y``, or ``(y, zf)`` when ``zi`` is given.
    """
    b = _coefficients(b, "b")
    a = _coefficients(a, "a")
    x = _signal(x)
    axis = _axis(axis, x.ndim)
    k = max(b.size, a.size) - 1
    inputs = [b, a, x] + ([np.asarray(zi)] if zi is not None else [])
    dtype = _result_dtype(*inputs)
    if a[0] == 0:
        raise ValueError("a[0] must not be zero (lfilter divides b and a by it)")
    expected = x.shape[:axis] + (k,) + x.shape[axis + 1:]
    if zi is not None:
        zi = _real_state(zi)
        if zi.ndim != x.ndim:
            raise ValueError(f"Dimensions of parameters x and zi must match, but x.ndim={x.ndim}, zi.ndim={zi.ndim}!")
        if zi.shape != expected:
            if any(s != e and (d == axis or s != 1) for d, (s, e) in enumerate(zip(zi.shape, expected))):
                raise ValueError(f"Unexpected shape for parameter zi: expected {expected}, found {zi.shape}.")
            zi = np.broadcast_to(zi, expected)
        zi = _float64(zi)
    bb, aa = _float64(b), _float64(a)
    return _run_filter(x, axis, zi, expected, dtype, lambda data, y, outer, length, inner, zf: lib().tributary_lfilter(
        _pointer(bb), bb.size, _pointer(aa), aa.size, data, y, outer, length, inner,
        _pointer(zi) if zi is not None and zi.size else None, _pointer(zf) if zf is not None and zf.size else None))


def _padding(padtype, padlen):
    if padtype not in _PADTYPES:
        raise ValueError(f"Unknown value '{padtype}' given to padtype. padtype must be 'even', 'odd', 'constant', or None.")
    if padlen is None:
        return _PADTYPES[padtype], -1
    return _PADTYPES[padtype], max(integer(padlen, "padlen"), 0)


def sosfiltfilt(sos, x, axis=-1, padtype="odd", padlen=None):
    """Forward-backward filtering through second-order sections (scipy.signal.sosfiltfilt): zero
    phase, the magnitude response squared. ``padtype`` 'odd' (default), 'even', 'constant' or None;
    ``padlen`` defaults to ``3 * (2 * n_sections + 1 - ...)`` as scipy's."""
    sos = _sos(sos)
    x = _signal(x)
    axis = _axis(axis, x.ndim)
    kind, edge = _padding(padtype, padlen)
    floating = np.result_type(sos.dtype, np.float32) if sos.dtype.kind == "f" else np.dtype(np.float64)
    dtype = _result_dtype(floating, x)
    coefficients = _float64(sos)
    data = _float64(x)
    y = np.empty(x.shape, dtype=np.float64)
    outer, length, inner = _layout(x.shape, axis)
    check(lib().tributary_sosfiltfilt(_pointer(coefficients), sos.shape[0], _pointer(data), _pointer(y), outer, length, inner,
                                      kind, edge))
    return _finish(y, dtype)


def filtfilt(b, a, x, axis=-1, padtype="odd", padlen=None, method="pad", irlen=None):
    """Forward-backward filtering through ``b/a`` (scipy.signal.filtfilt, method 'pad'): zero phase.
    ``padtype`` 'odd' (default), 'even', 'constant' or None; ``padlen`` defaults to
    ``3 * max(len(a), len(b))``."""
    if method != "pad":
        if method == "gust":
            raise NotImplementedError("filtfilt method='gust' is not supported: use method='pad'")
        raise ValueError("method must be 'pad' or 'gust'.")
    b = _coefficients(b, "b")
    a = _coefficients(a, "a")
    x = _signal(x)
    axis = _axis(axis, x.ndim)
    kind, edge = _padding(padtype, padlen)
    dtype = _result_dtype(b, a, x, np.result_type(b, a, np.float32))
    bb, aa, data = _float64(b), _float64(a), _float64(x)
    y = np.empty(x.shape, dtype=np.float64)
    outer, length, inner = _layout(x.shape, axis)
    check(lib().tributary_filtfilt(_pointer(bb), bb.size, _pointer(aa), aa.size, _pointer(data), _pointer(y), outer, length,
                                   inner, kind, edge))
    return _finish(y, dtype)


def sosfilt_zi(sos):
    """The initial state of :func:`sosfilt` for the steady state of a unit step (scipy.signal.sosfilt_zi),
    shape ``(n_sections, 2)``: multiply by the first sample for a start without a transient."""
    sos = np.asarray(sos)
    if sos.ndim != 2 or sos.shape[1] != 6:
        raise ValueError("sos must be shape (n_sections, 6)")
    sos = _sos(sos)
    dtype = sos.dtype if sos.dtype.kind == "f" else np.dtype(np.float64)
    coefficients = _float64(sos)
    zi = np.empty((sos.shape[0], 2))
    check(lib().tributary_sosfilt_zi(_pointer(coefficients), sos.shape[0], _pointer(zi)))
    return _finish(zi, dtype)


def lfilter_zi(b, a):
    """The initial state of :func:`lfilter` for the steady state of a unit step (scipy.signal.lfilter_zi),
    ``max(len(a), len(b)) - 1`` values."""
    b = np.atleast_1d(np.asarray(b))
    if b.ndim != 1:
        raise ValueError("Numerator b must be 1-D.")
    a = np.atleast_1d(np.asarray(a))
    if a.ndim != 1:
        raise ValueError("Denominator a must be 1-D.")
    b = _coefficients(b, "b")
    a = _coefficients(a, "a")
    dtype = np.result_type(b, a, np.float32) if b.dtype.kind == "f" or a.dtype.kind == "f" else np.dtype(np.float64)
    bb, aa = _float64(b), _float64(a)
    zi = np.empty(max(b.size, a.size))
    count = c_size_t()
    check(lib().tributary_lfilter_zi(_pointer(bb), bb.size, _pointer(aa), aa.size, _pointer(zi), ctypes.byref(count)))
    return _finish(zi[:count.value].copy(), dtype)


# -- rate change --

_MAX_FACTOR = 1 << 20
_EXTENSION_MODES = {"constant": 0, "symmetric": 1, "edge": 2, "smooth": 3, "wrap": 4, "reflect": 5, "antisymmetric": 6,
                    "antireflect": 7, "line": 8}
_BACKGROUNDS = {"mean": np.mean, "median": np.median, "minimum": np.min, "maximum": np.max}


def _factor(value, name: str) -> int:
    """A rate factor: an integer (or an integral float, as scipy accepts) from 1 to 2**20."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        raise TypeError(f"{name} must be an integer, not a bool ({value!r})")
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        if not math.isfinite(value) or value != int(value):
            raise ValueError(f"{name} must be an integer, not {value!r}")
        value = int(value)
    value = integer(value, name)
    if not 1 <= value <= _MAX_FACTOR:
        raise ValueError(f"{name} must be from 1 to {_MAX_FACTOR}, not {value}")
    return value


def _check_real(a: np.ndarray, complex_message: str, type_message: str) -> None:
    """Refuses a complex ``a`` (NotImplementedError, as scipy) and any other non-real one (TypeError;
    ``type_message`` may name ``{dtype}``)."""
    if a.dtype.kind == "c":
        raise NotImplementedError(complex_message)
    if a.dtype.kind not in "biuf":
        raise TypeError(type_message.format(dtype=a.dtype))


def _rate_signal(x) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim == 0:
        raise ValueError("x must be at least 1-D")
    _check_real(x, "tributary.signal resamples real arrays only, not complex ones",
                "tributary.signal resamples real arrays (bool, integer or float), not {dtype}")
    return x


def _mode(mode) -> int:
    if not isinstance(mode, str) or mode.lower() not in _EXTENSION_MODES:
        raise ValueError(f"Unknown mode: {mode!r} (one of {', '.join(_EXTENSION_MODES)})")
    return _EXTENSION_MODES[mode.lower()]


def _shape_with(shape, axis: int, length: int):
    return shape[:axis] + (length,) + shape[axis + 1:]


def upfirdn(h, x, up=1, down=1, axis=-1, mode="constant", cval=0):
    """Upsamples ``x`` by ``up`` (zeros between samples), filters it by the FIR filter ``h`` and keeps
    every ``down``-th sample, along ``axis`` (scipy.signal.upfirdn), in one polyphase pass that
    computes only the samples kept. ``mode`` extends the signal beyond its ends: 'constant'
    (``cval``, default 0), 'symmetric', 'edge', 'smooth', 'wrap', 'reflect', 'antisymmetric',
    'antireflect' or 'line'.

    :returns: ``x``'s shape with ``ceil(((n - 1) * up + len(h)) / down)`` samples along ``axis``.
    """
    h = np.asarray(h)
    if h.ndim != 1 or h.size == 0:
        raise ValueError("h must be 1-D with non-zero length")
    _check_real(h, "tributary.signal.upfirdn takes real filters only, not complex ones", "h must be real, not {dtype}")
    x = _rate_signal(x)
    up = _factor(up, "up")
    down = _factor(down, "down")
    axis = _axis(axis, x.ndim)
    code = _mode(mode)
    cval = real(cval, "cval")
    dtype = np.result_type(h.dtype, x.dtype, np.float32)
    taps, data = _float64(h), _float64(x)
    length = c_size_t()
    check(lib().tributary_upfirdn_length(taps.size, x.shape[axis], up, down, ctypes.byref(length)))
    y = np.empty(_shape_with(x.shape, axis, length.value))
    outer, n, inner = _layout(x.shape, axis)
    check(lib().tributary_upfirdn(_pointer(taps), taps.size, _pointer(data) if data.size else None, _pointer(y) if y.size else None,
                                  outer, n, inner, up, down, code, cval, length.value))
    return _finish(y, dtype)


def resample_poly(x, up, down, axis=0, window=("kaiser", 5.0), padtype="constant", cval=None):
    """Resamples ``x`` along ``axis`` by ``up / down`` with a polyphase FIR filter
    (scipy.signal.resample_poly): by default a firwin low-pass of ``20 * max(up, down) + 1`` taps
    with a Kaiser window (beta 5), cutoff ``1 / max(up, down)`` of Nyquist; ``window`` may also be
    another firwin window name ('hamming', 'hann', 'blackman', 'boxcar'), ``('kaiser', beta)``, or
    the filter's coefficients. ``padtype`` is one of upfirdn's modes (``cval`` for 'constant') or
    'mean', 'median', 'minimum', 'maximum' (that value is taken out before and put back after).

    :returns: ``x``'s shape with ``ceil(n * up / down)`` samples along ``axis``.
    """
    x = _rate_signal(x)
    up = _factor(up, "up")
    down = _factor(down, "down")
    if cval is not None and padtype != "constant":
        raise ValueError(f"cval has no effect when padtype is {padtype!r}")
    axis = _axis(axis, x.ndim)
    g = math.gcd(up, down)
    up, down = up // g, down // g
    if up == down == 1:
        return x.copy()
    name, beta, taps = b"kaiser", 5.0, None
    if isinstance(window, (list, np.ndarray)):
        taps = np.asarray(window)
        if taps.ndim != 1:
            raise ValueError("window must be 1-D")
        if taps.size == 0:
            raise ValueError("window must have at least one coefficient")
        _check_real(taps, "tributary.signal.resample_poly takes real filters only, not complex ones", "window must be real, not {dtype}")
        hdtype = taps.dtype
        taps = _float64(taps)
    else:
        if isinstance(window, tuple):
            if len(window) != 2 or window[0] not in ("kaiser", "ksr"):
                raise NotImplementedError(f"window {window!r} is not supported: use a name, ('kaiser', beta) or the coefficients")
            beta = real(window[1], "beta")
        elif isinstance(window, str):
            if window in ("kaiser", "ksr"):
                raise ValueError("The 'kaiser' window needs a parameter: pass ('kaiser', beta)")
            if window not in ("hamming", "hamm", "ham", "hann", "han", "blackman", "black", "blk", "boxcar", "box", "ones",
                              "rect", "rectangular"):
                raise NotImplementedError(f"window {window!r} is not supported: use 'hamming', 'hann', 'blackman', "
                                          "'boxcar', ('kaiser', beta) or the coefficients")
            name = window.encode()
        else:
            raise ValueError(f"window must be a name, ('kaiser', beta) or the coefficients, not {window!r}")
        hdtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
        if 20 * max(up, down) + 1 > 1 << 24:
            raise ValueError(f"up and down ({up}, {down}) need a filter of {20 * max(up, down) + 1} taps, more than {1 << 24}")
    dtype = np.result_type(hdtype, x.dtype, np.float32)
    background = None
    if padtype in _BACKGROUNDS:
        if x.shape[axis] == 0:
            raise ValueError(f"padtype {padtype!r} needs at least one sample along the axis")
        background = _BACKGROUNDS[padtype](x, axis=axis, keepdims=True)
        data = _float64(x - background)
        code, fill = 0, 0.0
    elif isinstance(padtype, str) and padtype in _EXTENSION_MODES:
        code = _EXTENSION_MODES[padtype]
        fill = 0.0 if cval is None else real(cval, "cval")
        data = _float64(x)
    else:
        raise ValueError("padtype must be one of: maximum, mean, median, minimum, " + ", ".join(_EXTENSION_MODES))
    length = c_size_t()
    check(lib().tributary_resample_length(x.shape[axis], up, down, ctypes.byref(length)))
    y = np.empty(_shape_with(x.shape, axis, length.value))
    outer, n, inner = _layout(x.shape, axis)
    check(lib().tributary_resample_poly(_pointer(data) if data.size else None, _pointer(y) if y.size else None, outer, n, inner, up,
                                        down, name, beta, _pointer(taps) if taps is not None else None,
                                        0 if taps is None else taps.size, code, fill, length.value))
    if background is not None:
        y += background
    return _finish(y, dtype)


def decimate(x, q, n=None, ftype="iir", axis=-1, zero_phase=True):
    """Downsamples ``x`` by ``q`` along ``axis`` after an anti-aliasing filter (scipy.signal.decimate):
    ``ftype='iir'`` a Chebyshev type I of order ``n`` (default 8, 0.05 dB ripple, cutoff ``0.8 / q``),
    ``'fir'`` a Hamming-window firwin of ``n + 1`` taps (default ``n = 20 * q``, cutoff ``1 / q``).
    ``zero_phase`` (default) filters forward and backward (IIR: sosfiltfilt; FIR: centred as
    :func:`resample_poly`), else forward only (IIR: sosfilt; FIR: upfirdn).

    :returns: ``x``'s shape with ``ceil(n / q)`` samples along ``axis``; float64 for integer input.
    """
    x = _rate_signal(x)
    q = integer(q, "q")
    if not 1 <= q <= _MAX_FACTOR:
        raise ValueError(f"q must be from 1 to {_MAX_FACTOR}, not {q}")
    if n is not None:
        n = integer(n, "n", 0, (1 << 24) - 1)
    if isinstance(ftype, str) and ftype in ("iir", "fir"):
        kind = DECIMATE_IIR if ftype == "iir" else DECIMATE_FIR
    elif hasattr(ftype, "to_tf") or hasattr(ftype, "_as_zpk"):
        raise NotImplementedError("decimate with an LTI system as ftype is not supported: use 'iir' or 'fir'")
    else:
        raise ValueError("invalid ftype")
    axis = _axis(axis, x.ndim)
    dtype = x.dtype if x.dtype.kind == "f" and x.dtype != np.float16 else np.dtype(np.float64)
    data = _float64(x)
    n_out = -(-x.shape[axis] // q)
    y = np.empty(_shape_with(x.shape, axis, n_out))
    outer, length, inner = _layout(x.shape, axis)
    check(lib().tributary_decimate(_pointer(data) if data.size else None, _pointer(y) if y.size else None, outer, length, inner, q,
                                   -1 if n is None else n, kind, int(bool(zero_phase)), n_out))
    return _finish(y, dtype)


# -- streaming --


class StreamFilter:
    """A filter applied to a stream block by block, its state carried from each block to the next,
    so the blocks filtered one after another equal the whole filtered at once (to the last bit).

    ``StreamFilter(sos=...)`` runs :func:`sosfilt`, ``StreamFilter(b=..., a=...)`` runs
    :func:`lfilter`, along ``axis`` of each block (the other axes fixed from the first block).
    ``zi`` is the initial state (as those functions take it; zeros by default); ``steady=True``
    starts instead in the steady state of the first block's first sample (``sosfilt_zi`` or
    ``lfilter_zi`` times it), so a signal starting at a constant level passes without a transient.
    """

    def __init__(self, sos=None, *, b=None, a=None, axis: int = -1, zi=None, steady: bool = False):
        if (sos is None) == (b is None and a is None):
            raise ValueError("StreamFilter needs either sos or both b and a")
        if sos is None and (b is None or a is None):
            raise ValueError("StreamFilter needs both b and a")
        if zi is not None and steady:
            raise ValueError("give zi or steady=True, not both")
        self.sos = _sos(sos) if sos is not None else None
        self.b = _coefficients(b, "b") if b is not None else None
        self.a = _coefficients(a, "a") if a is not None else None
        self.axis = axis
        self.steady = bool(steady)
        self.zi = None if zi is None else np.array(zi, dtype=np.float64)

    def _initial(self, x: np.ndarray) -> np.ndarray:
        axis = _axis(self.axis, x.ndim)
        first = np.take(x, [0], axis=axis).astype(np.float64)
        if self.sos is not None:
            shape = (self.sos.shape[0],) + x.shape[:axis] + (2,) + x.shape[axis + 1:]
            if not self.steady:
                return np.zeros(shape)
            zi = sosfilt_zi(self.sos).astype(np.float64)
            per = [self.sos.shape[0]] + [1] * x.ndim
            per[axis + 1] = 2
            return zi.reshape(per) * first[np.newaxis]
        k = max(self.b.size, self.a.size) - 1
        shape = x.shape[:axis] + (k,) + x.shape[axis + 1:]
        if not self.steady or k == 0:
            return np.zeros(shape)
        per = [1] * x.ndim
        per[axis] = k
        return lfilter_zi(self.b, self.a).astype(np.float64).reshape(per) * first

    def filter(self, block) -> np.ndarray:
        """The next block of the stream, filtered (float64, the block's shape)."""
        x = _signal(block)
        if self.zi is None:
            if x.shape[_axis(self.axis, x.ndim)] == 0:
                return np.empty(x.shape)
            self.zi = self._initial(x)
        if self.sos is not None:
            y, self.zi = sosfilt(self.sos, x, axis=self.axis, zi=self.zi)
        else:
            y, self.zi = lfilter(self.b, self.a, x, axis=self.axis, zi=self.zi)
        return y

    def reset(self, zi=None) -> None:
        """Starts the stream again (from ``zi``, or as the filter was made)."""
        self.zi = None if zi is None else np.array(zi, dtype=np.float64)

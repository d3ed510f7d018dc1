"""Time-frequency and two-channel spectra with scipy.signal's names, arguments, defaults and return
shapes (scipy 1.17): ``spectrogram``, ``stft``, ``istft``, ``welch``, ``csd``, ``coherence``, and
``transfer`` (H1/H2 transfer-function estimates with their coherence).

The segments are detrended, windowed and transformed by libtributary (FFTW through its plan cache;
docs/C_API.md, "Spectral functions"); this module parses the arguments as scipy does, moves axes,
extends boundaries and casts results. Windows are given as scipy names them (``'hann'``,
``('tukey', 0.25)``, ``'hamming_symmetric'``, …: boxcar, hann, hamming, blackman, blackmanharris,
flattop, bartlett, tukey) or as arrays of values. Float32 input is computed in double precision
and returned in scipy's single-precision dtypes.
"""
from __future__ import annotations

import ctypes
import numbers
import threading
import warnings
from ctypes import POINTER, c_char_p, c_double, c_int, c_size_t, c_void_p

import numpy as np

from ._native import check, declare, lib

__all__ = ["spectrogram", "stft", "istft", "welch", "csd", "coherence", "transfer", "get_window"]

_declared = False
_declare_lock = threading.Lock()


def _lib():
    global _declared
    library = lib()
    if not _declared:
        with _declare_lock:
            f = lambda name, *args: declare(library, name, c_int, *args)  # noqa: E731
            f("tributary_spectral_window", c_char_p, c_void_p, c_size_t, c_size_t, c_int, c_void_p)
            f("tributary_stft", c_void_p, c_size_t, c_size_t, c_void_p, c_size_t, c_size_t, c_size_t, c_int, c_int, c_double,
              c_void_p, c_size_t, POINTER(c_size_t))
            f("tributary_spectrogram", c_void_p, c_size_t, c_size_t, c_void_p, c_size_t, c_size_t, c_size_t, c_int, c_int,
              c_double, c_void_p, c_size_t, POINTER(c_size_t))
            f("tributary_cross_spectra", c_void_p, c_void_p, c_size_t, c_size_t, c_void_p, c_size_t, c_size_t, c_size_t,
              c_int, c_int, c_int, c_int, c_double, c_void_p, c_void_p, c_void_p, c_size_t)
            f("tributary_istft", c_void_p, c_size_t, c_size_t, c_size_t, c_void_p, c_size_t, c_size_t, c_size_t, c_double,
              c_size_t, c_size_t, c_void_p, POINTER(c_size_t))
            _declared = True
    return library


def _pointer(array: np.ndarray):
    return array.ctypes.data_as(c_void_p)


# -- windows and segments --


def get_window(window, Nx, fftbins=True) -> np.ndarray:
    """``scipy.signal.get_window`` for the windows libtributary computes: a name, or a tuple of a
    name and its parameters (tukey's alpha); a ``_periodic`` / ``_symmetric`` suffix overrides ``fftbins``."""
    if isinstance(Nx, bool) or not isinstance(Nx, numbers.Integral) or Nx <= 0:
        raise ValueError(f"Parameter Nx={Nx!r} is not a positive integer")
    if not isinstance(fftbins, bool):
        raise ValueError(f"Parameter fftbins={fftbins!r} is not of type bool!")
    if not isinstance(window, (str, tuple)):
        raise ValueError(f"window {window!r} must be a name or a tuple of a name and parameters "
                         "(kaiser windows from a number are not supported: pass the window's values)")
    if isinstance(window, tuple) and (not window or not isinstance(window[0], str)):
        raise ValueError(f"First tuple entry of parameter window={window!r} is not a str!")
    name = window if isinstance(window, str) else window[0]
    parameters = [] if isinstance(window, str) else list(window[1:])
    try:
        values = np.array(parameters, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"the parameters of window {window!r} must be numbers") from None
    out = np.empty(int(Nx), dtype=np.float64)
    check(_lib().tributary_spectral_window(name.encode(), _pointer(values) if len(values) else None, len(values), int(Nx),
                                           0 if fftbins else 1, _pointer(out)))
    return out


def _window_array(window) -> np.ndarray:
    win = np.asarray(window)
    if win.ndim != 1:
        raise ValueError('window must be 1-D')
    if win.dtype.kind not in "fiub":
        raise ValueError(f"window values must be real numbers, not {win.dtype}")
    win = np.ascontiguousarray(win, dtype=np.float64)
    if win.size and not np.isfinite(win).all():
        raise ValueError("window values must be finite")
    return win


def _fitted_window(window, nperseg: int, length: int, warning):
    """The named ``window`` of ``nperseg`` samples, shortened (with the ``warning()`` text, as scipy
    warns) to a signal of ``length`` samples that is shorter: (its values, nperseg)."""
    if nperseg > length:
        warnings.warn(warning(), stacklevel=5)
        nperseg = length
    return get_window(window, nperseg), nperseg


def _triage_segments(window, nperseg, input_length):
    """scipy's ``_triage_segments``: the window's values and the segment length."""
    if isinstance(window, (str, tuple)):
        if nperseg is None:
            nperseg = 256
        win, nperseg = _fitted_window(window, nperseg, input_length, lambda: (
            f'nperseg = {nperseg:d} is greater than input length  = {input_length:d}, using nperseg = {input_length:d}'))
    else:
        win = _window_array(window)
        if input_length < win.shape[-1]:
            raise ValueError('window is longer than input signal')
        if nperseg is None:
            nperseg = win.shape[0]
        elif nperseg != win.shape[0]:
            raise ValueError("value specified for nperseg is different from length of window")
    return win, nperseg


def _int_parameter(value, name):
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, float, np.floating)):
        raise ValueError(f"{name} must be an integer, not {value!r}")
    if isinstance(value, (float, np.floating)) and not np.isfinite(value):
        raise ValueError(f"{name} must be an integer, not {value!r}")
    return int(value)


def _overlap(noverlap, nperseg: int) -> int:
    """``noverlap`` (default ``nperseg // 2``) checked against ``nperseg`` as scipy.signal checks it."""
    if noverlap is None:
        return nperseg // 2
    noverlap = _int_parameter(noverlap, "noverlap")
    if noverlap >= nperseg:
        raise ValueError('noverlap must be less than nperseg.')
    if noverlap < 0:
        raise ValueError('noverlap must not be negative.')
    return noverlap


_DETREND_CODES = {"constant": 1, "linear": 2}


def _detrend_code(detrend):
    """0/1/2 for none/constant/linear, or None for a function applied in Python."""
    if not detrend:
        return 0
    if callable(detrend):
        return None
    if isinstance(detrend, str) and detrend in _DETREND_CODES:
        return _DETREND_CODES[detrend]
    raise ValueError("Trend type must be 'linear' or 'constant'.")


def _real_spectra(x: np.ndarray, win, nperseg, noverlap, nfft, detrend, twosided, scale):
    """The short-time spectra of real rows (…, n) as complex128 (…, bins, segments)."""
    outer = x.shape[:-1]
    rows = int(np.prod(outer, dtype=np.int64)) if outer else 1
    x = np.ascontiguousarray(x, dtype=np.float64).reshape(rows, x.shape[-1])
    n = x.shape[1]
    step = nperseg - noverlap
    segments = (n - nperseg) // step + 1
    bins = nfft if twosided else nfft // 2 + 1
    out = np.empty((rows, bins, segments, 2), dtype=np.float64)
    if rows:
        check(_lib().tributary_stft(_pointer(x), rows, n, _pointer(win), nperseg, noverlap, nfft, detrend, 1 if twosided else 0,
                                    float(scale), _pointer(out), out.size, None))
    return out.view(np.complex128).reshape(outer + (bins, segments))


def _real_powers(x: np.ndarray, win, nperseg, noverlap, nfft, detrend, twosided, scale):
    """scipy's spectrogram powers of real float64 rows (…, n) as float64 (…, bins, segments)."""
    outer = x.shape[:-1]
    rows = int(np.prod(outer, dtype=np.int64)) if outer else 1
    x = np.ascontiguousarray(x).reshape(rows, x.shape[-1])
    n = x.shape[1]
    segments = (n - nperseg) // (nperseg - noverlap) + 1
    bins = nfft if twosided else nfft // 2 + 1
    out = np.empty((rows, bins, segments), dtype=np.float64)
    if rows:
        check(_lib().tributary_spectrogram(_pointer(x), rows, n, _pointer(win), nperseg, noverlap, nfft, detrend, 1 if twosided else 0,
                                           float(scale), _pointer(out), out.size, None))
    return out.reshape(outer + (bins, segments))


def _segment_spectra(x: np.ndarray, win, nperseg, noverlap, nfft, detrend, twosided, scale, detrend_func=None):
    """Spectra (…, bins, segments) of real or complex rows; a detrend function is applied to the
    segments here (as scipy applies it) and the detrended segments transformed back to back."""
    if detrend is None:
        step = nperseg - noverlap
        segs = np.lib.stride_tricks.sliding_window_view(x, window_shape=nperseg, axis=-1)[..., 0::step, :]
        segs = np.asarray(detrend_func(np.array(segs)))
        x = segs.reshape(segs.shape[:-2] + (segs.shape[-2] * nperseg,))
        noverlap, detrend = 0, 0
    if np.iscomplexobj(x):
        return (_real_spectra(x.real, win, nperseg, noverlap, nfft, detrend, True, scale)
                + 1j * _real_spectra(x.imag, win, nperseg, noverlap, nfft, detrend, True, scale))
    return _real_spectra(x, win, nperseg, noverlap, nfft, detrend, twosided, scale)


def _axis_slice(a, start=None, stop=None, step=None, axis=-1):
    index = [slice(None)] * a.ndim
    index[axis] = slice(start, stop, step)
    return a[tuple(index)]


def _odd_ext(x, n, axis=-1):
    if n < 1:
        return x
    if n > x.shape[axis] - 1:
        raise ValueError(f"The extension length n ({n}) is too big. It must not exceed x.shape[axis]-1, which is {x.shape[axis] - 1}.")
    left_end = _axis_slice(x, 0, 1, axis=axis)
    left_ext = _axis_slice(x, n, 0, -1, axis=axis)
    right_end = _axis_slice(x, -1, axis=axis)
    right_ext = _axis_slice(x, -2, -(n + 2), -1, axis=axis)
    return np.concatenate((2 * left_end - left_ext, x, 2 * right_end - right_ext), axis=axis)


def _even_ext(x, n, axis=-1):
    if n < 1:
        return x
    if n > x.shape[axis] - 1:
        raise ValueError(f"The extension length n ({n}) is too big. It must not exceed x.shape[axis]-1, which is {x.shape[axis] - 1}.")
    return np.concatenate((_axis_slice(x, n, 0, -1, axis=axis), x, _axis_slice(x, -2, -(n + 2), -1, axis=axis)), axis=axis)


def _const_ext(x, n, axis=-1):
    if n < 1:
        return x
    shape = [1] * x.ndim
    shape[axis] = n
    ones = np.ones(shape, dtype=x.dtype)
    return np.concatenate((ones * _axis_slice(x, 0, 1, axis=axis), x, ones * _axis_slice(x, -1, axis=axis)), axis=axis)


def _zero_ext(x, n, axis=-1):
    if n < 1:
        return x
    shape = list(x.shape)
    shape[axis] = n
    zeros = np.zeros(shape, dtype=x.dtype)
    return np.concatenate((zeros, x, zeros), axis=axis)


_BOUNDARIES = {'even': _even_ext, 'odd': _odd_ext, 'constant': _const_ext, 'zeros': _zero_ext, None: None}


def _spectral_helper(x, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling, axis, mode,
                     boundary=None, padded=False):
    """scipy's ``_spectral_helper`` for one signal (x is y): ``mode`` 'psd' or 'stft'."""
    if mode not in ['psd', 'stft']:
        raise ValueError(f"Unknown value for mode {mode}, must be one of: {{'psd', 'stft'}}")
    if boundary not in _BOUNDARIES:
        raise ValueError(f"Unknown boundary option '{boundary}', must be one of: {list(_BOUNDARIES.keys())}")
    axis = int(axis)
    x = np.asarray(x)
    if x.dtype.kind not in "biufc":
        raise ValueError(f"x must hold numbers, not {x.dtype}")
    outdtype = np.result_type(x, np.complex64)
    if x.size == 0:
        return np.empty(x.shape), np.empty(x.shape), np.empty(x.shape)
    if x.ndim > 1 and axis != -1:
        x = np.moveaxis(x, axis, -1)
    if nperseg is not None:
        nperseg = _int_parameter(nperseg, "nperseg")
        if nperseg < 1:
            raise ValueError('nperseg must be a positive integer')
    win, nperseg = _triage_segments(window, nperseg, input_length=x.shape[-1])
    if nfft is None:
        nfft = nperseg
    else:
        nfft = _int_parameter(nfft, "nfft")
        if nfft < nperseg:
            raise ValueError('nfft must be greater than or equal to nperseg.')
    noverlap = _overlap(noverlap, nperseg)
    nstep = nperseg - noverlap
    if boundary is not None:
        x = _BOUNDARIES[boundary](x, nperseg // 2, axis=-1)
    if padded:
        nadd = (-(x.shape[-1] - nperseg) % nstep) % nperseg
        x = np.concatenate((x, np.zeros(list(x.shape[:-1]) + [nadd])), axis=-1)
    code = _detrend_code(detrend)
    detrend_func = None
    if code is None:
        if axis != -1:
            def detrend_func(d):
                d = np.moveaxis(d, -1, axis)
                d = detrend(d)
                return np.moveaxis(d, axis, -1)
        else:
            detrend_func = detrend
    if scaling == 'density':
        scale = 1.0 / (fs * (win * win).sum())
    elif scaling == 'spectrum':
        scale = 1.0 / win.sum() ** 2
    else:
        raise ValueError(f'Unknown scaling: {scaling!r}')
    if mode == 'stft':
        scale = np.sqrt(scale)
    if return_onesided:
        if np.iscomplexobj(x):
            sides = 'twosided'
            warnings.warn('Input data is complex, switching to return_onesided=False', stacklevel=4)
        else:
            sides = 'onesided'
    else:
        sides = 'twosided'
    freqs = np.fft.fftfreq(nfft, 1 / fs) if sides == 'twosided' else np.fft.rfftfreq(nfft, 1 / fs)
    if x.shape[-1] < nperseg:
        raise ValueError(f"nperseg ({nperseg}) is longer than the signal ({x.shape[-1]} samples)")
    if mode == 'psd' and code is not None and x.dtype == np.float64:
        # The powers in C, scipy's (…, bins, segments) layout and values: |X|² × scale, one-sided bins doubled.
        result = _real_powers(x, win, nperseg, noverlap, nfft, code, sides == 'twosided', scale)
        time = np.arange(nperseg / 2, x.shape[-1] - nperseg / 2 + 1, nperseg - noverlap) / float(fs)
        if boundary is not None:
            time -= (nperseg / 2) / fs
        return freqs, time, np.moveaxis(np.swapaxes(result, -1, -2), -1, axis - 1 if axis < 0 else axis)
    if mode == 'stft':
        result = _segment_spectra(x, win, nperseg, noverlap, nfft, code, sides == 'twosided', scale, detrend_func)
    else:
        result = _segment_spectra(x, win, nperseg, noverlap, nfft, code, sides == 'twosided', 1.0, detrend_func)
        result = np.conjugate(result) * result
        result *= scale
        if sides == 'onesided':
            if nfft % 2:
                result[..., 1:, :] *= 2
            else:
                result[..., 1:-1, :] *= 2
    # (…, bins, segments) as scipy's (…, segments, bins) before its final move.
    result = np.swapaxes(result, -1, -2)
    time = np.arange(nperseg / 2, x.shape[-1] - nperseg / 2 + 1, nperseg - noverlap) / float(fs)
    if boundary is not None:
        time -= (nperseg / 2) / fs
    result = result.astype(outdtype)
    if mode != 'stft':
        result = result.real
    if axis < 0:
        axis -= 1
    result = np.moveaxis(result, -1, axis)
    return freqs, time, result


# -- scipy.signal's functions --


def spectrogram(x, fs=1.0, window=('tukey_periodic', .25), nperseg=None, noverlap=None, nfft=None, detrend='constant',
                return_onesided=True, scaling='density', axis=-1, mode='psd'):
    """``scipy.signal.spectrogram``: ``(f, t, Sxx)`` with Sxx shaped like x with its ``axis`` replaced
    by (frequencies, segments); ``mode`` psd, complex, magnitude, angle or phase."""
    modelist = ['psd', 'complex', 'magnitude', 'angle', 'phase']
    if mode not in modelist:
        raise ValueError(f'unknown value for mode {mode}, must be one of {modelist}')
    x = np.asarray(x)
    if x.ndim == 0:
        raise ValueError("x must have at least one dimension")
    if nperseg is not None:
        nperseg = _int_parameter(nperseg, "nperseg")
        if nperseg < 1:
            raise ValueError('nperseg must be a positive integer')
    window, nperseg = _triage_segments(window, nperseg, input_length=x.shape[axis])
    if noverlap is None:
        noverlap = nperseg // 8
    if mode == 'psd':
        return _spectral_helper(x, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling, axis, mode='psd')
    freqs, time, Sxx = _spectral_helper(x, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling, axis, mode='stft')
    if mode == 'magnitude':
        Sxx = np.abs(Sxx)
    elif mode in ['angle', 'phase']:
        Sxx = np.angle(Sxx)
        if mode == 'phase':
            if axis < 0:
                axis -= 1
            Sxx = np.unwrap(Sxx, axis=axis)
    return freqs, time, Sxx


def stft(x, fs=1.0, window='hann_periodic', nperseg=256, noverlap=None, nfft=None, detrend=False, return_onesided=True,
         boundary='zeros', padded=True, axis=-1, scaling='spectrum'):
    """``scipy.signal.stft``: ``(f, t, Zxx)``, Zxx complex, shaped like x with its ``axis`` replaced by
    (frequencies, segments)."""
    if scaling == 'psd':
        scaling = 'density'
    elif scaling != 'spectrum':
        raise ValueError(f"Parameter scaling={scaling!r} not in ['spectrum', 'psd']!")
    return _spectral_helper(x, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling=scaling, axis=axis,
                            mode='stft', boundary=boundary, padded=padded)


def istft(Zxx, fs=1.0, window='hann_periodic', nperseg=None, noverlap=None, nfft=None, input_onesided=True, boundary=True,
          time_axis=-1, freq_axis=-2, scaling='spectrum'):
    """``scipy.signal.istft``: ``(t, x)``, the least-squares inverse of an STFT by overlap-add."""
    Zxx = np.asarray(Zxx)
    if Zxx.dtype.kind not in "biufc":
        raise ValueError(f"Zxx must hold numbers, not {Zxx.dtype}")
    Zxx = Zxx + 0j
    freq_axis = int(freq_axis)
    time_axis = int(time_axis)
    if Zxx.ndim < 2:
        raise ValueError('Input stft must be at least 2d!')
    if freq_axis == time_axis:
        raise ValueError('Must specify differing time and frequency axes!')
    nseg = Zxx.shape[time_axis]
    n_default = 2 * (Zxx.shape[freq_axis] - 1) if input_onesided else Zxx.shape[freq_axis]
    if nperseg is None:
        nperseg = n_default
    else:
        nperseg = _int_parameter(nperseg, "nperseg")
    if nperseg < 1:
        raise ValueError('nperseg must be a positive integer')
    if nfft is None:
        nfft = nperseg if input_onesided and nperseg == n_default + 1 else n_default
    elif nfft < nperseg:
        raise ValueError('nfft must be greater than or equal to nperseg.')
    else:
        nfft = _int_parameter(nfft, "nfft")
    noverlap = _overlap(noverlap, nperseg)
    if nseg < 1:
        raise ValueError('Zxx has no segments (time axis of length 0)')
    nstep = nperseg - noverlap
    if time_axis != Zxx.ndim - 1 or freq_axis != Zxx.ndim - 2:
        if freq_axis < 0:
            freq_axis = Zxx.ndim + freq_axis
        if time_axis < 0:
            time_axis = Zxx.ndim + time_axis
        zouter = list(range(Zxx.ndim))
        for ax in sorted([time_axis, freq_axis], reverse=True):
            zouter.pop(ax)
        Zxx = np.transpose(Zxx, zouter + [freq_axis, time_axis])
    if isinstance(window, str) or type(window) is tuple:
        win = get_window(window, nperseg)
    else:
        win = _window_array(window)
        if win.shape[0] != nperseg:
            raise ValueError(f'window must have length of {nperseg}')
    if scaling == 'spectrum':
        gain = win.sum()
    elif scaling == 'psd':
        gain = np.sqrt(fs * sum(win ** 2))
    else:
        raise ValueError(f"Parameter scaling={scaling!r} not in ['spectrum', 'psd']!")
    half = nfft // 2 + 1
    outputlength = nperseg + (nseg - 1) * nstep
    h = nperseg // 2
    start, end = (h, outputlength - h if h else 0) if boundary else (0, outputlength)
    out_dtype = np.float32 if Zxx.dtype == np.complex64 else np.float64

    def overlap_add(half_spectra):  # (…, half, nseg) Hermitian half-spectra -> (…, end - start) real
        outer = half_spectra.shape[:-2]
        rows = int(np.prod(outer, dtype=np.int64)) if outer else 1
        z = np.ascontiguousarray(half_spectra, dtype=np.complex128).reshape(rows, half, nseg)
        out = np.empty((rows, end - start), dtype=np.float64)
        failures = c_size_t(0)
        if rows:
            check(_lib().tributary_istft(_pointer(z), rows, half, nseg, _pointer(win), nperseg, noverlap, nfft, float(gain),
                                         start, end, _pointer(out), ctypes.byref(failures)))
        return out.reshape(outer + (end - start,)), failures.value

    def fit(z, length):  # numpy's irfft / ifft: the frequency axis cut or zero-padded to `length`
        if z.shape[-2] >= length:
            return z[..., :length, :]
        pad = np.zeros(z.shape[:-2] + (length - z.shape[-2], z.shape[-1]), dtype=z.dtype)
        return np.concatenate((z, pad), axis=-2)

    if input_onesided:
        x, failures = overlap_add(fit(Zxx, half))
        x = x.astype(out_dtype, copy=False)
    else:
        # ifft(Z) = irfft(A) + 1j irfft(-1j B), A and B the Hermitian and anti-Hermitian parts of Z.
        z = fit(Zxx, nfft)
        mirrored = np.conjugate(np.roll(z[..., ::-1, :], 1, axis=-2))
        hermitian = ((z + mirrored) / 2)[..., :half, :]
        anti = (-0.5j * (z - mirrored))[..., :half, :]
        re, failures = overlap_add(hermitian)
        im, _ = overlap_add(anti)
        x = (re + 1j * im).astype(np.complex64 if out_dtype == np.float32 else np.complex128)
    if failures:
        warnings.warn("NOLA condition failed, STFT may not be invertible." + (" Possibly due to missing boundary" if not boundary else ""),
                      stacklevel=2)
    if x.ndim > 1:
        if time_axis != Zxx.ndim - 1:
            if freq_axis < time_axis:
                time_axis -= 1
            x = np.moveaxis(x, -1, time_axis)
    time = np.arange(x.shape[0]) / float(fs)
    return time, x


_AVERAGES = ('mean', 'median')


def _csd_parameters(n, window, nperseg, noverlap, nfft):
    """csd's window, nperseg, nfft, noverlap for signals of n samples (scipy 1.17's rules)."""
    if isinstance(window, (str, tuple)):
        nperseg = _int_parameter(nperseg, "nperseg") if nperseg is not None else 256
        if nperseg < 1:
            raise ValueError(f"Parameter nperseg={nperseg} is not a positive integer!")
        win, nperseg = _fitted_window(window, nperseg, n, lambda: (
            f"nperseg={nperseg} is greater than signal length max(len(x), len(y)) = {n}, using nperseg = {n}"))
    else:
        win = _window_array(window)
        if nperseg is None:
            nperseg = len(win)
        nperseg = _int_parameter(nperseg, "nperseg")
    if nperseg != len(win):
        raise ValueError(f"nperseg={nperseg} does not equal len(win)={len(win)}")
    if nperseg < 1:
        raise ValueError("the window is empty")
    nfft = _int_parameter(nfft, "nfft") if nfft is not None else nperseg
    if nfft < nperseg:
        raise ValueError(f"nfft={nfft} must be greater than or equal to nperseg={nperseg}!")
    noverlap = _int_parameter(noverlap, "noverlap") if noverlap is not None else nperseg // 2
    if noverlap >= nperseg:
        raise ValueError(f"noverlap={noverlap} must be less than nperseg={nperseg}!")
    if noverlap < 0:
        raise ValueError(f"noverlap={noverlap} must not be negative!")
    if n < nperseg:
        raise ValueError(f"nperseg={nperseg} (the window's length) is longer than the signal ({n} samples)")
    return win, nperseg, nfft, noverlap


def _check_fs(fs):
    if isinstance(fs, bool) or not isinstance(fs, numbers.Real) or not (fs > 0) or not np.isfinite(fs):
        raise ValueError(f"Sampling frequency fs={fs!r} must be a positive finite number!")
    return float(fs)


def _cross(x, y, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling, axis, average, want):
    """The Welch spectra of x and y (y None: x's auto-spectrum) as csd computes them: a dict with the
    requested 'pxx', 'pyy', 'pxy' (float64 / complex128), and the frequencies. Inputs are prepared
    (axes, padding, broadcasting) by the caller-independent steps of scipy's csd."""
    fs = _check_fs(fs)
    same = y is None
    axis = int(axis)
    x = np.moveaxis(x, axis, -1)
    if not same:
        y = np.moveaxis(y, axis, -1)
    n = x.shape[-1] if same else max(x.shape[-1], y.shape[-1])
    win, nperseg, nfft, noverlap = _csd_parameters(n, window, nperseg, noverlap, nfft)
    complex_x = np.iscomplexobj(x)
    if complex_x and return_onesided:
        return_onesided = False
    if not same:
        if x.shape[-1] < y.shape[-1]:
            x = np.concatenate((x, np.zeros(x.shape[:-1] + (y.shape[-1] - x.shape[-1],))), axis=-1)
        elif y.shape[-1] < x.shape[-1]:
            y = np.concatenate((y, np.zeros(y.shape[:-1] + (x.shape[-1] - y.shape[-1],))), axis=-1)
        if return_onesided and np.iscomplexobj(y):
            raise ValueError("Complex-valued `y` not allowed with return_onesided=True for real `x`: "
                             "set return_onesided=False")
        outer = np.broadcast_shapes(x.shape[:-1], y.shape[:-1])
        x = np.broadcast_to(x, outer + (n,))
        y = np.broadcast_to(y, outer + (n,))
    if scaling not in ('spectrum', 'density'):
        raise ValueError(f"Parameter scaling={scaling!r} not in {{'spectrum': 'magnitude', 'density': 'psd'}}!")
    if average not in _AVERAGES:
        raise ValueError(f"Parameter average={average!r} must be 'median' or 'mean'!")
    code = _detrend_code(None if detrend is False else detrend)
    twosided = not return_onesided
    freqs = np.fft.fftfreq(nfft, 1 / fs) if twosided else np.fft.rfftfreq(nfft, 1 / fs)
    bins = len(freqs)
    result = {"f": freqs}
    if code is not None and not np.iscomplexobj(x) and (same or not np.iscomplexobj(y)):
        outer = x.shape[:-1]
        rows = int(np.prod(outer, dtype=np.int64)) if outer else 1
        xs = np.ascontiguousarray(x, dtype=np.float64).reshape(rows, n)
        ys = None if same else np.ascontiguousarray(y, dtype=np.float64).reshape(rows, n)
        outs = {k: (np.empty((rows, bins), dtype=np.float64) if k != 'pxy' else np.empty((rows, bins, 2), dtype=np.float64))
                for k in want}
        if rows:
            check(_lib().tributary_cross_spectra(
                _pointer(xs), None if same else _pointer(ys), rows, n, _pointer(win), nperseg, noverlap, nfft, code,
                1 if average == 'median' else 0, 1 if scaling == 'spectrum' else 0, 1 if twosided else 0, fs,
                _pointer(outs['pxx']) if 'pxx' in outs else None, _pointer(outs['pyy']) if 'pyy' in outs else None,
                _pointer(outs['pxy']) if 'pxy' in outs else None, bins))
        for k, v in outs.items():
            result[k] = (v.view(np.complex128) if k == 'pxy' else v).reshape(outer + (bins,))
        return result
    # A detrend function or complex data: the segments' spectra, multiplied and averaged here as scipy does.
    base = 1 / (fs * (win * win).sum()) if scaling == 'density' else 1 / win.sum() ** 2

    def spectra(s):
        return _segment_spectra(s, win, nperseg, noverlap, nfft, code, twosided, 1.0, detrend if code is None else None)

    sx = spectra(x)
    sy = sx if same else spectra(y)

    def average_of(p):
        p = p * base
        if not twosided:
            p[..., 1:-1 if nfft % 2 == 0 else None, :] *= 2
        if p.shape[-1] > 1:
            if average == 'median':
                bias = _median_bias(p.shape[-1])
                if np.iscomplexobj(p):
                    p = np.median(np.real(p), axis=-1) + np.median(np.imag(p), axis=-1) * 1j
                else:
                    p = np.median(p, axis=-1)
                p /= bias
            else:
                p = p.mean(axis=-1)
        else:
            p = np.reshape(p, p.shape[:-1])
        return p

    if 'pxx' in want:
        result['pxx'] = average_of((sx.real ** 2 + sx.imag ** 2)).real
    if 'pyy' in want:
        result['pyy'] = average_of((sy.real ** 2 + sy.imag ** 2)).real
    if 'pxy' in want:
        result['pxy'] = average_of(sy * np.conjugate(sx))
    return result


def _median_bias(n):
    ii_2 = 2 * np.arange(1., (n - 1) // 2 + 1)
    return 1 + np.sum(1. / (ii_2 + 1) - 1. / ii_2)


def _as_numbers(a, name):
    a = np.asarray(a)
    if a.dtype.kind not in "biufc":
        raise ValueError(f"{name} must hold numbers, not {a.dtype}")
    if a.ndim == 0:
        raise ValueError(f"{name} must have at least one dimension")
    return a


def welch(x, fs=1.0, window='hann_periodic', nperseg=None, noverlap=None, nfft=None, detrend='constant',
          return_onesided=True, scaling='density', axis=-1, average='mean'):
    """``scipy.signal.welch``: ``(f, Pxx)``."""
    x = _as_numbers(x, "x")
    axis = int(axis)
    if x.size == 0:
        return np.empty(x.shape), np.empty(x.shape)
    out_dtype = np.result_type(x, np.complex64)
    r = _cross(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling, axis, average, ('pxx',))
    pxx = r['pxx'].astype(out_dtype).real
    return r['f'], np.moveaxis(pxx, -1, axis)


def csd(x, y, fs=1.0, window='hann_periodic', nperseg=None, noverlap=None, nfft=None, detrend='constant',
        return_onesided=True, scaling='density', axis=-1, average='mean'):
    """``scipy.signal.csd``: ``(f, Pxy)``, Pxy = mean over segments of conj(X) Y, scaled."""
    same = y is x
    axis = int(axis)
    x = _as_numbers(x, "x")
    if same:
        if x.size == 0:
            return np.empty(x.shape), np.empty(x.shape)
        out_dtype = np.result_type(x, np.complex64)
        r = _cross(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling, axis, average, ('pxx',))
        return r['f'], np.moveaxis(r['pxx'].astype(out_dtype).real, -1, axis)
    y = _as_numbers(y, "y")
    x_outer, y_outer = list(x.shape), list(y.shape)
    x_outer.pop(axis)
    y_outer.pop(axis)
    try:
        outer_shape = np.broadcast_shapes(x_outer, y_outer)
    except ValueError as e:
        raise ValueError('x and y cannot be broadcast together.') from e
    if x.size == 0 or y.size == 0:
        out_shape = outer_shape + (min([x.shape[axis], y.shape[axis]]),)
        empty_out = np.moveaxis(np.empty(out_shape), -1, axis)
        return empty_out, empty_out
    out_dtype = np.result_type(x, y, np.complex64)
    r = _cross(x, y, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling, axis, average, ('pxy',))
    return r['f'], np.moveaxis(r['pxy'].astype(out_dtype), -1, axis)


def coherence(x, y, fs=1.0, window='hann_periodic', nperseg=None, noverlap=None, nfft=None, detrend='constant', axis=-1):
    """``scipy.signal.coherence``: ``(f, Cxy)``, Cxy = |Pxy|^2 / (Pxx Pyy)."""
    x = _as_numbers(x, "x")
    y = _as_numbers(y, "y")
    axis = int(axis)
    if (y is not x and x.size and y.size and x.dtype == np.float64 and y.dtype == np.float64 and x.ndim == y.ndim
            and x.shape[axis] == y.shape[axis]):
        # Real float64 signals of one length: Pxx, Pyy and Pxy from one pass over both signals'
        # segments (the values welch and csd give, which see the same segments).
        try:
            np.broadcast_shapes(np.delete(x.shape, axis), np.delete(y.shape, axis))
        except ValueError as e:
            raise ValueError('x and y cannot be broadcast together.') from e
        r = _cross(x, y, fs, window, nperseg, noverlap, nfft, detrend, True, 'density', axis, 'mean', ('pxx', 'pyy', 'pxy'))
        Cxy = np.abs(r['pxy']) ** 2 / r['pxx'] / r['pyy']
        return r['f'], np.moveaxis(Cxy, -1, axis)
    freqs, Pxx = welch(x, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap, nfft=nfft, detrend=detrend, axis=axis)
    _, Pyy = welch(y, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap, nfft=nfft, detrend=detrend, axis=axis)
    _, Pxy = csd(x, y, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap, nfft=nfft, detrend=detrend, axis=axis)
    Cxy = np.abs(Pxy) ** 2 / Pxx / Pyy
    return freqs, Cxy


def transfer(x_ref, y, fs=1.0, estimator='H1', window='hann_periodic', nperseg=None, noverlap=None, nfft=None,
             detrend='constant', axis=-1, average='mean'):
    """The transfer function from a reference (input) ``x_ref`` to responses ``y`` (any shape that
    broadcasts with x_ref outside ``axis``), estimated from one pass of Welch cross-spectra:

    - ``estimator='H1'``: H = Pxy / Pxx (unbiased by noise on y);
    - ``estimator='H2'``: H = Pyy / Pyx (unbiased by noise on x_ref);

    with Pxy = ``csd(x_ref, y)``, Pyx = ``csd(y, x_ref)`` = conj(Pxy), Pxx, Pyy = ``welch``.

    :returns: ``(f, H, Cxy)``: frequencies, the complex transfer function and the magnitude-squared
        coherence |Pxy|^2 / (Pxx Pyy), shaped like ``csd(x_ref, y)``. ``np.abs(H)`` is the magnitude,
        ``np.angle(H)`` the phase.
    """
    if estimator not in ('H1', 'H2'):
        raise ValueError(f"estimator must be 'H1' or 'H2', not {estimator!r}")
    axis = int(axis)
    x = _as_numbers(x_ref, "x_ref")
    y = _as_numbers(y, "y")
    if np.iscomplexobj(x) or np.iscomplexobj(y):
        raise ValueError("transfer estimates real signals only")
    if x.size == 0 or y.size == 0:
        raise ValueError("x_ref and y must not be empty")
    if x.shape[axis] != y.shape[axis]:
        raise ValueError(f"x_ref and y must have the same length along axis {axis}, not {x.shape[axis]} and {y.shape[axis]}")
    x_outer, y_outer = list(x.shape), list(y.shape)
    x_outer.pop(axis)
    y_outer.pop(axis)
    try:
        np.broadcast_shapes(x_outer, y_outer)
    except ValueError as e:
        raise ValueError('x_ref and y cannot be broadcast together.') from e
    out_dtype = np.result_type(x, y, np.complex64)
    r = _cross(x, y, fs, window, nperseg, noverlap, nfft, detrend, True, 'density', axis, average, ('pxx', 'pyy', 'pxy'))
    pxx, pyy, pxy = r['pxx'], r['pyy'], r['pxy']
    h = pxy / pxx if estimator == 'H1' else pyy / np.conjugate(pxy)
    cxy = np.abs(pxy) ** 2 / pxx / pyy
    real_dtype = np.empty(0, out_dtype).real.dtype
    return r['f'], np.moveaxis(h.astype(out_dtype), -1, axis), np.moveaxis(cxy.astype(real_dtype), -1, axis)

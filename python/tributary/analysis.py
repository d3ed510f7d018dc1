"""The `tributary analyze` pipeline from Python: the same JSON document the command prints, as dicts."""
from __future__ import annotations

import ctypes
import json
import os
import warnings
from ctypes import c_void_p
from typing import Any, Dict, Optional, Sequence, Union

import numpy as np

from ._native import INT64_MAX, UINT32_MAX, check, integer, integers, lib, real

_OPTIONS = {"arrays", "rate", "stats", "welch", "overlap", "window", "detrend", "average", "scaling", "spectrum", "spectrogram",
            "coherence", "transfer", "measure", "full_scale",
            "harmonics", "fold_aliases", "measure_window", "channels", "int16_scale", "rigor", "name"}
# Numbers the library reads as integers (Swift Int) and as doubles: checked here, so that a float
# where an integer belongs, a NaN (not JSON) or a number past the C type is an error naming the option.
_INTEGER_OPTIONS = ("welch", "spectrum", "spectrogram", "coherence", "transfer", "harmonics")
_REAL_OPTIONS = ("rate", "overlap", "full_scale", "int16_scale")


def _options(options: Dict[str, Any]) -> bytes:
    unknown = set(options) - _OPTIONS
    if unknown:
        raise TypeError(f"unknown analysis option(s) {sorted(unknown)}; options: {sorted(_OPTIONS)}")
    clean = {k: v for k, v in options.items() if v is not None and v is not False}
    if isinstance(clean.get("measure"), (list, tuple)):
        clean["measure"] = [str(m) for m in clean["measure"]]
    if "channels" in clean and not isinstance(clean["channels"], str):
        clean["channels"] = integers(clean["channels"], "channels", 0, UINT32_MAX)
    for k in _INTEGER_OPTIONS:
        if k in clean:
            clean[k] = integer(clean[k], k, -INT64_MAX - 1, INT64_MAX)
    for k in _REAL_OPTIONS:
        if k in clean:
            clean[k] = real(clean[k], k)
    for k, v in list(clean.items()):
        if isinstance(v, np.generic):
            clean[k] = v.item()
    return json.dumps(clean).encode()


def analyze(data: Union[str, os.PathLike, np.ndarray, Sequence[float]], rate: Optional[float] = None, *,
            stats: bool = False, welch: Optional[int] = None, overlap: Optional[float] = None,
            window: Optional[str] = None, detrend: Optional[str] = None, average: Optional[str] = None,
            scaling: Optional[str] = None, spectrum: Optional[int] = None, spectrogram: Optional[int] = None,
            coherence: Optional[int] = None, transfer: Optional[int] = None,
            measure: Union[None, str, Sequence[str]] = None, harmonics: Optional[int] = None,
            fold_aliases: bool = False, measure_window: Optional[str] = None, full_scale: Optional[float] = None,
            channels: Union[None, str, Sequence[int]] = None, int16_scale: Optional[float] = None,
            rigor: Optional[str] = None, name: Optional[str] = None, arrays: str = "list") -> Dict[str, Any]:
    """Runs ``tributary analyze --json`` on a file or an array and returns its document as a dict.

    :param data: a path (capture, NPY or frame file), or an array shaped (channels, samples) or
        (samples,) — analysed as ``analyze`` analyses an NPY file of it (one source, id 1; any real
        dtype is converted to float64, int16 counts multiplied by ``int16_scale`` when given; the
        document's "dtype" is then "<f8").
    :param rate: sampling rate in Hz (files: overrides configured rates; arrays: default 1, as scipy's fs).
    The other parameters are the command's options (``welch=1024`` is ``--welch 1024``,
    ``measure=["thd", "sinad"]`` is ``--measure thd,sinad``, ``channels="0-3"`` or ``[0, 2]``;
    ``spectrogram=1024``, ``coherence=0`` and ``transfer=0`` are ``--spectrogram 1024``, ``--coherence 0``
    and ``--transfer 0``: docs/ANALYSIS.md).
    Without stats/welch/spectrum/measure, stats are computed. ``name`` names an array's source and
    the document's "file" (default "buffer"). ``arrays="numpy"`` gives the Welch and spectrum arrays
    (``frequencies``, ``psd``, ``amplitude_rms``) as float64 ndarrays, NaN kept; the default ``"list"``
    gives lists of floats with None for NaN and infinities, exactly the command's document.

    :returns: ``{"file", "warnings", "sources": [{"id", "name", "sample_rate", "dtype", "channel_count",
        "discontinuities", "channels": [{"index", "samples", "stats": {...}, "welch": {...}, ...}]}]}``
        (docs/ANALYSIS.md); NaN and infinities are None, as in the command's JSON.
    :raises tributary.AnalysisError: the data could not be analysed; ``tributary.ArgumentError`` for bad options.
    """
    if arrays not in ("list", "numpy"):
        raise ValueError(f"arrays must be 'list' or 'numpy', not {arrays!r}")
    options = dict(stats=stats, welch=welch, overlap=overlap, window=window, detrend=detrend, average=average,
                   scaling=scaling, spectrum=spectrum, spectrogram=spectrogram, coherence=coherence, transfer=transfer,
                   measure=measure, harmonics=harmonics, fold_aliases=fold_aliases,
                   measure_window=measure_window, full_scale=full_scale, channels=channels, int16_scale=int16_scale,
                   rigor=rigor, arrays="block")
    out = c_void_p()
    if isinstance(data, (str, os.PathLike)):
        if name is not None:
            raise TypeError("name is for arrays; a file's document is named by its path")
        options["rate"] = rate
        check(lib().tributary_analyze_file(os.fspath(data).encode(), _options(options), ctypes.byref(out)))
    else:
        array = np.asarray(data)
        if array.dtype.kind not in "fiu" or array.dtype.kind == "c":
            raise TypeError(f"cannot analyse an array of dtype {array.dtype}: real numbers only")
        if array.ndim == 1:
            array = array.reshape(1, -1)
        if array.ndim != 2:
            raise ValueError(f"the array must be shaped (channels, samples) or (samples,), not {array.shape}")
        if array.dtype == np.int16 and int16_scale is not None:
            # As analyze does with int16 NPY files: counts times the scale.
            array = array.astype(np.float64) * real(int16_scale, "int16_scale")
        options["int16_scale"] = None
        # One copy at most: none for a C-ordered float64 array.
        array = np.ascontiguousarray(array, dtype=np.float64)
        options["name"] = name
        check(lib().tributary_analyze_buffer(array.ctypes.data_as(c_void_p), array.shape[0], array.shape[1],
                                             real(rate, "rate") if rate is not None else 1.0, _options(options), ctypes.byref(out)))
    document = _take_document(out)
    _warn_shortened_segments(document)
    if arrays == "list":
        _as_lists(document)
    return document


# The start of the warning of a Welch segment longer than the input (docs/ANALYSIS.md §5).
_NPERSEG_WARNING = "nperseg = "


def _warn_shortened_segments(document: Dict[str, Any]) -> None:
    """A ``UserWarning`` for each channel whose Welch segment was shortened to its length, as
    ``scipy.signal.welch`` warns ("nperseg = 256 is greater than input length = 100, using nperseg = 100")."""
    for source in document.get("sources", []):
        for channel in source.get("channels", []):
            for text in channel.get("warnings", []):
                if text.startswith(_NPERSEG_WARNING):
                    warnings.warn(f"source {source['id']} channel {channel['index']}: {text}", UserWarning, stacklevel=3)


def _take_document(pointer: c_void_p) -> Dict[str, Any]:
    """The document of an analysis with ``"arrays": "block"`` (docs/C_API.md), its arrays as ndarrays:
    read-only views of one block of float64 values, which follows the text in the same allocation
    (from the first multiple of 8 bytes after the text's NUL). The allocation is freed."""
    try:
        text = ctypes.string_at(pointer.value)
        document = json.loads(text)
        if document.pop("array_encoding", None) != "float64le-block":
            return document
        size = document.pop("array_block_bytes")
        block = np.frombuffer(ctypes.string_at(pointer.value + ((len(text) + 1 + 7) & ~7), size), dtype="<f8")
    finally:
        lib().tributary_free(pointer)
    for arrays, member in _array_places(document):
        first = arrays[member]["offset"] // 8
        arrays[member] = block[first:first + arrays[member]["count"]]
    return document


def _array_places(document: Dict[str, Any]):
    """Each array of a document's channels (Welch, spectrum, spectrogram, coherence, transfer — in the
    block encoding the objects ``{"offset", "count"}``, docs/C_API.md; after ``_take_document``
    ndarrays), as (the dict or list holding it, its key or index), nested lists (a spectrogram's rows)
    included."""
    def walk(holder, key):
        value = holder[key]
        if isinstance(value, np.ndarray) or (isinstance(value, dict) and set(value) == {"offset", "count"}):
            yield holder, key
        elif isinstance(value, dict):
            for k in value:
                yield from walk(value, k)
        elif isinstance(value, list):
            for i in range(len(value)):
                yield from walk(value, i)
    for source in document["sources"]:
        for channel in source["channels"]:
            for key in channel:
                yield from walk(channel, key)


def _as_lists(document: Dict[str, Any]) -> None:
    """The arrays as the lists the command's JSON has (None for NaN and infinities)."""
    for arrays, member in _array_places(document):
        values = arrays[member]
        finite = np.isfinite(values)
        arrays[member] = values.tolist() if finite.all() else [v if ok else None for v, ok in zip(values.tolist(), finite)]

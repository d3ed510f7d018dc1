"""Captures (.tcap) through libtributary: sources, channels, analog data as numpy arrays, other packages."""
from __future__ import annotations

import base64
import ctypes
import json
import os
import warnings
from ctypes import c_uint32, c_uint64, c_void_p
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

import numpy as np

from . import _native
from ._native import FLOAT32, FLOAT64, INT16, INT32, check, integer, integers, lib, take_string

_DTYPES = {"float64": np.float64, "float32": np.float32, "int16": np.int16, "int32": np.int32}
_EXPORT_FORMATS = ("npy", "csv", "wav", "tdms", "xdf", "hdf5")
# The kinds packages(kinds=…) selects, name → number: the KIND_* constants (the library's delivered
# kinds, checked by python/tests/test_vocabulary.py) whose bit fits the 32-bit kind mask, but close,
# which ends a session and is never recorded.
_KINDS = {name[len("KIND_"):].lower().replace("_", "-"): value for name, value in vars(_native).items()
          if name.startswith("KIND_") and value < 32 and value != _native.KIND_CLOSE}


@dataclass(frozen=True)
class Channel:
    """One stored channel of a source: ``row`` is its position in the source's data, ``index`` its
    configuration index, ``scale``/``offset`` convert int16 counts to physical units, ``properties``
    its free-form key/value properties (sensor serial, calibration date …; empty without any)."""
    row: int
    index: int
    name: str
    unit: str
    sample_rate: Optional[float]
    scale: float
    offset: float
    min: Optional[float] = None
    max: Optional[float] = None
    properties: Dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Gap:
    """Frames known to be lost (a gap record)."""
    first_missing_sequence: int
    missing_count: int
    cause: Optional[str]
    time_ns: int


@dataclass(frozen=True)
class SourceOrigin:
    """Where a source of a recording of several publishers (``tributary record A B …``) came from
    (docs/CAPTURE.md §6, source origin): the publisher's position among the recorded addresses
    (``publisher_index``, from 0), the ``address`` connected to, the publisher's ``publisher``
    description, and its own id for the source (``publisher_source_id``; the capture's id differs
    when an earlier publisher had that id)."""
    publisher_index: int
    address: str
    publisher: str
    publisher_source_id: int


@dataclass(frozen=True)
class Source:
    """A source of a capture: its configuration, the shape of its analog data, its gaps, its
    free-form key/value ``properties`` (set by the publisher; empty without any) and its ``origin``
    in a recording of several publishers (None in any other capture)."""
    id: int
    name: Optional[str]
    device_type: Optional[str]
    sample_rate: Optional[float]
    sample_type: Optional[str]
    samples: int
    frames: int
    first_time_ns: int
    last_time_ns: int
    channels: List[Channel] = field(default_factory=list)
    gaps: List[Gap] = field(default_factory=list)
    lines: List[Dict[str, Any]] = field(default_factory=list)
    properties: Dict[str, str] = field(default_factory=dict)
    origin: Optional[SourceOrigin] = None

    @property
    def dtype(self) -> Optional[np.dtype]:
        """The stored sample type as a numpy dtype (None without analog data)."""
        return np.dtype(_DTYPES[self.sample_type]) if self.sample_type else None


@dataclass(frozen=True)
class Package:
    """A package that is not analog data, as recorded: ``kind`` ('configuration', 'message', 'xml',
    'file', 'image', 'array', 'digital', 'error', …), header fields, and ``content`` (a dict as in
    ``tributary inspect --json``; file and image chunks carry their bytes in ``data``)."""
    kind: str
    source_id: int
    sequence: int
    timestamp_ns: int
    filter_id: int
    content: Dict[str, Any]

    @property
    def data(self) -> Optional[bytes]:
        """The bytes of a file or image chunk (None for other kinds)."""
        encoded = self.content.get("content_base64")
        return base64.b64decode(encoded) if encoded is not None else None

    @property
    def array(self) -> Optional[np.ndarray]:
        """The elements of a 2D-array package as a numpy array (None for other kinds)."""
        if self.kind != "array":
            return None
        types = {"double": np.float64, "float": np.float32, "int32": np.int32, "int16": np.int16, "int64": np.int64,
                 "bool": np.bool_, "string": object}
        dtype = types.get(self.content.get("element_type"), object)
        return np.array(self.content["elements"], dtype=dtype).reshape(self.content["rows"], self.content["columns"])

    @property
    def states(self) -> Optional[np.ndarray]:
        """The line states of a digital package, shaped (lines, samples), as bools (None otherwise)."""
        if self.kind != "digital":
            return None
        return np.array(self.content["states"], dtype=np.bool_).reshape(len(self.content["line_indexes"]), -1)


def _package(text: str) -> Package:
    d = json.loads(text)
    return Package(kind=d["kind"], source_id=d["source_id"], sequence=d["sequence"], timestamp_ns=d["timestamp_ns"],
                   filter_id=d["filter_id"], content=d["content"])


class Capture(_native.HandleOwner):
    """An open capture. Use as a context manager, or call :meth:`close`; after closing, every call
    raises :class:`tributary.HandleError`.

    >>> with tributary.open("run.tcap") as cap:
    ...     volts = cap.read(1, channels=[0, 1], start=0, stop=48000)
    """

    _close_call = "tributary_capture_close"

    def __init__(self, path: Union[str, os.PathLike]):
        self.path = os.fspath(path)
        handle = c_void_p()
        check(lib().tributary_capture_open(self.path.encode(), ctypes.byref(handle)))
        self._handle = handle
        self._closed = False
        info = c_void_p()
        try:
            check(lib().tributary_capture_info_json(self._handle, ctypes.byref(info)))
        except BaseException:
            self.close()
            raise
        self.info: Dict[str, Any] = json.loads(take_string(info))
        self.sources: List[Source] = [
            Source(id=s["id"], name=s["name"], device_type=s["device_type"], sample_rate=s["sample_rate"],
                   sample_type=s["sample_type"], samples=s["samples"], frames=s["frames"],
                   first_time_ns=s["first_time_ns"], last_time_ns=s["last_time_ns"],
                   channels=[Channel(**c) for c in s["channels"]], gaps=[Gap(**g) for g in s["gaps"]], lines=s["lines"],
                   properties=dict(s.get("properties", {})),
                   origin=SourceOrigin(**s["origin"]) if s.get("origin") else None)
            for s in self.info["sources"]]

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self.sources)} source(s)"
        return f"<tributary.Capture {self.path!r}: {state}>"

    # -- metadata --

    @property
    def recovered(self) -> bool:
        """True when the capture had no valid footer (a crashed writer) or was repaired."""
        return bool(self.info["recovered"])

    @property
    def damage(self) -> List[str]:
        """Damaged regions found when opening (skipped, never fatal)."""
        return list(self.info["damage"])

    @property
    def metadata(self) -> Dict[str, Any]:
        """The whole description of the capture (the JSON of ``tributary_capture_info_json``)."""
        return self.info

    def source(self, source: Optional[int] = None) -> Source:
        """The source with id ``source`` (default: the lowest id with analog data)."""
        if source is not None:
            source = integer(source, "source")  # any integer: one the capture lacks is a RangeError below
        if source is None:
            analog = [s for s in self.sources if s.sample_type]
            if not analog:
                raise _native.RangeError(_native.E_RANGE, f"{self.path}: no source has analog data")
            return analog[0]
        for s in self.sources:
            if s.id == source:
                return s
        raise _native.RangeError(_native.E_RANGE, f"{self.path}: no source {source} (sources: {[s.id for s in self.sources]})")

    # -- data --

    @staticmethod
    def _rows(src: Source, channels: Union[None, int, Sequence[int], slice]) -> List[int]:
        """The rows that ``channels`` (None, an integer, a sequence of integers or a slice) selects
        of ``src``: each an integer (not a float, a string or a bool) within the source's channels."""
        n_channels = len(src.channels)
        if channels is None:
            return list(range(n_channels))
        if isinstance(channels, slice):
            for part in ("start", "stop", "step"):
                if getattr(channels, part) is not None:
                    integer(getattr(channels, part), f"channels {part}")
            return list(range(n_channels))[channels]
        if isinstance(channels, (str, bytes)) or not hasattr(channels, "__iter__"):
            rows = [integer(channels, "channels")]
        else:
            rows = integers(channels, "channels")
        for r in rows:
            if r < 0 or r >= n_channels:
                raise _native.RangeError(_native.E_RANGE, f"channel {r} is out of range: source {src.id} has {n_channels} channels")
        return rows

    @staticmethod
    def _span(src: Source, start: int, stop: Optional[int]) -> range:
        """The samples ``start`` … ``stop`` of ``src`` (checked: non-negative integers), cut to those it has."""
        start = integer(start, "start")
        if stop is not None:
            stop = integer(stop, "stop")
        if start < 0 or (stop is not None and stop < 0):
            raise ValueError("start and stop must be non-negative")
        stop = src.samples if stop is None else min(stop, src.samples)
        return range(min(start, stop), stop) if start <= stop else range(stop, stop)

    def read(self, source: Optional[int] = None, channels: Union[None, int, Sequence[int], slice] = None,
             start: int = 0, stop: Optional[int] = None, counts: bool = False,
             out: Optional[np.ndarray] = None) -> np.ndarray:
        """Analog samples of one source as an array shaped (channels, samples), C order.

        :param source: source id (default: the lowest id with analog data).
        :param channels: channel rows (positions in ``source.channels``): an int, a list, a slice, or None for all.
        :param start, stop: sample range (Python slice semantics for non-negative values; ``stop`` default: the end).
        :param counts: False (default): float64 physical values (int16 / int32 counts scaled by their scale and offset).
            True: the samples as stored, bit-exact (int16 or int32 counts, float32 or float64).
        :param out: an array to read into instead of a new one (as numpy's ``out=``): C-contiguous,
            writeable, of the dtype and shape (channels, samples) this call would return. Reading
            block after block, or file after file, into one array spares the allocation and the
            first touch of its pages each time. Returned as it is (filled) when the capture holds
            all the samples; a capture that ends early raises :class:`ValueError` rather than hand
            back an array partly old.
        """
        self._check_open()
        src = self.source(source)
        if not src.sample_type:
            raise _native.RangeError(_native.E_RANGE, f"source {src.id} has no analog data")
        rows = self._rows(src, channels)
        span = self._span(src, start, stop)
        start, count = span.start, len(span)
        dtype = src.dtype if counts else np.dtype(np.float64)
        sample_type = {np.dtype(np.float64): FLOAT64, np.dtype(np.float32): FLOAT32, np.dtype(np.int16): INT16,
                       np.dtype(np.int32): INT32}[dtype]
        given = out is not None
        if given:
            if not isinstance(out, np.ndarray):
                raise TypeError(f"out must be a numpy array, not {type(out).__name__}")
            if out.dtype != dtype or out.shape != (len(rows), count):
                raise ValueError(f"out must be {dtype} shaped {(len(rows), count)} for this read, not {out.dtype} shaped {out.shape}")
            if not out.flags.c_contiguous or not out.flags.writeable:
                raise ValueError("out must be C-contiguous and writeable")
        else:
            out = np.empty((len(rows), count), dtype=dtype)
        if count == 0 or not rows:
            return out
        row_array = (c_uint32 * len(rows))(*rows)
        got = c_uint64()
        check(lib().tributary_capture_read(self._handle, src.id, row_array, len(rows), start, count, sample_type,
                                           out.ctypes.data_as(c_void_p), out.nbytes, ctypes.byref(got)))
        if got.value == count:
            return out
        if given:
            raise ValueError(f"{self.path}: source {src.id} holds {got.value} of the {count} samples asked for; out is partly filled")
        return out[:, :got.value].copy()

    def read_raw(self, source: Optional[int] = None, channels=None, start: int = 0, stop: Optional[int] = None,
                 dtype: Any = np.float64) -> np.ndarray:
        """As :meth:`read`, asking for an explicit sample type (float64, float32, int16 or int32); a type that
        the source is not stored in raises :class:`tributary.SampleTypeError`."""
        self._check_open()
        src = self.source(source)
        wanted = np.dtype(dtype)
        if wanted not in (np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.int16), np.dtype(np.int32)):
            raise _native.SampleTypeError(_native.E_TYPE, f"dtype {wanted} is not float64, float32, int16 or int32")
        if wanted == np.dtype(np.float64):
            return self.read(src.id, channels, start, stop)
        if wanted != src.dtype:
            raise _native.SampleTypeError(_native.E_TYPE, f"source {src.id} stores {src.sample_type}; read it as float64 or {src.sample_type}")
        return self.read(src.id, channels, start, stop, counts=True)

    def packages(self, kinds: Optional[Sequence[str]] = None) -> Iterator[Package]:
        """The packages that are not analog data, in file order (configurations, messages, XML, file and
        image chunks, arrays, digital lines, errors, …); ``kinds`` selects some (e.g. ["message", "xml"]).
        Each call starts from the beginning of the capture; the capture has one cursor, so interleaving
        two of these iterations mixes their packages (open the capture twice for that)."""
        self._check_open()
        mask = 0
        for k in kinds or []:
            if k not in _KINDS or k == "analog":
                raise ValueError(f"unknown package kind {k!r} (kinds: {sorted(set(_KINDS) - {'analog'})})")
            mask |= 1 << _KINDS[k]
        check(lib().tributary_capture_rewind(self._handle))
        while True:
            text = c_void_p()
            status = lib().tributary_capture_next_package(self._handle, mask, ctypes.byref(text))
            if status == _native.E_END:
                return
            check(status)
            yield _package(take_string(text))

    def times(self, source: Optional[int] = None, start: int = 0, stop: Optional[int] = None) -> np.ndarray:
        """The time of samples ``start`` … ``stop`` of a source (numbered as :meth:`read` numbers
        them), float64 seconds since the source's first sample, from the recorded frame times: each
        frame's timestamp plus k / rate for its k-th sample. Samples after a gap (frames lost, a
        publisher restarted) are at the time they were recorded. These are the times of
        ``tributary export --format csv --time-column`` (the library computes both;
        ``tributary_capture_times`` in docs/C_API.md). Raises :class:`tributary.FormatError` when
        the source has no single sampling rate (its samples have numbers, not times)."""
        self._check_open()
        src = self.source(source)
        if not src.sample_type:
            raise _native.RangeError(_native.E_RANGE, f"source {src.id} has no analog data")
        span = self._span(src, start, stop)
        seconds = np.empty(len(span), dtype=np.float64)
        got = c_uint64()
        check(lib().tributary_capture_times(self._handle, src.id, span.start, len(span), seconds.ctypes.data_as(c_void_p),
                                            seconds.nbytes, ctypes.byref(got)))
        return seconds if got.value == len(span) else seconds[:got.value].copy()

    def _has_times(self, src: Source) -> bool:
        """Whether the samples of ``src`` have times: one sampling rate, as export takes it (a call of
        ``tributary_capture_times`` for no samples checks just that)."""
        status = lib().tributary_capture_times(self._handle, src.id, 0, 0, None, 0, None)
        if status == _native.E_FORMAT:
            return False
        check(status)
        return True

    def to_pandas(self, source: Optional[int] = None, channels=None, start: int = 0, stop: Optional[int] = None):
        """The analog data of a source as a pandas DataFrame: one column per channel (named by the
        channels' names), float64 physical values. Indexed by time since the source's first sample
        (a ``TimedeltaIndex`` named "time") when the source has a sampling rate: the recorded frame
        times of :meth:`times`, so that samples after a gap are at the time they were recorded
        (each time rounded to the nanosecond); else (no single configured rate, as for
        ``export --time-column``) by the sample number (an index named "sample")."""
        import pandas as pd

        src = self.source(source)
        rows = self._rows(src, channels)
        data = self.read(src.id, rows, start, stop)
        names = [src.channels[r].name for r in rows]
        first = self._span(src, start, stop).start
        if self._has_times(src):
            nanoseconds = np.rint(self.times(src.id, first, first + data.shape[1]) * 1e9)
            # Frame times from a damaged or hostile file may be centuries apart: no int64 wrap-around.
            if not np.all(np.abs(nanoseconds) < 2.0**63):
                raise _native.FormatError(_native.E_FORMAT, f"{self.path}: the frame times of source {src.id} span more than "
                                          "a TimedeltaIndex holds (292 years); read them with times()")
            index = pd.TimedeltaIndex(nanoseconds.astype(np.int64).view("timedelta64[ns]"), name="time")
        else:
            index = pd.Index(np.arange(first, first + data.shape[1]), name="sample")
        return pd.DataFrame(data.T, index=index, columns=names)

    def export(self, path: Union[str, os.PathLike], format: str, source: Optional[int] = None,  # noqa: A002 (the option's name)
               channels: Union[None, str, int, Sequence[int]] = None, start: Optional[float] = None,
               duration: Optional[float] = None, counts: bool = False, time_column: bool = False,
               allow_damage: bool = False, replace: bool = False, align: bool = False,
               dejitter: bool = False) -> Dict[str, Any]:
        """Writes the capture's analog data to ``path`` as ``tributary export CAPTURE --format FORMAT
        --out PATH`` does with the same options: the same library function, so the same bytes.

        :param format: "npy", "csv", "wav", "tdms", "xdf" or "hdf5".
        :param source: a source id (``--source``; default the lowest id with analog data, for tdms,
            xdf and hdf5 every source).
        :param channels: channel *indexes* as configured (``Channel.index``, as ``--channels``; not
            the rows :meth:`read` takes): an int, a sequence of ints or a string such as "0-3" or "0,2".
        :param start, duration: seconds (``--start``, ``--duration``): from ``start`` after the
            source's first sample, for ``duration`` (default: to the end).
        :param counts: int16 sources as counts (``--counts``; npy writes the sidecar ``PATH.json``).
        :param time_column: csv: a first column ``time_s``, the samples' recorded times (``--time-column``).
        :param allow_damage: export what is intact of a damaged capture (``--allow-damage``).
        :param replace: replace an existing file once the new one is complete (``--force``).
        :param align: map each source's times onto the recorder's clock with the capture's clock-offset
            records (``--align``; xdf then carries offsets of 0).
        :param dejitter: replace each run of contiguous frames' times by a robust line against the
            sample counter (``--dejitter``, as pyxdf's ``dejitter_timestamps``).
        :returns: ``{"path", "format", "sources": [{"source", "channels", "samples"}], "warnings": [...]}``;
            each warning (damage exported around, a capture without footer, counts of a float source
            among int16 ones) is also issued as a :class:`RuntimeWarning`.

        Bad arguments raise ``TypeError`` / ``ValueError`` naming them; the library's refusals raise
        :class:`ArgumentError` (options that contradict each other, a destination that exists without
        ``replace``), :class:`RangeError` (no such source or channel, too large for the memory),
        :class:`SampleTypeError` (counts of float sources), :class:`FormatError` (a damaged capture,
        no single rate for ``start`` or ``time_column``) or :class:`CaptureIOError`.
        """
        self._check_open()
        if not isinstance(path, (str, bytes, os.PathLike)):
            raise TypeError(f"path must be a str or os.PathLike, not {type(path).__name__} {path!r}")
        destination = os.fsencode(path)
        if not destination:
            raise ValueError("path is empty")
        if not isinstance(format, str):
            raise TypeError(f"format must be a str, not {type(format).__name__} {format!r}")
        if format not in _EXPORT_FORMATS:
            raise ValueError(f"format must be one of {', '.join(_EXPORT_FORMATS)}, not {format!r}")
        options: Dict[str, Any] = {}
        if source is not None:
            options["source"] = integer(source, "source", 0, _native.UINT32_MAX)
        if channels is not None:
            if isinstance(channels, str):
                options["channels"] = channels
            elif isinstance(channels, bytes) or not hasattr(channels, "__iter__"):
                options["channels"] = [integer(channels, "channels", 0, _native.UINT32_MAX)]
            else:
                options["channels"] = integers(channels, "channels", 0, _native.UINT32_MAX)
        for name, value in (("start", start), ("duration", duration)):
            if value is not None:
                options[name] = _native.real(value, name, low=0.0)
        for name, value in (("counts", counts), ("time_column", time_column), ("allow_damage", allow_damage), ("replace", replace),
                            ("align", align), ("dejitter", dejitter)):
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{name} must be True or False, not {type(value).__name__} {value!r}")
            if value:
                options[name] = True
        report = c_void_p()
        check(lib().tributary_capture_export(self._handle, destination, format.encode(), json.dumps(options).encode(),
                                             ctypes.byref(report)))
        result = json.loads(take_string(report))
        for text in result["warnings"]:
            warnings.warn(text[len("warning: "):] if text.startswith("warning: ") else text, RuntimeWarning, stacklevel=2)
        return result

    def _check_open(self) -> None:
        if self._closed:
            raise _native.HandleError(_native.E_HANDLE, f"the capture {self.path!r} is closed")


def open(path: Union[str, os.PathLike]) -> Capture:  # noqa: A001 (the package's entry point is tributary.open)
    """Opens a capture (.tcap): ``with tributary.open("run.tcap") as cap: cap.read(...)``."""
    return Capture(path)

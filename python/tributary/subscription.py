"""Live subscriptions to a Tributary (SCCT) publisher through libtributary."""
from __future__ import annotations

import ctypes
import functools
import json
import time
from ctypes import POINTER, c_char_p, c_double, c_int, c_size_t, c_uint32, c_uint64, c_void_p
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

import numpy as np

from . import _native
from ._native import FLOAT32, FLOAT64, INT16, INT32, INT64_MAX, UINT32_MAX, check, integer, integers, lib, real, take_string
from .capture import Package

_declared = False
_TYPES = {FLOAT64: np.float64, FLOAT32: np.float32, INT16: np.int16, INT32: np.int32}


def _declare(library: ctypes.CDLL) -> None:
    f = functools.partial(_native.declare, library)

    pp = POINTER(c_void_p)
    f("tributary_subscription_open", c_int, c_char_p, c_char_p, c_char_p, pp)
    f("tributary_last_scct_error", c_int)
    f("tributary_subscription_info_json", c_int, c_void_p, pp)
    f("tributary_subscription_next", c_int, c_void_p, c_double, POINTER(c_int), POINTER(c_char_p))
    f("tributary_subscription_analog", c_int, c_void_p, pp, POINTER(c_int), POINTER(c_uint32), POINTER(c_uint64))
    f("tributary_subscription_analog_copy", c_int, c_void_p, c_int, c_void_p, c_size_t)
    f("tributary_subscription_close", c_int, c_void_p)


class SCCTError(_native.TributaryError):
    """The publisher refused the session or could not be reached; ``code`` is the SCCT error code
    (1 wrong API key, 2 wrong timeout, 7 destination unreachable, 8 empty address, 9 wrong port, …)."""

    def __init__(self, status: int, message: str, code: int):
        super().__init__(status, message)
        self.code = code


@dataclass(frozen=True)
class AnalogBlock:
    """A block of analog data as received: ``data`` shaped (channels, samples), float64 physical
    values (or the stored type with ``counts=True``), rows in the order of ``channel_indexes``."""
    source_id: int
    sequence: int
    timestamp_ns: int
    filter_id: int
    first_sample: int
    channel_indexes: List[int]
    data: np.ndarray
    kind: str = "analog"


def _error_code(package: Package) -> Optional[int]:
    return package.content.get("code") if package.kind == "error" else None


class Subscription(_native.HandleOwner):
    """A session with a publisher that iterates the packages it receives.

    >>> with tributary.subscribe("tcp://127.0.0.1:5555", api_key="k", channels=[0, 1], sources=[1]) as sub:
    ...     for package in sub.packages(duration=2):
    ...         if package.kind == "analog":
    ...             print(package.data.shape)
    ...         elif package.kind in ("gap", "error"):
    ...             print(package.kind, package.content)
    """

    _close_call = "tributary_subscription_close"  # ends the session

    def __init__(self, address: str, api_key: str, *, channels: Union[None, str, Sequence[int]] = None,
                 sources: Optional[Sequence[int]] = None, array_filters: Optional[Sequence[str]] = None,
                 timeout: Optional[float] = None, description: Optional[str] = None,
                 curve_server_key: Optional[str] = None, curve_key: Optional[str] = None,
                 capacity: Optional[int] = None, counts: bool = False, decimate: Optional[int] = None,
                 decimate_ftype: Optional[str] = None, lowpass: Optional[float] = None,
                 lowpass_order: Optional[int] = None):
        library = lib()
        if not hasattr(library, "tributary_subscription_open"):
            raise ImportError("this libtributary has no subscriber")
        global _declared
        if not _declared:
            _declare(library)
            _declared = True
        options: Dict[str, Any] = {}
        # Numbers are checked here, before the JSON: an index that int() would truncate ("0.5") or
        # parse ("0") is refused, as is one the C side's integer types cannot hold.
        if channels is not None:
            options["channels"] = channels if isinstance(channels, str) else integers(channels, "channels", 0, UINT32_MAX)
        if sources is not None:
            options["sources"] = integers(sources, "sources", 0, UINT32_MAX)
        if timeout is not None:
            timeout = real(timeout, "timeout")
        if capacity is not None:
            capacity = integer(capacity, "capacity", 0, INT64_MAX)
        # Signal filters run by the publisher (PROTOCOL.md §6.2); the library checks their ranges.
        if decimate is not None:
            options["decimate"] = integer(decimate, "decimate", 2, 1 << 20)
        if lowpass is not None:
            options["lowpass"] = real(lowpass, "lowpass")
        if lowpass_order is not None:
            options["lowpass_order"] = integer(lowpass_order, "lowpass_order", 1, 16)
        if decimate_ftype is not None:
            if decimate_ftype not in ("iir", "fir"):
                raise ValueError(f"decimate_ftype must be 'iir' or 'fir', not {decimate_ftype!r}")
            options["decimate_ftype"] = decimate_ftype
        for key, value in (("array_filters", list(array_filters) if array_filters else None), ("timeout", timeout),
                           ("description", description), ("curve_server_key", curve_server_key),
                           ("curve_key", curve_key), ("capacity", capacity)):
            if value is not None:
                options[key] = value
        self.address = address
        self.counts = counts
        self._closed = False
        handle = c_void_p()
        status = library.tributary_subscription_open(address.encode(), api_key.encode(), json.dumps(options).encode(),
                                               ctypes.byref(handle))
        if status == _native.E_SCCT:
            message = (library.tributary_last_error() or b"").decode("utf-8", "replace")
            raise SCCTError(status, message, library.tributary_last_scct_error())
        check(status)
        self._handle = handle
        info = c_void_p()
        check(library.tributary_subscription_info_json(self._handle, ctypes.byref(info)))
        self.info: Dict[str, Any] = json.loads(take_string(info))

    @property
    def sources(self) -> List[Dict[str, Any]]:
        """The publisher's sources from the welcome: [{"id", "description"}]."""
        return self.info["sources"]

    @property
    def filter_ids(self) -> List[int]:
        """The ids of the filters sent (the analog filter's first): data for a filter carries its id."""
        return self.info["filter_ids"]

    @property
    def clock(self) -> Optional[Dict[str, Any]]:
        """The latest estimate of the publisher's clock (docs/PROTOCOL.md §4.9): ``{"offset_s"`` (its
        clock minus this one), ``"rtt_s"`` (the round trip of the probe it comes from),
        ``"measured_at_ns"``, ``"estimates"}``, or None before the first (some 0.2 s after opening)
        and with a publisher that does not answer clock probes."""
        if self._closed:
            raise _native.HandleError(_native.E_HANDLE, f"the subscription to {self.address} is closed")
        info = c_void_p()
        check(lib().tributary_subscription_info_json(self._handle, ctypes.byref(info)))
        return json.loads(take_string(info))["clock"]

    def next(self, timeout: Optional[float] = None) -> Union[AnalogBlock, Package, None]:
        """The next package (None when nothing arrived within ``timeout`` seconds; None = wait forever)."""
        if self._closed:
            raise _native.HandleError(_native.E_HANDLE, f"the subscription to {self.address} is closed")
        # None and infinity wait until a package arrives (the library's negative timeout).
        wait = -1.0 if timeout is None else real(timeout, "timeout", finite=False)
        library = lib()
        kind = c_int()
        text = c_char_p()
        status = library.tributary_subscription_next(self._handle, -1.0 if wait == float("inf") else wait,
                                               ctypes.byref(kind), ctypes.byref(text))
        if status == _native.E_TIMEOUT:
            return None
        check(status)
        d = json.loads(text.value.decode("utf-8"))
        if d["kind"] != "analog":
            return Package(kind=d["kind"], source_id=d["source_id"], sequence=d["sequence"], timestamp_ns=d["timestamp_ns"],
                           filter_id=d["filter_id"], content=d["content"])
        c = d["content"]
        stored = {"float64": FLOAT64, "float32": FLOAT32, "int16": INT16, "int32": INT32}[c["format"]]
        sample_type = stored if self.counts else FLOAT64
        # One copy into an array the caller owns: the received block is only valid until the next call.
        data = np.empty((c["channel_count"], c["sample_count"]), dtype=_TYPES[sample_type])
        check(library.tributary_subscription_analog_copy(self._handle, sample_type, data.ctypes.data_as(c_void_p), data.nbytes))
        return AnalogBlock(source_id=d["source_id"], sequence=d["sequence"], timestamp_ns=d["timestamp_ns"],
                           filter_id=d["filter_id"], first_sample=c["first_sample"], channel_indexes=c["channel_indexes"],
                           data=data)

    def packages(self, duration: Optional[float] = None, count: Optional[int] = None) -> Iterator[Union[AnalogBlock, Package]]:
        """Packages as they arrive, for ``duration`` seconds and/or ``count`` packages (default: until
        closed). Gap and error packages are yielded like the others (``kind`` "gap" / "error"), and the
        publisher's normal end of the session (it stopped, its replay ended) as ``kind`` "close" with
        ``content`` {"code": 0, "reason": ...}."""
        # Checked now, not at the first package: a NaN duration would never end the loop.
        if duration is not None:
            duration = real(duration, "duration", low=0.0, finite=False)
        if count is not None:
            count = integer(count, "count", 0)
        return self._packages(duration, count)

    def _packages(self, duration: Optional[float], count: Optional[int]) -> Iterator[Union[AnalogBlock, Package]]:
        deadline = None if duration is None else time.monotonic() + duration
        n = 0
        while not self._closed and (count is None or n < count):
            wait = 0.25 if deadline is None else min(0.25, deadline - time.monotonic())
            if wait <= 0:
                return
            try:
                package = self.next(timeout=wait)
            except _native.TributaryError as e:
                if e.status == _native.E_END:
                    return
                raise
            if package is not None:
                n += 1
                yield package

    def __iter__(self):
        return self.packages()


def subscribe(address: str, api_key: str, **options) -> Subscription:
    """Opens a subscription (address: "tcp://HOST:PORT", "HOST:PORT" or "resolve:QUERY", the one publisher
    :func:`resolve` finds for QUERY): ``with tributary.subscribe("tcp://host:port", api_key="k", channels=[0, 1],
    sources=[1]) as sub: for package in sub: ...``. Options: channels, sources, array_filters, timeout,
    description, curve_server_key, curve_key, capacity, counts (int16 counts instead of volts), and the
    signal filters the publisher runs for this session: decimate (N, as ``tributary process --decimate``),
    decimate_ftype ('iir' or 'fir'), lowpass (Hz, a Butterworth low-pass first), lowpass_order (default 4).
    Raises :class:`SCCTError` (with ``code``) when the publisher refuses or cannot be reached."""
    return Subscription(address, api_key, **options)

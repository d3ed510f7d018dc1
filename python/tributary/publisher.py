"""Publishing from Python: a Tributary (SCCT) publisher fed with numpy blocks, through libtributary.

The publisher is the one `tributary serve` runs (sessions, API key, filters, credit, error codes);
blocks cross into it once, copied by the library from the array's own buffer into the frame.
"""
from __future__ import annotations

import ctypes
import functools
import math
import re
from ctypes import POINTER, c_char_p, c_double, c_int, c_int64, c_uint32, c_uint64, c_void_p
from typing import List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _native
from ._native import CHANNEL_MAJOR, FLOAT32, FLOAT64, INT16, INT32, INTERLEAVED, UINT32_MAX, check, integer, lib, real, take_string

_declared = False
# The C API's sample types of the dtypes a source may have.
_DTYPES = {"float64": (np.dtype(np.float64), FLOAT64), "float32": (np.dtype(np.float32), FLOAT32),
           "int16": (np.dtype(np.int16), INT16), "int32": (np.dtype(np.int32), INT32)}
INT64_MIN = -(2**63)
_TIME_AUTO = INT64_MIN  # TRIBUTARY_TIME_AUTO
# The times a push accepts (TRIBUTARY_TIME_AUTO excluded).
_TIME_NS_MIN, _TIME_NS_MAX = INT64_MIN + 1, 2**63 - 1
_range = range  # `range` is a parameter of add_source


def _declare(library: ctypes.CDLL) -> None:
    f = functools.partial(_native.declare, library)
    pp = POINTER(c_void_p)
    f("tributary_publisher_open", c_int, c_char_p, c_char_p, c_char_p, pp, pp)
    f("tributary_source_add", c_int, c_void_p, c_uint32, c_char_p, c_double, c_uint32, c_char_p, c_char_p, c_int,
      c_double, c_double, c_double, c_double, c_int, pp)
    f("tributary_publisher_set_properties", c_int, c_void_p, c_uint32, c_char_p)
    f("tributary_source_push", c_int, c_void_p, c_void_p, c_int, c_uint32, c_uint64, c_int, c_int64, c_double)
    f("tributary_source_counts", c_int, c_void_p, POINTER(c_uint64), POINTER(c_uint64))
    f("tributary_source_close", c_int, c_void_p)
    f("tributary_publisher_send_message", c_int, c_void_p, c_char_p)
    f("tributary_publisher_subscribers", c_int, c_void_p, POINTER(c_int))
    f("tributary_publisher_close", c_int, c_void_p)
    f("tributary_publisher_discovery", c_int, c_void_p, c_int, c_char_p, c_int, c_int)


def _library() -> ctypes.CDLL:
    global _declared
    library = lib()
    if not hasattr(library, "tributary_publisher_open"):
        raise ImportError("this libtributary has no publisher")
    if not _declared:
        _declare(library)
        _declared = True
    return library


def _text(value, name: str) -> bytes:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, not {type(value).__name__} {value!r}")
    if "\0" in value:
        raise ValueError(f"{name} must not contain NUL characters")
    return value.encode("utf-8")


class QueueFullError(_native.TributaryError, TimeoutError):
    """A lossless source found no room within the push's timeout (a subscriber is slow): the block was
    not sent; push it again."""


class PublishedSource(_native.HandleOwner):
    """A source of a :class:`Publisher` that the application pushes analog blocks to (made by
    :meth:`Publisher.add_source`).

    ``id``, ``name``, ``rate``, ``channels`` (names), ``unit``, ``dtype``, ``lossless`` are as given.
    """

    _close_call = "tributary_source_close"  # ends the source

    def __init__(self, publisher: "Publisher", handle: ctypes.c_void_p, *, id: int, name: str, rate: float,
                 channels: List[str], unit: str, dtype: np.dtype, sample_type: int, lossless: bool):
        self._publisher = publisher  # the publisher lives as long as its sources
        self._handle = handle
        self._closed = False
        self._sample_type = sample_type
        self.id = id
        self.name = name
        self.rate = rate
        self.channels = channels
        self.unit = unit
        self.dtype = dtype
        self.lossless = lossless
        # Looked up once: a push is on the latency path of every block (its time is taken before it).
        self._push_call = _library().tributary_source_push
        self._channel_count = len(channels)

    def push(self, block: np.ndarray, time: Optional[float] = None, *, time_ns: Optional[int] = None,
             timeout: float = 10.0) -> bool:
        """Publishes one block.

        :param block: an ndarray shaped (channels, samples) of the source's dtype (no conversion: an
            int16 source takes int16 counts). C-contiguous (channel-major) or F-contiguous (the
            transpose of an interleaved (samples, channels) array) — any other array (a strided
            slice, another dtype or byte order) is an error, not a silent copy.
        :param time: the first sample's time in seconds since 1970 (as ``time.time()``), or
        :param time_ns: the same in integer nanoseconds (exact); neither: contiguous with the previous
            block (the wall clock at the first push, then the last given time, plus samples / rate).
        :param timeout: lossless sources: seconds to wait for room (0 to 86400). Live sources never wait.
        :returns: True when sent; False when a live source's block was dropped because the
            publisher's queue was full (counted in :attr:`dropped`; its samples become a gap).
        :raises QueueFullError: a lossless source found no room within ``timeout``.
        :raises HandleError: the source or its publisher is closed.
        """
        if self._closed:
            raise _native.HandleError(_native.E_HANDLE, f"source {self.id} is closed")
        # The checks below take the common case (a 2-D array of the source's dtype, an int time_ns or
        # none, a float or int timeout) with a few comparisons; anything else goes through the full
        # checks and their messages. The block's time is usually taken just before this call, so what
        # runs here adds to every block's latency.
        if type(block) is not np.ndarray and not isinstance(block, np.ndarray):
            raise TypeError(f"block must be a numpy ndarray shaped (channels, samples), not {type(block).__name__}")
        shape = block.shape
        if len(shape) != 2:
            raise ValueError(f"block must be 2-dimensional (channels, samples), not shaped {shape}")
        if shape[0] != self._channel_count:
            raise ValueError(f"block has {shape[0]} rows; source {self.id} has {self._channel_count} channels "
                             f"(shape (channels, samples) = ({self._channel_count}, n) expected, got {shape})")
        if shape[1] == 0:
            raise ValueError("block has no samples (shape {})".format(shape))
        dtype = block.dtype
        if dtype is not self.dtype and dtype != self.dtype:
            raise TypeError(f"block's dtype is {dtype.str}; source {self.id} publishes {self.dtype} "
                            f"(native byte order) — convert it explicitly, e.g. block.astype(np.{self.dtype})")
        flags = block.flags
        if flags.c_contiguous:
            layout = CHANNEL_MAJOR
        elif flags.f_contiguous:
            layout = INTERLEAVED
        else:
            raise ValueError("block is neither C- nor F-contiguous (a strided view): pass np.ascontiguousarray(block) "
                             "if a copy is what you want")
        if time_ns is not None:
            if time is not None:
                raise TypeError("give time or time_ns, not both")
            if type(time_ns) is int and _TIME_NS_MIN <= time_ns <= _TIME_NS_MAX:
                stamp = time_ns
            else:
                stamp = integer(time_ns, "time_ns", _TIME_NS_MIN, _TIME_NS_MAX)
        elif time is not None:
            seconds = real(time, "time")
            if not -9.2e9 < seconds < 9.2e9:
                raise ValueError(f"time {seconds} s is outside the int64 nanoseconds since 1970")
            stamp = int(round(seconds * 1e9))
        else:
            stamp = _TIME_AUTO
        if type(timeout) is float and 0 <= timeout < math.inf:
            wait = timeout
        elif type(timeout) is int and timeout >= 0:
            wait = float(timeout)
        else:
            wait = real(timeout, "timeout", 0)
        status = self._push_call(self._handle, block.ctypes.data, self._sample_type, shape[0], shape[1], layout, stamp,
                                 wait)
        if status == _native.E_DROPPED:
            return False
        if status == _native.E_TIMEOUT:
            message = (lib().tributary_last_error() or b"").decode("utf-8", "replace")
            raise QueueFullError(status, message)
        check(status)
        return True

    def _counts(self) -> Tuple[int, int]:
        pushed, dropped = c_uint64(), c_uint64()
        check(_library().tributary_source_counts(self._handle, ctypes.byref(pushed), ctypes.byref(dropped)))
        return pushed.value, dropped.value

    @property
    def pushed(self) -> int:
        """Blocks handed to the publisher so far."""
        return self._counts()[0]

    @property
    def dropped(self) -> int:
        """Live blocks dropped because the publisher's queue was full."""
        return self._counts()[1]


class Publisher(_native.HandleOwner):
    """A Tributary publisher: subscribers (``tributary subscribe``/``record``/``view``, the C and
    Python subscribers, LabVIEW SCCT clients) connect to :attr:`endpoint` with the API key.

    >>> with tributary.Publisher("tcp://127.0.0.1:0", api_key="k") as pub:
    ...     daq = pub.add_source(id=1, name="daq", rate=1000, channels=["ai0", "ai1"], unit="V",
    ...                          range=(-10, 10), dtype="float64")
    ...     daq.push(block)                  # ndarray (2, samples)
    ...     pub.send_message("run 42 started")

    Closing (or leaving the ``with``) closes the sources, gives what lossless sources pushed up to
    10 s to reach the subscribers, and ends their sessions with the normal close.
    """

    _close_call = "tributary_publisher_close"

    def __init__(self, bind: str, api_key: str, *, description: Optional[str] = None, announce: bool = True,
                 announce_group: Optional[str] = None, announce_port: Optional[int] = None,
                 announce_ttl: Optional[int] = None):
        """Binds ``bind`` (e.g. ``"tcp://0.0.0.0:5555"``; port 0 takes a free port, see :attr:`endpoint`).

        :param description: the publisher's name, in the welcome and in discovery answers.
        :param announce: answer discovery queries (``tributary.resolve``, ``tributary resolve``,
            ``resolve:QUERY`` addresses; docs/PROTOCOL.md §9) as ``tributary serve`` does: on loopback
            only when bound to loopback. False stays silent (``serve --no-announce``).
        :param announce_group, announce_port, announce_ttl: the IPv4 multicast group, UDP port and TTL
            (default 239.255.84.82, 16580, 1). With the defaults, a machine without multicast publishes
            without answering; a group, port or TTL given that cannot be used raises.
        """
        if not isinstance(announce, bool):
            raise TypeError(f"announce must be True or False, not {announce!r}")
        group = None if announce_group is None else _text(announce_group, "announce_group")
        port = 0 if announce_port is None else integer(announce_port, "announce_port", 1, 65535)
        ttl = -1 if announce_ttl is None else integer(announce_ttl, "announce_ttl", 0, 255)
        library = _library()
        self._closed = True
        self._sources: List[PublishedSource] = []
        handle, endpoint = c_void_p(), c_void_p()
        check(library.tributary_publisher_open(_text(bind, "bind"), _text(api_key, "api_key"),
                                         None if description is None else _text(description, "description"),
                                         ctypes.byref(handle), ctypes.byref(endpoint)))
        self._handle = handle
        self._closed = False
        self.endpoint: str = take_string(endpoint)
        """The endpoint bound, with the real port (``tcp://127.0.0.1:40123``)."""
        if not announce or group is not None or port != 0 or ttl != -1:
            try:
                check(library.tributary_publisher_discovery(handle, int(announce), group, port, ttl))
            except BaseException:
                self.close()
                raise

    def add_source(self, id: int, name: str, rate: float, channels: Union[int, Sequence[str]], *, unit: str = "V",
                   range: Tuple[float, float] = (-10.0, 10.0), dtype: Union[str, type, np.dtype] = "float64",
                   scale: float = 1.0, offset: float = 0.0, lossless: bool = False,
                   properties: Optional[Mapping[str, str]] = None,
                   channel_properties: Optional[Sequence[Optional[Mapping[str, str]]]] = None) -> PublishedSource:
        """Adds an analog source; subscribers already connected receive its configuration at once.

        :param id: source id, 1 to 2**32 - 1, unique in the publisher.
        :param name: the device name subscribers see.
        :param rate: samples per second per channel (1e-6 to 1e12).
        :param channels: the channel names, or a count (named ch0, ch1, …).
        :param unit: the unit of every channel.
        :param range: (min, max) of the channels in physical units.
        :param dtype: "float64", "float32", "int16" or "int32" (counts: value = count * scale + offset;
            int32 for 24-bit delta-sigma codes and 32-bit sound cards).
        :param scale, offset: int16 and int32 only.
        :param lossless: False (live: a full queue drops blocks, push never waits) or True (push waits
            for the slowest subscriber, up to its timeout, and nothing is lost).
        :param properties: free-form key/value strings of the source (sensor serial, calibration date,
            subject id …), sent after its configuration and kept in recordings.
        :param channel_properties: one mapping (or None) per channel, in channel order.
        Bounds: keys 1-256 bytes, values up to 16384 bytes, 1024 per source or channel, 1 MiB in all;
        keys and values cannot hold a line break, and a source key cannot start with digits and ':'.
        """
        if self._closed:
            raise _native.HandleError(_native.E_HANDLE, "the publisher is closed")
        source_id = integer(id, "id", 1, UINT32_MAX)
        if isinstance(channels, (str, bytes)):
            raise TypeError("channels must be a list of names or a count, not a string")
        if isinstance(channels, (int, np.integer)) and not isinstance(channels, bool):
            names = [f"ch{k}" for k in _range(integer(channels, "channels", 1, 65535))]
        else:
            names = list(channels)
            for k, channel in enumerate(names):
                _text(channel, f"channels[{k}]")
                if "," in channel:
                    raise ValueError(f"channels[{k}] = {channel!r}: channel names cannot contain commas")
            if not 1 <= len(names) <= 65535:
                raise ValueError(f"a source has 1 to 65535 channels, not {len(names)}")
        key = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
        if key not in _DTYPES:
            raise TypeError(f"dtype must be float64, float32, int16 or int32, not {dtype!r}")
        numpy_dtype, sample_type = _DTYPES[key]
        if not isinstance(lossless, bool):
            raise TypeError(f"lossless must be True or False, not {lossless!r}")
        try:
            low, high = range
        except (TypeError, ValueError):
            raise TypeError(f"range must be a (min, max) pair, not {range!r}") from None
        low, high = real(low, "range[0]"), real(high, "range[1]")
        lines = _property_lines(properties, channel_properties, len(names))
        if lines is not None:
            check(_library().tributary_publisher_set_properties(self._handle, source_id, lines))
        handle = c_void_p()
        check(_library().tributary_source_add(
            self._handle, source_id, _text(name, "name"), real(rate, "rate"), len(names),
            ",".join(names).encode("utf-8"), _text(unit, "unit"), sample_type, real(scale, "scale"),
            real(offset, "offset"), low, high, 1 if lossless else 0, ctypes.byref(handle)))
        source = PublishedSource(self, handle, id=source_id, name=name, rate=float(rate), channels=names, unit=unit,
                                 dtype=numpy_dtype, sample_type=sample_type, lossless=lossless)
        self._sources.append(source)
        return source

    def send_message(self, text: str) -> bool:
        """Sends a message package of the publisher itself (source 0) to every started subscriber.
        :returns: False when the publisher's queue was full and it was dropped."""
        if self._closed:
            raise _native.HandleError(_native.E_HANDLE, "the publisher is closed")
        status = _library().tributary_publisher_send_message(self._handle, _text(text, "text"))
        if status == _native.E_DROPPED:
            return False
        check(status)
        return True

    @property
    def subscribers(self) -> int:
        """Subscribers receiving data now (between their start and stop)."""
        count = c_int()
        check(_library().tributary_publisher_subscribers(self._handle, ctypes.byref(count)))
        return count.value

    @property
    def sources(self) -> List[PublishedSource]:
        """The sources added, in order."""
        return list(self._sources)

    def close(self) -> None:
        """Closes the sources and the publisher (idempotent): what lossless sources pushed gets up to
        10 s to reach the subscribers, whose sessions then end with the normal close."""
        if self._closed:
            return
        for source in self._sources:
            source.close()
        super().close()


def _property_lines(properties: Optional[Mapping[str, str]],
                    channel_properties: Optional[Sequence[Optional[Mapping[str, str]]]], channels: int) -> Optional[bytes]:
    """The text tributary_publisher_set_properties takes, or None without any property."""
    lines: List[str] = []

    def add(prefix: str, mapping: Mapping[str, str], what: str) -> None:
        if not isinstance(mapping, Mapping):
            raise TypeError(f"{what} must be a mapping of str to str, not {type(mapping).__name__}")
        for key, value in mapping.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise TypeError(f"{what}: keys and values must be str, not {key!r}: {value!r}")
            if not key or "=" in key or "\n" in key or "\r" in key or "\n" in value or "\r" in value:
                raise ValueError(f"{what}: key {key!r}: keys are non-empty without '=' or line breaks, values without line breaks")
            if not prefix and re.match(r"[0-9]+:", key):
                raise ValueError(f"{what}: key {key!r} would read as a channel's (digits and ':')")
            lines.append(f"{prefix}{key}={value}")

    if properties:
        add("", properties, "properties")
    if channel_properties is not None:
        if isinstance(channel_properties, (str, bytes, Mapping)) or len(channel_properties) != channels:
            raise ValueError(f"channel_properties must be a sequence of {channels} mappings (or None), one per channel")
        for k, mapping in enumerate(channel_properties):
            if mapping:
                add(f"{k}:", mapping, f"channel_properties[{k}]")
    return "\n".join(lines).encode("utf-8") if lines else None


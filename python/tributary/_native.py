"""ctypes bindings of libtributary.so (include/tributary.h): loading, signatures, status checks.

The library is found, in this order, at the path in the environment variable TRIBUTARY_LIBRARY,
beside this module (``_lib/libtributary.so``, the copy ``make python`` installs), then by the
dynamic loader's search (``ctypes.util.find_library("tributary")``).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import json
import math
import numbers
import operator
import os
import threading
from ctypes import POINTER, c_char_p, c_double, c_int, c_int64, c_size_t, c_uint32, c_uint64, c_void_p
from typing import Dict, List, Optional, Tuple, TypeVar

API_VERSION = 1

OK = 0
E_ARGUMENT = 1
E_HANDLE = 2
E_RANGE = 3
E_IO = 4
E_FORMAT = 5
E_TYPE = 6
E_ANALYSIS = 7
E_TIMEOUT = 8
E_END = 9
E_SCCT = 10
E_BUFFER = 11
E_DROPPED = 12
E_INTERNAL = 99

FLOAT64 = 1
FLOAT32 = 2
INT16 = 3
INT32 = 4

PAD_NONE = 0
PAD_ODD = 1
PAD_EVEN = 2
PAD_CONSTANT = 3

FILTER_SOS = 0
FILTER_BA = 1
EXT_CONSTANT = 0
EXT_SYMMETRIC = 1
EXT_EDGE = 2
EXT_SMOOTH = 3
EXT_WRAP = 4
EXT_REFLECT = 5
EXT_ANTISYMMETRIC = 6
EXT_ANTIREFLECT = 7
EXT_LINE = 8
DECIMATE_IIR = 0
DECIMATE_FIR = 1

CHANNEL_MAJOR = 0
INTERLEAVED = 1

KIND_CONFIGURATION = 1
KIND_ERROR = 2
KIND_ANALOG = 3
KIND_DIGITAL = 4
KIND_MESSAGE = 5
KIND_XML = 6
KIND_FILE = 7
KIND_IMAGE = 8
KIND_ARRAY = 9
KIND_GAP = 21
KIND_PROPERTIES = 129  # a source's properties, after its configuration
KIND_CLOSE = 22  # the publisher ended the session normally

# The ranges of the C types that numbers cross the boundary in (include/tributary.h).
UINT32_MAX = 2**32 - 1
UINT64_MAX = 2**64 - 1
INT64_MAX = 2**63 - 1


class TributaryError(Exception):
    """A call into libtributary failed; ``status`` is its TRIBUTARY_E_* code, the text its message."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class HandleError(TributaryError, ValueError):
    """A closed (or otherwise invalid) capture or subscription was used."""


class RangeError(TributaryError, IndexError):
    """A source, channel or sample range that the data does not have."""


class SampleTypeError(TributaryError, TypeError):
    """A sample type that the data is not stored in (int16 counts of float data, …)."""


class ArgumentError(TributaryError, ValueError):
    """An argument outside its domain (an unknown analysis option, …)."""


class AnalysisError(TributaryError):
    """The analysis could not be done (no analog data, a channel missing, too few samples, …)."""


class CaptureIOError(TributaryError, OSError):
    """The operating system refused (a file that cannot be read, an address that cannot be connected)."""


class FormatError(TributaryError):
    """Not a capture, a damaged one, or data that cannot be presented as asked."""


_Owner = TypeVar("_Owner", bound="HandleOwner")


class HandleOwner:
    """Owns a library handle (``_handle``) that one library call closes: :meth:`close` (idempotent),
    the context manager and garbage collection close it once. A subclass names that call in
    ``_close_call`` and sets ``_closed`` to False once the handle is open."""

    _close_call: str
    _closed: bool
    _handle: ctypes.c_void_p

    def close(self) -> None:
        """Closes the handle (idempotent); a call that needs it afterwards raises :class:`HandleError`."""
        if not self._closed:
            self._closed = True
            check(getattr(lib(), self._close_call)(self._handle))

    def __enter__(self: _Owner) -> _Owner:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


_ERRORS = {E_HANDLE: HandleError, E_RANGE: RangeError, E_TYPE: SampleTypeError, E_ARGUMENT: ArgumentError,
           E_ANALYSIS: AnalysisError, E_IO: CaptureIOError, E_FORMAT: FormatError}


def _candidates():
    env = os.environ.get("TRIBUTARY_LIBRARY")
    if env:
        yield env
        return
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_lib", "libtributary.so")
    if os.path.exists(here):
        yield here
    found = ctypes.util.find_library("tributary")
    if found:
        yield found


_lib: Optional[ctypes.CDLL] = None
_lock = threading.Lock()


def lib() -> ctypes.CDLL:
    """The loaded library (loaded and checked on first use)."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        errors = []
        for path in _candidates():
            try:
                loaded = ctypes.CDLL(path)
                break
            except OSError as e:
                errors.append(f"{path}: {e}")
        else:
            raise ImportError("libtributary.so not found: set TRIBUTARY_LIBRARY to its path, or run `make python` "
                              "(which installs a copy beside the package)" + ("; " + "; ".join(errors) if errors else ""))
        _declare(loaded)
        if loaded.tributary_api_version() != API_VERSION:
            raise ImportError(f"libtributary API version {loaded.tributary_api_version()}, this package needs {API_VERSION}")
        _lib = loaded
        return loaded


def declare(library: ctypes.CDLL, name: str, restype, *argtypes) -> None:
    """Sets the result and argument types of the library's function ``name``."""
    fn = getattr(library, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)


def _declare(library: ctypes.CDLL) -> None:
    f = functools.partial(declare, library)

    pp = POINTER(c_void_p)
    f("tributary_version", c_char_p)
    f("tributary_api_version", c_int)
    f("tributary_kind_name", c_int, c_int, POINTER(c_char_p))
    f("tributary_kinds_json", c_int, pp)
    f("tributary_last_error", c_char_p)
    f("tributary_free", None, c_void_p)
    f("tributary_capture_open", c_int, c_char_p, pp)
    f("tributary_capture_close", c_int, c_void_p)
    f("tributary_capture_info_json", c_int, c_void_p, pp)
    f("tributary_capture_read", c_int, c_void_p, c_uint32, POINTER(c_uint32), c_size_t, c_uint64, c_uint64, c_int,
      c_void_p, c_size_t, POINTER(c_uint64))
    f("tributary_capture_times", c_int, c_void_p, c_uint32, c_uint64, c_uint64, c_void_p, c_size_t, POINTER(c_uint64))
    f("tributary_capture_next_package", c_int, c_void_p, c_uint32, pp)
    f("tributary_capture_rewind", c_int, c_void_p)
    f("tributary_capture_export", c_int, c_void_p, c_char_p, c_char_p, c_char_p, pp)
    f("tributary_analyze_file", c_int, c_char_p, c_char_p, pp)
    f("tributary_analyze_buffer", c_int, c_void_p, c_size_t, c_size_t, c_double, c_char_p, pp)
    # Digital filters (tributary.signal).
    sizes = POINTER(c_size_t)
    f("tributary_iir_design", c_int, c_char_p, c_int, c_void_p, c_size_t, c_char_p, c_double, c_double, c_double, c_int,
      c_void_p, c_size_t, sizes)
    f("tributary_iirnotch", c_int, c_double, c_double, c_double, c_void_p, c_void_p)
    f("tributary_firwin", c_int, c_size_t, c_void_p, c_size_t, c_char_p, c_double, c_double, c_int, c_int, c_double, c_void_p)
    f("tributary_sosfilt", c_int, c_void_p, c_size_t, c_void_p, c_void_p, c_size_t, c_size_t, c_size_t, c_void_p, c_void_p)
    f("tributary_lfilter", c_int, c_void_p, c_size_t, c_void_p, c_size_t, c_void_p, c_void_p, c_size_t, c_size_t, c_size_t,
      c_void_p, c_void_p)
    f("tributary_sosfiltfilt", c_int, c_void_p, c_size_t, c_void_p, c_void_p, c_size_t, c_size_t, c_size_t, c_int, c_int64)
    f("tributary_filtfilt", c_int, c_void_p, c_size_t, c_void_p, c_size_t, c_void_p, c_void_p, c_size_t, c_size_t, c_size_t,
      c_int, c_int64)
    f("tributary_sosfilt_zi", c_int, c_void_p, c_size_t, c_void_p)
    f("tributary_lfilter_zi", c_int, c_void_p, c_size_t, c_void_p, c_size_t, c_void_p, sizes)
    # Rate change (tributary.signal).
    f("tributary_upfirdn_length", c_int, c_size_t, c_size_t, c_size_t, c_size_t, sizes)
    f("tributary_resample_length", c_int, c_size_t, c_size_t, c_size_t, sizes)
    f("tributary_upfirdn", c_int, c_void_p, c_size_t, c_void_p, c_void_p, c_size_t, c_size_t, c_size_t, c_size_t, c_size_t, c_int,
      c_double, c_size_t)
    f("tributary_resample_poly", c_int, c_void_p, c_void_p, c_size_t, c_size_t, c_size_t, c_size_t, c_size_t, c_char_p, c_double,
      c_void_p, c_size_t, c_int, c_double, c_size_t)
    f("tributary_decimate", c_int, c_void_p, c_void_p, c_size_t, c_size_t, c_size_t, c_size_t, c_int64, c_int, c_int, c_size_t)


def check(status: int) -> None:
    """Raises the TributaryError of a failed status (with the library's message)."""
    if status == OK:
        return
    message = (lib().tributary_last_error() or b"").decode("utf-8", "replace")
    raise _ERRORS.get(status, TributaryError)(status, message)


def take_string(pointer: c_void_p) -> str:
    """The text of a library-allocated string, which is freed."""
    if not pointer.value:
        return ""
    try:
        return ctypes.string_at(pointer.value).decode("utf-8")
    finally:
        lib().tributary_free(pointer)


def version() -> str:
    """The version of the loaded libtributary."""
    return lib().tributary_version().decode()


@functools.lru_cache(maxsize=None)
def kinds() -> Dict[str, int]:
    """Every package kind the loaded libtributary declares, name → number (docs/PROTOCOL.md §2.2):
    the one vocabulary (Swift's FrameKind and ExtensionKind) that the KIND_* constants follow."""
    table: Dict[str, int] = {}
    name = c_char_p()
    for number in range(256):
        if lib().tributary_kind_name(number, ctypes.byref(name)) == OK and name.value is not None:
            table[name.value.decode("utf-8")] = number
    return table


@functools.lru_cache(maxsize=None)
def kind_traits() -> Tuple[Dict[str, object], ...]:
    """Every package kind the loaded libtributary declares with its traits, in number order
    (``tributary_kinds_json``): {"number", "name", "sender", "data", "application", "delivered"}.
    The KIND_* constants are the "delivered" kinds (python/tests/test_vocabulary.py checks them)."""
    text = c_void_p()
    check(lib().tributary_kinds_json(ctypes.byref(text)))
    return tuple(json.loads(take_string(text)))


# -- arguments --
#
# ctypes converts a Python int into a C integer by wrapping it (2**32 + 1 becomes 1, -1 becomes
# 2**64 - 1) and int() truncates floats and parses strings: every number this package hands to the
# library, or to json for it, goes through these first, so that a wrong one is an error naming it.


def integer(value, name: str, low: Optional[int] = None, high: Optional[int] = None) -> int:
    """``value`` as an int: a Python or numpy integer (anything with ``__index__``), not a bool, a
    float, a string or None; within ``low`` … ``high`` when given. TypeError / ValueError name
    ``name`` and the value."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        raise TypeError(f"{name} must be an integer, not a bool ({value!r})")
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, not {type(value).__name__} {value!r}") from None
    if (low is not None and number < low) or (high is not None and number > high):
        bounds = (f"from {low} to {high}" if low is not None and high is not None else
                  f">= {low}" if low is not None else f"<= {high}")
        raise ValueError(f"{name} must be an integer {bounds}, not {number}")
    return number


def real(value, name: str, low: Optional[float] = None, finite: bool = True) -> float:
    """``value`` as a float: a real number (Python or numpy; not a bool, a string or None), finite
    unless ``finite`` is False (NaN is never accepted), at least ``low`` when given."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        raise TypeError(f"{name} must be a number, not a bool ({value!r})")
    if not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, not {type(value).__name__} {value!r}")
    number = float(value)
    if math.isnan(number) or (finite and math.isinf(number)):
        raise ValueError(f"{name} must be a finite number, not {number}")
    if low is not None and number < low:
        raise ValueError(f"{name} must be at least {low}, not {number}")
    return number


def integers(values, name: str, low: Optional[int] = None, high: Optional[int] = None) -> List[int]:
    """A sequence (list, tuple, range, numpy array, …) of integers as a list of ints, each checked as
    :func:`integer` checks it (``name[k]`` in the message); a string or a single number is refused."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a sequence of integers, not {type(values).__name__} {values!r}")
    return [integer(v, f"{name}[{k}]", low, high) for k, v in enumerate(values)]

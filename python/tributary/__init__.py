"""Tributary from Python: captures, live subscriptions, publishing and the `analyze` pipeline.

ctypes over libtributary.so (the project's C interface, include/tributary.h): the codec, the
filters and the analysis are the Swift implementation the command-line tool runs, not a second one.

>>> import tributary
>>> with tributary.open("run.tcap") as cap:
...     volts = cap.read(1, channels=[0, 1], start=0, stop=48_000)   # ndarray (2, 48000), float64
>>> result = tributary.analyze("run.tcap", welch=1024, measure=["thd", "sinad"])

The library is found through the environment variable TRIBUTARY_LIBRARY, else the copy `make python`
installs beside the package.
"""
from . import batch
from ._native import (
    AnalysisError,
    ArgumentError,
    CaptureIOError,
    FormatError,
    HandleError,
    RangeError,
    SampleTypeError,
    TributaryError,
    version,
)
from .analysis import analyze
from .capture import Capture, Channel, Gap, Package, Source, SourceOrigin, open
from .discovery import resolve
from .publisher import PublishedSource, Publisher, QueueFullError
from .subscription import AnalogBlock, SCCTError, Subscription, subscribe

__all__ = ["open", "analyze", "subscribe", "version", "Capture", "Source", "SourceOrigin", "Channel", "Gap", "Package",
           "TributaryError", "HandleError", "RangeError", "SampleTypeError", "ArgumentError", "AnalysisError",
           "CaptureIOError", "FormatError", "Subscription", "AnalogBlock", "SCCTError", "Publisher", "PublishedSource",
           "QueueFullError", "batch", "resolve"]


def __getattr__(name: str) -> str:
    """``tributary.__version__``: the version of the loaded libtributary, which is the version of the
    `tributary` tool built with it (one constant, TributaryVersion in the Swift sources). Read on first
    use, so that importing the package does not load the library."""
    if name == "__version__":
        return version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


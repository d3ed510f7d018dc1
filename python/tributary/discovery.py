"""Discovery: the publishers on the local network that answer a query (docs/PROTOCOL.md §9)."""
from __future__ import annotations

import ctypes
import json
from ctypes import POINTER, c_char_p, c_double, c_int, c_void_p
from typing import Any, Dict, List, Optional

from . import _native
from ._native import check, lib, real, take_string

_declared = False


def resolve(query: Optional[str] = None, timeout: float = 1.0) -> List[Dict[str, Any]]:
    """The publishers that answer a discovery query within ``timeout`` seconds (in [0.05, 3600]), as
    ``tributary resolve --json`` lists them: dicts with ``name``, ``host``, ``address`` (to pass to
    :func:`subscribe`), ``auth`` ("key" or "curve"), ``answered_from``, ``truncated`` and ``sources``
    (dicts with ``id``, ``device``, ``type``, ``rate``, ``channels``, ``channel_names``, ``unit``,
    ``units``, ``sample_type``). ``query``: None for every publisher, else as ``tributary resolve
    QUERY``, e.g. ``"name=daq"`` or ``"source=EEG"``. ``subscribe("resolve:QUERY", ...)`` connects to
    the one publisher a query matches."""
    global _declared
    library = lib()
    if not _declared:
        _native.declare(library, "tributary_resolve", c_int, c_char_p, c_double, POINTER(c_void_p))
        _declared = True
    if query is not None and not isinstance(query, str):
        raise TypeError(f"query must be a str or None, not {type(query).__name__}")
    seconds = real(timeout, "timeout")
    if not 0.05 <= seconds <= 3600:
        raise ValueError(f"timeout must be in [0.05, 3600] s, not {seconds}")
    out = c_void_p()
    check(library.tributary_resolve(query.encode() if query else None, seconds, ctypes.byref(out)))
    return json.loads(take_string(out))

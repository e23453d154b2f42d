"""Linux's prctl(2), looked up once through libc (ctypes): None where there is none (another system, no
libc). The stage runner uses it to die with its parent (parent_death.py) and to adopt and end what its
tests leave running (reaper.py)."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import Callable


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        prctl: Callable[..., int] = libc.prctl
    except (OSError, AttributeError):
        return None
    return prctl


PRCTL = _load_prctl()  # looked up before any fork: the child between fork and exec only calls it

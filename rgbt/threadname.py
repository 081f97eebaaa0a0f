"""Give the calling thread's Python name to the operating system, so ``top -H``, ``ps -L``, ``perf``
and ``/proc/<pid>/task/<tid>/comm`` tell rgbt's worker threads apart (CPython before 3.14 leaves
every thread named after the executable: ``python``).

Linux only (``prctl(PR_SET_NAME)``; the kernel keeps 15 bytes); elsewhere it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading

_PR_SET_NAME = 15
_libc: ctypes.CDLL | None = None


def name_native_thread(name: str | None = None) -> bool:
    """Name the calling OS thread ``name`` (default: its ``threading`` name), cut to 15 bytes.
    Returns whether the name was applied."""
    global _libc
    if not sys.platform.startswith("linux"):
        return False
    name = name or threading.current_thread().name
    try:
        if _libc is None:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return _libc.prctl(_PR_SET_NAME, name.encode("utf-8", "replace")[:15], 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False

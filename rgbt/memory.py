"""glibc's allocator for processes that move multi-megabyte frames (no rclpy import).

Two settings and one reservation, all process-wide and Linux glibc only (elsewhere they do nothing
and say so by returning False / 0):

- :func:`tune_allocator`: frames up to 32 MB come from the heap and freed heap up to 128 MB is
  kept, instead of an ``mmap`` / ``munmap`` per frame (every byte page-faulted in again).
- :func:`single_arena`: every thread allocates from the main arena, so memory reserved on one
  thread serves the middleware's receive threads too (each thread otherwise gets an arena of its own).
- :func:`reserve_heap`: touch the bytes a process may come to hold, once, at start, and keep them.

Why the recorder reserves: a recorder that falls behind holds more messages (its middleware reader
queues and its writer queue), and until its heap has grown to that size every new byte is a fresh
page. On the 2-core VM of BENCHMARKS.md that was ~20-30 k page faults a second at the full stack's
rate, and took the recorder from ~28 % to ~90-110 % of a core for the ~10 s its heap grew to ~1.1 GB,
so it fell further behind while growing: a start-up collapse that cost hundreds of messages (its
reader queues overflowed). With the heap touched before the data flows, falling behind costs no
faults.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys
import threading
import time

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8  # <malloc.h>
MMAP_THRESHOLD = 32 << 20  # frames below this come from the heap (tune_allocator)

_state = {"tuned": False, "reserved": 0, "touched": 0}  # the largest reservation asked for / touched (bytes)


@functools.cache
def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt  # noqa: B018 - glibc (musl has none)
    except (OSError, AttributeError):
        return None
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.memset.restype = ctypes.c_void_p
    libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    return libc


def tune_allocator(mmap_threshold: int = MMAP_THRESHOLD, trim_threshold: int = 128 << 20) -> bool:
    """Let glibc keep and reuse large buffers (``mallopt``; process-wide, idempotent).

    Writing an image makes several fresh multi-megabyte buffers (the CDR message, rosbags' record
    and chunk buffers). By default glibc serves each from a new ``mmap`` and unmaps it when freed,
    so every byte is page-faulted in again: MCAP writing of the full stack ran at ~110-170 MB/s
    here, and at ~700-1100 MB/s with buffers up to ``mmap_threshold`` bytes served from the heap
    and up to ``trim_threshold`` bytes of freed heap kept. Returns True when applied (Linux glibc).
    """
    if _state["tuned"]:
        return True
    libc = _libc()
    if libc is None:
        return False
    ok = bool(libc.mallopt(M_MMAP_THRESHOLD, int(mmap_threshold))) and bool(
        libc.mallopt(M_TRIM_THRESHOLD, int(trim_threshold)))
    _state["tuned"] = ok
    return ok


def allocator_tuned() -> bool:
    """Whether :func:`tune_allocator` is in effect in this process."""
    return bool(_state["tuned"])


def single_arena() -> bool:
    """Every thread of this process allocates from glibc's main arena. Call it before other threads
    first allocate (before ``rclpy.init``: the middleware starts its threads there); threads that
    already have an arena keep it. Returns True when applied."""
    libc = _libc()
    return bool(libc and libc.mallopt(M_ARENA_MAX, 1))


def reserve_heap(nbytes: int, chunk: int = 8 << 20, pause_s: float = 0.0,
                 stop: threading.Event | None = None) -> int:
    """Touch ``nbytes`` of heap once and keep it for later allocations (glibc's trim threshold is
    raised above it, the mmap threshold set by :func:`tune_allocator`, so the ``chunk``-sized
    blocks come from the heap and stay mapped after they are freed). Costs ~0.7 s per GB on the
    VM of BENCHMARKS.md. ``pause_s``: sleep this long after each chunk, for a reservation beside
    live traffic (the other threads' allocations wait on the same heap and address-space locks;
    run it at their priority, paced, never on a starved thread). Returns the bytes reserved (0
    without glibc). ``stop``: set, the reservation ends after the chunk at hand (what was touched is kept)."""
    libc = _libc()
    if libc is None or nbytes <= 0 or not tune_allocator():
        return 0
    _state["reserved"] = max(_state["reserved"], int(nbytes))
    libc.mallopt(M_TRIM_THRESHOLD, _state["reserved"] + (256 << 20))
    chunk = min(chunk, MMAP_THRESHOLD // 2)
    ptrs = []
    try:
        for _ in range(-(-int(nbytes) // chunk)):
            p = libc.malloc(chunk)
            if not p:  # out of memory: keep what was touched
                break
            libc.memset(p, 0, chunk)
            ptrs.append(p)
            if pause_s > 0:
                time.sleep(pause_s)
            if stop is not None and stop.is_set():
                break
    finally:
        for p in reversed(ptrs):  # freed top-down: they merge into the heap's top, which is kept
            libc.free(p)
    _state["touched"] = max(_state["touched"], len(ptrs) * chunk)
    return len(ptrs) * chunk


def heap_reserved() -> int:
    """Bytes of heap this process has touched and keeps (its largest :func:`reserve_heap`; 0: none)."""
    return int(_state["touched"])

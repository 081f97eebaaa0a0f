"""Middleware writes that never hold the GIL, made on a thread of the process.

rclpy keeps the GIL while the middleware writes a message. Fast DDS can block a write for seconds:
after a subscriber's process is killed (a recorder take-over), its shared-memory port stays matched
until its lease runs out, fills, and then each write to it waits for the port's health check (about
1 s, under the participant's send lock). With the GIL held, every thread of the publishing process
stops meanwhile: a driver's capture loop, the trigger sync, the virtual stack's playback (measured:
1.7-3.8 s of every stream lost from the sources process in 4 of 5 recorder kills on a 2-core host),
and a node whose executor writes stops its heartbeat (killed as hung).

:func:`publish_released` writes CDR bytes through ``rcl_publish_serialized_message`` called with
ctypes, which releases the GIL for the call: a blocked write then stops only the thread that makes
it. :class:`PublishThread` makes a process's writes on its own thread, in the order they were handed
over, so a blocked write delays messages instead of stopping their producer. Its queue is bounded in
bytes: past the bound a message is dropped and counted (``dropped``, per topic). Every node uses its
process's data thread (``NodeOptions.publish_thread``, on by default) and a second one for its
diagnostics (:data:`DIAGNOSTICS`), so a report never waits behind frames.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rclpy.serialization import serialize_message


class _Allocator(ctypes.Structure):
    """``rcutils_allocator_t`` (unused by a publish: rcl reads only the buffer and its length)."""

    _fields_ = [("allocate", ctypes.c_void_p), ("deallocate", ctypes.c_void_p), ("reallocate", ctypes.c_void_p),
                ("zero_allocate", ctypes.c_void_p), ("state", ctypes.c_void_p)]


class _SerializedMessage(ctypes.Structure):
    """``rcl_serialized_message_t`` (``rcutils_uint8_array_t``)."""

    _fields_ = [("buffer", ctypes.c_char_p), ("buffer_length", ctypes.c_size_t),
                ("buffer_capacity", ctypes.c_size_t), ("allocator", _Allocator)]


_rcl: Any = None
_rcutils: Any = None


def _library() -> Any:
    """librcl as loaded by rclpy (by its soname: the same library, not a second copy)."""
    global _rcl, _rcutils
    if _rcl is None:
        rcl = ctypes.CDLL("librcl.so")  # ctypes.CDLL calls release the GIL
        rcl.rcl_publish_serialized_message.argtypes = [ctypes.c_void_p, ctypes.POINTER(_SerializedMessage),
                                                       ctypes.c_void_p]
        rcl.rcl_publish_serialized_message.restype = ctypes.c_int32
        rcutils = ctypes.CDLL("librcutils.so")
        rcutils.rcutils_get_error_string.restype = _ErrorString
        _rcutils, _rcl = rcutils, rcl
    return _rcl


class _ErrorString(ctypes.Structure):
    _fields_ = [("str", ctypes.c_char * 1024)]


class PublishError(RuntimeError):
    """The middleware refused a write (rcl's return code and error string)."""


def to_cdr(msg: Any) -> bytes:
    """A message object or its CDR bytes, as CDR bytes."""
    if isinstance(msg, bytes):
        return msg
    if isinstance(msg, (bytearray, memoryview)):
        return bytes(msg)
    return serialize_message(msg)


def publish_released(publisher: Any, data: bytes) -> None:
    """Publish ``data`` (CDR bytes of the publisher's type) through rclpy ``publisher`` with the GIL
    released for the middleware write. Raises :class:`PublishError` when rcl refuses it and
    ``rclpy.exceptions.InvalidHandle`` when the publisher was destroyed."""
    rcl = _library()
    msg = _SerializedMessage(data, len(data), len(data), _Allocator())
    with publisher.handle:  # the rcl publisher is not destroyed while this write uses it
        ret = rcl.rcl_publish_serialized_message(publisher.handle.pointer, ctypes.byref(msg), None)
    if ret != 0:
        text = _rcutils.rcutils_get_error_string().str.decode(errors="replace")
        _rcutils.rcutils_reset_error()
        raise PublishError(f"rcl_publish_serialized_message returned {ret} on {publisher.topic_name}: {text}")


@dataclass
class PublishThreadStats:
    """What a :class:`PublishThread` did: messages handed over and written, dropped at the bound (per
    topic), failed writes, the longest a message waited (s) and the most bytes queued."""

    handed: int = 0
    written: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    failed: int = 0
    max_wait_s: float = 0.0
    max_queued_bytes: int = 0


class PublishThread:
    """One thread writing the messages handed to :meth:`submit`, in order, with the GIL released.

    ``max_queued_bytes``: the queue's bound; a message that would pass it is dropped and counted.
    ``write(publisher, data)``: makes one write (:func:`publish_released`).
    """

    def __init__(self, max_queued_bytes: int = 512 * 2**20, name: str = "publish",
                 write: Callable[[Any, bytes], None] = publish_released) -> None:
        self.max_queued_bytes = max_queued_bytes
        self._write = write
        self.stats = PublishThreadStats()
        self.last_error = ""
        self._queue: deque[tuple[Any, bytes, Any, float]] = deque()
        self._queued_bytes = 0
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, publisher: Any, msg: Any, on_written: Callable[[], None] | None = None) -> bool:
        """Hand ``msg`` (an object or CDR bytes) over for ``publisher``; ``on_written()`` is called on
        the thread once it is written. False when it was dropped (the queue at its bound, or closed)."""
        data = to_cdr(msg)
        with self._cond:
            self.stats.handed += 1
            if self._closed or self._queued_bytes + len(data) > self.max_queued_bytes:
                topic = publisher.topic_name
                self.stats.dropped[topic] = self.stats.dropped.get(topic, 0) + 1
                return False
            self._queue.append((publisher, data, on_written, time.monotonic()))
            self._queued_bytes += len(data)
            self.stats.max_queued_bytes = max(self.stats.max_queued_bytes, self._queued_bytes)
            self._cond.notify()
        return True

    @property
    def pending(self) -> int:
        """Messages handed over and not written yet."""
        return len(self._queue)

    def progress(self) -> tuple[int, int]:
        """(messages handed over, messages written, dropped or failed): both only grow."""
        s = self.stats
        return s.handed, s.written + sum(s.dropped.values()) + s.failed

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return
                publisher, data, on_written, t_handed = self._queue.popleft()
            try:
                self._write(publisher, data)
                if on_written is not None:
                    on_written()
                with self._cond:
                    self.stats.written += 1
            except Exception as exc:  # noqa: BLE001 - counted and kept: one refused write does not stop the others
                with self._cond:
                    self.stats.failed += 1
                    self.last_error = f"{type(exc).__name__}: {exc}"
            with self._cond:
                self._queued_bytes -= len(data)
                self.stats.max_wait_s = max(self.stats.max_wait_s, time.monotonic() - t_handed)

    def close(self, timeout_s: float = 2.0) -> None:
        """Write what is queued (for at most ``timeout_s``), then stop; later submits are dropped."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(timeout_s)


_process_threads: dict[str, PublishThread] = {}
_process_lock = threading.Lock()
#: the thread of a process's data messages and the one of its diagnostics (a report never waits
#: behind frames, and a write blocked on a peer's death stops neither the executor nor the other)
DATA, DIAGNOSTICS = "rgbt-publish", "rgbt-publish-diagnostics"


def process_publish_thread(name: str = DATA) -> PublishThread:
    """This process's :class:`PublishThread` called ``name`` (started on first use)."""
    with _process_lock:
        if name not in _process_threads:
            _process_threads[name] = PublishThread(name=name)
        return _process_threads[name]


def close_process_publish_thread(timeout_s: float = 2.0) -> None:
    """Write what this process's publish threads hold (at most ``timeout_s`` each) and stop them; no-op
    when none was started."""
    with _process_lock:
        threads = list(_process_threads.values())
        _process_threads.clear()
    for thread in threads:
        thread.close(timeout_s)

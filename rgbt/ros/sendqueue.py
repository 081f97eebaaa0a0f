"""A publishing thread between a node and the middleware (no rclpy import).

A middleware publish can block: when a subscriber's process is killed mid-transfer, Fast DDS's
shared-memory transport held every publisher of the sources process for ~1.7 s on a 2-core host
(``rgbt bench faults``, ``kill_recorder``). A trigger sync that publishes on its drivers' threads
then blocks the drivers, and a driver that does not read its device for that long loses frames at the
device. :class:`SendQueue` takes the publish off the caller's thread: messages go out in the order
given, from one thread, and wait (in memory, within ``budget_bytes``) while the middleware is stuck;
beyond the budget a message is dropped and counted (the recorder sees the step in the stamps and
writes it in the bag's ``loss_ranges``).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any, Callable


class SendQueue:
    """Publishes ``(publish, message)`` pairs in order on its own thread (see the module docstring).

    Counters (read from any thread): ``handed`` (accepted), ``done`` (published), ``dropped`` (over the
    budget), ``max_wait_ms`` (longest a message waited to be published)."""

    def __init__(self, budget_bytes: int, name: str = "rgbt-send") -> None:
        self.budget_bytes = int(budget_bytes)
        self.handed = self.done = self.dropped = 0
        self.max_wait_ms = 0.0
        self.queued_bytes = 0
        self._items: deque[tuple[Callable[[Any], None], Any, int, int]] = deque()
        self._cv = threading.Condition()
        self._closed = False
        self.errors: list[str] = []  # the last few publish errors (the thread keeps going)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def send(self, publish: Callable[[Any], None], message: Any) -> bool:
        """Queue ``publish(message)``; False (counted in ``dropped``) when the queue is over its budget
        or closed."""
        size = len(message) if isinstance(message, (bytes, bytearray, memoryview)) else 0
        with self._cv:
            if self._closed or (self.queued_bytes + size > self.budget_bytes and self._items):
                self.dropped += 1
                return False
            self._items.append((publish, message, size, time.monotonic_ns()))
            self.queued_bytes += size
            self.handed += 1
            self._cv.notify()
        return True

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._items and not self._closed:
                    self._cv.wait()
                if not self._items:
                    return
                publish, message, size, t_ns = self._items.popleft()
            self.max_wait_ms = max(self.max_wait_ms, (time.monotonic_ns() - t_ns) / 1e6)
            try:
                publish(message)
            except Exception as exc:  # noqa: BLE001 - one failed publish must not stop the others
                self.errors = [*self.errors[-4:], f"{type(exc).__name__}: {exc}"]
            with self._cv:
                self.queued_bytes -= size
                self.done += 1

    def close(self, timeout_s: float = 2.0) -> None:
        """Publish what is queued (at most ``timeout_s``), then end the thread."""
        with self._cv:
            self._closed = True
            self._cv.notify()
        self._thread.join(timeout_s)

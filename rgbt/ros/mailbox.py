"""Newest-frame hand-over for processing nodes (no rclpy import): the overload policy of the graph.

A subscription callback only puts the received item (raw CDR, or a pair of them) into a
:class:`LatestMailbox` and returns; a worker thread at low CPU priority takes the newest item and
processes it. An item still waiting when a newer one arrives is stale: it is dropped and counted
(``dropped_stale``), never queued. So when the CPU is short, processing falls behind by at most
one frame instead of by a growing queue, and the drivers, the trigger sync and the recorder (at
normal priority, in other processes) keep the cores they need. The newest item itself can reach the
worker late when the CPU is short; with ``late_after_periods`` > 0 an item whose work would start
more than that many frame periods after the stream's quickest recent arrival is dropped too
(``dropped_late``; :class:`rgbt.lateness.LatenessGate`), so what is published stays fresh.

Counters (``stats()``): ``submitted``, ``processed``, ``dropped_stale``, ``dropped_late``, ``errors``,
the gate's ``baseline_ms`` / ``period_ms`` / ``clock_resets``, and p50 / p99 in
ms of ``arrival`` (header stamp -> the subscription callback: everything upstream, transport and
executor wait included), ``wait`` (callback -> the worker takes it), ``work`` (the handler's wall
time), ``serialize`` and ``publish`` (:meth:`LatestFrameNode.publish_image`: array -> CDR bytes, and
the middleware write), plus the worker thread's CPU seconds (``cpu_s``). They are the processing
part of the per-hop latency breakdown of ``rgbt bench graph``. Stamps and clocks: header stamps
are wall-clock ns (``time.time_ns``), as every rgbt node stamps.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from rgbt.graph.diagnostics import p50_p99_ms
from rgbt.graph.liveness import WORKER_STALL_S
from rgbt.graph.sync_adapter import StampPairer
from rgbt.lateness import LatenessGate
from rgbt.stamps import cdr_stamp_ns
from rgbt.threadname import name_native_thread


class LatestMailbox:
    """One slot, one worker thread: ``submit(item, t_ns)`` replaces a waiting item (counted stale);
    ``handle(item)`` runs on the worker for the newest one, at most ``max_rate_hz`` times a second
    when that is > 0 (see :meth:`submit` for how). ``priority``: ``idle`` (``SCHED_IDLE``,
    runs only on otherwise idle cores), ``low`` (nice 19) or ``normal`` (see
    :func:`rgbt.seg.pipeline.lower_thread_priority`). Exceptions in ``handle`` are counted and passed
    to ``on_error(exc)``; the worker keeps going. ``late_after_periods`` > 0: items submitted with a
    stamp are also dropped when they reach the worker late (:class:`rgbt.lateness.LatenessGate`)."""

    def __init__(self, handle: Callable[[Any], None], name: str = "latest", priority: str = "low",
                 on_error: Callable[[BaseException], None] | None = None, max_rate_hz: float = 0.0,
                 late_after_periods: float = 0.0) -> None:
        self._handle, self._on_error = handle, on_error
        self._priority = priority
        self.max_rate_hz = max_rate_hz  # 0: no limit; else items in between are dropped as stale
        self._taken_stamp: int | None = None  # header stamp of the last item the worker took (rate limit)
        self._period_ns = 0  # the last step between submitted stamps (the stream's frame period)
        self._last_stamp: int | None = None
        self._cv = threading.Condition()
        self._item: tuple[Any, int, int | None] | None = None  # (item, monotonic ns at submit, stamp)
        self._stop = False
        self.gate = LatenessGate(late_after_periods)
        self.counts = {"submitted": 0, "processed": 0, "dropped_stale": 0, "errors": 0}  # + the gate's
        self.samples: dict[str, deque[int]] = {k: deque(maxlen=1000) for k in
                                               ("arrival", "wait", "work", "serialize", "publish")}
        self._cpu_ns = 0
        # the worker's progress (rgbt.graph.liveness): items put in its slot, and items it took from there
        # (processed, failed or dropped late); an item replaced while waiting was handed but never taken
        self.handed = self.taken = 0
        self.applied_priority = "?"
        self._thread = threading.Thread(target=self._run, name=f"rgbt-{name}", daemon=True)
        self._thread.start()

    def submit(self, item: Any, stamp_ns: int | None = None) -> None:
        """Hand over the newest item (never blocks); a waiting older one is dropped and counted.
        ``stamp_ns``: the item's header stamp (wall clock), for the ``arrival`` latency.

        With ``max_rate_hz`` > 0 the items are chosen on the stream's own time: a stamped item is
        taken only when its stamp is at least ``1 / max_rate_hz`` after the last taken one's (less
        the stamps' jitter: half a frame period, at most a tenth of ``1 / max_rate_hz``, so the rate
        never exceeds the limit by more than that), and then at once, so the limit adds no wait
        (at 10 Hz on a 30 Hz stream: every third frame, as it arrives); the others are dropped as
        stale. The worker also rests after each item until ``1 / max_rate_hz`` less a frame period
        has passed since it started (on the wall clock), which keeps the CPU share bounded when
        stamps come faster than live (a fast replay) or are missing."""
        now = time.time_ns()
        if stamp_ns is not None:
            self.samples["arrival"].append(now - stamp_ns)
        with self._cv:
            if stamp_ns is not None:
                self.gate.arrived(stamp_ns, now)
                if self._last_stamp is not None and stamp_ns > self._last_stamp:
                    self._period_ns = stamp_ns - self._last_stamp
                self._last_stamp = stamp_ns
            self.counts["submitted"] += 1
            if self._before_due(stamp_ns):
                self.counts["dropped_stale"] += 1
                return
            if self._item is not None:
                self.counts["dropped_stale"] += 1
            self._item = (item, time.monotonic_ns(), stamp_ns)
            self.handed += 1
            self._cv.notify()

    def _interval_ns(self) -> int:
        return int(1e9 / self.max_rate_hz) if self.max_rate_hz > 0 else 0

    def _before_due(self, stamp_ns: int | None) -> bool:
        """A stamped item that comes sooner after the last taken one than the rate limit allows
        (call with the lock held). A stamp before the last taken one (a replay restarted, a clock
        reset) starts the count again."""
        if stamp_ns is None or self.max_rate_hz <= 0 or self._taken_stamp is None or stamp_ns <= self._taken_stamp:
            return False
        interval = self._interval_ns()  # stamp jitter allowed: half a frame period, at most a tenth of it
        return stamp_ns - self._taken_stamp < interval - min(self._period_ns // 2, interval // 10)

    def _run(self) -> None:
        from rgbt.seg.pipeline import lower_thread_priority

        name_native_thread()
        self.applied_priority = lower_thread_priority(self._priority)
        while True:
            with self._cv:
                while self._item is None and not self._stop:
                    self._cv.wait()
                if self._stop:
                    return
                taken, self._item = self._item, None
                assert taken is not None  # the wait above ends on an item or on stop
                item, t_sub, stamp = taken
                self.taken += 1
                if stamp is not None and self.gate.late(stamp, time.time_ns()):
                    continue  # dropped (the gate counts it); a newer item is at most a period away
                self._taken_stamp = stamp
            t0, c0 = time.monotonic_ns(), time.thread_time_ns()
            self.samples["wait"].append(t0 - t_sub)
            try:
                self._handle(item)
                self.counts["processed"] += 1
            except Exception as exc:  # noqa: BLE001 - one bad frame never stops the node
                self.counts["errors"] += 1
                if self._on_error is not None:
                    self._on_error(exc)
            self.samples["work"].append(time.monotonic_ns() - t0)
            self._cpu_ns += time.thread_time_ns() - c0
            if self.max_rate_hz > 0:  # rest until the next start may be due (a frame early: see submit)
                rest_s = (t0 - time.monotonic_ns() + self._interval_ns() - self._period_ns) / 1e9
                with self._cv:
                    if rest_s > 0 and not self._stop:
                        self._cv.wait_for(lambda: self._stop, timeout=rest_s)

    def stats(self) -> dict[str, Any]:
        """Counters, ``<stage>_p50_ms`` / ``<stage>_p99_ms`` of each stage with samples, ``cpu_s``."""
        out: dict[str, Any] = dict(self.counts)
        gate = self.gate.stats()
        out["dropped_late"] = gate.pop("late")
        out.update(gate)
        for key, values in self.samples.items():
            if values:
                out[f"{key}_p50_ms"], out[f"{key}_p99_ms"] = p50_p99_ms(values)
        out["cpu_s"] = self._cpu_ns / 1e9
        out["priority"] = self.applied_priority
        out["max_rate_hz"] = self.max_rate_hz
        return out

    def close(self, timeout_s: float = 2.0) -> None:
        """Stop the worker (an item still waiting is not processed)."""
        with self._cv:
            self._stop = True
            self._cv.notify()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=timeout_s)


class LatestFrameNode:
    """Mixin for an ``RgbtNode`` whose frames go through :class:`LatestMailbox` es (put it before
    ``RgbtNode`` in the bases). :meth:`latest` makes one (:meth:`latest_pairs` one fed by two
    stamp-paired topics); their counters go into diagnostics as ``<name>.*`` (``latest.*``,
    ``pairs.*``) and :meth:`close` stops them. The worker priority is the node's
    ``worker_priority`` option. Samples are appended from the worker while diagnostics read them:
    safe under CPython's GIL (a deque is copied in C without releasing it)."""

    handles_frames = True  # RgbtNode: multi-MB frames per message, kept on the heap

    def latest(self, handle: Callable[[Any], None], topic: str, name: str = "latest") -> LatestMailbox:
        threads = self.options.opencv_threads  # type: ignore[attr-defined]
        if threads and not self.__dict__.get("_mailboxes"):  # process-wide; once per node
            import cv2

            cv2.setNumThreads(threads)
            self.get_logger().info(f"OpenCV threads (process-wide): {cv2.getNumThreads()}")  # type: ignore[attr-defined]
        box = LatestMailbox(handle, name=f"{self.get_name()}-{name}", priority=self.options.worker_priority,  # type: ignore[attr-defined]
                            on_error=lambda exc: self.report_error(handle.__name__, exc, topic),  # type: ignore[attr-defined]
                            max_rate_hz=self.options.max_rate_hz,  # type: ignore[attr-defined]
                            late_after_periods=self.options.late_after_periods)  # type: ignore[attr-defined]
        self.__dict__.setdefault("_mailboxes", {})[name] = box
        return box

    def latest_from(self, msg_type: Any, topic: str, handle: Callable[[Any], None], qos: Any) -> LatestMailbox:
        """Subscribe (raw CDR) to ``topic``; each message goes to a :meth:`latest` mailbox keyed by its
        header stamp (ns), so ``handle`` gets the newest raw message on the worker thread."""
        box = self.latest(handle, topic)
        self.create_subscription(  # type: ignore[attr-defined]
            msg_type, topic, self.guard(lambda raw: box.submit(raw, cdr_stamp_ns(raw)), topic),  # type: ignore[attr-defined]
            qos, raw=True)
        return box

    def latest_pairs(self, handle: Callable[[tuple[bytes, bytes]], None], topics: tuple[str, str],
                     max_pending: int = 8) -> LatestMailbox:
        """Subscribe (raw CDR) to two image topics; frames with identical header stamps are paired
        (``rgbt.graph.sync_adapter.StampPairer``, at most ``max_pending`` unmatched of each kept) and
        each pair ``(raw0, raw1)`` goes to a mailbox ``pairs`` whose worker runs ``handle``.

        Topics a node of this process publishes through a local publisher (the rectify node's pairs,
        for fusion in the same process) are taken in-process on the publisher's thread
        (``rgbt.ros.local_topics``), without a middleware round trip or an executor wake-up."""
        from sensor_msgs.msg import Image


        box = self.latest(handle, topics[0], "pairs")
        pairer = StampPairer(max_pending)
        lock = threading.Lock()  # one topic may come in-process (publisher's thread), the other by the executor

        def first(raw: bytes) -> None:
            stamp = cdr_stamp_ns(raw)
            with lock:
                other, _ = pairer.add_frame(stamp, raw)
            if other is not None:
                box.submit((raw, other), stamp)

        def second(raw: bytes) -> None:
            stamp = cdr_stamp_ns(raw)
            with lock:
                other = pairer.add_info(stamp, raw)
            if other is not None:
                box.submit((other, raw), stamp)

        how = [self.subscribe_local_first(Image, topic, self.guard(fn, topic), self.in_qos, raw=True)  # type: ignore[attr-defined]
               for topic, fn in zip(topics, (first, second), strict=False)]
        self.get_logger().info(f"pairs of {topics[0]} + {topics[1]}: {' + '.join(how)}")  # type: ignore[attr-defined]
        return box

    def publish_image(self, pub: Any, arr: Any, t_ns: int, frame_id: str, encoding: str,
                      box: LatestMailbox | None = None) -> None:
        """Serialize ``arr`` (``rgbt.image.codec.image_to_cdr``) and publish it, timing both steps into
        ``box`` (default: the node's first mailbox)."""
        from rgbt.image.codec import image_to_cdr

        box = box or next(iter(self.__dict__["_mailboxes"].values()))
        t0 = time.monotonic_ns()
        raw = image_to_cdr(arr, t_ns, frame_id, encoding)
        t1 = time.monotonic_ns()
        pub.publish(raw)
        box.samples["serialize"].append(t1 - t0)
        box.samples["publish"].append(time.monotonic_ns() - t1)

    def apply_options(self, new: Any, changed: set[str]) -> None:
        """``max_rate_hz`` and ``late_after_periods`` are live: the mailboxes take them at their next frame."""
        super().apply_options(new, changed)  # type: ignore[misc]
        for box in self.__dict__.get("_mailboxes", {}).values():
            if "max_rate_hz" in changed:
                box.max_rate_hz = new.max_rate_hz
            if "late_after_periods" in changed:
                box.gate.late_after_periods = new.late_after_periods

    def progress(self) -> dict[str, tuple[int, int, float]]:
        """Each mailbox's items handed to its worker and taken by it (``rgbt.graph.liveness``; items the
        rate limit dropped on arrival never reach the worker and are not counted)."""
        return {name: (box.handed, box.taken, WORKER_STALL_S)
                for name, box in self.__dict__.get("_mailboxes", {}).items()}

    def publish_diagnostics(self) -> None:
        for name, box in self.__dict__.get("_mailboxes", {}).items():
            self.diag.set_values(name, box.stats())  # type: ignore[attr-defined]
        super().publish_diagnostics()  # type: ignore[misc]

    def close(self) -> None:
        for box in self.__dict__.get("_mailboxes", {}).values():
            box.close()
        super().close()  # type: ignore[misc]

"""Live segmentation: newest frame first, preprocessing overlapped with inference.

:class:`SegPipeline` runs a :class:`~rgbt.seg.stage.SegmentationStage` on two threads:

* the **prep thread** normalizes and fits each raw frame as soon as it arrives, into a free
  input buffer, at the lowest CPU priority the OS grants (``SCHED_IDLE`` on Linux by default,
  see ``SegStageOptions.prep_priority``). On a CPU-only machine it runs in the gaps the
  inference backend leaves (ONNX Runtime with 2 threads keeps 2 cores ~85 % busy) and is
  preempted the moment an inference thread wants its core back; beside a GPU backend it simply
  runs in parallel;
* the **inference thread** infers the newest prepared input, finishes it (crop back, colour
  mask: ~0.1 ms) and hands the result to ``on_result(t_ns, result)``.

A low-priority thread must never starve segmentation on a busy machine, so the inference
thread prepares frames itself when it would otherwise wait: a waiting frame the prep thread has
not picked up, or the frame a starved prep thread is still holding once the inference thread has
waited ``steal_after_ms`` for it (a prep takes ~1.5 ms of CPU here, so that only happens when other
work takes the cores).
What the prep thread finishes after that is stale and is dropped.

Two policies:

* live (default): ``submit`` never blocks; a raw frame or a prepared input overtaken by a newer
  one is dropped and counted (``dropped_stale``), so latency never grows; with
  ``late_after_periods`` > 0 a frame whose inference would start more than that many frame periods
  after the stream's quickest recent arrival is dropped too (``dropped_late``,
  :class:`rgbt.lateness.LatenessGate`): on a short CPU the newest frame itself can come late;
* lossless: ``submit`` blocks while a frame is still waiting; every frame is segmented, in order
  (``stream``, benchmarks, offline runs).

Errors in one frame are counted, passed to ``on_error(t_ns, exc)`` and the pipeline keeps going.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from rgbt.lateness import LatenessGate
from rgbt.seg.preprocess import Fit
from rgbt.seg.stage import PREP_PRIORITIES, SegmentationStage, SegResult
from rgbt.threadname import name_native_thread


def lower_thread_priority(kind: str) -> str:
    """Lower the calling thread's CPU priority; returns what was applied (for logs and stats).

    ``idle``: ``SCHED_IDLE`` (Linux; runs only when a core would otherwise be idle), falling back
    to nice 19; ``low``: nice 19; ``normal``: unchanged. A thread that inherited a real-time
    policy (``realtime_priority`` of its process) leaves it for ``idle`` and ``low``: a nice value
    means nothing to a real-time thread. Lowering never needs privileges.
    """
    if kind not in PREP_PRIORITIES:
        raise ValueError(f"prep_priority: got {kind!r}, expected one of {PREP_PRIORITIES}")
    if kind == "normal":
        return "normal"
    if hasattr(os, "SCHED_OTHER") and os.sched_getscheduler(0) in (os.SCHED_RR, os.SCHED_FIFO):
        try:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        except OSError:
            return "real time (could not lower)"
    if kind == "idle" and hasattr(os, "SCHED_IDLE"):
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # 0 = this thread on Linux
            return "SCHED_IDLE"
        except OSError:
            pass
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)  # per thread on Linux
        return "nice 19"
    except (OSError, AttributeError):
        return "normal (could not lower)"


@dataclass
class _Frame:
    seq: int
    t_ns: int
    frame: np.ndarray
    submitted_ns: int
    tag: object = None


@dataclass
class _Prepared:
    item: _Frame
    x: np.ndarray
    fit: Fit
    t0: int
    t1: int
    by: str  # "prep" | "inference"


class SegPipeline:
    """Segment frames submitted with ``submit(t_ns, frame)`` on two threads (see the module doc).

    ``on_result(t_ns, SegResult)`` runs on the inference thread; ``result.timing`` adds
    ``latency_ms`` (submit to result) and ``prepared_by`` ("prep" thread or "inference" thread).
    ``t_ns`` is the frame's header stamp (wall-clock ns) for ``late_after_periods`` and the
    ``arrival`` samples; any increasing number otherwise.
    """

    def __init__(self, stage: SegmentationStage, on_result: Callable[[int, SegResult], None], *,
                 lossless: bool = False, on_error: Callable[[int, Exception], None] | None = None,
                 steal_after_ms: float = 8.0, late_after_periods: float = 0.0) -> None:
        if stage.spec.modality != "thermal":
            raise ValueError(f"SegPipeline runs thermal-only models; {stage.options.engine} takes "
                             f"{stage.spec.modality!r} input (use SegmentationStage.process)")
        self.stage = stage
        self.lossless = lossless
        self._on_result, self._on_error = on_result, on_error
        self._steal_after_ns = int(steal_after_ms * 1e6)
        self._idle_since: int | None = None  # when the inference thread started waiting
        # one lock, one condition per waiter: a state change wakes only the thread it concerns
        self._lock = threading.Lock()
        self._cv_submit = threading.Condition(self._lock)  # lossless producer: raw slot free
        self._cv_prep = threading.Condition(self._lock)  # prep thread: a frame and a buffer
        self._cv_infer = threading.Condition(self._lock)  # inference thread: work of any kind
        self._raw: _Frame | None = None  # waiting, not yet picked up
        self._held: tuple[_Frame, int] | None = None  # picked up by the prep thread, since (ns)
        # prepared, waiting for inference: live keeps the newest one; lossless keeps the prep
        # thread up to two frames ahead so it always has work for the gaps the inference leaves
        self._ready_cap = 2 if lossless else 1
        self._ready: deque[_Prepared] = deque()
        self._free = [stage.new_buffer() for _ in range(self._ready_cap + 2)]  # + inference + prep
        self._seq = 0
        self._last_taken = -1  # newest seq the inference thread has taken
        self._held_stolen = False  # the inference thread prepared the held frame itself
        self._stop = self._drain = False
        self.prep_priority = "?"
        self.gate = LatenessGate(0.0 if lossless else late_after_periods)  # lossless: every frame
        self.counts = {"submitted": 0, "processed": 0, "dropped_stale": 0, "prepared_inline": 0,
                       "errors": 0}  # + the gate's late ones as dropped_late (stats)
        # ns samples of the newest 1000 frames: header stamp -> submit (wall clock), submit ->
        # inference start, inference start -> on_result returned (the published result)
        self.samples: dict[str, deque[int]] = {k: deque(maxlen=1000) for k in ("arrival", "wait", "work")}
        self.last_error: Exception | None = None
        self._prep_thread = threading.Thread(target=self._prep_loop, name="seg-prep", daemon=True)
        self._infer_thread = threading.Thread(target=self._infer_loop, name="seg-infer", daemon=True)
        self._prep_thread.start()
        self._infer_thread.start()

    # -- producer -------------------------------------------------------------------------------
    def submit(self, t_ns: int, frame: np.ndarray, tag: object = None) -> None:
        """Hand over one raw frame (uint16 HxW, stamp ``t_ns``; ``tag`` comes back as
        ``result.tag``). Live: never blocks, replaces a frame still waiting. Lossless: blocks
        until the previous frame has been picked up."""
        now, wall = time.perf_counter_ns(), time.time_ns()
        with self._lock:
            if not self.lossless:  # live: t_ns is a header stamp
                self.gate.arrived(int(t_ns), wall)
                self.samples["arrival"].append(wall - int(t_ns))
            if self._stop:
                raise RuntimeError("SegPipeline: submit after close")
            if self.lossless:
                while self._raw is not None and not self._stop:
                    self._cv_submit.wait()
                if self._stop:
                    raise RuntimeError("SegPipeline: closed while submitting")
            self.counts["submitted"] += 1
            if self._raw is not None:
                self.counts["dropped_stale"] += 1
            self._raw = _Frame(self._seq, int(t_ns), frame, now, tag)
            self._seq += 1
            if self._idle_since is not None:  # the inference thread is waiting: it prepares the frame
                self._cv_infer.notify()
            else:  # it is busy: the prep thread prepares the frame meanwhile
                self._cv_prep.notify()

    def close(self, drain: bool = True) -> None:
        """Stop both threads; with ``drain`` the frames already submitted are segmented first."""
        with self._lock:
            if not drain and self._raw is not None:
                self.counts["dropped_stale"] += 1
                self._raw = None
            self._stop, self._drain = True, drain
            for cv in (self._cv_submit, self._cv_prep, self._cv_infer):
                cv.notify_all()
        self._prep_thread.join()
        self._infer_thread.join()

    def progress(self) -> tuple[int, int]:
        """(frames submitted, frames the inference thread has taken): while the first grows and the
        second does not, the inference thread is stuck (a supervisor's liveness check)."""
        with self._lock:
            return self._seq, self._last_taken + 1

    def stats(self) -> dict:
        """Counters, the prep thread's priority, what is queued now (raw frame waiting, prepared
        inputs waiting, prep thread busy), the lateness gate's ``dropped_late``, ``baseline_ms`` /
        ``period_ms`` / ``clock_resets`` / ``late_after_periods``, and ``<stage>_p50_ms`` / ``<stage>_p99_ms`` of
        ``arrival`` (live only),
        ``wait`` and ``work`` (see ``samples``)."""
        with self._lock:
            gate = self.gate.stats()
            out = {**self.counts, "dropped_late": gate.pop("late"), **gate, "prep_priority": self.prep_priority,
                   "queued_raw": int(self._raw is not None), "queued_ready": len(self._ready),
                   "prep_busy": int(self._held is not None)}
            samples = {k: np.fromiter(v, dtype=np.float64, count=len(v)) for k, v in self.samples.items() if v}
        for key, a in samples.items():
            p50, p99 = np.percentile(a, (50, 99)) / 1e6
            out[f"{key}_p50_ms"], out[f"{key}_p99_ms"] = round(float(p50), 3), round(float(p99), 3)
        return out

    # -- prep thread ----------------------------------------------------------------------------
    def _prep_loop(self) -> None:
        name_native_thread()
        applied = lower_thread_priority(self.stage.options.prep_priority)
        with self._lock:
            self.prep_priority = applied
        while True:
            with self._lock:
                while not self._can_prep() and not self._finished():
                    self._cv_prep.wait()
                if not self._can_prep():
                    return
                item, self._raw = self._raw, None
                assert item is not None  # _can_prep: a raw frame is waiting
                self._held, self._held_stolen = (item, time.perf_counter_ns()), False
                buf = self._free.pop()
                self._cv_submit.notify()
            prepared = self._prepare(item, buf, "prep")
            with self._lock:
                stolen, self._held = self._held_stolen, None
                if prepared is None:
                    self._free.append(buf)
                elif item.seq <= self._last_taken:  # the inference thread went ahead without it
                    self._free.append(buf)
                    self.counts["dropped_stale"] += not stolen  # a stolen frame was segmented
                else:
                    if len(self._ready) >= self._ready_cap:  # live: an older prepared input is overtaken
                        self._free.append(self._ready.popleft().x)
                        self.counts["dropped_stale"] += 1
                    self._ready.append(prepared)
                self._cv_infer.notify()

    def _can_prep(self) -> bool:
        if self._raw is None or not self._free:
            return False
        return not (self.lossless and len(self._ready) >= self._ready_cap)  # lossless: never overwrite

    def _finished(self) -> bool:
        return self._stop and (not self._drain or (self._raw is None and not self._ready and self._held is None))

    # -- inference thread -----------------------------------------------------------------------
    def _infer_loop(self) -> None:
        name_native_thread()
        while True:
            with self._lock:
                job = None
                while job is None:
                    job = self._take()
                    if job is not None:
                        break
                    if self._finished():
                        return
                    if self._idle_since is None:
                        self._idle_since = time.perf_counter_ns()
                    self._cv_infer.wait(timeout=self._wait_s())
                self._idle_since = None
            prepared: _Prepared | None
            if isinstance(job, _Prepared):
                prepared = job
            else:
                item, buf = job
                prepared = self._prepare(item, buf, "inference")
                if prepared is None:
                    with self._lock:
                        self._free.append(buf)
                        self._cv_prep.notify()
                    continue
            self._run(prepared)

    def _take(self) -> _Prepared | tuple[_Frame, np.ndarray] | None:
        """Under the lock: the next job of the inference thread, or None to wait."""
        if self._stop and not self._drain:
            return None
        while self._ready:
            job = self._ready.popleft()
            self._cv_prep.notify()  # lossless: room for the next prepared input
            self._last_taken = job.item.seq
            if not self._late(job.item):
                return job
            self._free.append(job.x)
        if not self._free:
            return None
        wanted = self._held_wanted()
        held = self._held  # not None when wanted
        if self._raw is not None and (not wanted or self._held_too_long()):
            item, self._raw = self._raw, None  # nobody is on it (or the prep thread is starved)
        elif wanted and held is not None and self._held_too_long():
            item = held[0]  # a starved prep thread holds the only frame: do it again here
            self._held_stolen = True
        else:
            return None
        if self.lossless and wanted and held is not None and held[0].seq < item.seq:
            self._raw = item  # lossless keeps the order: the held frame first
            item = held[0]
            self._held_stolen = True
        self._last_taken = item.seq
        if self._late(item):
            return None  # the prep thread drops what it holds of it (seq <= _last_taken)
        self.counts["prepared_inline"] += 1
        self._cv_submit.notify()  # lossless producer: the raw slot may be free
        return item, self._free.pop()

    def _late(self, item: _Frame) -> bool:
        """Under the lock: the frame is too late to start on (the gate counts it: ``dropped_late``)."""
        return self.gate.late(item.t_ns, time.time_ns())

    def _waited_ns(self) -> int:
        """How long the inference thread has been idle while the prep thread held its frame."""
        now = time.perf_counter_ns()
        return now - max(self._held[1] if self._held else now, self._idle_since or now)

    def _held_too_long(self) -> bool:
        return self._held is not None and self._waited_ns() > self._steal_after_ns

    def _held_wanted(self) -> bool:
        """The prep thread holds a frame newer than anything the inference thread has taken."""
        return self._held is not None and self._held[0].seq > self._last_taken

    def _wait_s(self) -> float | None:
        """Seconds until the held frame may be taken over (None: wait for a notification)."""
        if not self._held_wanted():
            return None
        left = self._steal_after_ns - self._waited_ns()
        return left / 1e9 + 1e-4 if left > 0 else 1e-4

    def _prepare(self, item: _Frame, buf: np.ndarray, by: str) -> _Prepared | None:
        t0 = time.perf_counter_ns()
        try:
            x, fit = self.stage.prepare(item.frame, buf)
        except Exception as exc:  # a bad frame is counted; the pipeline keeps going
            self._error(item, exc)
            return None
        return _Prepared(item, x, fit, t0, time.perf_counter_ns(), by)

    def _run(self, p: _Prepared) -> None:
        try:
            t1 = time.perf_counter_ns()
            ids = self.stage.infer(p.x)
            t2 = time.perf_counter_ns()
            result = self.stage.finish(ids, p.x, p.fit, (t1 - (p.t1 - p.t0), t1, t2))
            result.timing["latency_ms"] = (time.perf_counter_ns() - p.item.submitted_ns) / 1e6
            result.timing["prepared_by"] = p.by
            result.tag = p.item.tag
        except Exception as exc:
            self._error(p.item, exc)
            result = None
        finally:
            with self._lock:
                self._free.append(p.x)
                self.counts["processed"] += result is not None
                self._cv_prep.notify()
        if result is None:
            return
        try:
            self._on_result(p.item.t_ns, result)
        except Exception as exc:  # the consumer's failure is counted like a frame's
            self._error(p.item, exc)
        done = time.perf_counter_ns()
        with self._lock:
            self.samples["wait"].append(t1 - p.item.submitted_ns)
            self.samples["work"].append(done - t1)

    def _error(self, item: _Frame, exc: Exception) -> None:
        with self._lock:
            self.counts["errors"] += 1
            self.last_error = exc
        if self._on_error is not None:
            try:
                self._on_error(item.t_ns, exc)
            except Exception:  # noqa: BLE001 - a failing error handler must not stop the pipeline
                pass


_END = object()


def stream(stage: SegmentationStage, frames: Iterable[np.ndarray]) -> Iterator[SegResult]:
    """Segment ``frames`` through a lossless pipeline; yields results in order. Raises the first
    error of a frame (or of the ``frames`` iterable); stopping early stops feeding."""
    out: queue.Queue = queue.Queue()
    pipe = SegPipeline(stage, lambda t, r: out.put(r), lossless=True, on_error=lambda t, e: out.put(e))
    quit_ = threading.Event()

    def produce() -> None:
        try:
            for i, frame in enumerate(frames):
                if quit_.is_set():
                    break
                pipe.submit(i, frame)
        except Exception as exc:  # noqa: BLE001 - handed to the consumer
            out.put(exc)
        finally:
            pipe.close(drain=not quit_.is_set())
            out.put(_END)

    producer = threading.Thread(target=produce, name="seg-stream-producer", daemon=True)
    producer.start()
    try:
        while (item := out.get()) is not _END:
            if isinstance(item, Exception):
                raise item
            yield item
    finally:
        quit_.set()
        producer.join()

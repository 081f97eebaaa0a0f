"""The segmentation stage: raw 16-bit thermal frame -> class-id mask + coloured mask + overlay.

raw uint16 -> the model's normalization -> pad / resize -> infer (argmax in-graph) -> class ids at
input resolution -> CART palette colour mask (+ overlay on the normalized frame, on request).

:class:`LatestFrameRunner` wraps a stage in a worker thread with a one-slot mailbox: a frame that
arrives while the previous one is still waiting replaces it (counted as dropped), so latency
never grows when the model is slower than the camera.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Iterator

import cv2
import numpy as np

from rgbt.errors import ModelError
from rgbt.seg.classes import overlay as blend
from rgbt.seg.model import SegModel
from rgbt.seg.preprocess import prepare, unfit_ids


@dataclass
class SegStageOptions:
    """Options of one segmentation stage (printable)."""

    engine: str  # ONNX path (sidecar beside it)
    backend: str = "onnxruntime"
    backend_options: dict = field(default_factory=dict)
    color: bool = True  # produce the coloured mask
    overlay: bool = False  # produce an overlay on the normalized frame
    overlay_alpha: float = 0.5
    # OpenCV threads for pre/post-processing (process-wide, cv2.setNumThreads; None: leave as is).
    # The inference backend already uses every core; OpenCV's own pool competing with it cost
    # 4-5 % of stage throughput on 2 cores (FastSCNN: stage/bare 0.87-0.89 -> 0.91-0.94).
    opencv_threads: int | None = 1


@dataclass
class SegResult:
    class_ids: np.ndarray  # uint8 HxW, CART ids, input resolution
    color: np.ndarray | None  # uint8 HxWx3 RGB (CART palette)
    overlay: np.ndarray | None  # uint8 HxWx3 RGB
    timing: dict  # milliseconds: preprocess, infer (+ backend tiers), postprocess, total


class SegmentationStage:
    def __init__(self, options: SegStageOptions) -> None:
        self.options = options
        if options.opencv_threads is not None:
            cv2.setNumThreads(options.opencv_threads)
        self.model = SegModel(options.engine, options.backend, **options.backend_options)
        sc = self.model.sidecar
        if len(sc.inputs) != 1:
            raise ModelError(f"{options.engine}: {len(sc.inputs)}-input model; use rgbt.seg.fusion for two-input models")
        self.spec = sc.inputs[0]
        self._buf = np.empty((1, self.spec.channels, self.spec.height, self.spec.width), np.float32)
        lut = np.zeros((256, 1, 3), np.uint8)
        for c in sc.seg_classes():
            lut[c.id, 0] = c.rgb()
        self._lut = lut  # cv2.LUT table, RGB

    def colorize(self, ids: np.ndarray) -> np.ndarray:
        return cv2.applyColorMap(ids, self._lut)  # one pass: 256-entry RGB table indexed by class id

    def process(self, frame_u16: np.ndarray, rgb: np.ndarray | None = None) -> SegResult:
        """Segment one raw thermal frame (uint16 HxW counts); ``rgb`` only for early-fusion models."""
        t0 = time.perf_counter_ns()
        x, fit = self._pre(frame_u16, rgb, self._buf)
        t1 = time.perf_counter_ns()
        ids = self._infer(x)
        t2 = time.perf_counter_ns()
        return self._post(ids, x, fit, t0, t1, t2, self.model.backend.timing.last())

    def stream(self, frames: Iterable[np.ndarray]) -> Iterator[SegResult]:
        """Segment a stream of raw thermal frames, preprocessing frame n+1 and post-processing frame
        n-1 on a helper thread while frame n is inferred (same results as ``process``, in order)."""
        bufs = [np.empty_like(self._buf) for _ in range(3)]
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="seg-prepost")
        try:
            it = iter(frames)
            first = next(it, None)
            if first is None:
                return
            k = 0
            pre = pool.submit(self._timed_pre, first, bufs[k % 3])
            post = None
            while pre is not None:
                x, fit, t0, t1 = pre.result()
                nxt = next(it, None)
                k += 1
                pre = pool.submit(self._timed_pre, nxt, bufs[k % 3]) if nxt is not None else None
                ids = self._infer(x)
                t2 = time.perf_counter_ns()
                tiers = self.model.backend.timing.last()
                if post is not None:
                    yield post.result()
                post = pool.submit(self._post, ids, x, fit, t0, t1, t2, tiers)
            if post is not None:
                yield post.result()
        finally:
            pool.shutdown(wait=True)

    def _timed_pre(self, frame_u16: np.ndarray, buf: np.ndarray):  # type: ignore[no-untyped-def]
        t0 = time.perf_counter_ns()
        x, fit = self._pre(frame_u16, None, buf)
        return x, fit, t0, time.perf_counter_ns()

    def _pre(self, frame_u16: np.ndarray, rgb: np.ndarray | None, buf: np.ndarray):  # type: ignore[no-untyped-def]
        return prepare({"thermal": frame_u16, "rgb": rgb}, self.spec, self.model.sidecar.fit, buf)

    def _infer(self, x: np.ndarray) -> np.ndarray:
        be = self.model.backend
        if self.model.class_output:
            return be.run({self.spec.name: x}, [self.model.class_output])[self.model.class_output][0]
        logits = be.run({self.spec.name: x}, [self.model.float_output])[self.model.float_output][0]
        return np.argmax(logits, axis=0).astype(np.uint8)

    def _post(self, ids: np.ndarray, x: np.ndarray, fit, t0: int, t1: int, t2: int,  # type: ignore[no-untyped-def]
              tiers: dict) -> SegResult:
        ids = unfit_ids(ids, fit)
        color = self.colorize(ids) if self.options.color else None
        ov = None
        if self.options.overlay:
            base = (x[0, -1, : fit.src[0], : fit.src[1]] * 255).astype(np.uint8) if fit.mode == "pad" else \
                cv2.resize((x[0, -1] * 255).astype(np.uint8), (fit.src[1], fit.src[0]))
            ov = blend(base, color if color is not None else self.colorize(ids), self.options.overlay_alpha)
        t3 = time.perf_counter_ns()
        timing = {"preprocess_ms": (t1 - t0) / 1e6, "infer_ms": (t2 - t1) / 1e6,
                  "postprocess_ms": (t3 - t2) / 1e6, "total_ms": (t3 - t0) / 1e6,
                  **{f"backend_{k}": v for k, v in tiers.items()}}
        return SegResult(ids, color, ov, timing)


class LatestFrameRunner:
    """Run ``process(frame)`` on a worker thread, always on the newest frame (mailbox of one).

    ``submit`` never blocks; a frame still waiting when a newer one arrives is dropped and counted.
    Results go to ``on_result(t_ns, result)``.
    """

    def __init__(self, process: Callable[[np.ndarray], object], on_result: Callable[[int, object], None]) -> None:
        self._process, self._on_result = process, on_result
        self._cv = threading.Condition()
        self._slot: tuple[int, np.ndarray] | None = None
        self._stop = False
        self.submitted = self.processed = self.dropped = self.errors = 0
        self.last_error: Exception | None = None
        self._thread = threading.Thread(target=self._loop, name="seg-latest-frame", daemon=True)
        self._thread.start()

    def submit(self, t_ns: int, frame: np.ndarray) -> None:
        with self._cv:
            self.submitted += 1
            if self._slot is not None:
                self.dropped += 1
            self._slot = (t_ns, frame)
            self._cv.notify()

    def _loop(self) -> None:
        while True:
            with self._cv:
                while self._slot is None and not self._stop:
                    self._cv.wait()
                if self._slot is None and self._stop:
                    return
                t_ns, frame = self._slot  # type: ignore[misc]
                self._slot = None
            try:
                result = self._process(frame)
            except Exception as exc:  # a bad frame is counted, the worker keeps running
                with self._cv:
                    self.errors += 1
                    self.last_error = exc
                continue
            with self._cv:
                self.processed += 1
            self._on_result(t_ns, result)

    def close(self, drain: bool = True) -> None:
        """Stop the worker (after the pending frame when ``drain``)."""
        with self._cv:
            if not drain:
                if self._slot is not None:
                    self.dropped += 1
                self._slot = None
            self._stop = True
            self._cv.notify()
        self._thread.join()

    def stats(self) -> dict:
        with self._cv:
            return {"submitted": self.submitted, "processed": self.processed, "dropped_stale": self.dropped,
                    "errors": self.errors}


def default_engine() -> Path:
    from rgbt.paths import ENGINES_DIR

    return ENGINES_DIR / "sim_thermal_seg.onnx"

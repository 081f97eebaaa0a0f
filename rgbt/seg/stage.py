"""The segmentation stage: raw 16-bit thermal frame -> class-id mask + coloured mask + overlay.

raw uint16 -> the model's normalization -> pad / resize -> infer (argmax in-graph) -> class ids at
input resolution -> CART palette colour mask (+ overlay on the normalized frame, on request).

``process`` runs one frame start to end on the calling thread (evaluation, the CLI). Live and
streaming use go through :class:`rgbt.seg.pipeline.SegPipeline`, which runs the same three steps
(``prepare`` / ``infer`` / ``finish``) with preprocessing overlapped with inference and the newest
frame first; ``stream`` is its lossless, in-order form.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import cv2
import numpy as np

from rgbt.errors import ModelError
from rgbt.seg.classes import overlay as blend
from rgbt.seg.model import SegModel
from rgbt.seg.preprocess import Fit, prepare, shrink_to_input, unfit_ids

PREP_PRIORITIES = ("idle", "low", "normal")  # see SegStageOptions.prep_priority


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
    # CPU priority of the pipeline's preprocessing thread (rgbt.seg.pipeline): "idle" (SCHED_IDLE:
    # runs only where the inference leaves a core idle; FastSCNN stage/bare 0.89 -> 0.94 on 2
    # cores), "low" (nice 19) or "normal".
    prep_priority: str = "idle"
    # resize a thermal frame to the model's input (cv2.INTER_AREA) *before* normalizing it, as
    # fusion's resize_first does (rgbt.seg.preprocess.shrink_to_input): the demo model's 640x512 ->
    # 240x192 preparation 3.5 -> 1.4 ms (EPYC). Off: the order the models were trained with (normalize,
    # then fit); the demo model loses 0.039 mIoU by day and by night with it (BENCHMARKS.md, rgbt seg).
    resize_first: bool = False


@dataclass
class SegResult:
    class_ids: np.ndarray  # uint8 HxW, CART ids, input resolution
    color: np.ndarray | None  # uint8 HxWx3 RGB (CART palette)
    overlay: np.ndarray | None  # uint8 HxWx3 RGB
    timing: dict  # milliseconds: preprocess, infer (+ backend tiers), postprocess, total
    tag: object = None  # what the caller passed to SegPipeline.submit (e.g. the ROS frame_id)


class SegmentationStage:
    def __init__(self, options: SegStageOptions) -> None:
        self.options = options
        if options.prep_priority not in PREP_PRIORITIES:
            raise ValueError(f"prep_priority: got {options.prep_priority!r}, expected one of {PREP_PRIORITIES}")
        if options.opencv_threads is not None:
            cv2.setNumThreads(options.opencv_threads)
        self.model = SegModel(options.engine, options.backend, **options.backend_options)
        sc = self.model.sidecar
        if len(sc.inputs) != 1:
            raise ModelError(
                f"{options.engine}: {len(sc.inputs)}-input model; use rgbt.seg.fusion for two-input models"
            )
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
        x, fit = self.prepare(frame_u16, self._buf, rgb)
        t1 = time.perf_counter_ns()
        ids = self.infer(x)
        t2 = time.perf_counter_ns()
        return self.finish(ids, x, fit, (t0, t1, t2))

    def stream(self, frames: Iterable[np.ndarray]) -> Iterator[SegResult]:
        """Segment a stream of raw thermal frames through a lossless :class:`SegPipeline`: frame n+1
        is preprocessed while frame n is inferred; same results as ``process``, in order."""
        from rgbt.seg.pipeline import stream

        return stream(self, frames)

    def new_buffer(self) -> np.ndarray:
        """A model input buffer (1xCxHxW float32) for ``prepare``."""
        return np.empty_like(self._buf)

    def prepare(self, frame_u16: np.ndarray, buf: np.ndarray, rgb: np.ndarray | None = None) -> tuple[np.ndarray, Fit]:
        """Normalize + fit one frame into ``buf``; returns (model input, how it was fitted).
        Thread-safe for distinct buffers."""
        fit_kind = self.model.sidecar.fit
        if self.options.resize_first and rgb is None and self.spec.modality == "thermal":
            small = shrink_to_input(frame_u16, (self.spec.height, self.spec.width), fit_kind)
            if small is not None:
                x, _ = prepare({"thermal": small}, self.spec, fit_kind, buf)
                return x, Fit("resize", frame_u16.shape[:2], (self.spec.height, self.spec.width))
        return prepare({"thermal": frame_u16, "rgb": rgb}, self.spec, fit_kind, buf)

    def infer(self, x: np.ndarray) -> np.ndarray:
        """Class ids (HxW uint8, model size) of one prepared input; one caller at a time."""
        be = self.model.backend
        class_output, float_output = self.model.class_output, self.model.float_output
        if class_output:
            return be.run({self.spec.name: x}, [class_output])[class_output][0]
        assert float_output is not None  # a sidecar names class ids, logits or probabilities
        logits = be.run({self.spec.name: x}, [float_output])[float_output][0]
        return np.argmax(logits, axis=0).astype(np.uint8)

    def finish(self, ids: np.ndarray, x: np.ndarray, fit: Fit, stamps: tuple[int, int, int]) -> SegResult:
        """Class ids at input resolution + colour mask (+ overlay); ``stamps`` = perf_counter_ns at
        the start of preprocessing, of inference and at its end. Reads the backend's last timing,
        so call it on the inference thread right after ``infer``."""
        t0, t1, t2 = stamps
        tiers = self.model.backend.timing.last()
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

"""RGB-T fusion on a pixel-aligned pair (the rectified 960x600 colour frame and the thermal frame
projected into it, ``RgbtRectifier.thermal_to_color``).

- early fusion: one 4-channel model (R, G, B, T) -> :class:`rgbt.seg.stage.SegmentationStage`
  with ``rgb=`` (or :class:`FusionStage` with ``mode="early"``).
- late fusion: a thermal model and an RGB model, per-pixel class probabilities weighted by
  confidence ``1 - H(p)/log K`` (normalized entropy); the RGB weight is scaled by a darkness gate
  from the frame's mean intensity, so a dark or missing colour frame degrades to thermal-only.
- two-input ONNX model (``thermal``, ``rgb`` inputs): the same late fusion inside the graph.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from rgbt.errors import ModelError
from rgbt.seg.model import SegModel
from rgbt.seg.preprocess import prepare, unfit_ids
from rgbt.seg.stage import SegResult


def softmax(logits: np.ndarray, axis: int = 0) -> np.ndarray:
    z = logits - logits.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def entropy_confidence(p: np.ndarray) -> np.ndarray:
    """KxHxW probabilities -> HxW confidence in [0, 1] = 1 - entropy / log K."""
    k = p.shape[0]
    h = -(p * np.log(np.clip(p, 1e-8, None))).sum(0)
    return 1.0 - h / np.log(k)


def darkness_gate(rgb_u8: np.ndarray | None, dark_lo: float, dark_hi: float) -> float:
    """0 for a missing or dark colour frame, 1 for a well-lit one (mean intensity in [0, 1])."""
    if rgb_u8 is None:
        return 0.0
    m = float(rgb_u8.mean()) / 255.0
    return float(np.clip((m - dark_lo) / (dark_hi - dark_lo), 0.0, 1.0))


def late_fuse(p_thermal: np.ndarray, p_rgb: np.ndarray | None, gate: float) -> np.ndarray:
    """Confidence-weighted average of KxHxW probabilities; thermal-only when ``p_rgb`` is None or gate 0."""
    if p_rgb is None or gate <= 0.0:
        return p_thermal
    wt = entropy_confidence(p_thermal)
    wr = entropy_confidence(p_rgb) * gate
    return (wt * p_thermal + wr * p_rgb) / (wt + wr + 1e-6)


@dataclass
class FusionOptions:
    """``mode``: "late" (thermal + rgb models), "early" (one 4-channel model) or "graph" (two-input ONNX)."""

    mode: str = "late"
    thermal: str | None = None  # ONNX, mode late
    rgb: str | None = None  # ONNX, mode late
    model: str | None = None  # ONNX, modes early / graph
    backend: str = "onnxruntime"
    backend_options: dict = field(default_factory=dict)
    dark_lo: float = 0.04  # mean intensity at which colour is ignored
    dark_hi: float = 0.15  # mean intensity at which colour counts fully


class FusionStage:
    """Segment an aligned (thermal uint16 HxW, rgb uint8 HxWx3 | None) pair -> SegResult."""

    def __init__(self, options: FusionOptions) -> None:
        self.options = o = options
        if o.mode == "late":
            if not (o.thermal and o.rgb):
                raise ModelError("late fusion needs a thermal and an RGB model")
            self.t_model = SegModel(o.thermal, o.backend, **o.backend_options)
            self.r_model = SegModel(o.rgb, o.backend, **o.backend_options)
            for m, mod in ((self.t_model, "thermal"), (self.r_model, "rgb")):
                if m.sidecar.inputs[0].modality != mod or not m.float_output:
                    raise ModelError(f"{m.path}: late fusion needs a {mod} model with a logits output")
            ts, rs = self.t_model.sidecar, self.r_model.sidecar
            if ts.num_classes != rs.num_classes:
                raise ModelError("late fusion: thermal and RGB models have different class tables")
            if (ts.inputs[0].height, ts.inputs[0].width, ts.fit) != (rs.inputs[0].height, rs.inputs[0].width, rs.fit):
                raise ModelError("late fusion: thermal and RGB models need the same input size and fit")
        elif o.mode in ("early", "graph"):
            if not o.model:
                raise ModelError(f"{o.mode} fusion needs --model")
            self.model = SegModel(o.model, o.backend, **o.backend_options)
            mods = sorted(s.modality for s in self.model.sidecar.inputs)
            want = ["rgbt"] if o.mode == "early" else ["rgb", "thermal"]
            if mods != want:
                raise ModelError(f"{o.model}: {o.mode} fusion needs inputs {want}, sidecar has {mods}")
        else:
            raise ModelError(f"unknown fusion mode {o.mode!r}; expected late, early or graph")

    def process(self, thermal_u16: np.ndarray, rgb_u8: np.ndarray | None) -> SegResult:
        o = self.options
        t0 = time.perf_counter_ns()
        frames = {"thermal": thermal_u16, "rgb": rgb_u8}
        if o.mode == "late":
            st, sr = self.t_model.sidecar, self.r_model.sidecar
            xt, fit = prepare(frames, st.inputs[0], st.fit)
            pt = softmax(self.t_model.backend.infer(xt, self.t_model.float_output)[0])
            gate = darkness_gate(rgb_u8, o.dark_lo, o.dark_hi)
            pr = None
            if gate > 0.0:
                xr, _ = prepare(frames, sr.inputs[0], sr.fit)
                pr = softmax(self.r_model.backend.infer(xr, self.r_model.float_output)[0])
            p = late_fuse(pt, pr, gate)
            ids = unfit_ids(np.argmax(p, 0).astype(np.uint8), fit)
        elif o.mode == "early":
            sc = self.model.sidecar
            if rgb_u8 is None:
                rgb_u8 = np.zeros(thermal_u16.shape + (3,), np.uint8)  # missing colour: black
            x, fit = prepare(frames | {"rgb": rgb_u8}, sc.inputs[0], sc.fit)
            ids = unfit_ids(self.model.backend.infer(x, self.model.class_output)[0], fit)
        else:
            sc = self.model.sidecar
            if rgb_u8 is None:
                rgb_u8 = np.zeros(thermal_u16.shape + (3,), np.uint8)  # gate 0 inside the graph
            feeds, fit = {}, None
            for spec in sc.inputs:
                feeds[spec.name], f = prepare(frames | {"rgb": rgb_u8}, spec, sc.fit)
                fit = fit or f
            ids = unfit_ids(self.model.backend.run(feeds, [self.model.class_output])[self.model.class_output][0], fit)
        t1 = time.perf_counter_ns()
        return SegResult(ids, None, None, {"total_ms": (t1 - t0) / 1e6})

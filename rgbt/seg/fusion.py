"""RGB-T fusion on a pixel-aligned pair (the rectified 960x600 colour frame and the thermal frame
projected into it, ``RgbtRectifier.thermal_to_color``).

- early fusion: one 4-channel model (R, G, B, T) -> :class:`rgbt.seg.stage.SegmentationStage`
  with ``rgb=`` (or :class:`FusionStage` with ``mode="early"``).
- late fusion: a thermal model and an RGB model, per-pixel class probabilities (each model's
  logits divided by its calibrated temperature) pooled log-linearly with per-pixel weights from
  the confidence ``1 - H(p)/log K`` (normalized entropy) and a per-model reliability; the RGB weight is scaled smoothly
  by the frame's mean intensity (:func:`darkness_weight`), so darker colour counts less; a missing or black colour frame
  degrades to thermal-only.
- two-input ONNX model (``thermal``, ``rgb`` inputs): the same late fusion inside the graph.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import cv2
import numpy as np

from rgbt.errors import ModelError
from rgbt.seg.model import SegModel
from rgbt.seg.preprocess import Fit, prepare, shrink_to_input, unfit_ids
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


def darkness_weight(rgb_u8: np.ndarray | None, dark_half: float, dark_min: float) -> float:
    """Scale of the RGB weight from the colour frame's mean intensity ``m`` in [0, 1]: smooth
    ``m / (m + dark_half)`` (0.5 at ``dark_half``), 0 for a missing frame or one darker than
    ``dark_min`` (black: nothing to read)."""
    if rgb_u8 is None:
        return 0.0
    m = float(rgb_u8.mean()) / 255.0
    if m < dark_min:
        return 0.0
    return m / (m + dark_half)


def late_fuse(p_thermal: np.ndarray, p_rgb: np.ndarray | None, gate: float, thermal_weight: float = 1.0) -> np.ndarray:
    """Per-pixel confidence-weighted fusion of KxHxW (calibrated) probabilities: a weighted geometric
    mean (log-linear pooling), ``p ~ exp((w_t log p_t + w_r log p_r) / (w_t + w_r))`` with per-pixel
    weights ``w_t = thermal_weight * (1 - H(p_t)/log K)`` and ``w_r = gate * (1 - H(p_r)/log K)``
    (``gate``: the darkness weight of the colour frame, ``thermal_weight``: the thermal model's
    reliability relative to RGB, fitted on a validation split). A confident modality dominates, an
    unsure one (flat p) barely moves the result. Thermal-only when ``p_rgb`` is None or ``gate`` is 0."""
    if p_rgb is None or gate <= 0.0:
        return p_thermal
    wt = entropy_confidence(p_thermal) * thermal_weight
    wr = entropy_confidence(p_rgb) * gate
    z = (wt * np.log(np.clip(p_thermal, 1e-8, None)) + wr * np.log(np.clip(p_rgb, 1e-8, None))) / (wt + wr + 1e-6)
    return softmax(z)


@dataclass
class FusionOptions:
    """``mode``: "late" (thermal + rgb models), "early" (one 4-channel model) or "graph" (two-input ONNX).

    Late fusion: each model's logits are divided by its sidecar ``temperature`` (calibrated on a
    validation split) before the softmax; the thermal weight is the thermal sidecar's
    ``fusion_weight``, the RGB weight is scaled by :func:`darkness_weight` with ``dark_half`` (default:
    the RGB sidecar's ``fusion["dark_half"]``, else 0.01)."""

    mode: str = "late"
    thermal: str | None = None  # ONNX, mode late
    rgb: str | None = None  # ONNX, mode late
    model: str | None = None  # ONNX, modes early / graph
    backend: str = "onnxruntime"
    backend_options: dict = field(default_factory=dict)
    dark_half: float | None = None  # mean colour intensity at which RGB's weight is halved
    dark_min: float = 0.002  # below this mean intensity (~0.5 DN: black frame) colour is ignored
    # resize the pair to the model's input size (cv2.INTER_AREA) *before* normalizing it: the
    # percentiles and CLAHE of a 192x120 frame instead of a 960x600 one (11.6 -> 8.1 ms of CPU per
    # pair with the demo model; the class ids are resized back to the pair's size as before). Off:
    # the order the models were trained with (normalize, then fit). Measured on 40 SYNTHETIC test pairs
    # (BENCHMARKS.md, rgbt seg train): mIoU day 0.535 -> 0.539, night 0.305 -> 0.331 with the demo model. Only
    # when the model's fit is "resize" and its input is smaller than the pair.
    resize_first: bool = False


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
            self.dark_half = o.dark_half if o.dark_half is not None else float((rs.fusion or {}).get("dark_half", 0.01))
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

    def _model_input(self) -> tuple[int, int, str]:
        """(height, width, fit) of the model input (both models share them in late mode)."""
        sc = self.t_model.sidecar if self.options.mode == "late" else self.model.sidecar
        return sc.inputs[0].height, sc.inputs[0].width, sc.fit

    def _resized(
        self, thermal_u16: np.ndarray, rgb_u8: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray | None] | None:
        """The pair at the model's input size (``resize_first``), or None where that does not apply."""
        if not self.options.resize_first:
            return None
        h, w, fit = self._model_input()
        small = shrink_to_input(thermal_u16, (h, w), fit)
        if small is None:
            return None
        return small, None if rgb_u8 is None else cv2.resize(rgb_u8, (w, h), interpolation=cv2.INTER_AREA)

    def process(self, thermal_u16: np.ndarray, rgb_u8: np.ndarray | None) -> SegResult:
        """Class ids (HxW uint8) of an aligned pair: ``thermal_u16`` HxW counts, ``rgb_u8`` HxWx3 or None."""
        t0 = time.perf_counter_ns()
        resized = self._resized(thermal_u16, rgb_u8)
        if resized is None:
            ids = self._fuse(thermal_u16, rgb_u8)
        else:
            h, w = thermal_u16.shape[:2]
            ids = cv2.resize(self._fuse(*resized), (w, h), interpolation=cv2.INTER_NEAREST)
        t1 = time.perf_counter_ns()
        return SegResult(ids, None, None, {"total_ms": (t1 - t0) / 1e6})

    def _fuse(self, thermal_u16: np.ndarray, rgb_u8: np.ndarray | None) -> np.ndarray:
        o = self.options
        frames: dict[str, np.ndarray | None] = {"thermal": thermal_u16, "rgb": rgb_u8}
        if o.mode == "late":
            st, sr = self.t_model.sidecar, self.r_model.sidecar
            xt, fit = prepare(frames, st.inputs[0], st.fit)
            pt = softmax(self.t_model.backend.infer(xt, self.t_model.float_output)[0] / st.temperature)
            gate = darkness_weight(rgb_u8, self.dark_half, o.dark_min)
            pr = None
            if gate > 0.0:
                xr, _ = prepare(frames, sr.inputs[0], sr.fit)
                pr = softmax(self.r_model.backend.infer(xr, self.r_model.float_output)[0] / sr.temperature)
            p = late_fuse(pt, pr, gate, st.fusion_weight)
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
            feeds: dict[str, np.ndarray] = {}
            first_fit: Fit | None = None
            for spec in sc.inputs:
                feeds[spec.name], f = prepare(frames | {"rgb": rgb_u8}, spec, sc.fit)
                first_fit = first_fit or f
            class_output = self.model.class_output
            assert first_fit is not None and class_output is not None  # a middle-fusion sidecar: inputs, class ids
            ids = unfit_ids(self.model.backend.run(feeds, [class_output])[class_output][0], first_fit)
        return ids

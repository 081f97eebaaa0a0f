"""A segmentation model = ONNX file + sidecar + backend, checked against each other on load."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rgbt.errors import ModelError
from rgbt.seg.backend import Backend, load_backend
from rgbt.seg.sidecar import Sidecar, file_sha256, load_sidecar


class SegModel:
    """Load ``engines/NAME.onnx`` with its sidecar on a backend; raises ModelError on any mismatch."""

    def __init__(self, onnx_path: str | Path, backend: str = "onnxruntime", **backend_options: Any) -> None:
        self.path = Path(onnx_path)
        if not self.path.is_file():
            raise ModelError(f"{self.path}: model file not found")
        self.sidecar: Sidecar = load_sidecar(self.path)
        self.backend: Backend = load_backend(self.path, backend, **backend_options)
        check_consistency(self.sidecar, self.backend, self.path)
        if self.sidecar.onnx_sha256 and file_sha256(self.path) != self.sidecar.onnx_sha256:
            raise ModelError(f"{self.path.with_suffix('.json')}: onnx_sha256: sidecar was written for another "
                             f"model file (got {file_sha256(self.path)[:12]}..., sidecar says "
                             f"{self.sidecar.onnx_sha256[:12]}...); re-export or fix the sidecar")

    @property
    def class_output(self) -> str | None:
        return self.sidecar.outputs.get("class_ids")

    @property
    def float_output(self) -> str | None:
        return self.sidecar.outputs.get("logits") or self.sidecar.outputs.get("probs")


def check_consistency(sc: Sidecar, backend: Backend, path: Path) -> None:
    """Sidecar vs model: input names, channels, sizes, dtypes; output names and class count."""
    jpath = path.with_suffix(".json")
    model_inputs = {i.name: i for i in backend.inputs}
    if len(sc.inputs) != len(model_inputs):
        raise ModelError(f"{jpath}: inputs: sidecar lists {len(sc.inputs)}, model {path.name} has {len(model_inputs)}")
    for k, spec in enumerate(sc.inputs):
        info = model_inputs.get(spec.name)
        if info is None:
            raise ModelError(f"{jpath}: inputs.{k}.name: {spec.name!r} is not a model input ({sorted(model_inputs)})")
        want = (1, spec.channels, spec.height, spec.width)
        if tuple(info.shape) != want:
            fields = [
                f for f, a, b in zip(("batch", "channels", "height", "width"), want, info.shape, strict=False) if a != b
            ]
            raise ModelError(f"{jpath}: inputs.{k}.{fields[0]}: sidecar says 1xCxHxW={want}, "
                             f"model {path.name} has {tuple(info.shape)}")
        if info.dtype != "float32":
            raise ModelError(f"{path}: input {spec.name!r} is {info.dtype}, expected float32")
    model_outputs = {o.name: o for o in backend.outputs}
    for role, name in sc.outputs.items():
        if name not in model_outputs:
            raise ModelError(f"{jpath}: outputs.{role}: {name!r} is not a model output ({sorted(model_outputs)})")
    for role in ("logits", "probs"):
        if role in sc.outputs:
            shape = model_outputs[sc.outputs[role]].shape
            if len(shape) != 4 or shape[1] != sc.num_classes:
                raise ModelError(
                    f"{jpath}: classes: sidecar has {sc.num_classes} classes, "
                    f"model output {sc.outputs[role]!r} has shape {shape} (expected 1x{sc.num_classes}xHxW)"
                )
    if "class_ids" in sc.outputs and model_outputs[sc.outputs["class_ids"]].dtype != "uint8":
        raise ModelError(f"{path}: output {sc.outputs['class_ids']!r} is "
                         f"{model_outputs[sc.outputs['class_ids']].dtype}, expected uint8")
    if not sc.outputs:
        raise ModelError(f"{jpath}: outputs: empty; expected class_ids and/or logits")

"""Model sidecars: the JSON file next to every ONNX model saying what the model expects.

``engines/NAME.onnx`` + ``engines/NAME.json``. The sidecar names the inputs (modality,
channels, size, normalization), the outputs (``class_ids`` and/or ``logits``), the class
table with its palette, how frames are fitted to the model (pad or resize) and what the
weights are (random-init for speed work, or trained on synthetic data).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from rgbt.errors import ModelError
from rgbt.seg.classes import CART_CLASSES, IGNORE_IDS, OBJECT_IDS, SegClass


class Normalization(BaseModel):
    """How a raw frame becomes the model's float input (identical at train and run time).

    ``thermal_percentile``: ``rgbt.image.normalize.normalize(frame_u16, low, high, clahe)``
    -> float32 [0, 1]. ``rgb_unit``: uint8 RGB / 255 -> float32 [0, 1].
    """

    method: Literal["thermal_percentile", "rgb_unit"] = "thermal_percentile"
    low: float = 1.0
    high: float = 99.0
    clahe: bool = True


class InputSpec(BaseModel):
    name: str = "input"
    modality: Literal["thermal", "rgb", "rgbt"] = "thermal"
    channels: int = 1
    height: int = 512
    width: int = 640
    normalization: Normalization = Field(default_factory=Normalization)


class ClassEntry(BaseModel):
    id: int
    name: str
    color: str


class Sidecar(BaseModel):
    """One model's description (``engines/NAME.json``)."""

    name: str
    architecture: str
    onnx: str  # file name, relative to the sidecar
    inputs: list[InputSpec]
    outputs: dict[str, str] = Field(default_factory=lambda: {"class_ids": "class_ids", "logits": "logits"})
    classes: list[ClassEntry] = Field(default_factory=lambda: [ClassEntry(**c.__dict__) for c in CART_CLASSES])
    ignore_ids: list[int] = Field(default_factory=lambda: list(IGNORE_IDS))
    object_ids: list[int] = Field(default_factory=lambda: list(OBJECT_IDS))
    fit: Literal["pad", "resize"] = "resize"
    weights: str  # what the weights are: "random-init ..." or "trained on synthetic data ..."
    synthetic: bool = False
    params: int | None = None
    gflops: float | None = None
    paper: dict | None = None  # the CART paper's numbers for the same architecture
    training: dict | None = None
    temperature: float = Field(default=1.0, gt=0)  # logits / T = calibrated probabilities (fitted on a val split)
    fusion_weight: float = Field(default=1.0, ge=0)  # late fusion: reliability of this model (fitted on val)
    fusion: dict | None = None  # late-fusion parameters (RGB model: dark_half; two-input model: all of them)
    onnx_sha256: str | None = None
    reference: str | None = None  # .npz with PyTorch reference outputs (export parity)

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    def seg_classes(self) -> list[SegClass]:
        return [SegClass(c.id, c.name, c.color) for c in self.classes]


def sidecar_path_for(onnx_path: str | Path) -> Path:
    return Path(onnx_path).with_suffix(".json")


def load_sidecar(path: str | Path) -> Sidecar:
    """Load ``NAME.json`` (or the sidecar of ``NAME.onnx``); raises ModelError naming the file."""
    path = Path(path)
    if path.suffix == ".onnx":
        path = sidecar_path_for(path)
    if path.is_dir():
        raise ModelError(f"{path}: is a directory, expected a model sidecar JSON file (NAME.json)")
    if not path.is_file():
        raise ModelError(f"{path}: model sidecar not found (every ONNX model needs NAME.json beside it)")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ModelError(f"{path}: cannot read the model sidecar: {exc.strerror or exc}") from exc
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        bad = raw[exc.start:exc.start + 1]
        raise ModelError(f"{path}: sidecar is not UTF-8 JSON text (byte {exc.start} is {bad!r}); "
                         "expected a JSON object") from None
    except json.JSONDecodeError as exc:
        raise ModelError(f"{path}: sidecar is not valid JSON: {exc}") from exc
    except RecursionError:
        raise ModelError(f"{path}: sidecar JSON is nested too deeply; expected a JSON object") from None
    if not isinstance(data, dict):
        raise ModelError(f"{path}: sidecar is a JSON {type(data).__name__}, expected a JSON object")
    try:
        sc = Sidecar.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"])
        got = repr(first.get("input"))
        got = got if len(got) <= 200 else got[:200] + "..."
        raise ModelError(f"{path}: {key or '<root>'}: {first['msg']} (got {got})") from exc
    ids = [c.id for c in sc.classes]
    if ids != list(range(len(ids))):
        raise ModelError(f"{path}: classes: ids must be 0..K-1 in order, got {ids}")
    return sc


def save_sidecar(sc: Sidecar, path: str | Path) -> None:
    Path(path).write_text(json.dumps(sc.model_dump(), indent=2) + "\n")


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()

"""TensorRT engine cache: which engine file belongs to which (model, TensorRT, GPU, precision, shape).

A serialized TensorRT engine is only valid for the exact TensorRT version and GPU it was built
on. The cache key hashes everything that matters; a JSON meta file beside each engine records
the fields, and an engine whose meta does not match the current fields (stale or foreign) is
rebuilt, never loaded. Pure functions: testable without a GPU.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from rgbt.errors import ModelError


@dataclass(frozen=True)
class EngineKey:
    onnx_sha256: str
    trt_version: str
    gpu_name: str
    compute_capability: str  # "8.7"
    precision: str  # "fp16" | "fp32" | "strongly-typed"
    input_shapes: tuple[tuple[str, tuple[int, ...]], ...]

    def digest(self) -> str:
        """Stable hex digest of all fields (the engine's file-name key)."""
        payload = json.dumps(self.to_dict(), sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()

    def to_dict(self) -> dict:
        d = asdict(self)
        d["input_shapes"] = [[n, list(s)] for n, s in self.input_shapes]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> EngineKey:
        return cls(d["onnx_sha256"], d["trt_version"], d["gpu_name"], d["compute_capability"], d["precision"],
                   tuple((n, tuple(s)) for n, s in d["input_shapes"]))


def engine_paths(cache_dir: Path, model_stem: str, key: EngineKey) -> tuple[Path, Path]:
    """(engine file, meta JSON) for ``key`` inside ``cache_dir``."""
    base = Path(cache_dir) / f"{model_stem}-{key.digest()[:16]}"
    return base.with_suffix(".engine"), base.with_suffix(".json")


def mismatches(meta: dict, key: EngineKey) -> list[str]:
    """Fields in which a cached engine's meta differs from ``key`` (empty list = usable)."""
    want = key.to_dict()
    return [f"{k}: cached {meta.get(k)!r}, need {v!r}" for k, v in want.items() if meta.get(k) != v]


def resolve(cache_dir: Path, model_stem: str, key: EngineKey, allow_build: bool) -> tuple[Path, str]:
    """Decide what to do for ``key``: returns (engine path, "load" | "build").

    "load" only when the engine file exists and its meta matches every field; otherwise
    "build" when ``allow_build``, else ModelError telling the user to run ``rgbt engine build``.
    """
    engine, meta_path = engine_paths(cache_dir, model_stem, key)
    reasons: list[str] = []
    if engine.is_file() and meta_path.is_file():
        try:
            meta = json.loads(meta_path.read_text())
        except json.JSONDecodeError:
            meta = {}
            reasons = ["meta file unreadable"]
        reasons = reasons or mismatches(meta, key)
        if not reasons:
            return engine, "load"
    elif engine.is_file():
        reasons = ["engine has no meta file (foreign engine)"]
    else:
        reasons = ["no engine built yet"]
    if not allow_build:
        raise ModelError(f"{engine}: no usable TensorRT engine ({'; '.join(reasons)}); "
                         "run `rgbt engine build` or allow building")
    return engine, "build"


def write_meta(meta_path: Path, key: EngineKey, extra: dict | None = None) -> None:
    data = key.to_dict()
    data.update(extra or {})
    meta_path.write_text(json.dumps(data, indent=2) + "\n")

"""Inference backends behind one contract.

``load_backend(onnx_path, kind)`` returns a :class:`Backend`:

- ``onnxruntime``: ONNX Runtime, CPU execution provider, thread counts set explicitly and
  spinning off (a shared 2-core machine loses more to spinning than it gains).
- ``ort-cuda`` / ``ort-tensorrt``: ONNX Runtime with the CUDA / TensorRT execution provider.
  ORT silently falls back to CPU when a provider fails to load, so the providers that actually
  loaded are checked and a mismatch is an error.
- ``tensorrt``: native TensorRT 10/11 + pycuda (``rgbt.seg.trt``).

All take contiguous float32 NCHW arrays and report timing tiers (copy-in / compute /
copy-out / total, nanoseconds) and provenance (``describe()``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rgbt.errors import ModelError
from rgbt.paths import cache_dir

KINDS = ("onnxruntime", "ort-cuda", "ort-tensorrt", "tensorrt")


@dataclass(frozen=True)
class TensorInfo:
    name: str
    shape: tuple[int, ...]
    dtype: str  # numpy dtype name


@dataclass
class Timing:
    """Timing tiers of the last call and running lists of all calls (ns)."""

    copy_in_ns: list[int] = field(default_factory=list)
    compute_ns: list[int] = field(default_factory=list)
    copy_out_ns: list[int] = field(default_factory=list)
    total_ns: list[int] = field(default_factory=list)

    def add(self, copy_in: int, compute: int, copy_out: int) -> None:
        self.copy_in_ns.append(int(copy_in))
        self.compute_ns.append(int(compute))
        self.copy_out_ns.append(int(copy_out))
        self.total_ns.append(int(copy_in + compute + copy_out))

    def reset(self) -> None:
        for lst in (self.copy_in_ns, self.compute_ns, self.copy_out_ns, self.total_ns):
            lst.clear()

    def last(self) -> dict:
        if not self.total_ns:
            return {}
        return {"copy_in_ms": self.copy_in_ns[-1] / 1e6, "compute_ms": self.compute_ns[-1] / 1e6,
                "copy_out_ms": self.copy_out_ns[-1] / 1e6, "total_ms": self.total_ns[-1] / 1e6}


class Backend:
    """Common behaviour; subclasses implement ``_run(feeds, outputs)``."""

    kind: str = ""
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]

    def __init__(self) -> None:
        self.timing = Timing()

    # -- contract ----------------------------------------------------------------------------
    def infer(self, nchw: np.ndarray, output: str | None = None) -> np.ndarray:
        """Run a single-input model on a float32 1xCxHxW array; returns one output (default: first)."""
        if len(self.inputs) != 1:
            raise ModelError(f"model has {len(self.inputs)} inputs; use run() with a dict")
        name = output or self.outputs[0].name
        return self.run({self.inputs[0].name: nchw}, [name])[name]

    def run(self, feeds: Mapping[str, np.ndarray], outputs: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        """Run with named inputs; returns the requested outputs (default: all) by name."""
        checked = {}
        for info in self.inputs:
            if info.name not in feeds:
                raise ModelError(f"missing input {info.name!r}; model inputs: {[i.name for i in self.inputs]}")
            checked[info.name] = check_input(feeds[info.name], info)
        names = list(outputs) if outputs else [o.name for o in self.outputs]
        known = {o.name for o in self.outputs}
        for n in names:
            if n not in known:
                raise ModelError(f"unknown output {n!r}; model outputs: {sorted(known)}")
        return self._run(checked, names)

    def warmup(self, n: int = 3) -> None:
        feeds = {i.name: np.zeros(i.shape, dtype=i.dtype) for i in self.inputs}
        for _ in range(n):
            self.run(feeds)
        self.timing.reset()

    def describe(self) -> dict:
        raise NotImplementedError

    def _run(self, feeds: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        raise NotImplementedError


def check_input(x: np.ndarray, info: TensorInfo) -> np.ndarray:
    """Validate dtype and shape; return a C-contiguous array (a copy only when needed)."""
    if not isinstance(x, np.ndarray):
        raise ModelError(f"input {info.name!r}: expected a numpy array, got {type(x).__name__}")
    if x.dtype != np.dtype(info.dtype):
        raise ModelError(f"input {info.name!r}: dtype {x.dtype}, expected {info.dtype}")
    if tuple(x.shape) != tuple(info.shape):
        raise ModelError(f"input {info.name!r}: shape {tuple(x.shape)}, expected {tuple(info.shape)} (NCHW)")
    return np.ascontiguousarray(x)


_ORT_TYPES = {"tensor(float)": "float32", "tensor(float16)": "float16", "tensor(uint8)": "uint8",
              "tensor(int64)": "int64", "tensor(int32)": "int32"}

_PROVIDERS = {
    "onnxruntime": ["CPUExecutionProvider"],
    "ort-cuda": ["CUDAExecutionProvider", "CPUExecutionProvider"],
    "ort-tensorrt": ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"],
}


@dataclass
class OrtOptions:
    """ONNX Runtime settings. ``threads`` 0 = all cores of this process's affinity."""

    threads: int = 0
    spinning: bool = False
    device_id: int = 0
    fp16: bool = True  # TensorRT EP only
    cache_dir: str | None = None  # TensorRT EP engine + timing cache
    graph_optimization: str = "all"


class OrtBackend(Backend):
    """ONNX Runtime with CPU, CUDA or TensorRT execution providers."""

    def __init__(self, onnx_path: str | Path, kind: str = "onnxruntime", options: OrtOptions | None = None) -> None:
        super().__init__()
        import onnxruntime as ort

        self.kind = kind
        self.path = Path(onnx_path)
        self.options = options or OrtOptions()
        _check_file(self.path)
        so = ort.SessionOptions()
        threads = self.options.threads or _cores()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.add_session_config_entry("session.intra_op.allow_spinning", "1" if self.options.spinning else "0")
        so.add_session_config_entry("session.inter_op.allow_spinning", "1" if self.options.spinning else "0")
        so.graph_optimization_level = {
            "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
            "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
            "none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        }[self.options.graph_optimization]
        self.threads = threads
        wanted = _PROVIDERS[kind]
        providers: list = []
        for p in wanted:
            if p == "CUDAExecutionProvider":
                providers.append((p, {"device_id": self.options.device_id}))
            elif p == "TensorrtExecutionProvider":
                cache = Path(self.options.cache_dir) if self.options.cache_dir else _default_cache() / "ort_trt"
                cache.mkdir(parents=True, exist_ok=True)
                providers.append((p, {"device_id": self.options.device_id, "trt_fp16_enable": self.options.fp16,
                                      "trt_engine_cache_enable": True, "trt_engine_cache_path": str(cache),
                                      "trt_timing_cache_enable": True, "trt_timing_cache_path": str(cache)}))
            else:
                providers.append(p)
        available = ort.get_available_providers()
        if wanted[0] not in available:
            raise ModelError(f"backend {kind!r} needs {wanted[0]}, but this onnxruntime offers {available} "
                             "(install onnxruntime-gpu on a CUDA machine)")
        try:
            self.session = ort.InferenceSession(str(self.path), sess_options=so, providers=providers)
        except Exception as exc:  # onnxruntime raises its own exception types
            raise ModelError(f"{self.path}: onnxruntime cannot load the model: {exc}") from exc
        self.active_providers = self.session.get_providers()
        if self.active_providers[0] != wanted[0]:
            raise ModelError(f"{self.path}: requested {wanted[0]} but onnxruntime loaded {self.active_providers} "
                             "(silent fallback refused)")
        self.inputs = [TensorInfo(i.name, tuple(int(d) for d in i.shape), _ORT_TYPES.get(i.type, i.type))
                       for i in self.session.get_inputs()]
        self.outputs = [TensorInfo(o.name, tuple(int(d) if isinstance(d, int) else -1 for d in o.shape),
                                   _ORT_TYPES.get(o.type, o.type)) for o in self.session.get_outputs()]
        for i in self.inputs:
            if any(d <= 0 for d in i.shape):
                raise ModelError(f"{self.path}: input {i.name!r} has a dynamic shape {i.shape}; export static 1xCxHxW")
        self._gpu = kind != "onnxruntime"
        self._ort = ort

    def _run(self, feeds: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        if not self._gpu:
            t0 = time.perf_counter_ns()
            res = self.session.run(outputs, feeds)
            t1 = time.perf_counter_ns()
            self.timing.add(0, t1 - t0, 0)  # CPU EP reads the numpy buffers in place: no copies
            return dict(zip(outputs, res, strict=False))
        t0 = time.perf_counter_ns()
        binding = self.session.io_binding()
        for name, x in feeds.items():
            val = self._ort.OrtValue.ortvalue_from_numpy(x, "cuda", self.options.device_id)
            binding.bind_ortvalue_input(name, val)
        for name in outputs:
            binding.bind_output(name, "cuda", self.options.device_id)
        binding.synchronize_inputs()
        t1 = time.perf_counter_ns()
        self.session.run_with_iobinding(binding)
        binding.synchronize_outputs()
        t2 = time.perf_counter_ns()
        res = binding.copy_outputs_to_cpu()
        t3 = time.perf_counter_ns()
        self.timing.add(t1 - t0, t2 - t1, t3 - t2)
        return dict(zip(outputs, res, strict=False))

    def describe(self) -> dict:
        return {"backend": self.kind, "model": str(self.path), "onnxruntime": self._ort.__version__,
                "providers_active": self.active_providers, "threads": self.threads,
                "spinning": self.options.spinning,
                "precision": "fp16" if (self.kind == "ort-tensorrt" and self.options.fp16) else "fp32",
                "inputs": [i.__dict__ for i in self.inputs], "outputs": [o.__dict__ for o in self.outputs]}


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _default_cache() -> Path:
    return cache_dir() / "engines"


def _check_file(path: Path) -> None:
    if not path.is_file():
        raise ModelError(f"{path}: model file not found")
    with open(path, "rb") as fh:
        head = fh.read(16)
    if len(head) < 4:
        raise ModelError(f"{path}: file is empty or truncated, not an ONNX model")


def load_backend(onnx_path: str | Path, kind: str = "onnxruntime", **options: Any) -> Backend:
    """Create a backend of ``kind`` for ``onnx_path``; ``options`` go to the backend's options object."""
    if kind not in KINDS:
        raise ModelError(f"unknown backend {kind!r}; expected one of {KINDS}")
    if kind == "tensorrt":
        from rgbt.seg.trt import TensorRTBackend, TrtOptions

        return TensorRTBackend(onnx_path, TrtOptions(**options))
    return OrtBackend(onnx_path, kind, OrtOptions(**options))

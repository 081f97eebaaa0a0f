"""Native TensorRT 10/11 backend with pycuda.

- Builds from ONNX (FP16 where the TensorRT version still has the builder flag; TensorRT 11
  builds strongly typed networks whose precision comes from the ONNX tensor types), with a
  persistent timing cache.
- Engines are cached by :mod:`rgbt.seg.engine_cache` (ONNX hash + TensorRT version + GPU
  name + compute capability + precision + input shapes); stale or foreign engines are rebuilt,
  never loaded; building needs ``allow_build`` (``rgbt engine build`` prebuilds).
- Name-based I/O with ``execute_async_v3``, pagelocked host buffers, one stream.
- Uses the device's *primary* CUDA context, pushed around every call, so the backend works
  from any executor thread (pycuda.autoinit would bind a private context to the import thread).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rgbt.errors import ModelError
from rgbt.fileio import write_atomic
from rgbt.paths import cache_dir as _cache
from rgbt.seg.backend import Backend, TensorInfo
from rgbt.seg.engine_cache import EngineKey, engine_paths, resolve, write_meta
from rgbt.seg.sidecar import file_sha256


@dataclass
class TrtOptions:
    precision: str = "fp16"  # "fp16" | "fp32"
    device_id: int = 0
    cache_dir: str | None = None
    allow_build: bool = False
    workspace_mib: int = 1024


class _PrimaryContext:
    """The device's primary context, pushed/popped around work from any thread."""

    def __init__(self, device_id: int) -> None:
        import pycuda.driver as cuda

        cuda.init()
        self.device = cuda.Device(device_id)
        self.ctx = self.device.retain_primary_context()
        self._lock = threading.Lock()

    def __enter__(self) -> _PrimaryContext:
        self._lock.acquire()
        self.ctx.push()
        return self

    def __exit__(self, *exc: object) -> None:
        import pycuda.driver as cuda

        try:
            cuda.Context.pop()
        finally:
            self._lock.release()


def trt_major(trt: Any) -> int:  # trt: the tensorrt module (no type information)
    return int(trt.__version__.split(".")[0])


def precision_for(trt: Any, wanted: str) -> str:
    """The precision actually used: TensorRT >= 11 (no FP16 builder flag) builds strongly typed."""
    if not hasattr(trt.BuilderFlag, "FP16") or trt_major(trt) >= 11:
        return "strongly-typed"
    return wanted


def engine_key(onnx_path: Path, trt: Any, device: Any, precision: str, shapes: dict[str, tuple[int, ...]]) -> EngineKey:
    cc = device.compute_capability()
    return EngineKey(onnx_sha256=file_sha256(onnx_path), trt_version=trt.__version__, gpu_name=device.name(),
                     compute_capability=f"{cc[0]}.{cc[1]}", precision=precision,
                     input_shapes=tuple(sorted((n, tuple(s)) for n, s in shapes.items())))


def onnx_input_shapes(onnx_path: Path) -> dict[str, tuple[int, ...]]:
    import onnx

    model = onnx.load(str(onnx_path), load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    out = {}
    for inp in model.graph.input:
        if inp.name in inits:
            continue
        dims = tuple(int(d.dim_value) for d in inp.type.tensor_type.shape.dim)
        if any(d <= 0 for d in dims):
            raise ModelError(f"{onnx_path}: input {inp.name!r} is not static ({dims})")
        out[inp.name] = dims
    return out


def build_engine(onnx_path: Path, engine_path: Path, key: EngineKey, options: TrtOptions, cache_dir: Path) -> None:
    """Parse ``onnx_path`` and serialize an engine to ``engine_path`` (+ meta JSON)."""
    import tensorrt as trt

    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    flags = 0
    if key.precision == "strongly-typed":
        flags |= 1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED)
    network = builder.create_network(flags)
    parser = trt.OnnxParser(network, logger)
    if not parser.parse(Path(onnx_path).read_bytes()):
        errs = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
        raise ModelError(f"{onnx_path}: TensorRT cannot parse the model: {errs}")
    config = builder.create_builder_config()
    config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, options.workspace_mib << 20)
    if key.precision == "fp16":
        config.set_flag(trt.BuilderFlag.FP16)
    timing_path = cache_dir / f"timing-{key.trt_version}-{key.gpu_name.replace(' ', '_')}.cache"
    timing = config.create_timing_cache(timing_path.read_bytes() if timing_path.is_file() else b"")
    config.set_timing_cache(timing, ignore_mismatch=False)
    serialized = builder.build_serialized_network(network, config)
    if serialized is None:
        raise ModelError(f"{onnx_path}: TensorRT failed to build an engine (see the TensorRT log)")
    write_atomic(engine_path, bytes(serialized))
    timing_path.write_bytes(bytes(config.get_timing_cache().serialize()))
    write_meta(engine_paths(cache_dir, Path(onnx_path).stem, key)[1], key,
               {"onnx": Path(onnx_path).name})


class TensorRTBackend(Backend):
    kind = "tensorrt"

    def __init__(self, onnx_path: str | Path, options: TrtOptions | None = None) -> None:
        super().__init__()
        try:
            import pycuda.driver as cuda
            import tensorrt as trt
        except ImportError as exc:
            raise ModelError(f"backend 'tensorrt' needs the tensorrt and pycuda packages: {exc}") from exc
        self.options = options or TrtOptions()
        self.path = Path(onnx_path)
        if not self.path.is_file():
            raise ModelError(f"{self.path}: model file not found")

        self.cache_dir = Path(self.options.cache_dir) if self.options.cache_dir else _cache() / "engines"
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self._cuda, self._trt = cuda, trt
        self._pc = _PrimaryContext(self.options.device_id)
        shapes = onnx_input_shapes(self.path)
        self.key = engine_key(self.path, trt, self._pc.device, precision_for(trt, self.options.precision), shapes)
        self.engine_path, action = resolve(self.cache_dir, self.path.stem, self.key, self.options.allow_build)
        self.built = action == "build"
        with self._pc:
            if self.built:
                build_engine(self.path, self.engine_path, self.key, self.options, self.cache_dir)
            runtime = trt.Runtime(trt.Logger(trt.Logger.WARNING))
            self.engine = runtime.deserialize_cuda_engine(self.engine_path.read_bytes())
            if self.engine is None:
                raise ModelError(f"{self.engine_path}: TensorRT refused to deserialize the engine; rebuild it")
            self.context = self.engine.create_execution_context()
            self.stream = cuda.Stream()
            self.inputs, self.outputs = [], []
            self._host: dict[str, np.ndarray] = {}
            self._dev: dict[str, object] = {}
            for i in range(self.engine.num_io_tensors):
                name = self.engine.get_tensor_name(i)
                shape = tuple(int(d) for d in self.engine.get_tensor_shape(name))
                dtype = np.dtype(trt.nptype(self.engine.get_tensor_dtype(name)))
                host = cuda.pagelocked_empty(shape, dtype)
                dev = cuda.mem_alloc(host.nbytes)
                self.context.set_tensor_address(name, int(dev))
                self._host[name], self._dev[name] = host, dev
                info = TensorInfo(name, shape, dtype.name)
                if self.engine.get_tensor_mode(name) == trt.TensorIOMode.INPUT:
                    self.inputs.append(info)
                else:
                    self.outputs.append(info)
            self._ev = [cuda.Event() for _ in range(4)]

    def _run(self, feeds: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
        cuda = self._cuda
        with self._pc:
            s = self.stream
            self._ev[0].record(s)
            for name, x in feeds.items():
                np.copyto(self._host[name], x)
                cuda.memcpy_htod_async(self._dev[name], self._host[name], s)
            self._ev[1].record(s)
            if not self.context.execute_async_v3(s.handle):
                raise ModelError(f"{self.engine_path}: execute_async_v3 failed")
            self._ev[2].record(s)
            for name in outputs:
                cuda.memcpy_dtoh_async(self._host[name], self._dev[name], s)
            self._ev[3].record(s)
            s.synchronize()
            ms = [self._ev[i + 1].time_since(self._ev[i]) for i in range(3)]
            self.timing.add(int(ms[0] * 1e6), int(ms[1] * 1e6), int(ms[2] * 1e6))
            return {name: self._host[name].copy() for name in outputs}

    def describe(self) -> dict:
        return {"backend": "tensorrt", "model": str(self.path), "tensorrt": self._trt.__version__,
                "engine": str(self.engine_path), "engine_key": self.key.digest()[:16], "built_now": self.built,
                "precision": self.key.precision, "gpu": self.key.gpu_name,
                "compute_capability": self.key.compute_capability,
                "inputs": [i.__dict__ for i in self.inputs], "outputs": [o.__dict__ for o in self.outputs]}

"""GPU backends (native TensorRT, ORT CUDA / TensorRT EPs): run only where a GPU exists.

Each test skips with the reason printed (``-ra``) when the GPU stack is absent.
"""

from __future__ import annotations

import importlib.util
import threading

import numpy as np
import pytest

from rgbt.paths import ENGINES_DIR
from rgbt.seg.backend import load_backend
from rgbt.seg.zoo_reference import reference_input

pytestmark = pytest.mark.gpu
MODEL = ENGINES_DIR / "fastscnn_thermal.onnx"


def _need_trt() -> None:
    for mod in ("tensorrt", "pycuda"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"{mod} not installed (GPU extra): native TensorRT backend not tested here")
    import pycuda.driver as cuda

    try:
        cuda.init()
        if cuda.Device.count() == 0:
            pytest.skip("no CUDA device")
    except cuda.Error as exc:
        pytest.skip(f"CUDA unavailable: {exc}")


def _need_ort(provider: str) -> None:
    import onnxruntime as ort

    if provider not in ort.get_available_providers():
        pytest.skip(f"onnxruntime here has no {provider} (install onnxruntime-gpu on a CUDA machine)")


def _cpu_reference():
    cpu = load_backend(MODEL)
    x = reference_input(cpu.inputs[0].shape)
    return x, cpu.run({"input": x})


def test_tensorrt_builds_caches_and_matches_cpu(tmp_path):
    _need_trt()
    from rgbt.errors import ModelError

    with pytest.raises(ModelError, match="rgbt engine build"):
        load_backend(MODEL, "tensorrt", cache_dir=str(tmp_path), allow_build=False)
    be = load_backend(MODEL, "tensorrt", precision="fp32", cache_dir=str(tmp_path), allow_build=True)
    assert be.describe()["built_now"] is True
    x, ref = _cpu_reference()
    out = be.run({"input": x})
    assert np.abs(out["logits"] - ref["logits"]).max() < 1e-2
    assert np.mean(out["class_ids"] == ref["class_ids"]) > 0.99
    assert be.timing.compute_ns[-1] > 0
    again = load_backend(MODEL, "tensorrt", precision="fp32", cache_dir=str(tmp_path), allow_build=False)
    assert again.describe()["built_now"] is False  # the cached engine is reused
    # works from another thread (primary context pushed per call)
    res = {}
    t = threading.Thread(target=lambda: res.setdefault("ids", again.run({"input": x}, ["class_ids"])["class_ids"]))
    t.start()
    t.join()
    assert np.mean(res["ids"] == ref["class_ids"]) > 0.99


def test_tensorrt_fp16(tmp_path):
    _need_trt()
    be = load_backend(MODEL, "tensorrt", precision="fp16", cache_dir=str(tmp_path), allow_build=True)
    x, ref = _cpu_reference()
    assert np.mean(be.run({"input": x}, ["class_ids"])["class_ids"] == ref["class_ids"]) > 0.95


@pytest.mark.parametrize("kind,provider", [("ort-cuda", "CUDAExecutionProvider"),
                                           ("ort-tensorrt", "TensorrtExecutionProvider")])
def test_ort_gpu_providers_active(kind, provider, tmp_path):
    _need_ort(provider)
    opts = {"cache_dir": str(tmp_path)} if kind == "ort-tensorrt" else {}
    be = load_backend(MODEL, kind, **opts)
    assert be.describe()["providers_active"][0] == provider
    x, ref = _cpu_reference()
    out = be.run({"input": x}, ["class_ids"])
    assert np.mean(out["class_ids"] == ref["class_ids"]) > 0.95
    assert be.timing.copy_in_ns[-1] > 0 and be.timing.copy_out_ns[-1] > 0

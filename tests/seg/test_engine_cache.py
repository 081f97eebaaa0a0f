"""TensorRT engine cache keys and stale/foreign engine refusal (pure functions, no GPU)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from rgbt.errors import ModelError
from rgbt.seg.engine_cache import EngineKey, engine_paths, mismatches, resolve, write_meta

KEY = EngineKey("ab" * 32, "10.7.0", "Orin", "8.7", "fp16", (("input", (1, 1, 512, 640)),))


@pytest.mark.parametrize("field,value", [
    ("onnx_sha256", "cd" * 32), ("trt_version", "11.4.0"), ("gpu_name", "RTX 4090"), ("compute_capability", "8.9"),
    ("precision", "fp32"), ("input_shapes", (("input", (1, 1, 608, 960)),))])
def test_every_field_changes_the_key(field, value):
    other = dataclasses.replace(KEY, **{field: value})
    assert other.digest() != KEY.digest()
    assert engine_paths(__import__("pathlib").Path("/c"), "m", other)[0] != engine_paths(__import__("pathlib").Path("/c"), "m", KEY)[0]
    assert len(mismatches(KEY.to_dict(), other)) == 1


def test_key_roundtrip_and_stability():
    assert EngineKey.from_dict(json.loads(json.dumps(KEY.to_dict()))) == KEY
    assert KEY.digest() == dataclasses.replace(KEY).digest()


def test_resolve_build_then_load(tmp_path):
    with pytest.raises(ModelError, match="rgbt engine build"):
        resolve(tmp_path, "m", KEY, allow_build=False)
    engine, action = resolve(tmp_path, "m", KEY, allow_build=True)
    assert action == "build"
    engine.write_bytes(b"engine")
    write_meta(engine_paths(tmp_path, "m", KEY)[1], KEY)
    assert resolve(tmp_path, "m", KEY, allow_build=False) == (engine, "load")


def test_stale_engine_is_rebuilt_never_loaded(tmp_path):
    engine, meta = engine_paths(tmp_path, "m", KEY)
    engine.write_bytes(b"engine")
    stale = dataclasses.replace(KEY, trt_version="10.3.0")  # meta written by another TensorRT
    write_meta(meta, stale)
    with pytest.raises(ModelError, match="trt_version"):
        resolve(tmp_path, "m", KEY, allow_build=False)
    assert resolve(tmp_path, "m", KEY, allow_build=True)[1] == "build"


def test_foreign_engine_without_meta_refused(tmp_path):
    engine, _ = engine_paths(tmp_path, "m", KEY)
    engine.write_bytes(b"someone else's engine")
    with pytest.raises(ModelError, match="foreign"):
        resolve(tmp_path, "m", KEY, allow_build=False)


def test_corrupt_meta_refused(tmp_path):
    engine, meta = engine_paths(tmp_path, "m", KEY)
    engine.write_bytes(b"e")
    meta.write_text("{")
    with pytest.raises(ModelError, match="unreadable"):
        resolve(tmp_path, "m", KEY, allow_build=False)

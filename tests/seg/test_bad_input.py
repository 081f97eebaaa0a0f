"""Bad input: missing / corrupt ONNX, sidecar-model mismatches, wrong dtypes -> clear errors."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from rgbt.errors import ImageError, ModelError
from rgbt.paths import ENGINES_DIR
from rgbt.seg.backend import load_backend
from rgbt.seg.model import SegModel
from rgbt.seg.stage import SegmentationStage, SegStageOptions


@pytest.fixture
def model_copy(tmp_path):
    for ext in (".onnx", ".json"):
        shutil.copy(ENGINES_DIR / f"sim_thermal_seg{ext}", tmp_path / f"m{ext}")
    return tmp_path / "m.onnx"


def _edit(path, fn):
    j = path.with_suffix(".json")
    d = json.loads(j.read_text())
    fn(d)
    j.write_text(json.dumps(d))


def test_missing_onnx(tmp_path):
    with pytest.raises(ModelError, match="model file not found"):
        SegModel(tmp_path / "nope.onnx")


def test_missing_sidecar(model_copy):
    model_copy.with_suffix(".json").unlink()
    with pytest.raises(ModelError, match="sidecar not found"):
        SegModel(model_copy)


def test_corrupt_onnx(model_copy):
    model_copy.write_bytes(b"\x08\x07garbage" * 100)
    with pytest.raises(ModelError, match="cannot load the model"):
        SegModel(model_copy)


def test_truncated_onnx(model_copy):
    data = model_copy.read_bytes()
    model_copy.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelError, match="m.onnx"):
        SegModel(model_copy)


def test_corrupt_sidecar(model_copy):
    model_copy.with_suffix(".json").write_text("{not json")
    with pytest.raises(ModelError, match="not valid JSON"):
        SegModel(model_copy)


@pytest.mark.parametrize("field,value,match", [
    ("channels", 3, "channels"), ("height", 100, "height"), ("width", 100, "width")])
def test_sidecar_model_mismatch_input(model_copy, field, value, match):
    _edit(model_copy, lambda d: d["inputs"][0].__setitem__(field, value))
    with pytest.raises(ModelError, match=match):
        SegModel(model_copy)


def test_sidecar_model_mismatch_classes(model_copy):
    _edit(model_copy, lambda d: d.__setitem__("classes", d["classes"][:10]))
    with pytest.raises(ModelError, match="10 classes"):
        SegModel(model_copy)


def test_sidecar_bad_field(model_copy):
    _edit(model_copy, lambda d: d.__setitem__("fit", "stretch"))
    with pytest.raises(ModelError, match="fit"):
        SegModel(model_copy)


def test_sidecar_unknown_output(model_copy):
    _edit(model_copy, lambda d: d["outputs"].__setitem__("class_ids", "labels"))
    with pytest.raises(ModelError, match="'labels' is not a model output"):
        SegModel(model_copy)


def test_wrong_dtype_frame(model_copy):
    st = SegmentationStage(SegStageOptions(str(model_copy)))
    with pytest.raises(ImageError, match="uint16"):
        st.process(np.zeros((512, 640), np.float32))
    with pytest.raises(ImageError, match="uint16"):
        st.process(np.zeros((512, 640, 3), np.uint16))


def test_wrong_dtype_or_shape_tensor(model_copy):
    be = load_backend(model_copy)
    shape = be.inputs[0].shape
    with pytest.raises(ModelError, match="dtype float64, expected float32"):
        be.infer(np.zeros(shape, np.float64))
    with pytest.raises(ModelError, match="shape"):
        be.infer(np.zeros((1, 1, 10, 10), np.float32))


def test_unknown_backend(model_copy):
    with pytest.raises(ModelError, match="unknown backend"):
        load_backend(model_copy, "openvino")


@pytest.mark.slow
def test_cli_run_bad_model_clean_error(tmp_path, rgbt_cli):
    import cv2

    frame = tmp_path / "f.png"
    cv2.imwrite(str(frame), np.zeros((512, 640), np.uint16))
    proc = rgbt_cli("seg", "run", "--engine", tmp_path / "missing.onnx", frame, tmp_path / "o.png", check=False)
    assert proc.returncode == 2 and "model file not found" in proc.stderr and "Traceback" not in proc.stderr
    eight = tmp_path / "e.png"
    cv2.imwrite(str(eight), np.zeros((512, 640), np.uint8))
    proc = rgbt_cli("seg", "run", "--engine", ENGINES_DIR / "sim_thermal_seg.onnx", eight, tmp_path / "o.png",
                    check=False)
    assert proc.returncode == 2 and "expected uint16" in proc.stderr


def test_sidecar_for_another_model_file(tmp_path):
    # same input/output shapes, different network: only the recorded hash can tell
    shutil.copy(ENGINES_DIR / "fastscnn_thermal.onnx", tmp_path / "m.onnx")
    shutil.copy(ENGINES_DIR / "lraspp_mbv3l_thermal.json", tmp_path / "m.json")
    with pytest.raises(ModelError, match="onnx_sha256"):
        SegModel(tmp_path / "m.onnx")

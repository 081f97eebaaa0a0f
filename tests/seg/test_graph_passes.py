"""The export-time ONNX rewrite of class-axis softmax (rgbt.seg.zoo.graph_passes): same function,
no class-axis Softmax left, and the committed models carry it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from rgbt.seg.zoo.graph_passes import expand_channel_softmax, main

ENGINES_DIR = Path(__file__).resolve().parents[2] / "engines"


def softmax_model(axis: int, shape: list[int], opset: int = 17) -> onnx.ModelProto:
    node = helper.make_node("Softmax", ["x"], ["y"], axis=axis, name="sm")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(["y"], {"x": x})[0]


@pytest.mark.parametrize("axis", [1, -3])
def test_class_axis_softmax_is_rewritten_to_the_same_function(axis):
    m = softmax_model(axis, [1, 12, 7, 9])
    x = np.random.default_rng(0).normal(0, 30, (1, 12, 7, 9)).astype(np.float32)  # large logits: max shift needed
    before = run(m, x)
    assert expand_channel_softmax(m) == 1
    assert [n.op_type for n in m.graph.node] == ["ReduceMax", "Sub", "Exp", "ReduceSum", "Div"]
    after = run(m, x)
    assert np.isfinite(after).all() and np.abs(after - before).max() < 1e-6
    np.testing.assert_allclose(after.sum(1), 1.0, atol=1e-5)


@pytest.mark.parametrize("axis,shape,opset", [(-1, [1, 12, 7, 9], 17), (1, [4, 12], 17), (1, [1, 12, 7, 9], 11)])
def test_other_softmaxes_are_left_alone(axis, shape, opset):
    m = softmax_model(axis, shape, opset)
    assert expand_channel_softmax(m) == 0
    assert [n.op_type for n in m.graph.node] == ["Softmax"]


def test_committed_models_have_no_class_axis_softmax(tmp_path):
    for path in sorted(ENGINES_DIR.glob("*.onnx")):
        copy = tmp_path / path.name
        copy.write_bytes(path.read_bytes())
        assert expand_channel_softmax(onnx.load(str(copy))) == 0, f"{path.name}: run python -m rgbt.seg.zoo.graph_passes"


def test_cli_rewrites_in_place_and_updates_the_sidecar_hash(tmp_path):
    from rgbt.seg.sidecar import Sidecar, file_sha256, load_sidecar, save_sidecar

    p = tmp_path / "m.onnx"
    onnx.save(softmax_model(1, [1, 12, 4, 4]), str(p))
    save_sidecar(Sidecar(name="m", architecture="test", onnx="m.onnx", inputs=[], weights="random-init (test)"),
                 tmp_path / "m.json")
    assert main([str(p)]) == 0
    assert [n.op_type for n in onnx.load(str(p)).graph.node][0] == "ReduceMax"
    assert load_sidecar(tmp_path / "m.json").onnx_sha256 == file_sha256(p)

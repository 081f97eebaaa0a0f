"""Fixtures for the segmentation tests: a tiny hand-built CART-layout dataset and an oracle model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rgbt.seg.dataset import write_item
from rgbt.seg.sidecar import InputSpec, Normalization, Sidecar, save_sidecar

H, W = 6, 8


def oracle_onnx(path: Path, h: int = H, w: int = W, channels: int = 1) -> Path:
    """ONNX model: class_ids = uint8(2 + round(4 * x)) for a 1x1xHxW input x in [0, 1], plus a sidecar.

    With the sidecar's normalization (1st-99th percentile, no CLAHE) a frame whose counts are
    1000 * (c - 1) for intended classes c in 2..6 (both extremes present) predicts exactly c.
    """
    import onnx
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("Mul", ["input", "four"], ["x4"]),
        helper.make_node("Round", ["x4"], ["r"]),
        helper.make_node("Add", ["r", "two"], ["c"]),
        helper.make_node("Squeeze", ["c", "axis1"], ["cs"]),
        helper.make_node("Cast", ["cs"], ["class_ids"], to=TensorProto.UINT8),
    ]
    graph = helper.make_graph(
        nodes, "oracle",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, channels, h, w])],
        [helper.make_tensor_value_info("class_ids", TensorProto.UINT8, [1, h, w])],
        [helper.make_tensor("four", TensorProto.FLOAT, [], [4.0]), helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]),
         helper.make_tensor("axis1", TensorProto.INT64, [1], [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    sc = Sidecar(name=path.stem, architecture="oracle (test)", onnx=path.name,
                 inputs=[InputSpec(channels=channels, height=h, width=w,
                                   normalization=Normalization(low=1.0, high=99.0, clahe=False))],
                 outputs={"class_ids": "class_ids"}, fit="pad", weights="hand-built test oracle")
    save_sidecar(sc, path.with_suffix(".json"))
    return path


# intended predictions (CART ids 2..6) and ground truth for two 6x8 frames; ids 0/1 in gt are ignored
PRED = [
    np.array([[2, 2, 2, 3, 3, 3, 6, 6],
              [2, 2, 2, 3, 3, 3, 6, 6],
              [2, 2, 4, 4, 3, 3, 6, 6],
              [5, 5, 4, 4, 3, 3, 6, 6],
              [5, 5, 4, 4, 2, 2, 2, 2],
              [5, 5, 4, 4, 2, 2, 2, 2]], np.uint8),
    np.array([[6, 6, 6, 6, 2, 2, 2, 2],
              [6, 6, 6, 6, 2, 2, 2, 2],
              [3, 3, 3, 3, 5, 5, 5, 5],
              [3, 3, 3, 3, 5, 5, 5, 5],
              [3, 3, 3, 3, 5, 5, 5, 5],
              [3, 3, 3, 3, 5, 5, 5, 5]], np.uint8),
]
GT = [
    np.array([[2, 2, 2, 3, 3, 3, 6, 6],
              [2, 2, 2, 3, 3, 3, 6, 6],
              [2, 2, 2, 2, 3, 3, 6, 6],
              [5, 5, 4, 4, 3, 3, 0, 0],
              [5, 5, 4, 4, 2, 2, 1, 1],
              [5, 5, 4, 4, 2, 2, 1, 1]], np.uint8),
    np.array([[6, 6, 6, 6, 2, 2, 2, 2],
              [6, 6, 6, 6, 2, 2, 2, 2],
              [3, 3, 3, 3, 5, 5, 5, 5],
              [3, 3, 3, 3, 5, 5, 5, 5],
              [3, 3, 3, 3, 5, 5, 9, 9],
              [3, 3, 3, 3, 5, 5, 9, 9]], np.uint8),
]


@pytest.fixture
def tiny_dataset(tmp_path: Path) -> Path:
    root = tmp_path / "tiny"
    items = []
    for i, (pred, gt) in enumerate(zip(PRED, GT)):
        frame = (1000 * (pred.astype(np.uint16) - 1)).astype(np.uint16)
        item = f"place/traj/{i:06d}"
        write_item(root, item, frame, gt)
        items.append(item)
    (root / "test.txt").write_text("\n".join(items) + "\n")
    return root


@pytest.fixture
def oracle(tmp_path: Path) -> Path:
    return oracle_onnx(tmp_path / "models" / "oracle.onnx")


@pytest.fixture
def oracle_frames() -> list[tuple[np.ndarray, np.ndarray]]:
    """(intended prediction, ground truth) pairs of the tiny dataset."""
    return list(zip(PRED, GT))

"""Segmentation stage: masks at input resolution, colour/overlay, streaming (the pipeline has its own tests)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from rgbt.paths import ENGINES_DIR
from rgbt.seg.classes import CART_CLASSES, colorize, palette_array, read_class_csv
from rgbt.seg.stage import SegmentationStage, SegStageOptions
from rgbt.seg.synthetic import scene


def test_palette_matches_cart_csv(cart_dir):
    assert read_class_csv(str(cart_dir / "class_color_mapping.csv")) == list(CART_CLASSES)


def test_oracle_stage_pad_and_crop(oracle, oracle_frames):
    pred0 = oracle_frames[0][0]
    st = SegmentationStage(SegStageOptions(str(oracle), overlay=True))
    frame = (1000 * (pred0.astype(np.uint16) - 1)).astype(np.uint16)
    res = st.process(frame[:5, :7])  # smaller than the model: padded, then cropped back
    assert res.class_ids.shape == (5, 7) and res.class_ids.dtype == np.uint8
    assert np.array_equal(res.color, colorize(res.class_ids))
    assert res.overlay.shape == (5, 7, 3)
    assert np.array_equal(st.process(frame).class_ids, pred0)


@pytest.mark.parametrize("shape", [(512, 640), (480, 600)])
def test_sim_model_resolution_and_colors(shape):
    st = SegmentationStage(SegStageOptions(str(ENGINES_DIR / "sim_thermal_seg.onnx")))
    th, _, _ = scene(shape[0], shape[1], seed=5)
    res = st.process(th)
    assert res.class_ids.shape == shape and res.color.shape == shape + (3,)
    assert np.array_equal(res.color, palette_array()[res.class_ids])
    for k in ("preprocess_ms", "infer_ms", "postprocess_ms", "total_ms", "backend_compute_ms"):
        assert res.timing[k] >= 0


def test_stream_equals_process():
    st = SegmentationStage(SegStageOptions(str(ENGINES_DIR / "sim_thermal_seg.onnx")))
    frames = [scene(512, 640, seed=s)[0] for s in range(4)]
    serial = [st.process(f).class_ids for f in frames]
    streamed = [r.class_ids for r in st.stream(frames)]
    assert len(streamed) == 4
    for a, b in zip(serial, streamed):
        assert np.array_equal(a, b)


def test_cli_run_writes_class_png(tmp_path, rgbt_cli):
    th, _, _ = scene(512, 640, seed=9)
    src = tmp_path / "t.png"
    cv2.imwrite(str(src), th)
    rgbt_cli("seg", "run", "--engine", ENGINES_DIR / "sim_thermal_seg.onnx", "--color", tmp_path / "c.png",
             src, tmp_path / "ids.png")
    ids = cv2.imread(str(tmp_path / "ids.png"), cv2.IMREAD_UNCHANGED)
    assert ids.dtype == np.uint8 and ids.shape == (512, 640) and ids.max() <= 11
    col = cv2.imread(str(tmp_path / "c.png"))[:, :, ::-1]
    assert np.array_equal(col, palette_array()[ids])

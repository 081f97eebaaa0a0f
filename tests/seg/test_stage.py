"""Segmentation stage: masks at input resolution, colour/overlay, streaming (the pipeline has its own tests)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from helpers import independent_miou
from rgbt.paths import ENGINES_DIR
from rgbt.seg.classes import CART_CLASSES, SegClass, colorize, palette_array
from rgbt.seg.stage import SegmentationStage, SegStageOptions
from rgbt.seg.synthetic import scene


def test_palette_matches_cart_csv(cart_dir):
    # CART's class_color_mapping.csv: ``id,name,#hex`` lines, no header
    lines = [line.strip() for line in (cart_dir / "class_color_mapping.csv").read_text().splitlines()]
    rows = [line.split(",") for line in lines if line]
    assert [SegClass(int(i), name, color.upper()) for i, name, color in rows] == list(CART_CLASSES)


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
    t = res.timing
    assert all(t[k] > 0 for k in ("preprocess_ms", "infer_ms", "postprocess_ms", "backend_compute_ms")), t
    assert t["total_ms"] == pytest.approx(t["preprocess_ms"] + t["infer_ms"] + t["postprocess_ms"], abs=1e-6)


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


# Class-level checks of the trained demo model on fixed simulated frames (rgbt.sim, exact labels):
# lawnmower flight, seed 301 (never used in training: seeds 1-4; held-out test 101/102), default
# 4096 px world, thermal frame seq 60, day and night. Measured with this model (IoU per class from
# its definition, helpers.independent_miou): day  road 0.81, sky 0.88, trees 0.42, pixel accuracy
# 0.60, mIoU 0.36; night road 0.57, sky 0.88, water 0.53, pixel accuracy 0.41, mIoU 0.26. Chance on
# these frames (class shares: day road 25 %, trees 17 %, sky 3.4 %; night the same scene, water
# 4.3 %): the best constant prediction scores IoU = the class's share (<= 0.25) for one class and
# 0 for all others (pixel accuracy <= 0.25, mIoU <= 0.03); a random guess with the true class
# shares scores IoU share / (2 - share) (<= 0.14) and pixel accuracy sum(share^2) ~ 0.17. Floors sit
# well below the measured values (room for retraining / simulator changes) and far above chance.
SIM_FRAME_FLOORS = {
    False: {"iou": {5: 0.55, 8: 0.60, 7: 0.25}, "pixel_accuracy": 0.45, "miou": 0.22},  # day
    True: {"iou": {5: 0.35, 8: 0.60, 9: 0.30}, "pixel_accuracy": 0.32, "miou": 0.17},  # night
}


@pytest.fixture(scope="module")
def sim_frames() -> dict[bool, tuple[np.ndarray, np.ndarray]]:
    """night -> (thermal uint16 640x512, label uint8 CART ids) of the fixed simulated frame."""
    from rgbt.sim import SimOptions, SimStack

    out = {}
    for night in (False, True):
        sim = SimStack(SimOptions(trajectory="lawnmower", seed=301, night=night, duration_s=2.0,
                                  cameras=["thermal"], drop_prob=0.0))
        for sample in sim.samples(kinds=["thermal"]):
            if sample.seq == 60:
                out[night] = (sample.data.copy(), sample.label.copy())
                break
    return out


@pytest.mark.slow
@pytest.mark.parametrize("night", [False, True], ids=["day", "night"])
def test_sim_model_predicts_the_dominant_classes(sim_frames, night: bool) -> None:
    thermal, label = sim_frames[night]
    assert thermal.shape == label.shape == (512, 640) and thermal.dtype == np.uint16
    st = SegmentationStage(SegStageOptions(str(ENGINES_DIR / "sim_thermal_seg.onnx"), color=False))
    pred = st.process(thermal).class_ids
    floors = SIM_FRAME_FLOORS[night]
    miou, ious = independent_miou([(label, pred)])
    evaluated = label >= 2  # unknown (0) and background (1) are not scored
    accuracy = float((pred[evaluated] == label[evaluated]).mean())
    report = {"miou": miou, "pixel_accuracy": accuracy, "iou": {c: round(v, 3) for c, v in ious.items()}}
    for c, floor in floors["iou"].items():
        assert np.count_nonzero(label == c) > 0.03 * label.size, (c, "not a dominant class of this frame")
        assert ious[c] >= floor, (CART_CLASSES[c].name, report)
    assert accuracy >= floors["pixel_accuracy"], report
    assert miou is not None and miou >= floors["miou"], report


def test_resize_first_normalizes_the_frame_at_the_model_input_size():
    """``resize_first``: the frame is resized to the input (INTER_AREA), then normalized there; the
    masks still come back at the frame's size. A model that pads, or a frame no larger than the
    input, is prepared as before."""
    from rgbt.seg.preprocess import prepare, shrink_to_input

    engine = str(ENGINES_DIR / "sim_thermal_seg.onnx")
    plain, first = (SegmentationStage(SegStageOptions(engine, resize_first=rf)) for rf in (False, True))
    th, _, _ = scene(512, 640, seed=5)
    spec = first.spec
    x, fit = first.prepare(th, first.new_buffer())
    small = cv2.resize(th, (spec.width, spec.height), interpolation=cv2.INTER_AREA)
    expected, _ = prepare({"thermal": small}, spec, "resize")
    assert np.array_equal(x, expected) and fit.src == (512, 640) and fit.dst == (spec.height, spec.width)
    assert not np.array_equal(x, plain.prepare(th, plain.new_buffer())[0])  # another order, another input
    res = first.process(th)
    assert res.class_ids.shape == (512, 640) and np.array_equal(res.color, palette_array()[res.class_ids])
    assert shrink_to_input(th, (spec.height, spec.width), "pad") is None
    assert shrink_to_input(th[:100, :100], (spec.height, spec.width), "resize") is None  # not larger: as before
    tiny = th[:100, :100]
    assert np.array_equal(first.prepare(tiny, first.new_buffer())[0], plain.prepare(tiny, plain.new_buffer())[0])

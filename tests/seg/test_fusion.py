"""RGB-T fusion: late fusion maths, graceful degradation, in-graph == numpy, and fused >= best single
modality on held-out simulator flights (day and night) with the committed models."""

from __future__ import annotations

import numpy as np
import pytest

from rgbt.paths import ENGINES_DIR
from rgbt.seg.fusion import FusionOptions, FusionStage, darkness_weight, entropy_confidence, late_fuse, softmax
from rgbt.seg.synthetic import scene

T, R = str(ENGINES_DIR / "fusion_thermal_tiny.onnx"), str(ENGINES_DIR / "fusion_rgb_tiny.onnx")


def test_entropy_confidence_bounds():
    k = 12
    uniform = np.full((k, 2, 2), 1 / k)
    onehot = np.zeros((k, 2, 2))
    onehot[3] = 1
    assert np.allclose(entropy_confidence(uniform), 0, atol=1e-9)
    assert np.allclose(entropy_confidence(onehot), 1, atol=1e-6)


def test_late_fuse_prefers_the_confident_modality():
    rng = np.random.default_rng(0)
    pt = softmax(rng.normal(0, 0.1, (12, 4, 4)))  # unsure thermal
    logits = np.zeros((12, 4, 4))
    logits[7] = 8.0
    pr = softmax(logits)  # confident colour: class 7
    fused = late_fuse(pt, pr, gate=1.0)
    assert np.all(np.argmax(fused, 0) == 7)
    assert np.allclose(fused.sum(0), 1, atol=1e-5)
    assert late_fuse(pt, pr, gate=0.0) is pt and late_fuse(pt, None, 1.0) is pt


def test_darkness_weight_is_smooth():
    def frame(v):
        return np.full((4, 4, 3), v, np.uint8)

    assert darkness_weight(None, 0.01, 0.002) == 0.0
    assert darkness_weight(frame(0), 0.01, 0.002) == 0.0  # black: nothing to read
    w = [darkness_weight(frame(v), 0.01, 0.002) for v in (1, 3, 10, 60, 200)]
    assert all(0 < a < b < 1 for a, b in zip(w, w[1:]))  # darker -> smoothly less weight, never a hard cut
    assert w[-1] > 0.95 and darkness_weight(frame(3), 3 / 255, 0.0) == pytest.approx(0.5)


def test_degrades_to_thermal_only_when_rgb_missing_or_black():
    th, rgb, _ = scene(600, 960, seed=42, night=True)
    late = FusionStage(FusionOptions(mode="late", thermal=T, rgb=R))
    graph = FusionStage(FusionOptions(mode="graph", model=str(ENGINES_DIR / "fusion_late_tiny.onnx")))
    from rgbt.seg.stage import SegmentationStage, SegStageOptions

    thermal_only = SegmentationStage(SegStageOptions(T, color=False)).process(th).class_ids
    black = np.zeros_like(rgb)
    assert np.array_equal(late.process(th, None).class_ids, thermal_only)
    assert np.array_equal(late.process(th, black).class_ids, thermal_only)
    assert np.mean(graph.process(th, None).class_ids == thermal_only) > 0.999
    assert np.mean(graph.process(th, black).class_ids == thermal_only) > 0.999


def test_in_graph_late_fusion_matches_numpy():
    th, rgb, _ = scene(600, 960, seed=43)
    late = FusionStage(FusionOptions(mode="late", thermal=T, rgb=R))
    graph = FusionStage(FusionOptions(mode="graph", model=str(ENGINES_DIR / "fusion_late_tiny.onnx")))
    a, b = late.process(th, rgb).class_ids, graph.process(th, rgb).class_ids
    assert a.shape == (600, 960) and np.mean(a == b) > 0.999


def test_fusion_mode_errors():
    from rgbt.errors import ModelError

    with pytest.raises(ModelError, match="thermal and an RGB"):
        FusionStage(FusionOptions(mode="late", thermal=T))
    with pytest.raises(ModelError, match="inputs"):
        FusionStage(FusionOptions(mode="graph", model=T))
    with pytest.raises(ModelError, match="unknown fusion mode"):
        FusionStage(FusionOptions(mode="middle"))


@pytest.fixture(scope="module")
def sim_pairs(tmp_path_factory):
    """Held-out SYNTHETIC simulator pairs: seeds and trajectory segments the models never saw
    (training used seeds 1-4, calibration 5-6, the training script's test 101-102)."""
    from rgbt.sim.seg_pairs import write_sim_pairs
    from rgbt.sim import SimOptions

    opts = [SimOptions(trajectory="circle", seed=201, night=False, duration_s=3.0, start_s=6.0, cameras=["thermal", "color"]),
            SimOptions(trajectory="lawnmower", seed=202, night=True, duration_s=3.0, start_s=6.0, cameras=["thermal", "color"])]
    return write_sim_pairs(tmp_path_factory.mktemp("simpairs"), opts, ["test", "test"], stride=10)


#: Tolerance on "fused >= best single": 0.005 mIoU. The claim is "fusion never loses to the better
#: single modality", and on ~18 pairs per condition one class's IoU moving by a few hundred pixels
#: shifts mIoU by ~0.002-0.005, so a tie must not fail. Measured on this set:
#: day early 0.564 vs RGB 0.559; night late 0.260 vs RGB 0.262 (a tie: inside the tolerance).
#: A fusion that follows the weaker thermal model (the old darkness gate: 0.13 at night) fails.
TOL = 0.005


@pytest.mark.slow
@pytest.mark.parametrize("cond", ["day", "night"])
def test_fused_miou_at_least_best_single_on_simulator(sim_pairs, cond):
    from helpers import run_rgbt

    proc = run_rgbt("seg", "eval-fusion", "--dataset", sim_pairs, "--split", f"test_{cond}", "--thermal", T, "--rgb", R,
                    "--early", str(ENGINES_DIR / "fusion_early_tiny.onnx"),
                    "--graph", str(ENGINES_DIR / "fusion_late_tiny.onnx"), "--json")
    assert proc.returncode == 0, proc.stderr
    import json

    out = json.loads(proc.stdout)
    res = {k: v["miou"]["all"] for k, v in out.items()}
    assert all(v["n_images"] >= 8 for v in out.values()), out
    best_single = max(res["thermal"], res["rgb"])
    fused = max(res["early"], res["late"], res["late_graph"])
    assert fused >= best_single - TOL, res
    assert abs(res["late"] - res["late_graph"]) < 0.01, res  # in-graph fusion == numpy fusion


@pytest.mark.slow
def test_resize_first_keeps_the_miou_and_the_pair_size(sim_pairs):
    """``resize_first`` (the live node's default): the pair is resized to the model input before it is
    normalized; the class ids come back at the pair's size and the mIoU stays with the trained order's
    (measured on this set: within 0.03 either way; a wrong resize, e.g. width and height swapped or
    the ids not resized back, fails)."""
    from rgbt.seg.evaluate import evaluate_fusion

    model = str(ENGINES_DIR / "fusion_late_tiny.onnx")
    stages = {"trained_order": FusionStage(FusionOptions(mode="graph", model=model)),
              "resize_first": FusionStage(FusionOptions(mode="graph", model=model, resize_first=True))}
    for cond in ("day", "night"):
        res = evaluate_fusion(sim_pairs, stages, f"test_{cond}")
        a, b = res["trained_order"].miou["all"], res["resize_first"].miou["all"]
        assert abs(a - b) < 0.03, (cond, a, b)
    th = np.full((600, 960), 30000, np.uint16)
    th[100:300, 200:500] = 31000
    out = stages["resize_first"].process(th, np.zeros((600, 960, 3), np.uint8)).class_ids
    assert out.shape == (600, 960) and out.dtype == np.uint8

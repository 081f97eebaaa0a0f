"""RGB-T fusion: late fusion maths, graceful degradation, in-graph == numpy, fused >= best single."""

from __future__ import annotations

import numpy as np
import pytest

from rgbt.paths import ENGINES_DIR
from rgbt.seg.fusion import FusionOptions, FusionStage, darkness_gate, entropy_confidence, late_fuse, softmax
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


def test_darkness_gate():
    assert darkness_gate(None, 0.04, 0.15) == 0.0
    assert darkness_gate(np.full((4, 4, 3), 3, np.uint8), 0.04, 0.15) == 0.0
    assert darkness_gate(np.full((4, 4, 3), 120, np.uint8), 0.04, 0.15) == 1.0


def test_degrades_to_thermal_only_when_rgb_missing_or_dark():
    th, rgb, _ = scene(600, 960, seed=42, night=True)
    late = FusionStage(FusionOptions(mode="late", thermal=T, rgb=R))
    graph = FusionStage(FusionOptions(mode="graph", model=str(ENGINES_DIR / "fusion_late_tiny.onnx")))
    from rgbt.seg.stage import SegmentationStage, SegStageOptions

    thermal_only = SegmentationStage(SegStageOptions(T, color=False)).process(th).class_ids
    assert np.array_equal(late.process(th, None).class_ids, thermal_only)
    assert np.array_equal(late.process(th, rgb).class_ids, thermal_only)  # night: colour gated off
    assert np.mean(graph.process(th, None).class_ids == thermal_only) > 0.999


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
def pairs(tmp_path_factory):
    from rgbt.seg.synthetic import write_dataset

    # held-out seed: training used seed 0
    return write_dataset(tmp_path_factory.mktemp("pairs"), 8, 600, 960, seed=7, test_fraction=1.0)


@pytest.mark.parametrize("cond", ["day", "night"])
def test_fused_miou_at_least_best_single_modality(pairs, cond):
    from rgbt.seg.evaluate import evaluate_fusion
    from rgbt.seg.stage import SegmentationStage, SegStageOptions

    stages = {
        "thermal": SegmentationStage(SegStageOptions(T, color=False)),
        "rgb": SegmentationStage(SegStageOptions(R, color=False)),
        "late": FusionStage(FusionOptions(mode="late", thermal=T, rgb=R)),
        "early": FusionStage(FusionOptions(mode="early", model=str(ENGINES_DIR / "fusion_early_tiny.onnx"))),
    }
    res = {k: v.miou["all"] for k, v in evaluate_fusion(pairs, stages, f"test_{cond}").items()}
    best_single = max(res["thermal"], res["rgb"])
    assert res["late"] >= best_single, res
    assert max(res["late"], res["early"]) >= best_single, res

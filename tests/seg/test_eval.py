"""`rgbt seg eval` on a hand-built CART-layout fixture; IoUs computed by hand below."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rgbt.seg.metrics import confusion, iou_from_confusion


@pytest.mark.slow
def test_eval_tiny_fixture_matches_hand_computed_iou(tiny_dataset, oracle, rgbt_cli):
    proc = rgbt_cli("seg", "eval", "--dataset", tiny_dataset, "--engine", oracle, "--split",
                    tiny_dataset / "test.txt", "--json")
    res = json.loads(proc.stdout)
    # by hand (see conftest PRED/GT): ignored gt 0/1 pixels drop out
    # Bare ground (2): TP 20, FN 2 (predicted 4) -> 20/22
    # Rocky terrain (3): TP 26 -> 1
    # Developed structures (4): TP 6, FP 2 -> 6/8
    # Road (5): TP 18, FP 4 (gt Water) -> 18/22
    # Shrubs (6): TP 14 -> 1 (its predictions on gt Unknown are ignored)
    # Water (9): TP 0, FN 4 -> 0
    expect = {"Bare ground": 20 / 22, "Rocky terrain": 1.0, "Developed structures": 6 / 8, "Road": 18 / 22,
              "Shrubs": 1.0, "Water": 0.0}
    for name, iou in expect.items():
        assert res["per_class"][name] == pytest.approx(iou, abs=1e-12), name
    for name in ("Trees", "Sky", "Vehicles", "Person"):
        assert res["per_class"][name] is None
    assert "Unknown" not in res["per_class"] and "__background__" not in res["per_class"]
    miou = sum(expect.values()) / 6
    assert res["miou"]["all"] == pytest.approx(miou, abs=1e-12)
    assert res["miou"]["stuff"] == pytest.approx(miou, abs=1e-12)
    assert res["miou"]["object"] is None
    assert res["n_images"] == 2


@pytest.mark.slow
def test_eval_table_mode(tiny_dataset, oracle, rgbt_cli):
    proc = rgbt_cli("seg", "eval", "--dataset", tiny_dataset, "--engine", oracle, "--confusion", env={"COLUMNS": "250"})
    assert "mIoU" in proc.stdout and "Rocky" in proc.stdout and "90.9" in proc.stdout  # Bare ground 20/22


def test_confusion_ignores_and_objects():
    gt = np.array([[0, 1, 10, 10], [11, 2, 2, 2]], np.uint8)
    pred = np.array([[10, 10, 10, 2], [11, 2, 2, 10]], np.uint8)
    cm = confusion(gt, pred, 12)
    assert cm.sum() == 6  # two ignored pixels
    r = iou_from_confusion(cm)
    assert r.per_class["Vehicles"] == pytest.approx(1 / 3)  # TP 1, FN 1, FP 1
    assert r.per_class["Person"] == 1.0
    assert r.per_class["Bare ground"] == pytest.approx(2 / 4)  # TP 2, FN 1, FP 1
    assert r.miou["object"] == pytest.approx((1 / 3 + 1) / 2)
    assert r.miou["stuff"] == pytest.approx(0.5)


@pytest.mark.slow
def test_bad_dataset_errors(tmp_path, oracle, rgbt_cli):
    proc = rgbt_cli("seg", "eval", "--dataset", tmp_path / "nope", "--engine", oracle, check=False)
    assert proc.returncode == 2 and "not found" in proc.stderr

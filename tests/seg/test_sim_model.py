"""The synthetic-trained demo model on held-out simulated flights (day and night), via `rgbt seg eval`.

The floor sits below the mIoU measured with
``python engines/train_sim.py`` (``rgbt seg train`` runs of three augmentation recipes,
with and without thermal inversion, flips only; the highest val mIoU ships) on the held-out seeds (margin for other worlds / shorter flights)
and well above what a model that ignores the image can reach (the best constant prediction scores
at most 1/10 of the largest class IoU, < 0.05 here).
"""

from __future__ import annotations

import json

import pytest

from rgbt.paths import ENGINES_DIR
from rgbt.seg.sidecar import load_sidecar

FLOOR = {"day": 0.20, "night": 0.15}


@pytest.fixture(scope="module")
def held_out(tmp_path_factory):
    from rgbt.sim import SimOptions
    from rgbt.sim.dataset import write_cart_dataset

    root = tmp_path_factory.mktemp("sim_heldout")
    # seeds never used in training (train: 1-4, reported test: 101, 102)
    opts = [SimOptions(trajectory="lawnmower", seed=201, night=False, duration_s=3.0, cameras=["thermal"]),
            SimOptions(trajectory="circle", seed=202, night=True, duration_s=3.0, cameras=["thermal"])]
    write_cart_dataset(root, opts, stride=20, splits=["test", "test"], with_rgb=False)
    test = (root / "test.txt").read_text().split()
    for tod in ("day", "night"):
        (root / f"test_{tod}.txt").write_text("\n".join(i for i in test if f"_{tod}_" in i) + "\n")
    return root


def test_sidecar_says_synthetic():
    sc = load_sidecar(ENGINES_DIR / "sim_thermal_seg.json")
    assert sc.synthetic and sc.weights.startswith("trained on synthetic data")
    assert "rgbt.sim" in sc.weights and sc.training["command"].startswith("rgbt seg train ")
    assert sc.training["recipe"].startswith("python engines/train_sim.py")
    # every recipe of the script was trained; the shipped one has the highest val mIoU
    variants = sc.training["variants"]
    assert set(variants) == {"flip_only", "inversion", "no_inversion"}
    assert sc.training["val_miou"]["all"] == pytest.approx(max(v["val_miou"] for v in variants.values()))


@pytest.mark.slow
@pytest.mark.parametrize("tod", ["day", "night"])
def test_sim_model_miou_floor(held_out, tod, rgbt_cli):
    proc = rgbt_cli("seg", "eval", "--dataset", held_out, "--engine", ENGINES_DIR / "sim_thermal_seg.onnx",
                    "--split", held_out / f"test_{tod}.txt", "--json")
    res = json.loads(proc.stdout)
    assert res["n_images"] >= 5
    print(tod, res["miou"], res["n_images"])
    assert res["miou"]["all"] >= FLOOR[tod], res["miou"]

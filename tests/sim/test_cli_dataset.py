"""``rgbt simulate`` (bag and dataset modes), ``rgbt bench sim`` and the CART-layout dataset writer."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import pytest
import numpy as np
import yaml

from helpers import run_rgbt
from rgbt.sim import SimOptions
from rgbt.sim.dataset import write_cart_dataset


@pytest.mark.slow
def test_simulate_cli_writes_bag_ground_truth_and_labels(duck_tum: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = run_rgbt("simulate", "--trajectory", duck_tum, "--duration", "0.5", "--start", "4", "--seed", "3",
                    "--out", out, "--labels-every", "6", "--json")
    summary = json.loads(proc.stdout)
    assert summary["synthetic"] is True
    assert summary["counts"]["/boson/thermal/image_raw"] + summary["dropped"]["thermal"] == 30
    info = yaml.safe_load((out / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert info["storage_identifier"] == "mcap"
    assert info["custom_data"]["rgbt.synthetic"] == "true"
    assert json.loads(info["custom_data"]["rgbt.sim.options"])["start_s"] == 4.0
    topics = {t["topic_metadata"]["name"]: t["message_count"] for t in info["topics_with_message_count"]}
    assert topics["/imu/imu"] == 100 and topics["/rgbt/trigger"] == 30
    assert topics["/uav1/mavros/state"] >= 1 and "/rgbt/sim/ground_truth/imu_pose" in topics
    gt = [ln for ln in (out / "ground_truth_imu.tum").read_text().splitlines() if not ln.startswith("#")]
    assert len(gt) == 100 and len(gt[0].split()) == 8
    ids = (out / "labels" / "test.txt").read_text().split()
    assert len(ids) == summary["labels"]["frames"] >= 4
    place_traj, fid = ids[0].rsplit("/", 1)
    assert place_traj.startswith("SimDuck/")
    mask = cv2.imread(str(out / "labels" / place_traj / "masks" / f"{fid}.png"), cv2.IMREAD_UNCHANGED)
    assert mask.shape == (512, 640) and set(np.unique(mask)) <= set(range(2, 12))


@pytest.mark.slow
def test_simulate_cli_bad_input(tmp_path: Path, duck_tum: Path) -> None:
    proc = run_rgbt("simulate", "--trajectory", tmp_path / "nope.txt", "--duration", "1", "--out", tmp_path / "a",
                    check=False)
    assert proc.returncode == 2 and "nope.txt" in proc.stderr
    proc = run_rgbt("simulate", "--trajectory", duck_tum, "--duration", "100", "--out", tmp_path / "b", check=False)
    assert proc.returncode == 2 and "duration_s" in proc.stderr
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "x").write_text("keep me")
    proc = run_rgbt("simulate", "--trajectory", "circle", "--duration", "1", "--out", tmp_path / "c", check=False)
    assert proc.returncode == 2 and "--out" in proc.stderr
    assert (tmp_path / "c" / "x").read_text() == "keep me"


@pytest.mark.slow
def test_write_cart_dataset_day_and_night(duck_tum: Path, tmp_path: Path) -> None:
    runs = [SimOptions(trajectory=str(duck_tum), duration_s=0.4, start_s=10.0, night=night, seed=1, world_seed=0,
                       cameras=["thermal", "color"], drop_prob=0.0) for night in (False, True)]
    root = write_cart_dataset(tmp_path / "ds", runs, stride=4, splits=["train", "test"])
    train = (root / "train.txt").read_text().split()
    test = (root / "test.txt").read_text().split()
    assert len(train) == len(test) == 6 and not (root / "val.txt").read_text().strip()
    assert "synthetic" in (root / "SYNTHETIC.md").read_text().lower()
    assert train[0].split("/")[1].endswith("_day_s1_t10") and test[0].split("/")[1].endswith("_night_s1_t10")
    for line in train + test:
        place_traj, fid = line.rsplit("/", 1)
        d = root / place_traj
        th = cv2.imread(str(d / "thermal16" / f"{fid}.png"), cv2.IMREAD_UNCHANGED)
        mask = cv2.imread(str(d / "masks" / f"{fid}.png"), cv2.IMREAD_UNCHANGED)
        rgb = cv2.imread(str(d / "rgb" / f"{fid}.png"), cv2.IMREAD_UNCHANGED)
        mask_rgb = cv2.imread(str(d / "masks_rgb" / f"{fid}.png"), cv2.IMREAD_UNCHANGED)
        assert th.dtype == np.uint16 and th.shape == (512, 640) and mask.shape == (512, 640)
        assert rgb.shape == (600, 960, 3) and mask_rgb.shape == (600, 960)
        assert set(np.unique(mask)) <= set(range(2, 12))
    # the same place by day and night: identical layout (same masks), inverted water temperature
    day_mask = cv2.imread(str(root / train[-1].rsplit("/", 1)[0] / "masks" / "000020.png"), cv2.IMREAD_UNCHANGED)
    night_mask = cv2.imread(str(root / test[-1].rsplit("/", 1)[0] / "masks" / "000020.png"), cv2.IMREAD_UNCHANGED)
    assert np.array_equal(day_mask, night_mask)


@pytest.mark.slow
def test_bench_sim_json() -> None:
    proc = run_rgbt("bench", "sim", "--json", "--duration", "0.5", "--trajectory", "hover")
    result = json.loads(proc.stdout)
    for key in ("realtime_factor", "mcap_write_mb_s", "raw_data_rate_mb_s", "mcap_vs_data_rate",
                "end_to_end_realtime_factor", "machine"):
        assert key in result
    assert result["synthetic"] is True
    assert result["samples"]["thermal"] == 30 and result["samples"]["imu"] == 100
    assert 100 < result["raw_data_rate_mb_s"] < 120  # 39.3 + 51.8 + 17.3 MB/s of raw images

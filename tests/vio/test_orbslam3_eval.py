"""ORB-SLAM3 monocular end to end on the SYNTHETIC plane sequence, through the CLI contract.

The >= 40 s run over a real CART trajectory in the simulator is a benchmark (BENCHMARKS.md, ``rgbt vio eval``),
too long for CI on 2 cores; this test runs 6 s x 3 runs (~360 frames).
"""

from __future__ import annotations

import json

import pytest

from helpers import run_rgbt

pytest.importorskip("pyorbslam3")


@pytest.mark.slow
def test_vio_eval_monocular_synthetic(small_vocab, tmp_path):
    out = tmp_path / "eval"
    proc = run_rgbt("vio", "eval", "--synthetic", "6", "--ffc-at", "3", "--estimator", "orbslam3", "--runs", "3",
                    "--normalization", "percentile", "--vocab", small_vocab, "--out", out, "--json", "--no-progress",
                    "--pace", "0")  # as fast as possible: CI time; the CART test below runs in real time
    data = json.loads(proc.stdout)  # ORB-SLAM3's own stdout must not leak into the JSON
    assert len(data["runs"]) == 3
    assert set(data["ate_rmse"]) >= {"mean", "std", "median"}
    assert data["synthetic"] is True and data["align"] == "sim3"
    # Limits: on this sequence ORB-SLAM3 initialises within ~0.5 s and keeps tracking (98 % over
    # 12-20 s when measured); a 0.4 s FFC freeze passes through in percentile mode. Tracked >= 75 %
    # leaves room for a slow start on a loaded CI machine. The path is ~20 m: a Sim3 ATE of 0.5 m
    # (2.5 %) is a loose bound for a working tracker and far below a failed one (metres).
    assert data["tracked_fraction"] >= 0.75
    for run in data["runs"]:
        assert run["metrics"]["ate_tracked"]["sim3"] is not None
    assert data["ate_rmse"]["median"] < 0.5
    assert data["ate_full_rmse"]["median"] >= data["ate_rmse"]["median"] - 1e-9 or data["tracked_fraction"] == 1.0
    assert data["fps"] > 0 and data["latency_ms"]["median"] > 0
    assert data["meta"]["ffc_truth_frames"] > 0
    assert (out / "table.md").read_text().startswith("| Sequence |")
    assert (out / "run0" / "trajectory.png").stat().st_size > 1000
    assert (out / "run0" / "error_vs_time.png").stat().st_size > 1000


def test_vio_eval_bad_bag(tmp_path):
    proc = run_rgbt("vio", "eval", "--bag", tmp_path / "missing", "--runs", "1", "--json", check=False)
    assert proc.returncode == 2 and "not found" in proc.stderr


@pytest.mark.slow
def test_vio_eval_over_real_cart_trajectory(small_vocab, cart_dir, tmp_path):
    """SYNTHETIC thermal rendered along CART's CastaicLake RTK trajectory (25-33 s: the drone is
    already moving, 2-4 m/s), 3 runs. The 45 s version is the benchmark in BENCHMARKS.md."""
    traj = cart_dir / "ground_truth" / "CastaicLake_2022-12-20-11-40-28.txt"
    proc = run_rgbt("vio", "eval", "--trajectory", traj, "--start", "25", "--duration", "8", "--runs", "3",
                    "--normalization", "percentile", "--vocab", small_vocab, "--json", "--no-progress")
    data = json.loads(proc.stdout)
    assert len(data["runs"]) == 3 and data["synthetic"] is True
    assert data["meta"]["trajectory"].endswith("CastaicLake_2022-12-20-11-40-28.txt")
    # Limits: ORB-SLAM3 needs ~1 s of translation to initialise; measured 0.1-0.2 m Sim3 ATE on
    # 45 s of this flight. Over 8 s (~25 m) we require 60 % tracked and Sim3 ATE below 1 m: a
    # failed or mis-scaled track (homography flip, lost map) gives several metres.
    assert data["tracked_fraction"] >= 0.6
    assert data["ate_rmse"]["median"] is not None and data["ate_rmse"]["median"] < 1.0
    assert data["ate_full_rmse"]["median"] is not None

"""Issue 7 acceptance: `rgbt vio eval` on a >= 40 s SYNTHETIC thermal sequence from the simulator
(`rgbt simulate`, rendered along CART's real CastaicLake RTK trajectory) with ORB-SLAM3 monocular,
3 runs: tracked fraction and Sim3 ATE reported, within the limits justified below."""

from __future__ import annotations

import json

import pytest

from helpers import run_rgbt

pytest.importorskip("pyorbslam3")


@pytest.mark.slow
def test_vio_eval_40s_simulator_bag_over_cart_trajectory(cart_dir, tmp_path):
    traj = cart_dir / "ground_truth" / "CastaicLake_2022-12-20-11-40-28.txt"
    bag = tmp_path / "sim_castaic"
    run_rgbt("simulate", "--trajectory", traj, "--start", "25.65", "--duration", "40", "--seed", "0",
             "--cameras", "thermal", "--out", bag, "--json")
    proc = run_rgbt("vio", "eval", "--bag", bag, "--estimator", "orbslam3", "--runs", "3",
                    "--normalization", "temporal_clahe", "--pace", "0", "--json", "--no-progress",
                    "--out", tmp_path / "eval")  # as fast as it tracks: the same frames, no real-time wait
    data = json.loads(proc.stdout)
    assert len(data["runs"]) == 3 and data["synthetic"] is True
    # Limits. Measured on this flight (2026-11-29, 2 cores): 70-80 % of frames tracked, Sim3 ATE on
    # the tracked part 0.2-1.1 m over a ~100 m path (ORB-SLAM3 loses the map where the synthetic
    # ground becomes nearly featureless and does not always re-localise). A tracker that fails to
    # initialise tracks 0 %; a mis-scaled or mirrored map gives ATE of many metres. So: at least
    # half the frames tracked and a median Sim3 ATE below 3 m (3 % of the path).
    assert data["tracked_fraction"] >= 0.5
    assert data["ate_rmse"]["median"] is not None and data["ate_rmse"]["median"] < 3.0
    # the full-sequence score (untracked time penalised, never clipped) is reported beside it
    assert data["ate_full_rmse"]["median"] is not None
    assert data["ate_full_rmse"]["median"] >= data["ate_rmse"]["median"] - 1e-9

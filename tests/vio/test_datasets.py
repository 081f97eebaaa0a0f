"""Dataset folders (EuRoC / TUM-VI ASL layout, KITTI odometry) round-trip a simulated sequence.

SYNTHETIC data: the built-in synthetic loop sequence is written in each layout and read back;
frame count, stamps (to the nanosecond), calibration, IMU and ground truth must survive.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rgbt.errors import EvaluationError
from rgbt.vio.datasets import dataset_sequence, detect_format, write_asl, write_kitti
from rgbt.vio.sequence import synthetic_sequence


@pytest.fixture(scope="module")
def seq():  # type: ignore[no-untyped-def]
    return synthetic_sequence(duration_s=2.0, rate_hz=10.0, width=160, height=128, fx=128.0)


def _frames(s):  # type: ignore[no-untyped-def]
    return list(s.frames())


def test_euroc_round_trip(seq, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = write_asl(seq, tmp_path / "MH_sim")
    assert detect_format(root) == "euroc"
    back = dataset_sequence(root)
    a, b = _frames(seq), _frames(back)
    assert [t for t, _, _ in a] == [t for t, _, _ in b]
    for (_, x, _), (_, y, _) in zip(a, b):
        assert y.dtype == x.dtype and np.array_equal(x, y)  # 16-bit thermal kept losslessly
    np.testing.assert_allclose(back.camera.K, seq.camera.K)
    np.testing.assert_allclose(back.camera.T_imu_cam, seq.camera.T_imu_cam)
    np.testing.assert_array_equal(back.imu.t_ns, seq.imu.t_ns)
    np.testing.assert_allclose(back.imu.gyro, seq.imu.gyro, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(back.ground_truth.t_ns, seq.ground_truth.t_ns)
    np.testing.assert_allclose(back.ground_truth.positions, seq.ground_truth.positions, atol=1e-12)
    assert back.synthetic  # the SYNTHETIC label travels with the data


def test_kitti_round_trip(seq, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = write_kitti(seq, tmp_path / "00")
    assert detect_format(root) == "kitti"
    back = dataset_sequence(root, "kitti")
    a, b = _frames(seq), _frames(back)
    assert [t for t, _, _ in a] == [t for t, _, _ in b]
    assert all(np.array_equal(x, y) for (_, x, _), (_, y, _) in zip(a, b))
    np.testing.assert_allclose(back.camera.K, seq.camera.K)
    cam_gt = seq.ground_truth_camera()
    idx = np.searchsorted(cam_gt.t_ns, back.ground_truth.t_ns)
    exact = cam_gt.t_ns[np.minimum(idx, len(cam_gt) - 1)] == back.ground_truth.t_ns
    np.testing.assert_allclose(back.ground_truth.positions[exact], cam_gt.positions[idx[exact]], atol=1e-9)
    assert len(back.imu) == 0 and back.meta["imu"] is False


def test_clip_keeps_the_window(seq, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = write_asl(seq, tmp_path / "clip")
    back = dataset_sequence(root, start_s=0.5, duration_s=1.0)
    stamps = [t for t, _, _ in back.frames()]
    t0 = next(iter(seq.frames()))[0]
    assert stamps[0] == t0 + 500_000_000 and stamps[-1] < t0 + 1_500_000_000 and len(stamps) == 10


def test_missing_calibration_names_the_file(seq, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = write_asl(seq, tmp_path / "nocal")
    (root / "mav0" / "cam0" / "sensor.yaml").unlink()
    with pytest.raises(EvaluationError, match=r"sensor\.yaml"):
        dataset_sequence(root)


def test_unknown_folder_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(EvaluationError, match="no known dataset layout"):
        detect_format(tmp_path)


def test_ground_truth_without_time_overlap_names_both_ranges(seq, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from rgbt.vio.eval import _require_overlap

    gt = seq.ground_truth
    with pytest.raises(EvaluationError, match=r"covers .* but the camera frames cover"):
        _require_overlap("seq", int(gt.t_ns[-1]) + 10**9, int(gt.t_ns[-1]) + 2 * 10**9, gt)
    _require_overlap("seq", int(gt.t_ns[0]), int(gt.t_ns[-1]), gt)  # overlapping: no error


def test_identity_orientations_are_position_only(seq) -> None:  # type: ignore[no-untyped-def]
    from rgbt.eval.trajectory import Trajectory

    gt = seq.ground_truth
    assert not gt.position_only
    flat = Trajectory(gt.t_ns, gt.positions, np.tile([1.0, 0, 0, 0], (len(gt), 1)))
    assert flat.position_only


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["euroc", "kitti"])
def test_simulate_writes_the_dataset_layout(fmt: str, tmp_path: Path, rgbt_cli) -> None:  # type: ignore[no-untyped-def]
    """``rgbt simulate --format`` (SYNTHETIC): the folder reads back with the bag's frames and stamps."""
    from rgbt.vio.sequence import bag_sequence

    out = tmp_path / fmt
    rgbt_cli("simulate", "--trajectory", "circle", "--duration", "1.5", "--cameras", "thermal", "--format", fmt,
             "--labels-every", "0", "--label-topic-every", "0", "--out", out, "--json")
    from_bag = bag_sequence(out / "bag", camera="thermal")
    from_dir = dataset_sequence(out)
    assert detect_format(out) == fmt and from_dir.synthetic
    bag_frames = [(t, img) for t, img, _ in from_bag.frames()]
    dir_frames = [(t, img) for t, img, _ in from_dir.frames()]
    assert [t for t, _ in bag_frames] == [t for t, _ in dir_frames] and len(bag_frames) > 60
    if fmt == "kitti":  # KITTI's convention: rectified frames, no distortion in calib.txt (OpenCV as reference)
        import cv2

        K, dist = from_bag.camera.K, from_bag.camera.dist
        assert np.any(dist) and np.array_equal(from_dir.camera.K, K)
        for (_, a), (_, b) in zip(bag_frames, dir_frames):
            ref = cv2.undistort(a, K, dist).astype(np.int64)
            # OpenCV's fixed-point maps vs the float maps used here: within 1 % of the frame's range
            assert np.percentile(np.abs(ref - b), 99) <= 0.01 * np.ptp(a)
            assert np.abs(ref - a.astype(np.int64)).max() > 0.1 * np.ptp(a)  # it did undistort
    else:
        assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(bag_frames, dir_frames))
    if fmt == "euroc":
        np.testing.assert_array_equal(from_dir.imu.t_ns, from_bag.imu.t_ns)
        np.testing.assert_allclose(from_dir.camera.K, from_bag.camera.K)


@pytest.mark.slow
def test_vio_eval_over_several_datasets_writes_one_table(tmp_path: Path, rgbt_cli) -> None:  # type: ignore[no-untyped-def]
    """SYNTHETIC: two KITTI-layout folders, ORB-SLAM3 mono, one Table-6 layout (MD + CSV + JSON); a
    sequence too short to score is a result in the table, not an error (exit 0)."""
    import json

    write_kitti(synthetic_sequence(8.0), tmp_path / "long")
    write_kitti(synthetic_sequence(0.6), tmp_path / "short")
    out = tmp_path / "t6"
    proc = rgbt_cli("vio", "eval", "--dataset", tmp_path / "long", "--dataset", tmp_path / "short", "--runs", "1",
                    "--pace", "0", "--no-progress", "--json", "--out", out)
    data = json.loads(proc.stdout)
    by_name = {r["sequence"]: r for r in data["sequences"]}
    assert by_name["long"]["ate_rmse"]["mean"] < 0.5 and by_name["long"]["tracked_fraction"] > 0.8
    assert by_name["short"]["ate_rmse"]["mean"] is None
    assert "| long (synthetic) |" in data["table_md"] and "— (" in data["table_md"]
    rows = (out / "table.csv").read_text().splitlines()
    assert len(rows) == 3 and rows[1].startswith("long,True,orbslam3,mono")
    assert (out / "long" / "result.json").is_file() and (out / "table.md").is_file()

"""Replay inputs beyond EuRoC / KITTI: TUM RGB-D folders, CART's ROS 1 layout, bag topic choice, the
estimated ground-truth clock offset and estimators that cannot run here. SYNTHETIC data throughout:
the simulator's or the synthetic loop's sequences, written in each layout and read back exactly.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rgbt.errors import EvaluationError
from rgbt.eval.trajectory import Trajectory
from rgbt.vio.datasets import dataset_sequence, detect_format, write_tum_rgbd
from rgbt.vio.sequence import Sequence, synthetic_sequence


@pytest.fixture(scope="module")
def seq():  # type: ignore[no-untyped-def]
    return synthetic_sequence(duration_s=1.0, rate_hz=10.0, width=96, height=80, fx=80.0)


def _frames(s):  # type: ignore[no-untyped-def]
    return list(s.frames())


def test_tum_rgbd_round_trip(seq, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = write_tum_rgbd(seq, tmp_path / "rgbd_dataset_sim")
    assert detect_format(root) == "tum"
    back = dataset_sequence(root)
    a, b = _frames(seq), _frames(back)
    assert [t for t, _, _ in a] == [t for t, _, _ in b]  # stamps to the nanosecond
    assert all(x.dtype == y.dtype and np.array_equal(x, y) for (_, x, _), (_, y, _) in zip(a, b))
    np.testing.assert_allclose(back.camera.K, seq.camera.K, rtol=0, atol=1e-12)
    cam_gt = seq.ground_truth_camera()  # TUM RGB-D: the ground truth is the camera's
    np.testing.assert_array_equal(back.ground_truth.t_ns, cam_gt.t_ns)
    np.testing.assert_allclose(back.ground_truth.positions, cam_gt.positions, atol=1e-9)
    np.testing.assert_allclose(np.abs(np.sum(back.ground_truth.quat_wxyz * cam_gt.quat_wxyz, axis=1)), 1, atol=1e-8)
    assert len(back.imu) == 0 and back.meta["imu"] is False and back.synthetic
    assert np.array_equal(back.camera.T_imu_cam, np.eye(4))


def test_tum_rgbd_colour_frames_reach_the_estimator_as_grayscale(seq, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import cv2

    def rgb_frames():  # type: ignore[no-untyped-def]
        for t, img, ffc in seq.frames():
            g = (img >> 8).astype(np.uint8)
            yield t, np.dstack([g, g // 2, 255 - g]), ffc

    colour = Sequence("colour", seq.camera, rgb_frames, seq.imu, seq.ground_truth, synthetic=True)
    back = dataset_sequence(write_tum_rgbd(colour, tmp_path / "c"), "tum")
    for (_, rgb, _), (_, gray, _) in zip(rgb_frames(), back.frames(), strict=True):
        assert gray.dtype == np.uint8 and np.array_equal(gray, cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY))


def test_tum_rgbd_without_calibration_names_the_file_and_takes_calib(seq, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = write_tum_rgbd(seq, tmp_path / "nocal")
    (root / "sensor.yaml").rename(tmp_path / "cam.yaml")
    with pytest.raises(EvaluationError, match=r"nocal/sensor\.yaml: camera calibration not found.*--calib"):
        dataset_sequence(root)
    assert np.allclose(dataset_sequence(root, calib=tmp_path / "cam.yaml").camera.K, seq.camera.K)


@pytest.fixture(scope="module")
def cart_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``rgbt simulate --format cart-ros1`` (SYNTHETIC, 1 s, thermal only)."""
    from helpers import run_rgbt

    out = tmp_path_factory.mktemp("cart") / "sim_flight"
    run_rgbt("simulate", "--trajectory", "circle", "--duration", "1.0", "--cameras", "thermal", "--format",
             "cart-ros1", "--labels-every", "0", "--label-topic-every", "0", "--out", out, "--json")
    return out


@pytest.mark.slow
def test_cart_ros1_layout_round_trips_against_the_mcap_bag(cart_dir: Path) -> None:
    from rgbt.bag import open_bag
    from rgbt.vio.sequence import bag_sequence

    assert detect_format(cart_dir) == "cart"
    with open_bag(cart_dir / "sim_flight.bag") as bag:
        assert bag.kind == "ros1" and bag.synthetic
        assert {"/imu/imu", "/boson/thermal/image_raw"} <= set(bag.topics)
    gt_text = (cart_dir / "ground_truth" / "sim_flight.txt").read_text().splitlines()
    assert gt_text[0] == "# timestamp tx ty tz qx qy qz qw"
    assert gt_text[1].endswith(" 0.00000000 0.00000000 0.00000000 1.00000000")
    assert len(gt_text[1].split()[0].split(".")[1]) == 8  # CART's %.8f seconds
    mcap = bag_sequence(cart_dir / "bag")
    ros1 = dataset_sequence(cart_dir)
    assert ros1.meta["format"] == "cart" and ros1.synthetic and ros1.ground_truth.position_only
    a, b = _frames(mcap), _frames(ros1)
    assert [t for t, _, _ in a] == [t for t, _, _ in b] and len(a) > 40
    assert all(np.array_equal(x, y) for (_, x, _), (_, y, _) in zip(a, b))
    np.testing.assert_array_equal(ros1.imu.t_ns, mcap.imu.t_ns)
    np.testing.assert_array_equal(ros1.imu.accel, mcap.imu.accel)
    np.testing.assert_array_equal(ros1.camera.K, mcap.camera.K)
    np.testing.assert_array_equal(ros1.camera.T_imu_cam, mcap.camera.T_imu_cam)
    np.testing.assert_array_equal(ros1.ground_truth.t_ns, mcap.ground_truth.t_ns)
    np.testing.assert_allclose(ros1.ground_truth.positions, mcap.ground_truth.positions, rtol=0, atol=5.1e-9)


@pytest.mark.slow
def test_cart_clip_follows_sequences_md_from_the_bag_start(cart_dir: Path, tmp_path: Path) -> None:
    import shutil

    from rgbt.bag import open_bag
    from rgbt.vio.cart import cart_sequence

    root = tmp_path / "clip"
    shutil.copytree(cart_dir, root, ignore=shutil.ignore_patterns("bag"))
    (root / "ground_truth" / "SEQUENCES.md").write_text("| Bag_Name | bag_sart | bag_durr |\n| --- | --- | --- |\n"
                                                        "| sim_flight | 0.3 | 0.4 |\n")
    with open_bag(root / "sim_flight.bag") as bag:
        t0 = bag.start_ns
    stamps = [t for t, _, _ in cart_sequence(root).frames()]
    assert stamps and stamps[0] >= t0 + 300_000_000 and stamps[-1] < t0 + 700_000_000
    assert len(stamps) == len([t for t, _, _ in cart_sequence(root, start_s=0.0, duration_s=-1).frames()
                               if t0 + 300_000_000 <= t < t0 + 700_000_000])


@pytest.mark.slow
def test_bag_topics_from_the_command_line_and_missing_ones_named(cart_dir: Path) -> None:
    from rgbt.vio.sequence import bag_sequence

    bag = cart_dir / "sim_flight.bag"
    gt = cart_dir / "ground_truth" / "sim_flight.txt"
    seq = bag_sequence(bag, ground_truth=gt, camera_topic="/boson/thermal/image_raw", imu_topic="/imu/imu")
    assert seq.meta["camera_topic"] == "/boson/thermal/image_raw" and len(seq.imu) > 100
    with pytest.raises(EvaluationError, match=r"sim_flight\.bag: no topic /flir/image \(--camera-topic\): expected "
                                              r"one of its sensor_msgs/msg/Image topics \['/boson/thermal/image_raw'\]"):
        bag_sequence(bag, ground_truth=gt, camera_topic="/flir/image")
    with pytest.raises(EvaluationError, match=r"topic /boson/thermal/image_raw \(--imu-topic\) is sensor_msgs/msg/Image"):
        bag_sequence(bag, ground_truth=gt, imu_topic="/boson/thermal/image_raw")
    with pytest.raises(EvaluationError, match=r"camera 'color' topic /eo/color/image_raw missing"):
        bag_sequence(bag, ground_truth=gt, camera="color")


def test_estimated_clock_offset_recovers_a_known_shift(seq) -> None:  # type: ignore[no-untyped-def]
    """The estimate (positions only, sim3: scale, rotation and translation unknown, 2 cm noise) finds
    the offset the ground-truth clock was shifted by, within 3 ms (noise moves the minimum by a few ms)."""
    from rgbt.vio.ground_truth import estimate_time_offset, shift_ground_truth

    long = synthetic_sequence(duration_s=12.0, rate_hz=10.0, width=32, height=32, fx=20.0)
    gt = long.ground_truth_camera()
    t = gt.t_ns[(gt.t_ns >= gt.t_ns[0] + 1_500_000_000) & (gt.t_ns <= gt.t_ns[-1] - 1_500_000_000)][::5]
    truth = gt.positions[np.searchsorted(gt.t_ns, t)]
    c, s_ = np.cos(0.7), np.sin(0.7)
    rot = np.array([[c, -s_, 0], [s_, c, 0], [0, 0, 1.0]])
    est = 0.3 * truth @ rot.T + [5.0, -2.0, 1.0] + np.random.default_rng(0).normal(0, 0.006, truth.shape)
    late = shift_ground_truth(Trajectory(gt.t_ns, gt.positions, np.tile([1.0, 0, 0, 0], (len(gt), 1))), 0.137)
    found = estimate_time_offset(t, est, late, align="sim3")
    assert abs(found["offset_s"] + 0.137) <= 0.003, found  # 3 ms: 3 % of a frame period
    assert found["ate_rmse_at_offset"] < found["ate_rmse_at_zero"] and not found["at_search_edge"]
    assert found["determinable"] and found["offset_s"] == found["estimate_s"]


def test_an_offset_the_motion_hides_is_reported_not_applied() -> None:
    """Along a circle at constant speed a time shift is a rotation the sim3 alignment absorbs: the
    estimate says so and keeps 0 s instead of applying a meaningless minimum."""
    from rgbt.vio.ground_truth import estimate_time_offset

    t = np.arange(0, 20_000_000_000, 50_000_000, dtype=np.int64)
    ang = 2 * np.pi * t / 20e9
    xyz = np.c_[30 * np.cos(ang), 30 * np.sin(ang), np.full(len(t), 20.0)]
    gt = Trajectory(t, xyz, np.tile([1.0, 0, 0, 0], (len(t), 1)))
    est = xyz[::4] + np.random.default_rng(1).normal(0, 0.05, xyz[::4].shape)
    found = estimate_time_offset(t[::4], est, gt)
    assert not found["determinable"] and found["offset_s"] == 0.0 and "not observable" in found["method"]


def test_an_estimator_that_cannot_run_here_is_a_result_not_an_error(seq) -> None:  # type: ignore[no-untyped-def]
    from rgbt.vio.eval import EvalOptions, evaluate_sequence
    from rgbt.vio.report import csv_rows, markdown_table

    data = evaluate_sequence(seq, EvalOptions(estimator="vins", runs=1)).to_dict()
    assert data["status"].startswith(("not installed", "not replayable yet")) and data["runs"] == []
    assert data["ate_rmse"]["mean"] is None and data["ground_truth"]["position_only"] is False
    table = markdown_table([data])
    assert f"| {data['status'].split(':')[0]} |" in table and f"vins: {data['status']}." in table
    assert data["status"] in csv_rows([data])


def test_eight_bit_frames_go_unnormalized_and_a_requested_mode_is_an_error(seq) -> None:  # type: ignore[no-untyped-def]
    from rgbt.vio.eval import feed_normalization

    assert feed_normalization(seq, None) == ("temporal", 16)
    assert feed_normalization(seq, "fixed") == ("fixed", 16)

    def eight_bit():  # type: ignore[no-untyped-def]
        for t, img, ffc in seq.frames():
            yield t, (img >> 8).astype(np.uint8), ffc

    mono8 = Sequence("mono8", seq.camera, eight_bit, seq.imu, seq.ground_truth, meta={"dataset": "/data/mono8"})
    assert feed_normalization(mono8, None)[1] == 8
    with pytest.raises(EvaluationError, match=r"/data/mono8: frames are 8-bit \(uint8\) but --normalization "
                                              r"temporal was asked for"):
        feed_normalization(mono8, "temporal")

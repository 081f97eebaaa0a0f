"""The bag path of ``rgbt vio eval``: a SYNTHETIC sequence written as a rosbag2 MCAP bag with the C3
layout (stack topics, header stamps = trigger time, ``ground_truth_imu.tum`` in the bag directory),
read back through the C2 reader and evaluated with ORB-SLAM3 (temporal normalization, FFC dropped)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from helpers import run_rgbt
from rgbt.stack import Distortion, Intrinsics, dump_stack, load_stack
from rgbt.vio.sequence import bag_sequence, synthetic_sequence



def _write_bag(tmp_path, seq):
    from rgbt.bag.images import numpy_to_image_msg
    from rgbt.bag.types import ros2_typestore
    from rgbt.bag.writer import BagWriter

    stack = load_stack()
    K = seq.camera.K
    cam = stack.cameras["thermal"].model_copy(update={
        "intrinsics": Intrinsics(fx=K[0, 0], fy=K[1, 1], cx=K[0, 2], cy=K[1, 2]),
        "distortion": Distortion(model="none", coeffs=[]), "T_imu_cam": seq.camera.T_imu_cam.tolist(),
        "td_s": 0.0, "vio": None})
    stack = stack.model_copy(update={"cameras": {**stack.cameras, "thermal": cam}, "synthetic": True})
    stack_path = tmp_path / "stack.yaml"
    dump_stack(stack, stack_path)
    store = ros2_typestore()
    Imu = store.types["sensor_msgs/msg/Imu"]
    Header = store.types["std_msgs/msg/Header"]
    Time = store.types["builtin_interfaces/msg/Time"]
    Vec = store.types["geometry_msgs/msg/Vector3"]
    Quat = store.types["geometry_msgs/msg/Quaternion"]
    bag = tmp_path / "bag"
    frames = list(seq.frames())
    with BagWriter(bag, custom_data={"rgbt.synthetic": "true"}) as w:
        w.add_topic(cam.topic, "sensor_msgs/msg/Image")
        w.add_topic(stack.imu.topic, "sensor_msgs/msg/Imu")
        events = [(t, 0, i) for i, (t, _, _) in enumerate(frames)]
        events += [(int(t), 1, i) for i, t in enumerate(seq.imu.t_ns)]
        for t, kind, i in sorted(events):
            host = t + 2_000_000  # log time = host arrival, after the trigger
            if kind == 0:
                w.write_msg(cam.topic, host, numpy_to_image_msg(frames[i][1], t, "thermal", "mono16"))
            else:
                g, a = seq.imu.gyro[i], seq.imu.accel[i]
                cov = np.zeros(9)
                msg = Imu(header=Header(stamp=Time(sec=t // 10**9, nanosec=t % 10**9), frame_id="imu"),
                          orientation=Quat(x=0.0, y=0.0, z=0.0, w=1.0), orientation_covariance=cov,
                          angular_velocity=Vec(x=g[0], y=g[1], z=g[2]), angular_velocity_covariance=cov,
                          linear_acceleration=Vec(x=a[0], y=a[1], z=a[2]), linear_acceleration_covariance=cov)
                w.write_msg(stack.imu.topic, host, msg)
    seq.ground_truth.save_tum(bag / "ground_truth_imu.tum")
    return bag, stack_path, frames


@pytest.mark.slow
def test_bag_sequence_round_trip_and_eval(tmp_path, small_vocab):
    seq = synthetic_sequence(5.0, ffc_at_s=(2.5,))
    bag, stack_path, frames = _write_bag(tmp_path, seq)
    back = bag_sequence(bag, stack_path=stack_path, camera="thermal")
    assert back.synthetic is True and back.camera.td_s == 0.0
    assert np.array_equal(back.imu.t_ns, seq.imu.t_ns) and np.allclose(back.imu.accel, seq.imu.accel)
    got = list(back.frames())
    assert [t for t, _, _ in got] == [t for t, _, _ in frames]  # header stamps, not log times
    assert np.array_equal(got[10][1], frames[10][1])
    assert np.allclose(back.ground_truth.positions, seq.ground_truth.positions, atol=1e-8)

    pytest.importorskip("pyorbslam3")
    proc = run_rgbt("vio", "eval", "--bag", bag, "--stack", stack_path, "--estimator", "orbslam3", "--runs", "1",
                    "--normalization", "temporal", "--vocab", small_vocab, "--json", "--no-progress", "--pace", "0")
    data = json.loads(proc.stdout)
    assert data["synthetic"] is True and data["normalization"] == "temporal"
    assert data["meta"]["skipped_frozen"] >= 5  # the 0.4 s FFC freeze at 20 Hz never reaches ORB-SLAM3
    # 5 s, ~18 m of path: a working monocular track (see test_orbslam3_eval.py for the limits)
    assert data["tracked_fraction"] >= 0.6
    assert data["ate_rmse"]["median"] < 1.0


@pytest.mark.slow
def test_bag_without_ground_truth(tmp_path):
    seq = synthetic_sequence(0.5)
    bag, stack_path, _ = _write_bag(tmp_path, seq)
    (bag / "ground_truth_imu.tum").unlink()
    proc = run_rgbt("vio", "eval", "--bag", bag, "--stack", stack_path, "--runs", "1", "--json", check=False)
    assert proc.returncode == 2 and "ground truth not found" in proc.stderr

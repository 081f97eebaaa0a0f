"""Ground truth read from a topic of the bag itself (PoseStamped, NavSatFix), with a clock offset."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rgbt.bag.types import ros2_typestore
from rgbt.bag.writer import BagWriter
from rgbt.errors import EvaluationError
from rgbt.vio.ground_truth import ground_truth_from_bag

T0 = 1_700_000_000_000_000_000


def _write(path: Path) -> None:
    T = ros2_typestore().types
    with BagWriter(path, custom_data={"rgbt.synthetic": "true"}) as w:
        w.add_topic("/pose", "geometry_msgs/msg/PoseStamped")
        w.add_topic("/fix", "sensor_msgs/msg/NavSatFix")
        w.add_topic("/chatter", "std_msgs/msg/String")
        for i in range(20):
            t = T0 + i * 50_000_000
            header = T["std_msgs/msg/Header"](T["builtin_interfaces/msg/Time"](*divmod(t, 1_000_000_000)), "map")
            pose = T["geometry_msgs/msg/Pose"](T["geometry_msgs/msg/Point"](float(i), 2.0 * i, 0.5),
                                               T["geometry_msgs/msg/Quaternion"](0.0, 0.0, 0.0, 1.0))
            w.write_msg("/pose", t + 7, T["geometry_msgs/msg/PoseStamped"](header, pose))
            status = T["sensor_msgs/msg/NavSatStatus"](0 if i else -1, 1)  # the first fix is "no fix"
            fix = T["sensor_msgs/msg/NavSatFix"](header, status, 34.0 + i * 1e-5, -118.0, 100.0 + i,
                                                 np.zeros(9), 0)
            w.write_msg("/fix", t + 9, fix)
            w.write_msg("/chatter", t, T["std_msgs/msg/String"]("x"))


def test_pose_topic_stamps_from_headers_and_offset(tmp_path: Path) -> None:
    bag = tmp_path / "bag"
    _write(bag)
    gt = ground_truth_from_bag(bag, "/pose", offset_s=0.25)
    assert len(gt) == 20
    np.testing.assert_array_equal(gt.t_ns, T0 + 250_000_000 + np.arange(20) * 50_000_000)
    np.testing.assert_allclose(gt.positions[:, 1], 2.0 * np.arange(20))


def test_navsatfix_becomes_local_enu_positions_only(tmp_path: Path) -> None:
    bag = tmp_path / "bag"
    _write(bag)
    gt = ground_truth_from_bag(bag, "/fix")
    assert len(gt) == 19 and gt.position_only  # the no-fix message is skipped
    np.testing.assert_allclose(gt.positions[0], 0.0, atol=1e-9)
    north_step = gt.positions[1, 1] - gt.positions[0, 1]
    assert 1.10 < north_step < 1.12  # 1e-5 deg of latitude ~ 1.11 m
    np.testing.assert_allclose(np.diff(gt.positions[:, 2]), 1.0, atol=1e-6)


def test_wrong_topic_or_type_names_what_was_expected(tmp_path: Path) -> None:
    bag = tmp_path / "bag"
    _write(bag)
    with pytest.raises(EvaluationError, match="not in the bag"):
        ground_truth_from_bag(bag, "/nope")
    with pytest.raises(EvaluationError, match="std_msgs/msg/String: expected one of"):
        ground_truth_from_bag(bag, "/chatter")

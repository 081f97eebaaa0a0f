"""The `rgbt bag` command-line contract: info --json keys for ROS 1 and ROS 2, recover."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import run_rgbt
from rgbt.bag import BagWriter
from rgbt.bag.types import ros2_typestore


def _contract(info: dict) -> None:
    assert set(info) >= {"topics", "duration_s", "synthetic"}
    for entry in info["topics"].values():
        assert set(entry) >= {"type", "count", "rate_hz"}


@pytest.mark.slow
def test_info_json_ros1_and_ros2(ros1_bag: Path, bags_dir: Path) -> None:
    ros1 = json.loads(run_rgbt("bag", "info", ros1_bag, "--json").stdout)
    _contract(ros1)
    imu = ros1["topics"]["/imu/data"]
    assert (imu["type"], imu["count"], imu["known"]) == ("sensor_msgs/msg/Imu", 11865, True)
    assert abs(imu["rate_hz"] - 30.0) < 0.1 and ros1["synthetic"] is False
    for name in ("ros2_talker_sqlite3", "ros2_talker_mcap"):
        ros2 = json.loads(run_rgbt("bag", "info", bags_dir / name, "--json").stdout)
        _contract(ros2)
        assert ros2["topics"]["/topic"]["count"] == 10 and ros2["synthetic"] is False
        assert abs(ros2["duration_s"] - 4.531096768) < 1e-9


@pytest.mark.slow
def test_info_json_says_synthetic_and_recover_is_noop_on_finished(tmp_path: Path) -> None:
    String = ros2_typestore().types["std_msgs/msg/String"]
    with BagWriter(tmp_path / "syn", custom_data={"rgbt.synthetic": "true"}) as w:
        w.add_topic("/s", "std_msgs/msg/String")
        for i in range(5):
            w.write_msg("/s", 10**9 + i * 10**8, String(str(i)))
    info = json.loads(run_rgbt("bag", "info", tmp_path / "syn", "--json").stdout)
    _contract(info)
    assert info["synthetic"] is True and info["topics"]["/s"]["rate_hz"] == 10.0
    res = json.loads(run_rgbt("bag", "recover", tmp_path / "syn", "--json").stdout)
    assert res["recovered"] == {} and res["message_count"] == 5
    assert json.loads(run_rgbt("bag", "info", tmp_path / "syn", "--json").stdout)["synthetic"] is True

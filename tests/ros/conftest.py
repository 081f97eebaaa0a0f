"""Helpers for the ROS 2 tests: reading bags with rosbags directly (independent of rgbt.bag)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("rclpy", reason="ROS 2 wheels (ros-jazzy-rclpy) not installed")


def _read_bag(path: Path) -> dict[str, list[tuple[int, object, bytes]]]:
    """topic -> [(log time ns, deserialized message, raw CDR)] for a rosbag2 directory (rosbags AnyReader)."""
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    out: dict[str, list] = {}
    with AnyReader([Path(path)], default_typestore=get_typestore(Stores.ROS2_JAZZY)) as reader:
        for conn, t_ns, raw in reader.messages():
            out.setdefault(conn.topic, []).append((t_ns, reader.deserialize(raw, conn.msgtype), bytes(raw)))
    return out


@pytest.fixture
def read_bag():
    """``read_bag(path)`` -> {topic: [(log time ns, message, raw CDR)]} (rosbags AnyReader)."""
    return _read_bag

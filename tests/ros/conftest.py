"""Helpers for the ROS 2 tests: reading bags with rosbags directly (independent of rgbt.bag).

Nothing here needs rclpy: the ROS-free tests of this folder (state machines, pairing, profiles)
run without it; the tests that start rclpy are marked ``ros`` and skip, with the reason, where it
is absent (``tests/conftest.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest


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

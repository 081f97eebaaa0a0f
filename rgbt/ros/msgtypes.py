"""Message classes by name (``sensor_msgs/msg/Image`` -> the rclpy class) without rosidl_runtime_py."""

from __future__ import annotations

import importlib


def get_message(msgtype: str) -> type:
    """The rclpy message class for ``pkg/msg/Name`` (or ``pkg/Name``)."""
    parts = msgtype.split("/")
    if len(parts) == 2:
        parts = [parts[0], "msg", parts[1]]
    if len(parts) != 3 or parts[1] != "msg":
        raise ValueError(f"message type {msgtype!r}, expected 'package/msg/Name'")
    return getattr(importlib.import_module(f"{parts[0]}.msg"), parts[2])

"""rosbags message objects (ROS 1 or ROS 2) -> rclpy messages, field by field.

Used by replay for ROS 1 bags, whose raw bytes are not CDR. Fields the ROS 2 type lacks
(``header.seq``) are skipped; numpy arrays are handed over as they are (rclpy accepts them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rgbt.ros.msgtypes import get_message


def to_rclpy(src: Any, msgtype: str | type) -> Any:
    """A new rclpy message of ``msgtype`` filled from the rosbags object ``src``."""
    cls = get_message(msgtype) if isinstance(msgtype, str) else msgtype
    dst = cls()
    _fill(dst, src)
    return dst


def _fill(dst: Any, src: Any) -> None:
    for name, ftype in dst.get_fields_and_field_types().items():
        if not hasattr(src, name):
            continue
        value = getattr(src, name)
        current = getattr(dst, name)
        if hasattr(current, "get_fields_and_field_types"):
            _fill(current, value)
        elif ftype.startswith("sequence<") and "/" in ftype:  # sequence of messages
            inner = ftype[len("sequence<"):].split(",")[0].rstrip(">")
            pkg, _, typ = inner.partition("/")
            setattr(dst, name, [to_rclpy(v, f"{pkg}/msg/{typ}") for v in value])
        elif ftype.endswith("]") and "/" in ftype:  # fixed array of messages
            inner = ftype.split("[")[0]
            pkg, _, typ = inner.partition("/")
            setattr(dst, name, [to_rclpy(v, f"{pkg}/msg/{typ}") for v in value])
        elif isinstance(value, np.ndarray) and ftype == "sequence<uint8>":
            setattr(dst, name, value.tobytes())
        else:
            setattr(dst, name, value)

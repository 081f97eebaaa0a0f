"""numpy -> rosbags ``sensor_msgs/msg/Image``: the message builder of the bag code.

The codec itself (``image_to_numpy``, the encodings) is :mod:`rgbt.image.codec`, shared with the
live graph.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rgbt.bag.types import ros2_typestore
from rgbt.image.codec import dense_pixels


def numpy_to_image_msg(arr: np.ndarray, t_ns: int, frame_id: str, encoding: str) -> Any:
    """Build a rosbags ``sensor_msgs/msg/Image`` from ``arr`` (little-endian, dense rows).

    ``t_ns`` becomes ``header.stamp`` (int nanoseconds). ``arr`` must match ``encoding``'s dtype and
    channel count (e.g. ``mono16`` -> uint16 ``HxW``, ``rgb8`` -> uint8 ``HxWx3`` in RGB order).
    """
    arr, step = dense_pixels(np.asarray(arr), encoding)
    store = ros2_typestore()
    Image = store.types["sensor_msgs/msg/Image"]
    Header = store.types["std_msgs/msg/Header"]
    Time = store.types["builtin_interfaces/msg/Time"]
    sec, nanosec = divmod(int(t_ns), 1_000_000_000)
    height, width = arr.shape[:2]
    return Image(
        header=Header(stamp=Time(sec=sec, nanosec=nanosec), frame_id=frame_id),
        height=height, width=width, encoding=encoding, is_bigendian=0,
        step=step,
        data=arr.reshape(-1).view(np.uint8),
    )

"""numpy -> rclpy ``sensor_msgs.msg.Image``: the message builder of the ROS glue.

The codec itself (``image_to_numpy``, raw CDR ``cdr_to_image`` / ``image_to_cdr``, the encodings)
is :mod:`rgbt.image.codec`, shared with the bag code. Filling uses ``msg.data = arr.tobytes()``
(about 50 us for a 640x512 mono16 frame).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rgbt.image.codec import dense_pixels
from rgbt.stamps import ns_to_stamp


def numpy_to_image(arr: np.ndarray, t_ns: int, frame_id: str, encoding: str, msg: Any = None) -> Any:
    """A ``sensor_msgs.msg.Image`` (rclpy) holding ``arr`` (row-major, no padding, little-endian).

    ``encoding`` must agree with the array's dtype and channels (e.g. ``mono16`` <-> uint16 HxW).
    """
    from sensor_msgs.msg import Image


    dense, step = dense_pixels(arr, encoding)
    msg = msg or Image()
    ns_to_stamp(t_ns, msg.header.stamp)
    msg.header.frame_id = frame_id
    msg.height, msg.width = int(arr.shape[0]), int(arr.shape[1])
    msg.encoding = encoding
    msg.is_bigendian = 0
    msg.step = step
    msg.data = dense.tobytes()
    return msg

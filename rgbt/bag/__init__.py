"""Bag I/O: read ROS 1 / ROS 2 bags, write rosbag2 MCAP bags (split, crash-safe), images <-> numpy.

Main entry points: :func:`open_bag` (reader), :class:`BagWriter`, :func:`numpy_to_image_msg`
(image decoding: ``rgbt.image.codec.image_to_numpy``), :data:`CART_RENAMES`, :func:`clip_window`.
"""

from rgbt.bag.images import numpy_to_image_msg
from rgbt.bag.reader import BagReader, Record, TopicInfo, open_bag
from rgbt.bag.renames import CART_RENAMES, clip_window
from rgbt.bag.writer import BagWriter

__all__ = ["CART_RENAMES", "BagReader", "BagWriter", "Record", "TopicInfo", "clip_window",
           "numpy_to_image_msg", "open_bag"]

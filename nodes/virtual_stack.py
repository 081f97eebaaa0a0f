"""Virtual sensor stack: publishes ``rgbt.sim.SimStack.samples()`` at the real rate, as the drivers would.

Frames and IMU samples go to the driver-level topics (host-stamped) with their counters on companion
``sensor_msgs/TimeReference`` topics (``source`` = counter, ``;ffc`` when frozen by a flat-field
correction); the trigger sync node restamps them onto the stack topics. GNSS, autopilot pose and
the armed state (``std_msgs/Bool`` on ``/rgbt/armed``, latched) go straight to their topics.
Samples marked ``dropped`` are never published. With ``manifest_path`` set, a JSON manifest of what
was published (counts, CRC32 and true trigger time of every frame) is written at exit.
"""

from __future__ import annotations

import json
import threading
import time
import zlib

from geometry_msgs.msg import PoseStamped
from scipy.spatial.transform import Rotation  # noqa: F401  (imported lazily below when available)
from sensor_msgs.msg import Imu, NavSatFix, TimeReference
from std_msgs.msg import Bool

from rgbt.ros.image import numpy_to_image
from rgbt.ros.node import RgbtNode
from rgbt.ros.options import ARMED_TOPIC, TRIGGER_TOPIC, VirtualStackOptions
from rgbt.ros.qos import qos_profile
from rgbt.ros.spin import node_main
from rgbt.ros.stamps import ns_to_stamp

"""Every fixed topic name of the graph, and topic -> ROS 2 message type tables: one place.

The stack's sensor topics (cameras, IMU, GNSS, autopilot) come from ``calib/stack.yaml``
(:class:`rgbt.stack.Stack`); the topics here are the ones rgbt itself names. Core layer: no rclpy.
"""

from __future__ import annotations

from typing import Any

# -- message types -----------------------------------------------------------------------------
IMAGE = "sensor_msgs/msg/Image"
IMU = "sensor_msgs/msg/Imu"
NAV_SAT_FIX = "sensor_msgs/msg/NavSatFix"
TIME_REFERENCE = "sensor_msgs/msg/TimeReference"
POSE_STAMPED = "geometry_msgs/msg/PoseStamped"
BOOL = "std_msgs/msg/Bool"
MAVROS_STATE = "mavros_msgs/msg/State"

# -- drivers and the trigger sync node -----------------------------------------------------------
#: topics between the (virtual or real) drivers and the trigger sync node: host-stamped frames and
#: their frame counters. The sync node republishes the frames restamped on the stack topics.
RAW_PREFIX = "/rgbt/raw"
#: the autopilot's armed state (``std_msgs/Bool``, latched)
ARMED_TOPIC = "/rgbt/armed"
#: one ``sensor_msgs/TimeReference`` per trigger pulse: header.stamp = host time, time_ref = the
#: pulse's time, source = the pulse index (decimal)
TRIGGER_TOPIC = "/rgbt/trigger"

# -- processing nodes' outputs -------------------------------------------------------------------
THERMAL_PREFIX = "/rgbt/thermal"  # thermal_preprocess: image_float, image_mono8, image_color
THERMAL_MONO8_TOPIC = f"{THERMAL_PREFIX}/image_mono8"
RECTIFIED_PREFIX = "/rgbt/rectified"  # rectify: <prefix>/<camera>
RECTIFIED_COLOR_TOPIC = f"{RECTIFIED_PREFIX}/color"
RECTIFIED_THERMAL_TOPIC = f"{RECTIFIED_PREFIX}/thermal"
SEG_PREFIX = "/rgbt/seg"  # segmentation: class_ids, color
SEG_CLASS_IDS_TOPIC = f"{SEG_PREFIX}/class_ids"
FUSION_PREFIX = "/rgbt/fusion"  # RGB-T fusion on the rectified colour canvas
FUSION_CLASS_IDS_TOPIC = f"{FUSION_PREFIX}/class_ids"
HEALTH_TOPIC = "/rgbt/health"
THERMAL_QUERY_SERVICE = "/rgbt/thermal_query"
THERMAL_QUERY_REQUEST_TOPIC = f"{THERMAL_QUERY_SERVICE}/request"
THERMAL_QUERY_RESPONSE_TOPIC = f"{THERMAL_QUERY_SERVICE}/response"
#: the VIO bridge's reliable IMU relay (what ``rgbt vio export`` writes into the estimator configs)
VIO_FEED_IMU_TOPIC = "/rgbt/vio/imu"

# -- the simulator's extra topics ----------------------------------------------------------------
GT_TOPIC = "/rgbt/sim/ground_truth/imu_pose"
LABEL_PREFIX = "/rgbt/sim/labels/"
LABEL_TOPICS = {"thermal": f"{LABEL_PREFIX}thermal", "color": f"{LABEL_PREFIX}color"}
#: per IMU sample: header.stamp = the IMU sample's stamp, time_ref = the last trigger pulse (so
#: header.stamp - time_ref = VN-100 "time since SyncIn"), source = SyncIn count (decimal)
IMU_SYNC_TOPIC = "/rgbt/sim/imu_syncin"

# -- bags ----------------------------------------------------------------------------------------
#: the ROS 1 bag topic that carries rgbt's bag metadata
ROS1_METADATA_TOPIC = "/rgbt/bag_metadata"


def time_reference_topic(fix_topic: str) -> str:
    """The GNSS driver's ``sensor_msgs/TimeReference`` topic (the fix's UTC) beside its fix topic:
    the sibling ``time_reference`` (``/gps/fix`` -> ``/gps/time_reference``, as nmea_navsat_driver)."""
    return fix_topic.rsplit("/", 1)[0] + "/time_reference"


def unlocked_topic(kind: str, raw_prefix: str = RAW_PREFIX) -> str:
    """Where the trigger sync node puts a stream's frames (IMU samples) from before its lock,
    host-stamped: never on the restamped stack topics."""
    return f"{raw_prefix}/{kind}/unlocked"


def vio_feed_image_topic(camera: str) -> str:
    """The VIO bridge's mono8 feed topic of ``camera`` (``/rgbt/vio/<camera>/image_mono8``)."""
    return f"/rgbt/vio/{camera}/image_mono8"


def _sensor_topic_types(stack: Any, cameras: list[str]) -> dict[str, str]:
    """Topic -> message type of the ``cameras`` of the stack, its IMU and its GNSS (in that order)."""
    types = {stack.camera(c).topic: IMAGE for c in cameras}
    types[stack.imu.topic] = IMU
    types[stack.gnss.topic] = NAV_SAT_FIX
    return types


def stack_topic_types(stack: Any) -> dict[str, str]:
    """Topic -> ROS 2 message type of everything the stack publishes (what the recorder records):
    the cameras, IMU, GNSS, autopilot pose and global position, the armed state and the trigger."""
    types = _sensor_topic_types(stack, list(stack.cameras))
    types[stack.autopilot.pose_topic] = POSE_STAMPED
    types[stack.autopilot.global_topic] = NAV_SAT_FIX
    types[ARMED_TOPIC] = BOOL
    types[TRIGGER_TOPIC] = TIME_REFERENCE
    return types


def sim_topic_types(stack: Any, cameras: list[str], labels: bool = True) -> dict[str, str]:
    """Topic -> message type of a simulated bag (in the order its connections are written): the
    simulated ``cameras``, IMU, GNSS, autopilot streams, ground truth, trigger, IMU SyncIn and (with
    ``labels``) the label images of the simulated cameras."""
    topics = _sensor_topic_types(stack, cameras)
    topics[stack.autopilot.global_topic] = NAV_SAT_FIX
    topics[stack.autopilot.pose_topic] = POSE_STAMPED
    topics[stack.autopilot.state_topic] = MAVROS_STATE
    topics[GT_TOPIC] = POSE_STAMPED
    topics[TRIGGER_TOPIC] = TIME_REFERENCE
    topics[IMU_SYNC_TOPIC] = TIME_REFERENCE
    if labels:
        for cam, topic in LABEL_TOPICS.items():
            if cam in cameras:
                topics[topic] = IMAGE
    return topics

"""Message types: rosbags' ROS 2 Jazzy typestore plus the few types it lacks.

Types not shipped with rosbags (e.g. ``mavros_msgs/msg/State``) are registered from their
``.msg`` text, exactly as ROS 2 defines them, so their CDR and RIHS01 hash match a real install.
"""

from __future__ import annotations

from functools import lru_cache

from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore

# mavros_msgs/msg/State (mavros 2.x, ROS 2); constants omitted: they are not part of the wire format.
MAVROS_STATE_MSG = """\
std_msgs/Header header
bool connected
bool armed
bool guided
bool manual_input
string mode
uint8 system_status
"""

#: Extra message definitions (ROS 2 ``.msg`` text) keyed by full type name.
CUSTOM_MSGS: dict[str, str] = {
    "mavros_msgs/msg/State": MAVROS_STATE_MSG,
}


def register_msg(typestore: Typestore, msgtype: str, msg_text: str) -> None:
    """Register one ``.msg`` definition (and the types it embeds) in ``typestore``."""
    typestore.register(get_types_from_msg(msg_text, msgtype))


def new_ros2_typestore() -> Typestore:
    """A fresh ROS 2 Jazzy typestore with :data:`CUSTOM_MSGS` registered (safe to extend)."""
    store = get_typestore(Stores.ROS2_JAZZY)
    for name, text in CUSTOM_MSGS.items():
        register_msg(store, name, text)
    return store


@lru_cache(maxsize=1)
def ros2_typestore() -> Typestore:
    """The shared ROS 2 Jazzy + rgbt typestore (treat as read-only; extend a
    :func:`new_ros2_typestore` instead)."""
    return new_ros2_typestore()


@lru_cache(maxsize=1)
def ros1_typestore() -> Typestore:
    """rosbags' ROS 1 Noetic typestore (fallback for ROS 1 bags whose connections lack a msgdef)."""
    return get_typestore(Stores.ROS1_NOETIC)

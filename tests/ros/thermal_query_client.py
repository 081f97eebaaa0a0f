"""Peer process of ``test_thermal_query_service.py``: publishes one synthetic thermal frame and class
mask, then asks the thermal query node over its typed service (``rgbt_interfaces/srv/ThermalQuery``)
and once over the JSON fallback topics; prints one JSON object per answer on stdout.

Run with ``rgbt_interfaces`` importable (``PYTHONPATH`` / ``LD_LIBRARY_PATH`` of its build).
``argv[1]``: a JSON list of typed requests (dicts of request fields, ``mode`` as a constant name).
The frame: 64x80 at 20 degC with a 55 degC box (x 30..49, y 10..19) labelled class 5, stamp 123 ns.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import rclpy
from rgbt_interfaces.srv import ThermalQuery
from sensor_msgs.msg import Image
from std_msgs.msg import String

from rgbt.image.radiometry import celsius_to_tlinear
from rgbt.ros.image import numpy_to_image
from rgbt.ros.qos import qos_profile

STAMP_NS = 123
TIMEOUT_S = 30.0


def frames() -> tuple[np.ndarray, np.ndarray]:
    temps = np.full((64, 80), 20.0)
    temps[10:20, 30:50] = 55.0
    classes = np.zeros((64, 80), np.uint8)
    classes[10:20, 30:50] = 5
    return celsius_to_tlinear(temps, gain="high"), classes


def call(node, client, fields: dict) -> dict:  # type: ignore[no-untyped-def]
    req = ThermalQuery.Request()
    for key, value in fields.items():
        setattr(req, key, getattr(ThermalQuery.Request, value) if key == "mode" and isinstance(value, str) else value)
    future = client.call_async(req)
    rclpy.spin_until_future_complete(node, future, timeout_sec=TIMEOUT_S)
    if not future.done():
        raise SystemExit(f"no answer to {fields} within {TIMEOUT_S} s")
    resp = future.result()
    return {name: getattr(resp, name) for name in resp.get_fields_and_field_types()}


def main() -> int:
    requests = json.loads(sys.argv[1])
    rclpy.init()
    node = rclpy.create_node("thermal_query_test_client")
    pub_t = node.create_publisher(Image, "/q/thermal", qos_profile("sensor_data"))
    pub_c = node.create_publisher(Image, "/q/classes", qos_profile("sensor_data"))
    json_req = node.create_publisher(String, "/rgbt/thermal_query/request", qos_profile("reliable"))
    json_answers: list[dict] = []
    node.create_subscription(String, "/rgbt/thermal_query/response",
                             lambda m: json_answers.append(json.loads(m.data)), qos_profile("reliable"))
    client = node.create_client(ThermalQuery, "/rgbt/thermal_query")
    if not client.wait_for_service(timeout_sec=TIMEOUT_S):
        raise SystemExit(f"service /rgbt/thermal_query not offered within {TIMEOUT_S} s")
    deadline = time.monotonic() + TIMEOUT_S
    while not (pub_t.get_subscription_count() and pub_c.get_subscription_count() and json_req.get_subscription_count()):
        if time.monotonic() > deadline:
            raise SystemExit("the node's subscriptions were not matched")
        rclpy.spin_once(node, timeout_sec=0.05)
    counts, classes = frames()
    # best-effort frames: publish until the node answers from this frame (its stamp) and knows the mask
    while True:
        pub_t.publish(numpy_to_image(counts, STAMP_NS, "thermal", "mono16"))
        pub_c.publish(numpy_to_image(classes, STAMP_NS, "thermal", "mono8"))
        probe = call(node, client, {"id": "probe", "mode": "MODE_CLASS", "class_id": 5})
        if probe["success"] and probe["stamp_ns"] == STAMP_NS:
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"the node never answered from the published frame: {probe}")
        time.sleep(0.1)
    for fields in requests:
        print(json.dumps(call(node, client, fields)), flush=True)
    json_req.publish(String(data=json.dumps({"id": "json", "pixel": [35, 12]})))
    while not json_answers:
        if time.monotonic() > deadline:
            raise SystemExit("no answer on the JSON fallback topics")
        rclpy.spin_once(node, timeout_sec=0.05)
    print(json.dumps(json_answers[0]), flush=True)
    node.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

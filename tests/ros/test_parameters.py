"""Declared parameters through the real parameter service (``rcl_interfaces`` services of a node in
another process: what ``ros2 param list / describe / set`` call). Live changes take effect, others
are refused with the reason."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from rgbt.paths import REPO_ROOT
from rgbt.graph.options import OPTIONS

NODE = "/pre"


def test_every_option_of_every_node_has_a_parameter_type() -> None:
    pytest.importorskip("rclpy", reason="ROS 2 wheels (ros-jazzy-rclpy) not installed")
    from rgbt.ros.params import parameter_type

    for model in set(OPTIONS.values()):
        for name, field in model.model_fields.items():
            if parameter_type(field.annotation) is None:  # nested: declared per key
                assert typing_is_dict(field.annotation), (model.__name__, name)
        assert model.live <= set(model.model_fields), model.__name__


def typing_is_dict(annotation) -> bool:  # type: ignore[no-untyped-def]
    import typing

    return annotation is dict or typing.get_origin(annotation) is dict


class ParamClient:
    """Service clients of the node's parameter services, from a node in this (test) process."""

    def __init__(self, bg) -> None:  # type: ignore[no-untyped-def]
        from rcl_interfaces.srv import DescribeParameters, GetParameters, ListParameters, SetParameters

        self.bg = bg
        self.types = {"set": SetParameters, "get": GetParameters, "list": ListParameters,
                      "describe": DescribeParameters}
        self.clients = {k: bg.node.create_client(t, f"{NODE}/{k}_parameters") for k, t in self.types.items()}

    def call(self, kind: str, **fields):  # type: ignore[no-untyped-def]
        client = self.clients[kind]
        assert client.wait_for_service(timeout_sec=30), f"{NODE}/{kind}_parameters"
        future = client.call_async(self.types[kind].Request(**fields))
        deadline = time.monotonic() + 10
        while not future.done():
            assert time.monotonic() < deadline, f"{kind}_parameters did not answer"
            time.sleep(0.02)
        return future.result()

    def set(self, name: str, value):  # type: ignore[no-untyped-def]
        from rclpy.parameter import Parameter

        return self.call("set", parameters=[Parameter(name, value=value).to_parameter_msg()]).results[0]


@pytest.mark.slow
@pytest.mark.ros
def test_parameter_service_applies_live_changes_and_refuses_the_rest(ros_env: dict, tmp_path: Path) -> None:
    from sensor_msgs.msg import Image

    from rgbt.image.normalize import NormalizeOptions, Normalizer, to_uint8
    from rgbt.image.codec import image_to_numpy
    from rgbt.ros.image import numpy_to_image
    from rgbt.ros.qos import qos_profile
    from rgbt.ros.spin import BackgroundNode

    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen(
        [sys.executable, "-m", "rgbt.ros.spin", "--node", "pre:thermal_preprocess", "--ros-args",
         "-p", "input_topic:=/t/in", "-p", "output_prefix:=/t/out", "-p", "publish_float:=false",
         "-p", "publish_colormap:=false"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    bg = BackgroundNode("rgbt_test_params", period_s=0.02)
    out: list = []
    bg.node.create_subscription(Image, "/t/out/image_mono8", out.append, qos_profile("sensor_data", 10))
    pub = bg.node.create_publisher(Image, "/t/in", qos_profile("sensor_data"))
    bg.start()
    rng = np.random.default_rng(7)  # synthetic frame
    frame = rng.integers(20000, 30000, (48, 64), dtype=np.uint16)

    def mono8_now() -> np.ndarray:
        n = len(out)
        deadline = time.monotonic() + 10
        while len(out) == n:
            assert proc.poll() is None, proc.communicate()[0]
            assert time.monotonic() < deadline, "no mono8 output"
            pub.publish(numpy_to_image(frame, 1, "thermal", "mono16"))
            time.sleep(0.1)
        return image_to_numpy(out[-1]).copy()

    try:
        params = ParamClient(bg)
        # every option is declared with its (validated) value, defaults included
        names = set(params.call("list").result.names)
        assert {"low", "high", "clahe", "colormap", "input_topic", "input_depth", "nice", "stack_path"} <= names
        got = params.call("get", names=["low", "high", "input_topic"]).values
        assert (got[0].double_value, got[1].double_value, got[2].string_value) == (1.0, 99.0, "/t/in")
        desc = {d.name: d for d in params.call("describe", names=["low", "input_topic"]).descriptors}
        assert not desc["low"].read_only and "live" in desc["low"].description
        assert desc["input_topic"].read_only and "restart" in desc["input_topic"].description

        before = mono8_now()
        assert np.array_equal(before, to_uint8(Normalizer(NormalizeOptions(low=1.0, high=99.0, clahe=True))(frame)))

        # live: takes effect on the next frame
        for name, value in (("clahe", False), ("low", 10.0), ("high", 90.0)):
            result = params.set(name, value)
            assert result.successful, (name, result.reason)
        expected = to_uint8(Normalizer(NormalizeOptions(low=10.0, high=90.0, clahe=False))(frame))
        deadline = time.monotonic() + 10
        while not np.array_equal(mono8_now(), expected):
            assert time.monotonic() < deadline, "the live change did not take effect"
        assert params.call("get", names=["low"]).values[0].double_value == 10.0

        # refused, each with its reason; the value stays
        refused = {
            "input_topic": ("/t/other", "read-only"),  # needs a restart
            "high": (5.0, "low"),  # low 10 >= high 5: the normalizer's own check
            "colormap": ("no-such-map", "ironbow"),  # names the valid ones
            "low": (3, "type"),  # an integer for a double
            "not_an_option": (1.0, ""),  # undeclared
        }
        for name, (value, why) in refused.items():
            result = params.set(name, value)
            assert not result.successful, name
            assert why in result.reason, (name, result.reason)
        assert params.call("get", names=["input_topic", "high"]).values[0].string_value == "/t/in"
        assert params.call("get", names=["high"]).values[0].double_value == 90.0
        assert np.array_equal(mono8_now(), expected)  # still the accepted settings
    finally:
        bg.close()
        proc.terminate()
        log, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, log
    assert "parameter change refused" in log

"""The benchmark helper writes what it claims: the CART stack's streams at their rates."""

from __future__ import annotations

from pathlib import Path

from rgbt.bag.writer import FULL_STACK_STREAMS, full_stack_data_rate_mb_s, measure_write_rate
from rgbt.stack import load_stack


def test_streams_match_the_stack_model() -> None:
    stack = load_stack()
    cams = {c.topic: c for c in stack.cameras.values()}
    for topic, msgtype, encoding, width, height, rate in FULL_STACK_STREAMS:
        if encoding:
            cam = cams[topic]
            assert (cam.encoding, cam.width, cam.height, cam.rate_hz) == (encoding, width, height, rate)
        else:
            assert (topic, rate, msgtype) == (stack.imu.topic, stack.imu.rate_hz, "sensor_msgs/msg/Imu")
    images = sum(c.width * c.height * {"mono16": 2, "rgb8": 3, "mono8": 1}[c.encoding] * c.rate_hz
                 for c in stack.cameras.values())
    assert abs(full_stack_data_rate_mb_s() - images / 1e6) < 1e-9


def test_measure_write_rate_writes_the_stack_volume(tmp_path: Path) -> None:
    res = measure_write_rate(0.2, tmp_path, repeats=1)
    # 0.2 s of stack time: 12 thermal + 6 colour + 6 mono frames + 40 IMU samples
    assert res["messages"] == 64
    assert res["bytes"] >= 0.2 * full_stack_data_rate_mb_s() * 1e6
    assert res["file_bytes"] >= res["bytes"]
    assert res["mb_s"] > 0 and res["read_mb_s"] > 0 and len(res["runs_mb_s"]) == 1
    assert list(tmp_path.iterdir()) == []  # the temporary bag is removed

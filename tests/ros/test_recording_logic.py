"""The recorder's state machine (``rgbt.graph.recording``) without ROS: debounce, re-arm, pre-arm rate
check, manifests; bags written by the real C2 ``BagWriter`` and read back by rosbags."""

from __future__ import annotations

import json
from pathlib import Path

import rgbt.bag.writer  # noqa: F401  (the C2 writer the recording uses: a broken import fails here)
from rgbt.bag.types import ros2_typestore
from rgbt.graph.options import RecorderOptions
from rgbt.graph.recording import MANIFEST, Recording

S = 1_000_000_000


def _raw(text: str) -> bytes:
    store = ros2_typestore()
    return bytes(store.serialize_cdr(store.types["std_msgs/msg/String"](data=text), "std_msgs/msg/String"))


def _recording(tmp_path: Path, **kw) -> Recording:  # type: ignore[no-untyped-def]
    rec = Recording(RecorderOptions(out_dir=str(tmp_path / "bags"), min_free_mb=10, **kw), log=lambda m: None)
    rec.add_topic("/a", "std_msgs/msg/String")
    return rec


def test_disarm_is_debounced_and_a_quick_rearm_keeps_the_bag(tmp_path: Path, read_bag) -> None:
    rec = _recording(tmp_path, start="arm", debounce_s=2.0)
    rec.on_message("/a", _raw("before arm"), 1 * S)  # not recorded: not armed yet
    rec.on_armed(True, 2 * S)
    assert rec.state == "recording"
    rec.on_message("/a", _raw("0"), 3 * S)
    rec.on_armed(False, 4 * S)
    rec.tick(5 * S)  # disarmed 1 s < 2 s: still recording
    rec.on_message("/a", _raw("1"), 5 * S)
    rec.on_armed(True, 5_500_000_000)  # re-armed inside the debounce window: same bag
    rec.on_armed(False, 7 * S)
    rec.on_message("/a", _raw("2"), 8 * S)
    rec.tick(8_999_999_999)
    assert rec.state == "recording"
    rec.tick(9 * S)  # disarmed for 2 s: closed
    assert rec.state == "idle" and len(rec.bags) == 1
    bag = Path(rec.bags[0])
    assert [m.data for _, m, _ in read_bag(bag)["/a"]] == ["0", "1", "2"]
    manifest = json.loads((bag / MANIFEST).read_text())
    assert manifest["stop_reason"] == "disarmed" and manifest["topics"]["/a"]["count"] == 3


def test_prearm_rate_check_uses_nominal_rates(tmp_path: Path) -> None:
    rec = _recording(tmp_path, start="manual")
    rec.expected_rates = {"/a": 100.0}
    for i in range(50):  # 100 Hz
        rec.on_message("/a", _raw(str(i)), i * S // 100)
    ok, report = rec.prearm_report()
    assert report["checks"]["sensors_at_rate"]["ok"] is True
    rec2 = _recording(tmp_path, start="manual")
    rec2.expected_rates = {"/a": 100.0}
    for i in range(50):  # 50 Hz: below 90 % of nominal
        rec2.on_message("/a", _raw(str(i)), i * S // 50)
    ok, report = rec2.prearm_report()
    assert ok is False and "/a" in report["checks"]["sensors_at_rate"]["below_rate"]


def test_split_options_reach_the_writer(tmp_path: Path, read_bag) -> None:
    rec = _recording(tmp_path, start="always", split_duration_s=1.0)
    rec.start("always")
    for i in range(30):  # 3 s of log time: several MCAP files in one bag
        rec.on_message("/a", _raw(str(i)), 10 * S + i * S // 10)
    rec.stop("manual stop")
    bag = Path(rec.bags[0])
    assert len(list(bag.glob("*.mcap"))) >= 3
    assert [m.data for _, m, _ in read_bag(bag)["/a"]] == [str(i) for i in range(30)]


def test_arm_start_waits_for_sync_lock(tmp_path: Path, read_bag) -> None:
    rec = _recording(tmp_path, start="arm", require_sync_lock=True, sync_lock_timeout_s=0)
    rec.on_peer_status("trigger_sync", {"sync.locked": "False"})
    rec.on_armed(True, 1 * S)
    rec.on_message("/a", _raw("host-stamped"), 1 * S)  # before lock: not recorded
    rec.on_armed(True, 2 * S)  # the armed state repeats every second: still one deferral
    rec.tick(3 * S)
    assert rec.state == "waiting_for_sync" and rec.sink is None
    assert rec.diag_values()["sync_deferrals"] == "1"
    rec.on_peer_status("trigger_sync", {"sync.locked": "True"})  # lock arrives while armed: start now
    assert rec.state == "recording" and rec.started_by == "arm"
    rec.on_message("/a", _raw("restamped"), 4 * S)
    rec.on_armed(False, 5 * S)
    rec.tick(7 * S)
    assert rec.state == "idle" and len(rec.bags) == 1
    assert [m.data for _, m, _ in read_bag(Path(rec.bags[0]))["/a"]] == ["restamped"]
    assert rec.diag_values()["sync_deferrals"] == "1" and rec.diag_values()["sync_timeouts"] == "0"


def test_sync_lock_wait_ends_on_disarm_or_timeout(tmp_path: Path) -> None:
    rec = _recording(tmp_path, start="arm", require_sync_lock=True, sync_lock_timeout_s=5)
    rec.on_armed(True, 1 * S)
    rec.on_armed(False, 2 * S)  # disarmed before any lock: nothing recorded, back to idle
    assert rec.state == "idle" and rec.waiting_for_sync_since is None and rec.sink is None
    rec.on_armed(True, 10 * S)
    rec.tick(14_999_999_999)
    assert rec.state == "waiting_for_sync"
    rec.tick(15 * S)  # 5 s armed without lock: record anyway, counted
    assert rec.state == "recording"
    assert rec.diag_values()["sync_deferrals"] == "2" and rec.diag_values()["sync_timeouts"] == "1"
    rec.stop("test")
    # without the option an arm starts at once, lock or not
    rec2 = _recording(tmp_path, start="arm")
    rec2.on_armed(True, 1 * S)
    assert rec2.state == "recording"
    rec2.stop("test")


def test_stamp_gaps_count_messages_missing_from_a_stream_of_known_rate(tmp_path: Path) -> None:
    """A 200 Hz IMU stream whose header stamps skip 3 samples in one place and 1 in another (with
    +-1 ms of jitter elsewhere, never a gap): the manifest's ``stamp_gaps`` says 4; a stream of
    unknown rate is not judged."""
    import numpy as np

    store = ros2_typestore()
    Imu, Header, Time = (store.types[t] for t in ("sensor_msgs/msg/Imu", "std_msgs/msg/Header",
                                                   "builtin_interfaces/msg/Time"))
    Quat, Vec = store.types["geometry_msgs/msg/Quaternion"], store.types["geometry_msgs/msg/Vector3"]
    cov = np.zeros(9)
    rec = Recording(RecorderOptions(out_dir=str(tmp_path / "bags"), min_free_mb=10, start="manual"), log=lambda m: None)
    for topic in ("/imu/imu", "/other/imu"):
        rec.add_topic(topic, "sensor_msgs/msg/Imu")
    rec.expected_rates = {"/imu/imu": 200.0}
    rec.manual_start()
    jitter = np.random.default_rng(3).integers(-1_000_000, 1_000_000, 400)
    for i in range(400):
        if i in (100, 101, 102, 250):
            continue
        stamp = 10 * S + i * 5_000_000 + int(jitter[i])
        msg = Imu(Header(Time(stamp // S, stamp % S), "imu"), Quat(0.0, 0.0, 0.0, 1.0), cov, Vec(0.0, 0.0, 0.0),
                  cov, Vec(0.0, 0.0, 9.81), cov)
        raw = bytes(store.serialize_cdr(msg, "sensor_msgs/msg/Imu"))
        rec.on_message("/imu/imu", raw, stamp + 1_000_000)
        rec.on_message("/other/imu", raw, stamp + 1_000_000)
    rec.manual_stop()
    topics = json.loads((Path(rec.bags[0]) / MANIFEST).read_text())["topics"]
    assert topics["/imu/imu"]["stamp_gaps"] == 4 and topics["/imu/imu"]["count"] == 396
    assert topics["/other/imu"]["stamp_gaps"] == 0

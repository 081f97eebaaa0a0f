"""MAVLink: the real ArduSub tlog, decoded from file and replayed over UDP on 127.0.0.1."""

from __future__ import annotations

import json
import math
import socket
import time

import numpy as np
import pytest

from rgbt.sensors import mavlink as mv
from helpers import need

ARM_T, DISARM_T = 1683220747.79, 1683220763.77


@pytest.fixture(scope="module")
def tlog(fixtures_dir):
    path = fixtures_dir / "mavlink" / "ardusub_small.tlog"
    return need(path, "ArduSub tlog")


def test_tlog_arm_events_at_the_logged_times(tlog):
    result = mv.decode_tlog(tlog)
    events = result["arm_events"]
    assert [a for _, a in events] == [True, False]
    assert events[0][0] == pytest.approx(ARM_T, abs=0.01)
    assert events[1][0] == pytest.approx(DISARM_T, abs=0.01)
    assert result["messages"]["HEARTBEAT"] > 0 and result["messages"]["ATTITUDE"] > 0


@pytest.mark.slow
def test_cli_decode_mavlink_json(tlog, rgbt_cli):
    out = json.loads(rgbt_cli("sensors", "decode", "mavlink", str(tlog), "--json").stdout)
    assert set(out) == {"arm_events", "messages", "packets", "checksum_failures", "bytes_skipped"}
    assert out["packets"] == sum(out["messages"].values())
    assert [round(t, 2) for t, _ in out["arm_events"]] == [ARM_T, DISARM_T]
    assert out["arm_events"][0][1] is True and out["arm_events"][1][1] is False


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_udp_replay_of_the_real_tlog_reports_transitions_at_logged_times(tlog):
    """A sender replays the tlog's raw MAVLink bytes over UDP in lock-step with the receiver;
    the receiver's clock is the replay clock (the log time of the datagram in flight)."""
    from pymavlink import mavutil

    msgs = []
    src = mavutil.mavlink_connection(str(tlog), dialect="ardupilotmega")
    while (m := src.recv_match()) is not None:
        if m.get_type() != "BAD_DATA" and ARM_T - 3 <= m._timestamp <= DISARM_T + 2:
            msgs.append((m._timestamp, m.get_msgbuf()))
    src.close()
    port = _free_port()
    now = {"t": 0.0}
    ap = mv.Autopilot(mv.MavlinkOptions(url=f"udpin:127.0.0.1:{port}"), clock=lambda: int(now["t"] * 1e9))
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    events, poses, fixes = [], [], []
    try:
        for t, raw in msgs:
            now["t"] = t
            sender.sendto(bytes(raw), ("127.0.0.1", port))
            handled = 0
            deadline = time.monotonic() + 2.0
            while handled == 0 and time.monotonic() < deadline:
                m = ap.conn.recv_match(blocking=True, timeout=0.2)
                if m is None:
                    continue
                handled += 1
                for out in ap.handle(m):
                    if isinstance(out, tuple):
                        events.append(out)
                    elif isinstance(out, mv.LocalPose):
                        poses.append(out)
                    elif isinstance(out, mv.GlobalFix):
                        fixes.append(out)
            assert handled == 1, "datagram lost on loopback"
        # the receiver asked the vehicle (here: the sender's socket) for its streams
        sender.settimeout(1.0)
        from pymavlink.dialects.v20 import ardupilotmega as apm

        parsed = apm.MAVLink(None).parse_buffer(sender.recv(4096)) or []
        req = [m for m in parsed if m.get_type() == "REQUEST_DATA_STREAM"]
        assert req and req[0].req_message_rate == 20 and req[0].start_stop == 1 and req[0].target_system == 1
    finally:
        sender.close()
        ap.close()
    assert [a for _, a in events] == [True, False]
    assert events[0][0] == pytest.approx(ARM_T, abs=0.01)
    assert events[1][0] == pytest.approx(DISARM_T, abs=0.01)
    assert ap.state is not None and ap.state.armed is False and ap.arm.sysid == 1
    assert poses and fixes
    q = np.array(poses[-1].orientation)
    assert np.linalg.norm(q) == pytest.approx(1.0)
    assert -90 < fixes[-1].latitude < 90


class _Hb:
    def __init__(self, type_, autopilot, base_mode, sysid=1):
        self.type, self.autopilot, self.base_mode, self._sys = type_, autopilot, base_mode, sysid

    def get_type(self):
        return "HEARTBEAT"

    def get_srcSystem(self):
        return self._sys


def test_gcs_and_component_heartbeats_are_ignored():
    tr = mv.ArmTracker()
    assert tr.update(_Hb(mv.MAV_TYPE_GCS, 8, 128, sysid=255), 1.0) is None
    assert tr.update(_Hb(18, mv.MAV_AUTOPILOT_INVALID, 128), 2.0) is None  # companion computer
    assert tr.update(_Hb(12, 3, 0), 3.0) is None  # vehicle starts disarmed: no event
    assert tr.update(_Hb(12, 3, 128), 4.0) == (4.0, True)
    assert tr.update(_Hb(mv.MAV_TYPE_GCS, 8, 0, sysid=255), 5.0) is None
    assert tr.update(_Hb(12, 3, 128), 6.0) is None
    assert tr.update(_Hb(12, 3, 0), 7.0) == (7.0, False)


def test_ned_frd_to_enu_flu_like_mavros():
    assert mv.ned_to_enu(1.0, 2.0, -3.0) == (2.0, 1.0, 3.0)
    from rgbt.geometry import quat_to_matrix

    # level, nose north: FLU x (forward) points north = ENU +y
    x, y, z, w = mv.attitude_enu_flu(0.0, 0.0, 0.0)
    R = quat_to_matrix(w, x, y, z)
    assert np.allclose(R @ [1, 0, 0], [0, 1, 0]) and np.allclose(R @ [0, 0, 1], [0, 0, 1])
    # yaw 90 deg (nose east): forward = ENU +x, ENU yaw 0
    assert mv.attitude_enu_flu(0.0, 0.0, math.pi / 2) == pytest.approx((0, 0, 0, 1), abs=1e-12)

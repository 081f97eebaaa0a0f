"""The virtual stack's device faults for ``rgbt bench faults``: a camera unplugged through the
``RGBT_DEVICE_CONTROL`` file (through the drivers' reopen policy: its samples are not published while
it is gone, counted; the other streams untouched), and several virtual stacks on one schedule anchor
(split by ``kinds``, and one restarted) playing one timeline."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from helpers import spawn_nodes, stop_nodes

pytestmark = [pytest.mark.ros, pytest.mark.slow]

#: a small, cheap run: the thermal camera renders faster than real time on a busy 2-core host
SIM = {"cameras": ["thermal"], "world_size_px": 256, "drop_prob": 0.0, "lead_in_s": 0.5, "lead_out_s": 0.5}


def _params(sim: dict, **options: object) -> list[str]:
    out = [f"sim.{k}:={json.dumps(v) if isinstance(v, list) else v}" for k, v in sim.items()]
    return out + [f"{k}:={json.dumps(v) if isinstance(v, list) else v}" for k, v in options.items()]


def _schedule(sim: dict, kind: str) -> list:
    """The simulator's samples of ``kind`` (what the sensor produced), in true-time order."""
    from rgbt.sim import SimOptions, SimStack

    return list(SimStack(SimOptions(**sim)).samples([kind]))


def _wait_done(path: Path, proc, timeout: float = 120.0) -> dict:  # type: ignore[no-untyped-def]
    """The virtual stack's manifest once it says every sample is out."""
    deadline = time.monotonic() + timeout
    while True:
        exited = proc.poll() is not None  # looked at before the file: an exit after writing it is fine
        manifest = json.loads(path.read_text()) if path.exists() else {}
        if manifest.get("done"):
            return manifest
        assert not exited and time.monotonic() < deadline, f"{path.name}: never done"
        time.sleep(0.2)


def test_a_camera_unplugged_through_the_control_file_is_reopened_and_counted(
        ros_env: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import Image, Imu

    from rgbt.graph.devicecontrol import DEVICE_CONTROL_ENV
    from rgbt.ros.qos import qos_profile
    from rgbt.ros.spin import BackgroundNode
    from rgbt.stamps import stamp_to_ns

    control, manifest_path = tmp_path / "devices.json", tmp_path / "sources.json"
    monkeypatch.setenv(DEVICE_CONTROL_ENV, str(control))
    sim = {**SIM, "duration_s": 5.0}
    thermal_topic, imu_topic = "/rgbt/raw/thermal/image", "/rgbt/raw/imu"
    proc = spawn_nodes("virtual_stack:virtual_stack", params=_params(
        sim, kinds=["thermal", "imu"], preload_s=5.0, output_qos="reliable", manifest_path=str(manifest_path),
        wait_for=[thermal_topic, imu_topic], wait_timeout_s=60.0, diagnostics_period_s=0.2, exit_when_done=True))
    side = BackgroundNode("unplug_test", handle_signals=False)
    thermal: list[int] = []
    imu: list[int] = []
    states: list[tuple[str, int]] = []  # (device.thermal.state, level) seen on /diagnostics
    qos = qos_profile("reliable", 1000)
    side.node.create_subscription(Image, thermal_topic, lambda m: thermal.append(stamp_to_ns(m.header.stamp)), qos)
    side.node.create_subscription(Imu, imu_topic, lambda m: imu.append(stamp_to_ns(m.header.stamp)), qos)

    def on_diag(msg: DiagnosticArray) -> None:
        for st in msg.status:
            values = {kv.key: kv.value for kv in st.values}
            if st.name == "virtual_stack" and "device.thermal.state" in values:
                level = st.level[0] if isinstance(st.level, (bytes, bytearray)) else int(st.level)
                states.append((values["device.thermal.state"], level))

    side.node.create_subscription(DiagnosticArray, "/diagnostics", on_diag, qos_profile("reliable", 50))
    side.start()
    try:
        deadline = time.monotonic() + 120
        while len(thermal) < 30:
            assert proc.poll() is None and time.monotonic() < deadline, "no thermal frames"
            time.sleep(0.02)
        # kinds: only the thermal camera and the IMU have publishers
        assert side.node.count_publishers(thermal_topic) == 1 and side.node.count_publishers("/rgbt/armed") == 0
        assert side.node.count_publishers("/rgbt/trigger") == 0
        unplug_ns = time.time_ns()
        tmp = control.with_suffix(".tmp")  # written whole, as the bench does
        tmp.write_text(json.dumps({"thermal": {"gone_until_wall_ns": unplug_ns + 1_000_000_000}}))
        os.replace(tmp, control)
        manifest = _wait_done(manifest_path, proc)
        time.sleep(1.0)  # the last samples through the middleware
    finally:
        side.close()
        out = stop_nodes(proc)
    assert proc.returncode == 0, out
    (frames,) = manifest["frames"].values()  # the thermal camera's
    published = frames["t_host_ns"]
    # what the subscriber received is what the manifest says was published, nothing more or less
    assert thermal == published and manifest["topics"][thermal_topic] == len(thermal)
    assert imu == manifest["imu_t_host_ns"] and manifest["topics"][imu_topic] == len(imu)
    # every sample the sensor produced: published, or not published while the camera was gone (counted)
    schedule_thermal, schedule_imu = _schedule(sim, "thermal"), _schedule(sim, "imu")
    unplugged = manifest["unplugged"]
    assert set(unplugged) == {"thermal"} and unplugged["thermal"] >= 60  # ~1 s at 60 Hz, and the back-off
    assert len(published) + unplugged["thermal"] == len(schedule_thermal)
    assert len(imu) == len(schedule_imu) and "late_dropped" not in manifest  # the other stream untouched
    # one hole in the thermal stream: the time gone plus the reopen back-off (at most 1 s), never more
    gaps = [(b - a) / 1e9 for a, b in zip(published, published[1:]) if b - a > 0.05e9]
    print(f"thermal gone 1.0 s: {unplugged['thermal']} frames not published, a {gaps[0]:.3f} s hole in the stream")
    assert len(gaps) == 1 and 1.0 <= gaps[0] <= 1.0 + 1.0 + 0.5, gaps
    assert published[0] < unplug_ns < published[-1]
    device = manifest["devices"]["thermal"]
    assert device["state"] == "open" and device["unplugs"] == 1 and device["reopens"] == 1
    assert device["open_failures"] >= 2 and 1.0 <= device["gone_total_s"] <= 2.5
    assert ("lost", 1) in states and states[-1] == ("open", 0), states  # WARN while gone, OK after
    assert out.count("thermal: device lost") == 1 and out.count("thermal: device back") == 1, out


def test_virtual_stacks_split_by_kinds_play_one_timeline_and_a_restarted_one_skips_the_overdue(
        ros_env: dict, tmp_path: Path) -> None:
    """A thermal-only stack and an IMU + trigger + armed-state stack on one schedule anchor publish on
    one timeline: every sample at the wall time the anchor gives its simulated time. The second is
    stopped and started again: it reads the anchor, skips what is already overdue (counted) and
    publishes the rest on the same timeline, as a sensor that kept producing while no driver read it."""
    from rgbt.sim.live import ScheduleAnchor

    anchor_path = tmp_path / "anchor.json"
    sim = {**SIM, "duration_s": 9.0}
    common = dict(schedule_anchor_path=str(anchor_path), start_delay_s=2.0, diagnostics_period_s=0.5)
    paths = {name: tmp_path / f"{name}.json" for name in ("thermal", "rest", "rest_again")}
    rest_kinds = ["imu", "trigger", "state"]
    thermal = spawn_nodes("virtual_stack:virtual_stack", params=_params(
        sim, kinds=["thermal"], preload_s=1.0, manifest_path=str(paths["thermal"]), **common))
    rest = spawn_nodes("virtual_stack:virtual_stack", params=_params(
        sim, kinds=rest_kinds, manifest_path=str(paths["rest"]), **common))
    procs = [thermal, rest]
    try:
        deadline = time.monotonic() + 120
        while not anchor_path.exists():
            assert all(p.poll() is None for p in procs) and time.monotonic() < deadline, "no anchor written"
            time.sleep(0.1)
        anchor = json.loads(anchor_path.read_text())
        t0 = ScheduleAnchor(anchor["t0_wall_ns"], anchor["t0_sim_ns"])
        while time.time_ns() < t0.t0_wall_ns + 3_000_000_000:  # the rest stack plays ~3 s, then stops
            assert all(p.poll() is None for p in procs) and time.monotonic() < deadline
            time.sleep(0.1)
        rest_log = stop_nodes(rest)
        assert rest.returncode == 0, rest_log
        again = spawn_nodes("virtual_stack:virtual_stack", params=_params(
            sim, kinds=rest_kinds, manifest_path=str(paths["rest_again"]), **common))
        procs.append(again)
        manifests = {name: _wait_done(paths[name], proc, 180) for name, proc in
                     (("thermal", thermal), ("rest_again", again))}
        manifests["rest"] = json.loads(paths["rest"].read_text())
    finally:
        logs = {p.pid: stop_nodes(p) for p in procs if p.returncode is None}
    assert all(p.returncode == 0 for p in procs), logs
    for name, m in manifests.items():
        assert (m["anchor"]["t0_wall_ns"], m["anchor"]["t0_sim_ns"]) == (t0.t0_wall_ns, t0.t0_sim_ns), name
    assert [m["anchor"]["written"] for m in manifests.values()].count(True) == 1
    assert manifests["rest_again"]["anchor"]["written"] is False
    assert manifests["thermal"]["kinds"] == ["thermal"] and sorted(manifests["rest"]["topics"]) == sorted(
        ["/rgbt/raw/imu", "/rgbt/trigger", "/rgbt/armed"])

    # every published sample at its place on the anchored timeline: true time exact, stamp = due time
    schedule = {kind: _schedule(sim, kind) for kind in ("thermal", "imu")}
    frames = next(iter(manifests["thermal"]["frames"].values()))
    skipped = manifests["thermal"]["restart_skipped"].get("thermal", 0)
    assert frames["seq"] == [s.seq for s in schedule["thermal"][skipped:]]
    assert frames["t_true_ns"] == [t0.due_ns(s.t_ns) for s in schedule["thermal"][skipped:]]
    assert all(abs(h - t0.due_ns(s.t_host_ns)) < 2_000_000 for h, s in zip(frames["t_host_ns"], schedule["thermal"][skipped:]))

    first = manifests["rest"]
    n_first, skipped_first = len(first["imu_t_true_ns"]), first["restart_skipped"].get("imu", 0)
    assert n_first > 200  # played ~1-3 s of IMU (started late on a busy host: its first samples skipped)
    assert first["imu_t_true_ns"] == [t0.due_ns(s.t_ns) for s in schedule["imu"][skipped_first:skipped_first + n_first]]
    second = manifests["rest_again"]
    skipped = second["restart_skipped"]["imu"]
    assert skipped > skipped_first + n_first  # what was due while no stack ran was never published, by either
    assert second["imu_t_true_ns"] == [t0.due_ns(s.t_ns) for s in schedule["imu"][skipped:]]
    assert all(abs(h - t0.due_ns(s.t_host_ns)) < 2_000_000 for h, s in zip(second["imu_t_host_ns"], schedule["imu"][skipped:]))
    # it joined where the timeline was: the skipped samples were overdue, the first published one was not
    first_due = t0.due_ns(schedule["imu"][skipped].t_host_ns)
    assert second["imu_t_pub_ns"][0] - first_due <= 0.1e9 + 0.2e9
    assert second["restart_skipped"].get("trigger", 0) > 0

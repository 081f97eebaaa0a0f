"""``rgbt doctor``: the flight profile reports the hardware this machine lacks (exit 2), bench-sim
passes here (exit 0); devices, disk minutes, Jetson detection, ROS stacks and model loading each
checked against inputs the test controls."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
import yaml

from rgbt.doctor import (Check, check_devices, check_disk, check_inference, check_ros, exit_code, jetson_model,
                         recording_rates, run_checks)
from rgbt.graph.profile import node_specs
from rgbt.ros_env import rclpy_stacks
from rgbt.stack import load_stack


def _by_item(checks: list) -> dict:
    return {c["item"] if isinstance(c, dict) else c.item: c for c in checks}


def test_flight_reports_missing_hardware_with_exit_2(rgbt_cli) -> None:  # type: ignore[no-untyped-def]
    proc = rgbt_cli("doctor", "--profile", "flight", "--json", check=False, timeout=120)
    doc = json.loads(proc.stdout)
    checks = _by_item(doc["checks"])
    ports = {s.name: s.parameters["port"] for s in node_specs("flight") if s.parameters.get("port")}
    assert ports  # the flight profile names serial ports
    missing_any = False
    for name, port in ports.items():
        item = [c for k, c in checks.items() if k.startswith(f"device {name}") and port in c["value"]]
        assert item, (name, port, list(checks))
        exists = Path(port).exists()
        missing_any |= not exists
        assert (item[0]["status"] == "fail") == (not exists), item[0]
        if not exists:
            assert "missing" in item[0]["value"] and item[0]["hint"]
    assert all(c["hint"] for c in doc["checks"] if c["status"] == "fail")
    if missing_any:
        assert proc.returncode == 2 and doc["exit_code"] == 2 and not doc["ok"]
    assert proc.returncode == exit_code([Check(c["item"], c["status"], c["value"]) for c in doc["checks"]])


def test_bench_sim_passes_here(rgbt_cli) -> None:  # type: ignore[no-untyped-def]
    proc = rgbt_cli("doctor", "--profile", "bench-sim", "--json", check=False, timeout=120)
    doc = json.loads(proc.stdout)
    fails = [c for c in doc["checks"] if c["status"] == "fail"]
    assert proc.returncode == 0 and doc["ok"], fails
    items = _by_item(doc["checks"])
    for needed in ("platform", "python", "layer core", "ROS stack", "ONNX Runtime", "clocks", "disk"):
        assert needed in items, needed
    assert "sim_thermal_seg.onnx loaded and ran" in items["ONNX Runtime"]["value"]


@pytest.mark.slow
def test_table_output_and_help(rgbt_cli) -> None:  # type: ignore[no-untyped-def]
    proc = rgbt_cli("doctor", "--profile", "bench-sim", check=False, timeout=120)
    assert proc.returncode == 0 and "disk" in proc.stdout and "ROS stack" in proc.stdout
    assert "--profile" in rgbt_cli("doctor", "--help").stdout


def _profile(tmp_path: Path, nodes: list[dict]) -> str:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({"description": "test", "nodes": nodes}))
    return str(path)


def test_device_present_ok_missing_fail(tmp_path: Path) -> None:
    dev = tmp_path / "ttyFAKE0"
    dev.write_bytes(b"")
    specs = node_specs(_profile(tmp_path, [
        {"name": "vn100", "parameters": {"port": str(dev)}},
        {"name": "gnss", "parameters": {"port": str(tmp_path / "nope")}},
        {"name": "mavlink_bridge", "parameters": {"url": "udpin:127.0.0.1:14550"}},
    ]))
    checks = _by_item(check_devices(specs))
    assert checks["device vn100"].status == "ok" and checks["device vn100"].value == str(dev)
    assert checks["device gnss"].status == "fail" and "missing" in checks["device gnss"].value
    assert checks["device mavlink_bridge"].status == "ok"
    assert exit_code(check_devices(specs)) == 2
    assert exit_code(check_devices(specs[:1])) == 0


def test_recording_rate_is_computed_from_the_stack() -> None:
    stack = load_stack()
    topics = [c.topic for c in stack.cameras.values()]
    rates = recording_rates(stack, topics)
    bpp = {"mono16": 2, "rgb8": 3, "mono8": 1}
    for cam in stack.cameras.values():
        expected = cam.width * cam.height * bpp[cam.encoding] * cam.rate_hz
        assert rates[cam.topic] == pytest.approx(expected, rel=1e-3)
    # CART: 640x512x2 @ 60 + 960x600x3 @ 30 + 960x600x1 @ 30
    assert sum(rates.values()) == pytest.approx(640 * 512 * 2 * 60 + 960 * 600 * 4 * 30, rel=1e-3)
    # a different stack gives a different rate (not a constant)
    slow = stack.model_copy(update={"cameras": {k: c.model_copy(update={"rate_hz": c.rate_hz / 2})
                                                for k, c in stack.cameras.items()}})
    assert sum(recording_rates(slow, topics).values()) == pytest.approx(sum(rates.values()) / 2, rel=1e-3)


def test_disk_minutes_at_the_bag_directory(tmp_path: Path) -> None:
    specs = node_specs(_profile(tmp_path, [{"name": "recorder", "parameters": {
        "start": "arm", "min_free_mb": 0, "prearm_minutes": 1, "topics": ["/boson/thermal/image_raw"]}}]))
    [check] = check_disk(specs, str(tmp_path / "bags" / "not_yet"))
    rate = 640 * 512 * 2 * 60
    minutes = shutil.disk_usage(tmp_path).free / rate / 60
    shown = float(check.value.split(" min")[0])
    assert shown == pytest.approx(minutes, rel=0.05, abs=1)
    assert check.status == ("ok" if minutes >= 2 else "warn" if minutes >= 1 else "fail")
    huge = node_specs(_profile(tmp_path, [{"name": "recorder", "parameters": {
        "start": "arm", "min_free_mb": 0, "prearm_minutes": 1e9}}]))
    [short] = check_disk(huge, str(tmp_path))
    assert short.status == "fail" and "free space" in short.hint


def test_priority_check_names_the_groups_and_how_to_allow_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import resource

    from rgbt.doctor import check_priority

    specs = node_specs("flight")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)  # a service user without privileges
    monkeypatch.setattr(resource, "getrlimit", lambda _r: (0, 0))  # RLIMIT_NICE 0: nice >= 20 - 0 only
    (check,) = check_priority(specs, status_text="CapEff:\t0000000000000000\n")
    assert check.status == "warn" and "nice -20 for drivers, recorder; -16 for segmentation; -13 for pipeline" in check.value
    assert "LimitNICE=-20" in check.hint
    (check,) = check_priority(specs, status_text="CapEff:\t0000000000800000\n")  # CAP_SYS_NICE
    assert check.status == "ok"
    monkeypatch.setattr(resource, "getrlimit", lambda _r: (40, 40))  # limits.conf nice -20
    assert check_priority(specs, status_text="CapEff:\t0\n")[0].status == "ok"
    assert check_priority(node_specs("replay"))[0].value == "no raised priority in this profile"


def test_jetson_model_from_device_tree_or_tegra_release(tmp_path: Path) -> None:
    assert jetson_model(tmp_path) is None
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "nv_tegra_release").write_text("# R36 (release), REVISION: 3.0, GCID: 1\n")
    assert "R36" in str(jetson_model(tmp_path))
    dt = tmp_path / "proc" / "device-tree"
    dt.mkdir(parents=True)
    (dt / "model").write_bytes(b"NVIDIA Jetson AGX Orin Developer Kit\x00")
    assert jetson_model(tmp_path) == "NVIDIA Jetson AGX Orin Developer Kit"


def test_second_rclpy_stack_fails_the_ros_check(tmp_path: Path) -> None:
    prefix = tmp_path / "opt" / "ros" / "humble"
    site = prefix / "lib" / "python3.10" / "site-packages" / "rclpy"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text("")
    [first, *_] = check_ros({"AMENT_PREFIX_PATH": str(prefix)})
    if rclpy_stacks(environ={}):  # an rclpy is importable here: the fake /opt/ros one is a second stack
        assert first.status == "fail" and "humble" in first.hint
    else:
        assert first.status == "ok" and "system humble" in first.value


def test_model_that_does_not_load_fails(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime", reason="the 'cpu' extra (onnxruntime) is not installed")
    bad = tmp_path / "broken.onnx"
    bad.write_bytes(b"not an onnx model")
    onnx = _by_item(check_inference(bad, needed=True, jetson=False))["ONNX Runtime"]
    assert onnx.status == "fail" and "broken.onnx failed" in onnx.value
    missing = _by_item(check_inference(tmp_path / "none.onnx", needed=True, jetson=False))["ONNX Runtime"]
    assert missing.status == "fail" and "not found" in missing.value


def test_demo_profile_doctor_is_fast() -> None:
    """The demo runs the doctor for its profile first: under 2 s here (a real ORT session included)."""
    t0 = time.perf_counter()
    checks = run_checks("bench-sim")
    elapsed = time.perf_counter() - t0
    assert exit_code(checks) == 0, [c for c in checks if c.status == "fail"]
    assert elapsed < 2.0, f"doctor took {elapsed:.2f} s"


def test_up_flight_runs_the_doctor_first(rgbt_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from rgbt.cli.doctor import gate

    checks = run_checks("flight")
    assert gate("flight", "up") == exit_code(checks)
    if exit_code(checks) == 0:  # the flight hardware is here: `rgbt up flight` would start it
        return
    proc = rgbt_cli("up", "flight", "--duration", "1", check=False, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "rgbt doctor --profile flight" in proc.stderr and "nothing was started" in proc.stderr
    first_fail = next(c for c in checks if c.status == "fail")
    assert first_fail.item in proc.stderr


def test_realtime_check_names_the_levels_how_to_allow_them_and_the_throttling(monkeypatch: pytest.MonkeyPatch,
                                                                              tmp_path: Path) -> None:
    import os
    import resource

    from rgbt.doctor import check_realtime

    specs = node_specs(_profile(tmp_path, [  # the shipped profiles leave real time off
        {"name": "trigger_sync", "process": "drivers", "parameters": {"realtime_priority": 30}},
        {"name": "recorder", "process": "recorder", "parameters": {"realtime_priority": 30}},
        {"name": "segmentation", "process": "segmentation", "parameters": {"realtime_priority": 20}},
        {"name": "thermal_preprocess", "process": "pipeline", "parameters": {"realtime_priority": 10}}]))
    throttle = tmp_path / "sched_rt_runtime_us"
    throttle.write_text("950000\n")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(resource, "getrlimit", lambda _r: (0, 0))  # RLIMIT_RTPRIO 0
    levels, throttling = check_realtime(specs, status_text="CapEff:\t0000000000000000\n", rt_runtime=throttle)
    assert levels.status == "warn"
    assert "SCHED_RR 30 for drivers, recorder; 20 for segmentation; 10 for pipeline" in levels.value
    assert "LimitRTPRIO=30" in levels.hint
    assert throttling.status == "ok" and "95 %" in throttling.value
    monkeypatch.setattr(resource, "getrlimit", lambda _r: (30, 30))  # limits.conf rtprio 30
    assert check_realtime(specs, status_text="CapEff:\t0\n", rt_runtime=throttle)[0].status == "ok"
    monkeypatch.setattr(resource, "getrlimit", lambda _r: (29, 29))
    assert check_realtime(specs, status_text="CapEff:\t0\n", rt_runtime=throttle)[0].status == "warn"
    throttle.write_text("-1\n")
    assert check_realtime(specs, status_text="CapEff:\t0000000000800000\n", rt_runtime=throttle)[1].status == "warn"
    for shipped in ("replay", "flight", "bench-sim"):
        assert check_realtime(node_specs(shipped))[0].value == "none in this profile (nice values only)"


@pytest.mark.parametrize("profile_name,node,nested,key,value", [
    ("bench-sim", "segmentation", "stage", "prep_priority", 3),  # rgbt.seg.stage.SegStageOptions: a string
    ("bench-sim", "fusion", "fusion", "resize_frist", True),  # rgbt.seg.fusion.FusionOptions: no such field
    ("bench-sim", "virtual_stack", "sim", "seed", -1),  # rgbt.sim.SimOptions: >= 0
    ("bench-sim", "trigger_sync", "restamper", "trigger_rate_hz", 30.0),  # from the stack, not an option
    ("flight", "vn100", "driver", "rate_hz", "fast"),  # rgbt.sensors.vn100.Vn100Options: a number
    ("flight", "color_camera", "driver", "index", -1),  # rgbt.sensors.blackfly.BlackflyOptions: >= 0
    ("flight", "mono_camera", "driver", "exposure", 900.0),  # BlackflyOptions: exposure_us, no such field
    ("flight", "thermal_query", "radiometry", "gain", "medium"),  # rgbt.image.radiometry: high or low
    ("flight", "thermal_query", "radiometry", "planck_r1", "x"),  # RadiometryOptions (planck): a number
])
def test_a_bad_nested_option_is_reported_with_its_path(tmp_path: Path, profile_name: str, node: str, nested: str,
                                                       key: str, value: object) -> None:
    from rgbt.paths import LAUNCH_DIR

    profile = yaml.safe_load((LAUNCH_DIR / f"{profile_name}.yaml").read_text())
    params = next(n for n in profile["nodes"] if n["name"] == node).setdefault("parameters", {})
    params.setdefault(nested, {})[key] = value
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(profile))
    check = _by_item(run_checks(profile=str(path)))["profile"]
    assert check.status == "fail" and f"{node}.parameters.{nested}.{key}" in check.value

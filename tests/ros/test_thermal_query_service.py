"""The thermal query node's typed service ``rgbt_interfaces/srv/ThermalQuery``.

* The ``.srv`` parses with ROS 2's own tools (``rosidl_adapter``, ``rosidl_parser``) and the typed
  request / response mapping of :mod:`rgbt.graph.thermal_query` works on a stand-in built from the
  parsed ``.srv`` (its fields, types and constants): no build needed.
* ``scripts/build_interfaces.sh`` builds the package against the ROS 2 wheels into a temporary
  prefix, and the node, in its own process, answers a client process over real rclpy + Fast DDS on
  loopback, typed and JSON side by side. Skipped, with what is missing, where the build tools are
  absent (``scripts/build_interfaces.sh --check``: cmake, a C/C++ compiler, the ``ros-build`` extra).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rgbt.image import radiometry
from rgbt.paths import REPO_ROOT
from rgbt.graph.thermal_query import MODE_NAMES, answer_request, answer_typed, converter

PACKAGE = REPO_ROOT / "ros2_ws" / "src" / "rgbt_interfaces"
SRV = PACKAGE / "srv" / "ThermalQuery.srv"
BUILD = REPO_ROOT / "scripts" / "build_interfaces.sh"
CLIENT = Path(__file__).with_name("thermal_query_client.py")


def _spec():  # type: ignore[no-untyped-def]
    parser = pytest.importorskip("rosidl_adapter.parser",
                                 reason="rosidl_adapter (installed with the ROS 2 wheels, extra ros-wheels) missing")
    return parser.parse_service_string("rgbt_interfaces", "ThermalQuery", SRV.read_text())


# -- the .srv and the typed mapping, no build ------------------------------------------------------
PY_TYPES = {"string": str, "bool": bool, "float64": float, "uint8": int, "uint32": int, "int32": int, "int64": int}
INT_RANGES = {"uint8": (0, 255), "uint32": (0, 2**32 - 1), "int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1)}


def stand_in(message_spec) -> type:  # type: ignore[no-untyped-def]
    """A class with exactly the fields of ``message_spec`` (type-checked on assignment, like rclpy's
    ``ROS_PYTHON_CHECK_FIELDS``), their ROS defaults and its constants."""
    types = {f.name: f.type.type for f in message_spec.fields}
    defaults = {"string": "", "bool": False, "float64": 0.0}

    class StandIn:
        __slots__ = tuple(types)

        def __init__(self, **fields: Any) -> None:
            for name, ros_type in types.items():
                setattr(self, name, fields.pop(name, defaults.get(ros_type, 0)))
            assert not fields, f"not fields of the .srv: {sorted(fields)}"

        def __setattr__(self, name: str, value: Any) -> None:
            ros_type = types[name]  # KeyError: a field the .srv does not have
            assert type(value) is PY_TYPES[ros_type], (name, ros_type, value)
            if ros_type in INT_RANGES:
                lo, hi = INT_RANGES[ros_type]
                assert lo <= value <= hi, (name, ros_type, value)
            object.__setattr__(self, name, value)

    for const in message_spec.constants:
        setattr(StandIn, const.name, const.value)
    return StandIn


def test_srv_parses_with_the_ros2_tools_and_declares_the_documented_fields(tmp_path: Path) -> None:
    spec = _spec()
    assert {c.name: c.value for c in spec.request.constants} == {name: i for i, name in enumerate(MODE_NAMES)}
    assert [f.name for f in spec.request.fields] == ["id", "mode", "x", "y", "x0", "y0", "x1", "y1", "class_id"]
    assert [f.name for f in spec.response.fields] == ["id", "success", "error", "stamp_ns", "celsius", "mean", "min",
                                                      "max", "n", "hottest_x", "hottest_y", "coldest_x", "coldest_y"]
    # every field says its unit or meaning in a comment on its own line (units: [px], [degC], [ns])
    lines = {line.split("#")[0].split()[1]: line for line in SRV.read_text().splitlines()
             if line.strip() and not line.startswith("#") and line.strip() != "---" and "=" not in line.split("#")[0]}
    assert all("#" in line for line in lines.values()), [n for n, line in lines.items() if "#" not in line]
    for name in ("x", "y", "x0", "y0", "x1", "y1", "hottest_x", "coldest_y"):
        assert "[px]" in lines[name], name
    for name in ("celsius", "mean", "min", "max"):
        assert "[degC]" in lines[name], name
    assert "[ns]" in lines["stamp_ns"]
    # what rosidl_generate_interfaces does first: .srv -> .idl (rosidl_adapter), parsed by rosidl_parser
    from rosidl_adapter.srv import convert_srv_to_idl
    from rosidl_parser.definition import IdlLocator, Service
    from rosidl_parser.parser import parse_idl_file

    idl = convert_srv_to_idl(PACKAGE, "rgbt_interfaces", Path("srv/ThermalQuery.srv"), tmp_path)
    services = parse_idl_file(IdlLocator(tmp_path, idl.relative_to(tmp_path))).content.get_elements_of_type(Service)
    assert [s.namespaced_type.name for s in services] == ["ThermalQuery"]
    request = services[0].request_message
    assert [m.name for m in request.structure.members][:2] == ["id", "mode"]
    assert {c.name: c.value for c in request.constants} == {name: i for i, name in enumerate(MODE_NAMES)}


@pytest.fixture(scope="module")
def srv_types() -> tuple[type, type]:
    spec = _spec()
    return stand_in(spec.request), stand_in(spec.response)


FRAME_NS = 123


def _scene() -> tuple[np.ndarray, np.ndarray]:
    temps = np.full((64, 80), 20.0)
    temps[10:20, 30:50] = 55.0  # a hot box, class 5
    temps[40, 5] = -10.0        # one cold pixel
    classes = np.zeros((64, 80), np.uint8)
    classes[10:20, 30:50] = 5
    return radiometry.celsius_to_tlinear(temps, gain="high"), classes


def _ask(srv_types, request_fields: dict, radiometric: bool = True):  # type: ignore[no-untyped-def]
    Request, Response = srv_types
    counts, classes = _scene()
    to_c = converter({"mode": "tlinear", "gain": "high"} if radiometric else {})
    return answer_typed(Request(**request_fields), Response(), counts, FRAME_NS, to_c, classes)


def test_typed_pixel_answers_the_temperature_and_no_stats(srv_types) -> None:  # type: ignore[no-untyped-def]
    r = _ask(srv_types, {"id": "p", "mode": srv_types[0].MODE_PIXEL, "x": 35, "y": 12})
    assert (r.id, r.success, r.error, r.stamp_ns) == ("p", True, "", FRAME_NS)
    assert r.celsius == pytest.approx(55.0, abs=0.01)
    assert math.isnan(r.mean) and math.isnan(r.min) and math.isnan(r.max) and r.n == 0
    assert (r.hottest_x, r.hottest_y, r.coldest_x, r.coldest_y) == (-1, -1, -1, -1)


def test_typed_set_modes_answer_what_the_json_interface_answers(srv_types) -> None:  # type: ignore[no-untyped-def]
    Request = srv_types[0]
    counts, classes = _scene()
    to_c = converter({"mode": "tlinear", "gain": "high"})
    cases = [({"mode": Request.MODE_REGION, "x0": 0, "y0": 30, "x1": 20, "y1": 50}, {"region": [0, 30, 20, 50]}),
             ({"mode": Request.MODE_CLASS, "class_id": 5}, {"class_id": 5}),
             ({"mode": Request.MODE_REGION_CLASS, "x0": 25, "y0": 5, "x1": 40, "y1": 15, "class_id": 5},
              {"region": [25, 5, 40, 15], "class_id": 5})]
    for typed, plain in cases:
        r = _ask(srv_types, {"id": "s", **typed})
        stats = answer_request({"id": "s", **plain}, counts, FRAME_NS, to_c, classes)["stats"]
        assert r.success and r.stamp_ns == FRAME_NS and math.isnan(r.celsius), r.error
        assert (r.mean, r.min, r.max, r.n) == (stats["mean"], stats["min"], stats["max"], stats["n"])
        assert [(r.hottest_x, r.hottest_y), (r.coldest_x, r.coldest_y)] == [tuple(stats["hottest"]),
                                                                              tuple(stats["coldest"])]
    region = _ask(srv_types, {"mode": Request.MODE_REGION, "x0": 0, "y0": 30, "x1": 20, "y1": 50})
    assert region.n == 400 and (region.coldest_x, region.coldest_y) == (5, 40)
    assert region.min == pytest.approx(-10.0, abs=0.01)
    both = _ask(srv_types, {"mode": Request.MODE_REGION_CLASS, "x0": 25, "y0": 5, "x1": 40, "y1": 15, "class_id": 5})
    assert both.n == 10 * 5 and both.mean == pytest.approx(55.0, abs=0.01)  # x 30..39, y 10..14


def test_typed_errors_are_answered_with_the_reason(srv_types) -> None:  # type: ignore[no-untyped-def]
    Request = srv_types[0]
    out = _ask(srv_types, {"id": "o", "mode": Request.MODE_PIXEL, "x": 500, "y": 1})
    assert (out.id, out.success, out.stamp_ns, out.n, out.hottest_x) == ("o", False, 0, 0, -1)
    assert "outside" in out.error and math.isnan(out.celsius) and math.isnan(out.mean)
    bad = _ask(srv_types, {"id": "m", "mode": 9})
    assert not bad.success and "request.mode: got 9" in bad.error and "3 (MODE_REGION_CLASS)" in bad.error
    empty = _ask(srv_types, {"mode": Request.MODE_REGION, "x0": 10, "y0": 10, "x1": 10, "y1": 20})
    assert not empty.success and "0 <= x0 < x1" in empty.error
    cold = _ask(srv_types, {"mode": Request.MODE_CLASS, "class_id": 5}, radiometric=False)
    assert not cold.success and "not radiometric" in cold.error
    none = answer_typed(Request(mode=Request.MODE_PIXEL), srv_types[1](), None, None,
                        converter({"mode": "tlinear"}), None)
    assert not none.success and "no thermal frame received yet" in none.error


# -- built and served over DDS ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def interfaces_prefix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """rgbt_interfaces built by scripts/build_interfaces.sh into a temporary prefix."""
    env = {**os.environ, "PYTHON": sys.executable}
    check = subprocess.run([str(BUILD), "--check"], env=env, capture_output=True, text=True, timeout=60)
    if check.returncode == 3:
        pytest.skip(" ".join(check.stderr.split()))
    assert check.returncode == 0, check.stdout + check.stderr
    prefix = tmp_path_factory.mktemp("rgbt_interfaces")
    build = subprocess.run([str(BUILD), str(prefix)], env=env, capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stdout + build.stderr
    return prefix


def _with_interfaces(prefix: Path) -> dict[str, str]:
    rel = Path(sysconfig.get_path("purelib")).relative_to(sys.prefix)  # lib/pythonX.Y/site-packages
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), str(prefix / rel), env.get("PYTHONPATH")) if p)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(prefix / "lib"), env.get("LD_LIBRARY_PATH")) if p)
    return env


def _stop(node: subprocess.Popen) -> None:
    """SIGINT (the node's clean stop), SIGKILL if it lingers."""
    node.send_signal(signal.SIGINT)
    try:
        node.wait(timeout=15)
    except subprocess.TimeoutExpired:
        node.kill()
        node.wait()


@pytest.mark.slow
@pytest.mark.ros
def test_typed_service_over_dds_beside_the_json_topics(ros_env: dict, interfaces_prefix: Path,
                                                       tmp_path: Path) -> None:
    env = _with_interfaces(interfaces_prefix)
    log = tmp_path / "thermal_query.log"
    node_cmd = [sys.executable, "-m", "rgbt.ros.spin", "--node", "thermal_query:thermal_query", "--ros-args",
                "-p", "thermal_topic:=/q/thermal", "-p", "class_topic:=/q/classes",
                "-p", "radiometry.mode:=tlinear", "-p", "radiometry.gain:=high"]
    requests = [{"id": "p", "mode": "MODE_PIXEL", "x": 35, "y": 12},
                {"id": "r", "mode": "MODE_REGION", "x0": 0, "y0": 0, "x1": 10, "y1": 10},
                {"id": "c", "mode": "MODE_CLASS", "class_id": 5},
                {"id": "rc", "mode": "MODE_REGION_CLASS", "x0": 25, "y0": 5, "x1": 40, "y1": 15, "class_id": 5},
                {"id": "out", "mode": "MODE_PIXEL", "x": 500, "y": 1},
                {"id": "bad", "mode": 9}]
    with log.open("w") as out:
        node = subprocess.Popen(node_cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=REPO_ROOT)
        try:
            client = subprocess.run([sys.executable, str(CLIENT), json.dumps(requests)], env=env, cwd=REPO_ROOT,
                                    capture_output=True, text=True, timeout=120)
        finally:
            _stop(node)
    node_log = log.read_text()
    assert client.returncode == 0, client.stdout + client.stderr + node_log
    answers = [json.loads(line) for line in client.stdout.splitlines()]
    by = {a["id"]: a for a in answers}
    assert "typed service /rgbt/thermal_query (rgbt_interfaces/srv/ThermalQuery)" in node_log, node_log
    p = by["p"]
    assert p["success"] and p["stamp_ns"] == 123 and p["celsius"] == pytest.approx(55.0, abs=0.01)
    assert p["n"] == 0 and math.isnan(p["mean"]) and p["hottest_x"] == -1
    assert by["r"]["success"] and by["r"]["n"] == 100 and by["r"]["mean"] == pytest.approx(20.0, abs=0.01)
    c = by["c"]
    assert c["n"] == 200 and c["min"] == pytest.approx(55.0, abs=0.01) and math.isnan(c["celsius"])
    assert 30 <= c["hottest_x"] < 50 and 10 <= c["hottest_y"] < 20
    assert by["rc"]["n"] == 50
    assert not by["out"]["success"] and "outside" in by["out"]["error"] and by["out"]["stamp_ns"] == 0
    assert not by["bad"]["success"] and "request.mode: got 9" in by["bad"]["error"]
    assert by["json"]["celsius"] == pytest.approx(55.0, abs=0.01) and by["json"]["stamp_ns"] == 123


@pytest.mark.slow
@pytest.mark.ros
def test_half_installed_interfaces_fall_back_to_json_with_the_reason(ros_env: dict, interfaces_prefix: Path,
                                                                      tmp_path: Path) -> None:
    """rgbt_interfaces importable but its libraries not on LD_LIBRARY_PATH: the node still starts,
    serves JSON and warns why there is no typed service (rather than dying in create_service)."""
    import time

    in_venv = Path(sys.prefix) / "lib" / "librgbt_interfaces__rosidl_typesupport_c.so"
    if in_venv.exists():  # the ROS wheels put the venv's lib folder on LD_LIBRARY_PATH themselves
        pytest.skip(f"rgbt_interfaces is installed in this venv ({in_venv}): its libraries always load here")
    env = _with_interfaces(interfaces_prefix)
    env["LD_LIBRARY_PATH"] = os.environ.get("LD_LIBRARY_PATH", "")  # the Python package only
    log = tmp_path / "thermal_query.log"
    with log.open("w") as out:
        node = subprocess.Popen([sys.executable, "-m", "rgbt.ros.spin", "--node", "thermal_query:thermal_query"],
                                env=env, stdout=out, stderr=subprocess.STDOUT, cwd=REPO_ROOT)
        try:
            deadline = time.monotonic() + 30
            while "thermal query:" not in log.read_text() and node.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            _stop(node)
    text = log.read_text()
    assert "only (no typed service: rgbt_interfaces is importable but its type support does not load" in text, text
    assert "JSON over std_msgs/String on /rgbt/thermal_query/request" in text and "LD_LIBRARY_PATH" in text

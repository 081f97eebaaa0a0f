"""Profiles: validation errors, ``--set`` overrides, and ``rgbt up``'s parameters == the launch entries.

The process layout of ``launch/rgbt.launch.py`` against ``rgbt up``: tests/ros/test_launch_file.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rgbt.errors import ConfigError
from rgbt.paths import LAUNCH_DIR
from rgbt.graph.options import OPTIONS
from rgbt.graph.profile import node_specs, parse_set, processes

PROFILES = ["bench-sim", "flight", "replay"]


@pytest.mark.parametrize("profile", PROFILES)
def test_profiles_validate_and_nodes_exist(profile: str) -> None:
    specs = node_specs(profile)
    assert specs and len({s.name for s in specs}) == len(specs)
    repo = LAUNCH_DIR.parent
    for spec in specs:
        assert (repo / "nodes" / f"{spec.executable}.py").is_file(), spec.executable
        OPTIONS[spec.executable].model_validate(spec.parameters)  # defaults filled, still valid


def test_launch_sets_loopback_unless_told_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    from rgbt.graph.launcher import ros_environment
    from rgbt.graph.profile import launch_environment

    monkeypatch.delenv("ROS_AUTOMATIC_DISCOVERY_RANGE", raising=False)
    monkeypatch.delenv("FASTRTPS_DEFAULT_PROFILES_FILE", raising=False)
    for env in (launch_environment("flight"), ros_environment()):
        assert env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
        assert env["FASTRTPS_DEFAULT_PROFILES_FILE"].endswith("launch/fastdds_loopback.xml")
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "SUBNET")  # told otherwise: kept
    assert "ROS_AUTOMATIC_DISCOVERY_RANGE" not in launch_environment("flight")
    assert ros_environment()["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "SUBNET"


def test_set_overrides_and_nested_parameters() -> None:
    specs = node_specs("bench-sim", parse_set(["recorder.out_dir=/tmp/x", "virtual_stack.sim.seed=3",
                                               "recorder.split_size_mb=5"]))
    by = {s.name: s for s in specs}
    assert by["recorder"].parameters["out_dir"] == "/tmp/x"
    assert by["recorder"].parameters["split_size_mb"] == 5
    assert by["virtual_stack"].parameters["sim"]["seed"] == 3
    assert by["virtual_stack"].ros_parameters()["sim.seed"] == 3
    assert set(processes(specs)) == {s.process for s in specs}


def test_errors_name_file_node_and_parameter(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"nodes": [{"name": "recorder", "parameters": {"split_size_mb": -1}}]}))
    with pytest.raises(ConfigError, match=r"bad\.yaml: recorder\.parameters\.split_size_mb"):
        node_specs(bad)
    bad.write_text(yaml.safe_dump({"nodes": [{"name": "x", "executable": "nope"}]}))
    with pytest.raises(ConfigError, match="executable"):
        node_specs(bad)
    bad.write_text(yaml.safe_dump({"nodes": [{"name": "recorder", "parameters": {"typo": 1}}]}))
    with pytest.raises(ConfigError, match="typo"):
        node_specs(bad)
    with pytest.raises(ConfigError, match="profile"):
        node_specs("no-such-profile")
    with pytest.raises(ConfigError, match="--set"):
        node_specs("bench-sim", parse_set(["ghost.rate=1"]))


def test_fusion_runs_when_the_colour_camera_streams() -> None:
    """``requires_camera``: rectify and fusion are in bench-sim and flight while the trigger sync
    streams the colour camera, and leave with it (``rgbt demo`` flies thermal only by default)."""
    from rgbt.graph.profile import node_specs

    for profile in ("bench-sim", "flight"):
        names = [s.name for s in node_specs(profile)]
        assert {"rectify", "fusion"} <= set(names), (profile, names)
        thermal_only = [s.name for s in node_specs(profile, {"trigger_sync": {"cameras": ["thermal"]}})]
        assert "fusion" not in thermal_only and "rectify" not in thermal_only and "segmentation" in thermal_only
    fusion = next(s for s in node_specs("bench-sim") if s.name == "fusion")
    assert fusion.parameters["fusion"]["model"].endswith(".onnx") and fusion.process == "pipeline"

"""Bring-up profiles ``launch/<name>.yaml``: which nodes run, in which process, with what parameters.

The single source for both ``rgbt up`` (any machine, rclpy wheels) and ``launch/rgbt.launch.py``
(real ROS 2 installs): both call :func:`node_specs`. No rclpy or launch import here.

Profile YAML::

    description: text
    env: {NAME: value}            # extra environment for every node process
    nodes:
      - name: recorder            # ROS node name (unique)
        executable: recorder      # nodes/<executable>.py (default: name)
        process: io               # nodes sharing a process share one executor (default: name)
        parameters: {...}         # validated by rgbt.graph.options.OPTIONS[executable]
        requires_camera: color    # optional: run only when the trigger sync streams this camera
"""

from __future__ import annotations

import copy
import tempfile
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rgbt.errors import ConfigError
from rgbt.graph.options import OPTIONS, flatten
from rgbt.paths import LAUNCH_DIR
from rgbt.sim.options import SimOptions


class ProfileNode(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    executable: str = ""
    process: str = ""
    parameters: dict[str, Any] = Field(default_factory=dict)
    requires_camera: str = ""  # e.g. fusion: dropped when no trigger_sync node lists this camera


class Profile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    description: str = ""
    env: dict[str, str] = Field(default_factory=dict)
    # each device driver in its own process (isolate_drivers); `rgbt up --[no-]isolate-drivers` overrides
    isolate_drivers: bool = False
    nodes: list[ProfileNode]


@dataclass(frozen=True)
class NodeSpec:
    """One node to start: ROS name, ``nodes/<executable>.py``, process group, validated parameters."""

    name: str
    executable: str
    process: str
    parameters: dict[str, Any] = field(default_factory=dict)  # full options, defaults included

    def ros_parameters(self) -> dict[str, Any]:
        """Parameters as ROS accepts them (dotted names; empty lists dropped: their type is unknown)."""
        return {k: v for k, v in flatten(self.parameters).items() if not (isinstance(v, list) and not v)}


def profile_path(name_or_path: str | Path) -> Path:
    """``bench-sim`` -> ``launch/bench-sim.yaml``; an existing path is returned as is."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") and path.exists():
        return path
    candidate = LAUNCH_DIR / f"{name_or_path}.yaml"
    if not candidate.exists():
        known = sorted(p.stem for p in LAUNCH_DIR.glob("*.yaml"))
        raise ConfigError(str(name_or_path), "profile", str(name_or_path), f"a profile file or one of {known}")
    return candidate


def load_profile(name_or_path: str | Path) -> tuple[Path, Profile]:
    """Read and validate a profile (structure only; node parameters are checked by :func:`node_specs`)."""
    path = profile_path(name_or_path)
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(str(path), "<yaml>", str(exc).splitlines()[0], "valid YAML") from None
    try:
        return path, Profile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        raise ConfigError(str(path), key, err.get("input"), err["msg"]) from None


def node_specs(name_or_path: str | Path, overrides: dict[str, dict[str, Any]] | None = None) -> list[NodeSpec]:
    """The nodes of a profile with their options validated (defaults filled in).

    ``overrides`` maps node name -> {parameter: value} applied on top of the profile (``--set``).
    Raises :class:`ConfigError` naming the profile file, node, parameter and what was expected.
    """
    path, profile = load_profile(name_or_path)
    overrides = dict(overrides or {})
    specs: list[NodeSpec] = []
    seen: set[str] = set()
    for i, node in enumerate(profile.nodes):
        exe = node.executable or node.name
        if exe not in OPTIONS:
            raise ConfigError(str(path), f"nodes[{i}].executable", exe, f"one of {sorted(OPTIONS)}")
        if node.name in seen:
            raise ConfigError(str(path), f"nodes[{i}].name", node.name, "a unique node name")
        seen.add(node.name)
        params = _merge(node.parameters, overrides.pop(node.name, {}))
        try:
            options = OPTIONS[exe].model_validate(params)
        except ValidationError as exc:
            err = exc.errors()[0]
            key = ".".join(str(p) for p in err["loc"])
            raise ConfigError(str(path), f"{node.name}.parameters.{key}", err.get("input"), err["msg"]) from None
        specs.append(NodeSpec(node.name, exe, node.process or node.name, options.model_dump()))
    if overrides:
        raise ConfigError(str(path), "--set", sorted(overrides), f"node names of the profile: {sorted(seen)}")
    streamed = {cam for s in specs if s.executable == "trigger_sync" for cam in s.parameters["cameras"]}
    required = {node.name: node.requires_camera for node in profile.nodes if node.requires_camera}
    return [s for s in specs if required.get(s.name, "") in streamed | {""}]


def profile_env(name_or_path: str | Path) -> dict[str, str]:
    return load_profile(name_or_path)[1].env


def profile_isolates_drivers(name_or_path: str | Path) -> bool:
    """The profile's default driver layout (:func:`isolate_drivers`)."""
    return load_profile(name_or_path)[1].isolate_drivers


def params_file_data(specs: list[NodeSpec]) -> dict[str, Any]:
    """A ROS 2 ``--params-file`` document for the nodes (``{name: {ros__parameters: {...}}}``)."""
    return {s.name: {"ros__parameters": s.ros_parameters()} for s in specs}


def processes(specs: list[NodeSpec]) -> dict[str, list[NodeSpec]]:
    """Process name -> the nodes it runs (profile order kept)."""
    groups: dict[str, list[NodeSpec]] = {}
    for spec in specs:
        groups.setdefault(spec.process, []).append(spec)
    return groups


def parse_set(items: list[str]) -> dict[str, dict[str, Any]]:
    """``["recorder.out_dir=/tmp/x", "virtual_stack.sim.seed=3"]`` -> overrides for :func:`node_specs`.

    Values are parsed as YAML scalars (``3`` -> int, ``true`` -> bool, ``[a, b]`` -> list).
    """
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        node, dot, param = key.partition(".")
        if not sep or not dot or not param:
            raise ConfigError("--set", item, item, "NODE.PARAM=VALUE")
        cur = out.setdefault(node, {})
        parts = param.split(".")
        for part in parts[:-1]:
            cur = cur.setdefault(part, {})
        cur[parts[-1]] = yaml.safe_load(value) if value != "" else ""
    return out


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


#: the ament_python package in ros2_ws/ that installs ``nodes/`` as console scripts
ROS_PACKAGE = "rgbt_ros"


def launch_environment(name_or_path: str | Path) -> dict[str, str]:
    """Environment a launch sets: the ROS 2 defaults (``rgbt.ros_env.ros_defaults``), then the profile's env."""
    from rgbt.ros_env import ros_defaults

    env = ros_defaults()
    env.update(profile_env(name_or_path))
    return env


#: driver executables that each run in a process of their own in the isolated layout (the VN-100's
#: stays with the trigger sync: the clock fit needs both, and neither records alone)
ISOLATED_DRIVERS = ("thermal_camera", "color_camera", "gnss", "mavlink_bridge")


def isolate_drivers(specs: list[NodeSpec], anchor_path: str | Path | None = None) -> list[NodeSpec]:
    """The isolated driver layout: each device driver in its own process (named after its node), so a
    camera SDK crash does not take down the IMU, the trigger sync or the arm state; the IMU driver and
    the trigger sync stay together. A virtual stack is split the same way: one per camera (its frames
    cross the middleware to the trigger sync as a camera driver's would) and one for the rest beside the
    trigger sync, all playing one run on one timeline (``schedule_anchor_path``: ``anchor_path``, or a
    new file in the temporary folder when the profile names none). Costs: every camera frame crosses
    a process boundary instead of an in-process hand-over (``rgbt.ros.local_topics``) - see
    BENCHMARKS.md for what that costs in latency and CPU."""
    groups = processes(specs)
    out: list[NodeSpec] = []
    for s in specs:
        # a node leaving its group keeps the group's priorities (they are set per process)
        kept = {key: pick([int(m.parameters.get(key, 0)) for m in groups[s.process]])
                for key, pick in (("nice", min), ("realtime_priority", max), ("oom_score_adj", group_oom_score_adj))}
        if s.executable in ISOLATED_DRIVERS:
            out.append(replace(s, process=s.name, parameters={**s.parameters, **kept}))
        elif s.executable == "virtual_stack":
            anchor = s.parameters.get("schedule_anchor_path") or str(
                anchor_path or Path(tempfile.gettempdir()) / f"rgbt_anchor_{uuid.uuid4().hex[:12]}.json")
            out += _split_virtual_stack(replace(s, parameters={**s.parameters, **kept}), str(anchor))
        else:
            out.append(s)
    return out


def group_oom_score_adj(values: list[int]) -> int:
    """One process's ``oom_score_adj`` from its nodes': the most protective (lowest) when any node
    asks for protection, else the highest (a heavy stage offered first to the OOM killer)."""
    return min(values) if min(values, default=0) < 0 else max(values, default=0)


def _split_virtual_stack(spec: NodeSpec, anchor: str) -> list[NodeSpec]:
    """One virtual stack per simulated camera (its own process) plus one for the other kinds."""
    from rgbt.sim.simstack import KINDS

    p = spec.parameters
    cameras = [c for c in SimOptions(**p.get("sim", {})).cameras if not p["kinds"] or c in p["kinds"]]
    prefix = p["raw_prefix"]

    def of(topic: str, kinds: list[str]) -> bool:  # a driver-level topic of one of these kinds
        return any(topic == f"{prefix}/{k}" or topic.startswith(f"{prefix}/{k}/") for k in kinds)

    def part(name: str, kinds: list[str], process: str) -> NodeSpec:
        params = dict(copy.deepcopy(p), kinds=kinds, schedule_anchor_path=anchor,
                      wait_for=[t for t in p["wait_for"] if of(t, kinds)],
                      manifest_path=f"{p['manifest_path']}.{name}" if p["manifest_path"] else "")
        return NodeSpec(name, spec.executable, process, params)

    rest = [k for k in KINDS if k not in cameras and (not p["kinds"] or k in p["kinds"])]
    parts = [part(f"{spec.name}_{c}", [c], f"{spec.name}_{c}") for c in cameras]
    return parts + [part(spec.name, rest, spec.process)]

"""The live half of the demo: bring the graph up, fly (arm -> disarm), bring it down.

Uses the ros bring-up (``rgbt.graph.profile.node_specs`` + ``rgbt.graph.launcher.start_graph``, the
same code as ``rgbt up``) with per-run overrides: the simulated flight (trajectory, duration,
seed, cameras), the recorder armed by the simulated autopilot (``start: arm``) writing under the
run folder, the segmentation model, and the virtual stack's manifest (counts, CRC32 and true
trigger time of every published frame: the simulator's truth for this recording).
No rclpy import here: the graph runs in child processes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rgbt.demo.options import flight_start_s
from rgbt.errors import RgbtError
from rgbt.graph.profile import node_specs, profile_env
from rgbt.graph.recording import bag_is_closed
from rgbt.stack import load_stack

VS_MANIFEST = "virtual_stack_manifest.json"
GRAPH_LOG = "graph.log"
BAG_MANIFEST = "rgbt_manifest.json"  # written by the recorder beside each bag (state: recording, closed)


class DeviceMissingError(RgbtError):
    """A hardware profile names devices that are not present on this machine."""


@dataclass
class FlightResult:
    """What the flight left behind: the bag folder, the virtual stack's manifest (None on
    hardware), the graph log, wall times (s) and exit codes of the node processes."""

    bag: Path | None
    vs_manifest: Path | None
    log: Path
    wall_s: dict = field(default_factory=dict)
    exit_codes: dict = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    restarts: dict = field(default_factory=dict)  # process group -> restarts by the supervisor


def is_simulated(specs: list[Any]) -> bool:
    return any(s.executable == "virtual_stack" for s in specs)


def check_devices(specs: list[Any]) -> None:
    """Fail fast when a hardware profile's serial devices or camera SDK are missing."""
    missing = []
    for s in specs:
        port = s.parameters.get("port")
        if port and not os.path.exists(port):
            missing.append(f"{s.name}: {port} not found")
        if s.executable == "color_camera":
            try:
                import PySpin  # noqa: F401  # the Spinnaker SDK the Blackfly driver needs
            except ImportError:
                missing.append(f"{s.name}: Spinnaker SDK (PySpin) not installed")
    if missing:
        raise DeviceMissingError(
            "the flight profile needs the CART hardware, and this machine lacks: " + "; ".join(missing)
            + ". Run `rgbt demo` (simulated stack) here, or `rgbt demo --replay BAG` on a recording.")


def flight_overrides(options: Any, run_dir: Path, engine: Path, trajectory: str) -> dict[str, dict[str, Any]]:
    """Per-node parameter overrides of the ``bench-sim`` profile for one demo flight."""
    sim = {"duration_s": options.sim_duration_s(), "seed": options.seed, "trajectory": trajectory,
           "cameras": list(options.cameras)}
    if Path(trajectory).is_file():
        sim["altitude_m"] = options.altitude_m
        sim["start_s"] = flight_start_s(trajectory, options.sim_duration_s())
    from rgbt.topics import RAW_PREFIX

    stack = load_stack()
    # start once the sync node and the recorder listen to the streams this flight produces
    wait_for = [f"{RAW_PREFIX}/{c}/image" for c in options.cameras] + [f"{RAW_PREFIX}/imu"]
    # the recorder's own subscriptions: it subscribes once it is ready (its heap reserved)
    recorded = [stack.imu.topic] + [stack.cameras[c].topic for c in options.cameras]
    return {
        "virtual_stack": {"sim": sim, "exit_when_done": True, "realtime": options.realtime,
                          "manifest_path": str(run_dir / VS_MANIFEST), "wait_for": wait_for,
                          "wait_for_nodes": {"recorder": recorded},
                          # render the first seconds (and build the world) before the clock starts, so the
                          # flight does not open with a catch-up burst on a slow machine
                          "preload_s": PRELOAD_S},
        "trigger_sync": {"cameras": list(options.cameras)},
        "segmentation": {"model": str(engine)},
        "recorder": {"out_dir": str(run_dir), "start": "arm"},
        "health": {"disk_path": str(run_dir)},
    }


def hardware_overrides(run_dir: Path, engine: Path) -> dict[str, dict[str, Any]]:
    return {"segmentation": {"model": str(engine)}, "recorder": {"out_dir": str(run_dir)}}


def _bags(run_dir: Path) -> list[Path]:
    return sorted(p for p in run_dir.glob("rgbt_*") if p.is_dir())


#: simulated seconds the virtual stack renders before it starts publishing
PRELOAD_S = 3.0
#: after the virtual stack has published its last sample, how long the recorder gets to see the
#: disarm and close the bag itself before the graph is stopped (the recorder then closes on SIGINT)
DRAIN_S = 15.0


def fly(profile: str, overrides: dict[str, dict[str, Any]], run_dir: Path, expected_s: float,
        on_status: Callable[[str, float], None] | None = None, timeout_s: float | None = None) -> FlightResult:
    """Start the profile's graph, wait for the recorder to open a bag (arm) and close it (disarm),
    stop the graph (sources first). ``on_status(phase, seconds)`` is called a few times a second
    with phase ``starting`` / ``recording`` / ``stopping``. ``timeout_s`` bounds the whole flight
    (default: 6 x ``expected_s`` + 120 s, for slow machines); on timeout what was recorded is kept.
    With a virtual stack, the graph is also stopped :data:`DRAIN_S` after its last sample went out
    if the recorder has not closed the bag by then (an overloaded machine); that is reported."""
    from rgbt.graph.launcher import GraphRun

    specs = node_specs(profile, overrides)
    if not is_simulated(specs):
        check_devices(specs)
    run_dir.mkdir(parents=True, exist_ok=True)
    log = run_dir / GRAPH_LOG
    status = on_status or (lambda phase, s: None)
    timeout_s = timeout_s or 6 * expected_s + 120
    result = FlightResult(None, None, log)
    t0 = time.monotonic()
    with open(log, "wb") as fh, \
            GraphRun(specs, profile_env(profile), duration_s=timeout_s, stdout=fh, stderr=fh) as run:
        graph = run.graph
        assert graph is not None

        def log_line(line: str) -> None:
            fh.write(line.encode() + b"\n")
            fh.flush()

        sup = run.supervise(log=log_line)
        t_arm = t_disarm = t_done = None
        vs_path = run_dir / VS_MANIFEST
        try:
            while True:
                now = time.monotonic()
                if t_done is None and vs_path.is_file():
                    t_done = now  # the virtual stack writes its manifest once every sample is out
                bags = _bags(run_dir)
                if bags and t_arm is None:
                    t_arm = now
                if bags and bag_is_closed(bags[-1]):  # its manifest is written at open; closed at disarm
                    t_disarm = now
                    break
                reason = sup.poll()  # a failed group is restarted; the recorder's exit ends the flight
                if reason:
                    result.problems.append(reason)
                    break
                dead = {g: p.returncode for g, p in graph.procs.items()
                        if p.poll() is not None and sup.state[g].due is None}
                if any(code not in (0, None) for code in dead.values()) and t_arm is None:
                    result.problems.append(f"node processes exited before the recording started: {dead}")
                    break
                if dead and len(dead) == len(graph.procs):
                    result.problems.append("every node process exited")
                    break
                if t_done is not None and now - t_done > DRAIN_S:
                    result.problems.append(
                        f"the recorder had not closed the bag {DRAIN_S:.0f} s after the virtual stack "
                        "finished (it stopped receiving: see graph.log and the health table); "
                        "stopped the graph, the bag keeps what arrived"
                    )
                    break
                if now - t0 > timeout_s:
                    result.problems.append(f"flight did not finish within {timeout_s:.0f} s; stopping the graph")
                    break
                status("recording" if t_arm is not None else "starting", now - (t_arm or t0))
                time.sleep(0.25)
        finally:
            status("stopping", 0.0)
            t_stop = time.monotonic()
            result.exit_codes = run.stop()
            result.restarts = {g: n for g, n in sup.counts().items() if n}
            result.wall_s = {"startup": (t_arm or t_stop) - t0,
                             "recording": ((t_disarm or t_stop) - t_arm) if t_arm is not None else 0.0,
                             "shutdown": time.monotonic() - t_stop}
    bad = {g: c for g, c in result.exit_codes.items() if c not in (0, -2)}
    if bad:
        result.problems.append(f"node processes exited with errors {bad} (see {log})")
    bags = _bags(run_dir)
    result.bag = bags[-1] if bags else None
    vs = run_dir / VS_MANIFEST
    result.vs_manifest = vs if vs.is_file() else None
    return result

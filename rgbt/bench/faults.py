"""``rgbt bench faults``: fly ``bench-sim`` with one fault at a time injected mid-flight and judge the
bags against what the simulated sensors produced.

Each flight is the simulated stack at full rate (virtual stack -> trigger sync -> preprocess ->
rectify -> segmentation, the recorder writing everything) as real processes on loopback, in a private
DDS domain, under the same supervisor as ``rgbt up`` (:mod:`rgbt.graph.supervisor`) or, for the
launcher's own faults, under a real ``rgbt up`` process (:mod:`rgbt.bench.launcher_faults`). The run
is rendered ahead (:mod:`rgbt.sim.cache`) with cameras that drop nothing, and played on a timeline the
virtual stack writes down (its anchor), so every sample the sensors produced has a time it was due;
a restarted virtual stack continues on that timeline. ``LEAD_S`` after the sources publish
with the trigger sync locked (the steady state), the fault is injected (``--quick``: the thermal camera only, and the
faults that leave the sources up one after the other, ``SPACING_S`` apart, in one flight):

* ``kill_<group>``: ``kill -9`` of a process group (the supervisor restarts it); ``kill_recorder``
  too: the flight goes on in a new bag.
* ``hang_segmentation``: ``kill -STOP`` of the segmentation process, never continued: the
  supervisor's liveness check must find it hung, kill it and restart it.
* ``source_gone``: the sources' process stopped for ``GONE_S`` (``SIGSTOP``, then ``SIGCONT``;
  longer than the liveness bound, so it is also found hung and restarted).
* ``unplug_thermal``: the thermal camera is unplugged for ``GONE_S`` and plugged back (the virtual
  stack's simulated device, ``rgbt.sensors.reconnect``'s back-off).
* ``cpu_starvation``: 2 busy processes per core for ``STARVE_S`` at normal priority (``SCHED_FIFO``
  above the graph when it runs real time).
* ``clock_step_+5s`` / ``clock_step_-5s``: the drivers' wall clock steps (``rgbt.graph.wallstep``).
* ``disk_full``: the recorder's flight size cap (``max_total_mb``) is reached.
* ``disk_full_real``: the bags go to a real, small filesystem (a tmpfs the bench mounts) until
  ``ENOSPC``.
* ``kill_launcher`` / ``power_loss``: ``kill -9`` of the ``rgbt up`` process / of every process of
  the graph at once; then the profile is started again (it must recover the unfinished bag).

Every row (the schedule: :mod:`rgbt.bench.schedule`; times in its window, see :func:`windows`):

* ``lost``: samples of the recorded sensor streams (cameras by the CRC32 of their pixels, IMU by stamp)
  the sensors produced in the row's window that no bag of the flight holds; ``streams``: per stream.
* ``lost_reported``: what the bags' manifests say was lost in that window (``loss_ranges``); equal to
  ``lost`` when nothing was lost silently.
* ``recovered_s``: from the injection (``unplug_thermal``: from the replug) until every recorded
  stream that flowed before it flows again, steadily (``STEADY_S`` without a gap over ``GAP_S``;
  ``null``: one did not within the window, or the recording ends by design); ``interrupted``: each
  stream's share of it; ``paused_later``: gaps of a stream after it was steady again (s, longest).
* ``bag_complete``: every bag of the flight opens, its manifest says it was closed or recovered,
  and every recorded frame / IMU sample is a scheduled one in schedule order (no repeat, no stray).
* ``stamps_monotonic``: header stamps never decrease within a bag on any stamped topic.
* ``back_s`` (kills, hangs): until every node of the group publishes ``/diagnostics`` again;
  ``kill_recorder`` adds ``lost_s`` (the longest stretch of any stream missing); ``kill_launcher``
  ``orphans`` (processes of the graph alive ``ORPHAN_WAIT_S`` after it died).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rgbt.bench.graph import _Probe, read_sources
from rgbt.errors import ConfigError
from rgbt.fileio import write_atomic, write_json_atomic
from rgbt.graph.launcher import recorder_groups
from rgbt.graph.supervisor import SupervisorOptions
from rgbt.output import print_table
from rgbt.topics import THERMAL_MONO8_TOPIC

#: after the sources finish, how long (s) to wait at most for a killed group to publish diagnostics again
BACK_WAIT_S = 20.0
#: seconds between the sources' first message with the trigger sync locked and the injection
LEAD_S = 2.5
#: simulated seconds a flight is given for the bench to see the sources publish with the trigger sync
#: locked (the lock, then the diagnostics that report it: 3-5 s after the first sample on 2 cores);
#: without them a fault injected late left no time to come back before the rendered flight ended
LOCK_S = 5.0
#: simulated seconds after the last fault of a flight (full matrix, --quick)
TAIL_S = 7.0
TAIL_QUICK_S = 8.0  # long enough for a restarted group (2-4.5 s here) to publish again before the end
#: a stream interrupted for longer than this (s) counts as down until its next message
GAP_S = 0.5
#: a stream that flowed this long (s) without such a gap after a fault has recovered: a later gap is a
#: pause of its own (``paused_later``), not the fault's outage (a 5 Hz GNSS stream's gap ending 6.25 s
#: after an unplug set unplug_thermal's recovered_s to 3.25 s, the thermal camera back 0.59 s after the replug)
STEADY_S = 2.0
#: samples due less than this (s) before a recording ends by design (disk full) may be in transit
MARGIN_S = 0.5
#: how long a source disappears / a camera is unplugged (s) / how long the CPU is starved (s) / the clock step (s)
GONE_S = 3.0
STARVE_S = 2.0
STEP_S = 5.0
#: what a stalled driver still finds in its device buffers when it runs again (s; VirtualStackOptions.drop_late_s)
DEVICE_BUFFER_S = 0.3
#: the recorder's flight size cap in the disk_full flight (MB; the full stack writes ~110 MB/s)
CAP_MB = 250.0
#: a flight's kills wait at most this long (s) in all for their groups' warm spares to be ready
#: (imports, DDS participant, the graph discovered: the steady state of a recording; spares start one
#: at a time, the fourth ready ~15-20 s after the graph on a loaded 2-core host), and flights with
#: kills simulate this much longer
SPARE_WAIT_S = 15.0
#: seconds between two faults of one flight (--quick)
SPACING_S = 4.5
#: the quick set (CI): kills, a hang and a host-clock step that leave the sources up, and the sources' kill
QUICK = ("kill_segmentation", "kill_pipeline", "hang_segmentation", f"clock_step_+{STEP_S:g}s", "kill_sources",
         "kill_recorder")
#: faults flown under a real ``rgbt up`` process (rgbt.bench.launcher_faults)
LAUNCHER_FAULTS = ("kill_launcher", "power_loss")


@dataclass(frozen=True)
class FaultsBenchOptions:
    """What ``rgbt bench faults`` flies: which faults, how long, on which profile."""

    quick: bool = False  #: only the QUICK faults, thermal camera only, short flights (CI)
    faults: tuple[str, ...] = ()  #: run only these faults (empty: all, or QUICK with ``quick``)
    sim_s: float | None = None  #: simulated seconds per flight (None: from LEAD_S, SPACING_S and TAIL_S)
    profile: str = "bench-sim"
    keep: str | None = None  #: keep each flight's folder (bag, logs) under this directory
    isolate_drivers: bool | None = None  #: each simulated device in its own process (None: the profile's)


def options_from_args(args: argparse.Namespace) -> FaultsBenchOptions:
    """The options of the command line :func:`add_arguments` defines."""
    return FaultsBenchOptions(quick=args.quick, faults=tuple(args.fault), sim_s=args.sim_s, profile=args.profile,
                              keep=args.keep, isolate_drivers=args.isolate_drivers)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true",
                        help=f"only {', '.join(QUICK)}: thermal camera only, short flights (CI)")
    parser.add_argument("--fault", action="append", default=[], metavar="NAME", help="run only these faults")
    parser.add_argument(
        "--sim-s",
        type=float,
        default=None,
        help=f"simulated seconds per flight (default: {LEAD_S:g} s before the first fault, "
        f"{SPACING_S:g} s between faults, {TAIL_S:g} s after the last, --quick {TAIL_QUICK_S:g} s)",
    )
    parser.add_argument("--profile", default="bench-sim", help="profile to fly (default bench-sim)")
    parser.add_argument("--keep", help="keep each flight's folder (bag, logs) under this directory")
    parser.add_argument("--isolate-drivers", action=argparse.BooleanOptionalAction, default=None,
                        help="each simulated device in its own process (rgbt.graph.profile.isolate_drivers; "
                             "default: the profile's isolate_drivers)")


def fault_names(specs: list[Any]) -> list[str]:
    """Every fault of the full matrix for a profile (one ``kill_<group>`` per group)."""
    from rgbt.graph.launcher import recorder_groups

    recorders = recorder_groups(specs)
    groups = [g for g in dict.fromkeys(s.process for s in specs) if g not in recorders]
    hangs = [f"hang_{g}" for g in groups if g == "segmentation"]
    return ([f"kill_{g}" for g in groups] + ["kill_recorder"] + hangs +
            ["source_gone", "unplug_thermal", "cpu_starvation", f"clock_step_+{STEP_S:g}s", f"clock_step_-{STEP_S:g}s",
             "disk_full", "disk_full_real", *LAUNCHER_FAULTS])


def flights(names: list[str], quick: bool) -> list[list[str]]:
    """Faults per flight: one each; ``quick`` flies the kills and hangs that leave the sources up
    (the recorder's too) and the clock steps one after the other in one flight (``SPACING_S``
    apart), the others alone."""
    if not quick:
        return [[n] for n in names]
    alone = ("kill_sources", *LAUNCHER_FAULTS)
    shared = [n for n in names if (n.startswith(("kill_", "hang_")) and n not in alone) or n.startswith("clock_step_")]
    return ([shared] if shared else []) + [[n] for n in names if n not in shared]


def run(options: FaultsBenchOptions) -> dict:
    from rgbt.graph.profile import isolate_drivers, node_specs, profile_isolates_drivers
    from rgbt.ros_env import apply_ros_defaults

    # a private DDS domain unless one is set: other graphs on this machine must not reach the bag
    os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(100, 180)))
    apply_ros_defaults()
    isolate = (
        options.isolate_drivers if options.isolate_drivers is not None else profile_isolates_drivers(options.profile)
    )
    specs = node_specs(options.profile)
    known = fault_names(isolate_drivers(specs) if isolate else specs)
    names = list(options.faults) or ([n for n in known if n in QUICK] if options.quick else known)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError("--fault", "NAME", unknown, f"one of {known}")
    cameras = ["thermal"] if options.quick else None
    faults: dict[str, dict] = {}
    plan = flights(names, options.quick)
    # each flight length is rendered once ahead and played from disk: rendering while publishing runs the
    # stack below real time on 2 cores (every stream later and later), which is not what a flight does
    sim_root = Path(tempfile.mkdtemp(prefix="rgbt_faults_sim_"))
    try:
        for i, group in enumerate(plan):
            sim_s = options.sim_s or (
                LOCK_S
                + LEAD_S
                + SPACING_S * (len(group) - 1)
                + (TAIL_QUICK_S if options.quick else TAIL_S)
                + (SPARE_WAIT_S if any(f.startswith(("kill_", "hang_")) for f in group) else 0.0)
            )
            _log(f"flight {i + 1}/{len(plan)}: {', '.join(group)} ...")
            if group[0] in LAUNCHER_FAULTS:
                from rgbt.bench.launcher_faults import fly_launcher_fault

                rows = fly_launcher_fault(options.profile, group[0], sim_s, cameras=cameras, keep=options.keep,
                                          sim_root=sim_root)
            else:
                rows = fly_with_faults(
                    options.profile,
                    group,
                    sim_s,
                    cameras=cameras,
                    keep=options.keep,
                    sim_root=sim_root,
                    isolate=isolate,
                )
            for name, row in rows.items():
                _log(f"{name}: {_short(row)}")
            faults.update(rows)
    finally:
        shutil.rmtree(sim_root, ignore_errors=True)
    return {"faults": faults, "profile": options.profile, "quick": bool(options.quick), "isolate_drivers": isolate,
            "cameras": cameras or "all", "synthetic": True,
            "sources": "simulated run rendered ahead (rgbt.sim.cache), cameras dropping nothing, played at the "
                       "real rate on one timeline; lost is judged against it",
            "note": "shared 2-core machine under load from other jobs: recovery times are noisy"}


def _log(line: str) -> None:
    print(f"rgbt bench faults: {line}", file=sys.stderr, flush=True)


def _short(r: dict) -> str:
    keys = ("lost", "lost_reported", "recovered_s", "back_s", "bag_complete", "stamps_monotonic", "lost_s", "orphans")
    return ", ".join(f"{k}={r[k]}" for k in keys if k in r)


# -- a flight ----------------------------------------------------------------------------------------


class Flight:
    """The files of one fault flight (under ``work``) and the profile's node parameters for it."""

    def __init__(self, profile: str, faults: list[str], sim_s: float, cameras: list[str] | None,
                 sim_root: Path | None, work: Path | None = None, isolate: bool = False) -> None:
        from rgbt.graph.profile import node_specs, processes
        from rgbt.stack import load_stack

        self.profile, self.faults, self.sim_s = profile, faults, sim_s
        self.work = work or Path(tempfile.mkdtemp(prefix=f"rgbt_faults_{faults[0]}_"))
        self.sources = self.work / "sources.json"
        self.anchor = self.work / "anchor.json"
        self.device_control = self.work / "devices.json"
        self.step_file = self.work / "wall_step_ns"
        self.bags_dir = self.work / "bags"
        self.stack = load_stack()
        self.cameras = list(cameras or self.stack.cameras)
        self.overrides = self._overrides()
        specs = node_specs(profile, self.overrides)
        self.cache: str | None = None
        if sim_root is not None:
            self.cache = prerendered(specs, sim_root)
            self.overrides["virtual_stack"]["sim_cache"] = self.cache
            specs = node_specs(profile, self.overrides)
        if isolate:
            from rgbt.graph.profile import isolate_drivers

            specs = isolate_drivers(specs, self.anchor)
        self.specs = specs
        self.members = {g: [s.name for s in nodes] for g, nodes in processes(specs).items()}

    def env(self) -> dict[str, str]:
        from rgbt.graph.devicecontrol import DEVICE_CONTROL_ENV
        from rgbt.graph.profile import profile_env
        from rgbt.graph.wallstep import WALL_STEP_ENV

        return {**profile_env(self.profile), WALL_STEP_ENV: str(self.step_file),
                DEVICE_CONTROL_ENV: str(self.device_control)}

    def _overrides(self) -> dict[str, dict[str, Any]]:
        """Per-node parameters of a fault flight (fast diagnostics: they time a group's return)."""
        from rgbt.graph.profile import node_specs
        from rgbt.topics import RAW_PREFIX

        specs = node_specs(self.profile)
        out: dict[str, dict[str, Any]] = {s.name: {"diagnostics_period_s": 0.25} for s in specs}
        # cameras that drop nothing: every hole in a bag is the software's
        sim: dict[str, Any] = {"duration_s": self.sim_s, "world_size_px": 1024, "drop_prob": 0.0,
                               "cameras": self.cameras}
        # a stalled driver finds at most its device buffers when it runs again (Spinnaker's 10 frames at
        # 30 Hz: 0.33 s), not the whole stall: samples later than DEVICE_BUFFER_S are not published
        vs = {"manifest_path": str(self.sources), "preload_s": 2.0, "sim": sim, "drop_late_s": DEVICE_BUFFER_S,
              "schedule_anchor_path": str(self.anchor)}
        recorder = next(s.name for s in specs if s.executable == "recorder")
        vs["wait_for"] = [f"{RAW_PREFIX}/{c}/image" for c in self.cameras] + [f"{RAW_PREFIX}/imu"]
        vs["wait_for_nodes"] = {recorder: [self.stack.imu.topic] + [self.stack.cameras[c].topic for c in self.cameras]}
        out["trigger_sync"]["cameras"] = list(self.cameras)
        out["virtual_stack"].update(vs)
        out["trigger_sync"]["restamper"] = {"min_fit_s": 1.5}
        extra = next(list(s.parameters["extra_topics"]) for s in specs if s.executable == "recorder")
        out[recorder].update({"out_dir": str(self.bags_dir), "start": "always", "min_free_mb": 100,
                              "extra_topics": extra + [THERMAL_MONO8_TOPIC]})
        if "disk_full" in self.faults:
            out[recorder]["max_total_mb"] = CAP_MB
        if "disk_full_real" in self.faults:
            out[recorder]["min_free_mb"] = 0  # the disk itself says when it is full
        return out

    def published(self) -> dict:
        """The virtual stacks' manifests as one ({} until written; several when isolated)."""
        return read_sources([Path(s.parameters["manifest_path"]) for s in self.specs
                             if s.executable == "virtual_stack" and s.parameters.get("manifest_path")])

    def bags(self) -> list[Path]:
        """The flight's bags, oldest first."""
        def start(bag: Path) -> int:
            try:
                return int(json.loads((bag / "rgbt_manifest.json").read_text()).get("start_wall_ns", 0))
            except (OSError, ValueError):
                return 0

        return sorted((p for p in self.bags_dir.glob("rgbt_*") if p.is_dir()), key=lambda p: (start(p), p.name))

    def close(self, keep: str | None) -> None:
        if keep:
            shutil.move(str(self.work), str(Path(keep) / self.work.name))
        else:
            shutil.rmtree(self.work, ignore_errors=True)


def prerendered(specs: list[Any], root: Path) -> str:
    """Render the virtual stack's run of ``specs`` once under ``root`` (reused by later flights of the
    same length); the folder to play (``VirtualStackOptions.sim_cache``)."""
    from rgbt.sim.cache import render_for_virtual_stack

    vs = next(s for s in specs if s.executable == "virtual_stack").parameters
    return str(render_for_virtual_stack(vs, root, log=_log))


def fly_with_faults(profile: str, faults: list[str], sim_s: float, cameras: list[str] | None = None,
                    keep: str | None = None, sim_root: Path | None = None, isolate: bool = False) -> dict[str, dict]:
    """One flight under an in-process supervisor; ``faults`` injected one at a time (the first
    ``LEAD_S`` after the sources start publishing, the next ``SPACING_S`` later); the judged row of each."""
    from rgbt.bench.tmpdisk import SmallDisk
    from rgbt.graph.launcher import GraphRun, clean_shm, shm_files

    flight = Flight(profile, faults, sim_s, cameras, sim_root, isolate=isolate)
    disk = SmallDisk(flight.bags_dir, DISK_MB) if "disk_full_real" in faults else None
    shm_before = shm_files()
    probe = _Probe()
    events: list[str] = []
    t_events: dict[str, int] = {}  # fault -> injection wall time (ns)
    t_mono: dict[str, float] = {}  # fault -> injection monotonic time (s)
    back: dict[str, float] = {}  # fault -> s until the killed group's nodes publish diagnostics again
    spare_wait: dict[str, float] = {}  # kill -> s it waited for its group's warm spare to be ready
    cpu: CpuSampler | None = None  # unplug_thermal: the sources' CPU
    try:
        why = disk.mount() if disk is not None else ""
        if why:
            return {f: {"lost": None, "lost_reported": None, "recovered_s": None, "bag_complete": False,
                        "stamps_monotonic": False, "problem": why} for f in faults}
        with open(flight.work / "graph.log", "wb") as log, \
                GraphRun(flight.specs, flight.env(), duration_s=sim_s * 8 + 120, stdout=log, stderr=log) as run:
            graph = run.graph
            assert graph is not None
            recorder = next(iter(recorder_groups(flight.specs)))
            # the flight's targets' warm spares next after the recorder's: the steady state a kill or a hang
            # meets (spares start one at a time at a low priority; the fourth was not ready 15 s into a flight
            # on a busy 2-core host, and the recorder's put third met its kill with none)
            targets = list(dict.fromkeys(g for f in faults if (g := target_group(f, recorder)) in flight.members))
            sup = run.supervise(SupervisorOptions(spares_first=targets), log=events.append)
            if "unplug_thermal" in faults:
                cpu = CpuSampler(lambda: graph.procs[_source_group(graph, "thermal")].pid)
            t0, t_pub, t_last, t_done = time.monotonic(), None, 0.0, 0.0
            try:
                while time.monotonic() - t0 < sim_s * 8 + 90:
                    now = time.monotonic()
                    reason = sup.poll()
                    if reason:
                        events.append(reason)
                        break
                    if t_pub is None and _publishing(probe.status) and _locked(probe.status):
                        t_pub = now  # the steady state: the sources publish and the trigger sync has locked
                    pending = [f for f in faults if f not in t_events]
                    if t_pub is not None and pending and now - max(t_pub + LEAD_S - SPACING_S, t_last) >= SPACING_S:
                        group = target_group(pending[0], recorder)
                        waited = now - spare_wait.setdefault(pending[0], now)
                        # a steady-state recording has its spares ready: wait for the group's, SPARE_WAIT_S
                        # in all over the flight (what it was lengthened by: the later faults keep their
                        # place in the run; waits of 14 and 15 s pushed a clock step past its end)
                        spent = sum(v for f, v in spare_wait.items() if f in t_events)
                        if group not in sup.spare_due or graph.spare_ready(group) or waited >= SPARE_WAIT_S - spent:
                            spare_wait[pending[0]] = round(waited, 2)
                            t_events[pending[0]], t_last = inject(pending[0], graph, recorder, flight), now
                            t_mono[pending[0]] = now
                    for fault in t_events:
                        group = target_group(fault, recorder)
                        # the group's first restart after this fault (a group may be hit twice in one flight)
                        t_restart = next((t for t in sup.state[group].restarts if t >= t_mono[fault]), None) \
                            if group in flight.members else None
                        if fault not in back and t_restart is not None and group is not None:
                            if all(probe.seen.get(n, 0.0) > t_restart for n in flight.members[group]):
                                back[fault] = round(time.time_ns() / 1e9 - t_events[fault] / 1e9, 3)
                    if not pending and flight.published().get("done"):
                        t_done = t_done or now
                        waits = [f for f in t_events if target_group(f, recorder) in flight.members]
                        # a group killed late in the flight may still be starting: wait for it (bounded)
                        if all(f in back for f in waits) or now - t_done > BACK_WAIT_S:
                            time.sleep(2.5)  # the last messages through the graph
                            break
                    time.sleep(0.05)
            finally:
                t_stop = time.monotonic()
                if cpu is not None:
                    cpu.stop()
                run.stop()
                restarts = sup.status()["restarts"]
                wall = {"startup": round((t_pub or t_stop) - t0, 1), "flight": round(t_stop - (t_pub or t_stop), 1),
                        "stop": round(time.monotonic() - t_stop, 1)}
        rows = judge_flight(flight, t_events)
        for fault, row in rows.items():
            group = target_group(fault, recorder)
            row.update({"back_s": back.get(fault),
                        "spare_wait_s": spare_wait.get(fault) if group in sup.spare_due else None,
                        "restarts": [{"group": r["group"], "exit_code": r["exit_code"], "warm": bool(r.get("warm")),
                                      "reason": r.get("reason", ""),
                                      "restart_after_s": round((r["restart_wall_ns"] - r["exit_wall_ns"]) / 1e9, 3)}
                                     for r in restarts if r["group"] == group],
                        "flight": faults, "sim_s": sim_s, "events": events, "wall_s": wall})
            if fault == "unplug_thermal" and cpu is not None and fault in t_events:
                t, gone = t_events[fault], int(GONE_S * 1e9)
                # the sources process (virtual stack + trigger sync), as a share of one core
                row["source_cpu"] = {"before": cpu.mean(t - gone, t), "while_gone": cpu.mean(t + gone // 4, t + gone)}
        return rows
    finally:
        probe.close()
        clean_shm(shm_before)
        if disk is not None:
            disk.unmount()
        flight.close(keep)


#: the size of the real filesystem the disk_full_real flight fills (MB)
DISK_MB = 400


def target_group(fault: str, recorder: str) -> str | None:
    """The process group a kill or hang hits."""
    if fault == "kill_recorder":
        return recorder
    for prefix in ("kill_", "hang_"):
        if fault.startswith(prefix) and fault not in LAUNCHER_FAULTS:
            return fault[len(prefix):]
    return None


def _publishing(status: dict[str, dict[str, str]]) -> bool:
    """The virtual stack reports IMU samples out (its diagnostics' topic counts)."""
    stacks = [v for k, v in status.items() if k.startswith("virtual_stack")]  # several when isolated
    return any(k.endswith("imu.count") and float(v or 0) > 0 for vs in stacks for k, v in vs.items())


def _locked(status: dict[str, dict[str, str]]) -> bool:
    """The trigger sync reports lock (its diagnostics' ``sync.locked``): the stack topics flow."""
    return any(v.get("sync.locked") in ("True", "true", "1") for v in status.values())


#: a busy process for ``cpu_starvation``: argv = real-time priority (0: normal), the end on the shared
#: monotonic clock (s; the same for every busy process: the later ones start late, starved by the
#: first); it ends itself (with real-time throttling off nothing else would run to end it)
HOG = ("import os, sys, time\n"
       "prio, end = int(sys.argv[1]), float(sys.argv[2])\n"
       "if prio:\n"
       "    try:\n"
       "        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(prio))\n"
       "    except OSError:\n"
       "        pass\n"
       "while time.monotonic() < end:\n"
       "    pass\n")


def inject(fault: str, graph: Any, recorder: str, flight: Flight) -> int:
    """Inject ``fault`` now; returns its wall-clock time (ns). Faults that last (a source gone, a
    camera unplugged, the CPU starved) are ended by a timer thread."""
    t = time.time_ns()
    group = target_group(fault, recorder)
    if fault.startswith("kill_") and group is not None:
        os.kill(graph.procs[group].pid, signal.SIGKILL)
    elif fault.startswith("hang_") and group is not None:
        os.kill(graph.procs[group].pid, signal.SIGSTOP)  # never continued: the liveness check must act
    elif fault == "source_gone":
        pid = graph.procs[_source_group(graph)].pid
        os.kill(pid, signal.SIGSTOP)

        def cont() -> None:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:  # the supervisor found it hung and replaced it
                pass

        threading.Timer(GONE_S, cont).start()
    elif fault == "unplug_thermal":
        write_json_atomic(flight.device_control, {"thermal": {"gone_until_wall_ns": t + int(GONE_S * 1e9)}})
    elif fault == "cpu_starvation":
        top = max((int(s.parameters.get("realtime_priority", 0)) for s in flight.specs), default=0)
        end = time.monotonic() + STARVE_S
        busy = [subprocess.Popen([sys.executable, "-c", HOG, str(min(top + 1, 99) if top else 0), repr(end)])
                for _ in range(2 * (os.cpu_count() or 1))]
        def stop_busy() -> None:
            for p in busy:
                p.kill()
                p.wait()

        threading.Timer(STARVE_S, stop_busy).start()
    elif fault.startswith("clock_step_"):
        # replaced whole: the virtual stack never reads a partial value
        write_atomic(flight.step_file, str(int(float(fault[len("clock_step_"):-1]) * 1e9)))
    # disk_full, disk_full_real: the cap / the filesystem ends the recording by itself (judge_flight)
    return t


class CpuSampler:
    """A process's CPU, as a share of one core, every ``period_s`` (``pid_of()``: the process now; it
    may change when the group restarts); :meth:`mean` over a wall-clock window."""

    def __init__(self, pid_of: Any, period_s: float = 0.5) -> None:
        self.samples: list[tuple[int, float]] = []  # (wall ns at the window's end, share)
        self._pid_of, self._period_s = pid_of, period_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @staticmethod
    def _cpu_s(pid: int) -> float:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def _run(self) -> None:
        last: tuple[int, float, float] | None = None  # pid, cpu s, monotonic s
        while not self._stop.wait(self._period_s):
            try:
                pid = self._pid_of()
                now, cpu = time.monotonic(), self._cpu_s(pid)
            except (OSError, ValueError, KeyError, StopIteration):
                last = None
                continue
            if last is not None and last[0] == pid:
                self.samples.append((time.time_ns(), (cpu - last[1]) / (now - last[2])))
            last = (pid, cpu, now)

    def mean(self, a_ns: int, b_ns: int) -> float | None:
        vals = [v for t, v in self.samples if a_ns < t <= b_ns]
        return round(sum(vals) / len(vals), 3) if vals else None

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)


def _source_group(graph: Any, kind: str = "") -> str:
    """The process group of the virtual stack (isolated: the one that plays camera ``kind``)."""
    groups = [g for g, cmd in graph.commands.items() if any(a.endswith(":virtual_stack") for a in cmd)]
    return next((g for g in groups if kind and g.endswith(f"_{kind}")), groups[0])


# -- judging -----------------------------------------------------------------------------------------


def judge_flight(flight: Flight, t_events: dict[str, int], until_ns: int | None = None) -> dict[str, dict]:
    """Every fault's row (see the module docstring) from the flight's bags and the schedule.
    ``until_ns``: only samples due before this count (the launcher's faults: up to the kill)."""
    from rgbt.bag.recover import recover_bag
    from rgbt.bench import schedule as sch

    rows: dict[str, dict] = {}
    unfinished = []
    for bag in flight.bags():  # a recording the graph left unfinished is recovered here, and said so
        if _manifest(bag).get("state", "closed") == "recording":
            unfinished.append(bag.name)
            recover_bag(bag)
    bags = flight.bags()
    anchor = _read_json(flight.anchor)
    if not bags or anchor is None or flight.cache is None:
        why = "no bag" if not bags else "the virtual stack wrote no anchor" if anchor is None else "no rendered run"
        return {f: {"lost": None, "lost_reported": None, "recovered_s": None, "bag_complete": False,
                    "stamps_monotonic": False, "problem": why} for f in flight.faults}
    streams = sch.schedule(flight.cache, anchor, flight.stack, [*flight.cameras, "imu"])
    got = sch.read_flight(bags, streams)
    matches = {t: sch.match(s, got.recorded[t]) for t, s in streams.items()}
    manifests = [_manifest(b) for b in bags]
    states_ok = all(m.get("state", "closed") in ("closed", "recovered") for m in manifests)
    complete = not got.problems and states_ok and all(m.duplicates == 0 for m in matches.values())
    order = sorted((t, f) for f, t in t_events.items())
    for fault in flight.faults:
        t_event = t_events.get(fault)
        row: dict[str, Any] = {"t_event_ns": t_event, "bags": len(bags), "unfinished_bags": unfinished,
                               "stamps_monotonic": got.monotonic, "bag_complete": complete}
        if got.problems:
            row["problem"] = "; ".join(got.problems)
        window, t_end = windows(fault, t_event, order, manifests, until_ns)
        if window is None:
            row.update({"lost": None, "lost_reported": None, "recovered_s": None,
                        "problem": row.get("problem") or "the fault was never injected (the sources did not start)"})
            rows[fault] = row
            continue
        per: dict[str, dict] = {}
        for topic, stream in streams.items():
            missing = sch.missing_in(stream, matches[topic], window)
            per[topic] = {"lost": int(len(missing)), "lost_reported": sch.reported(manifests, stream, window),
                          "longest_s": sch.longest_gap_s(stream, missing), "duplicates": matches[topic].duplicates}
        row["lost"] = sum(v["lost"] for v in per.values())
        row["lost_reported"] = sum(v["lost_reported"] for v in per.values())
        row["streams"] = per
        if fault == "kill_recorder":
            row["lost_s"] = max(v["longest_s"] for v in per.values())
        if fault == "unplug_thermal":
            thermal = flight.stack.cameras["thermal"].topic
            row["lost_other_streams"] = sum(v["lost"] for t, v in per.items() if t != thermal)
        if t_end is None and t_event is not None:
            t_from = t_event + (int(GONE_S * 1e9) if fault == "unplug_thermal" else 0)
            nxt = next((t for t, _ in order if t > t_event), None)
            span_s = (nxt - t_event) / 1e9 if nxt else 30.0
            back, down, pauses = recovered_s({t: {"log": v} for t, v in got.logs.items()}, t_event, span_s)
            row["recovered_s"] = None if back is None else round(max(0.0, back - (t_from - t_event) / 1e9), 3)
            row["interrupted"], row["paused_later"] = down, pauses
        else:
            row["recovered_s"] = None  # the recording ends by design (disk full, the launcher gone)
            row["t_end_ns"] = t_end
        if fault in ("disk_full", "disk_full_real"):
            row["stop_reasons"] = [m.get("stop_reason") for m in manifests]
        if fault.startswith("clock_step_"):
            clock = flight.published().get("clock", {})
            row["clock_steps"], row["clock_last_step_ns"] = (
                int(clock.get("steps", 0)),
                int(clock.get("last_step_ns", 0)),
            )
        published = flight.published()
        row["source_skipped"] = {k: published.get(k, {}) for k in ("late_dropped", "restart_skipped", "unplugged")}
        rows[fault] = row
    return rows


def windows(fault: str, t_event: int | None, order: list[tuple[int, str]], manifests: list[dict],
            until_ns: int | None) -> tuple[tuple[int, int] | None, int | None]:
    """The due-time window (wall ns) a fault's row counts samples in, and when the recording ended by
    design (None: it goes on). A fault that ends the recording (disk full) counts what was due before
    that end (less ``MARGIN_S`` in transit); the launcher's faults count up to the kill; the others from
    the previous injection (the flight's start for the first) to the next (the end for the last)."""
    if fault in ("disk_full", "disk_full_real"):
        ends = [int(m.get("end_wall_ns", 0)) for m in manifests if m.get("end_wall_ns")]
        if not ends:
            return None, None
        t_end = min(ends)
        return (0, t_end - int(MARGIN_S * 1e9)), t_end
    if until_ns is not None:
        return (0, until_ns), until_ns
    if t_event is None:
        return None, None
    times = [t for t, _ in order]
    i = times.index(t_event)
    return (times[i - 1] if i > 0 else 0, times[i + 1] if i + 1 < len(times) else 2**62), None


def recovered_s(streams: dict, t_event: int, window_s: float = 30.0
                ) -> tuple[float | None, dict[str, float | None], dict[str, float]]:
    """Seconds from ``t_event`` until every stream that flowed in the second before it (3 messages
    or more) flows again, within ``window_s``: a stream is back at the first message after its last
    gap over :data:`GAP_S` that came before it flowed :data:`STEADY_S` without one (so a stream back
    for a moment and gone again is still down). Also returns the interrupted streams -> their seconds
    (None: never back), and the streams that paused later, once steady -> their longest such gap (s):
    a delivery pause after the recovery is reported there, not as the fault's outage."""
    down: dict[str, float | None] = {}
    pauses: dict[str, float] = {}
    for topic, s in streams.items():
        log = s["log"]
        if sum(1 for t in log if t_event - 1e9 <= t <= t_event) < 3:
            continue  # not flowing before the event
        after = [t for t in log if t_event < t <= t_event + window_s * 1e9]
        if not after:
            down[topic] = None
            continue
        prev = flowing_since = t_event
        back, steady, later = None, False, 0.0
        for t in after:
            steady = steady or (prev - flowing_since) / 1e9 >= STEADY_S
            gap = (t - prev) / 1e9
            if gap > GAP_S:
                if steady:
                    later = max(later, gap)
                else:
                    back = flowing_since = t
            prev = t
        if back is not None:
            down[topic] = round((back - t_event) / 1e9, 3)
        if later:
            pauses[topic] = round(later, 3)
    back_s = [v for v in down.values() if v is not None]
    if len(back_s) < len(down):
        return None, down, pauses
    return max(back_s, default=0.0), down, pauses


def _manifest(bag: Path) -> dict:
    return _read_json(bag / "rgbt_manifest.json") or {}


def _read_json(path: Path) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def print_result(result: dict) -> None:
    rows = [[n, r["lost"], r.get("lost_reported"), r["recovered_s"], r.get("back_s"), r["bag_complete"],
             r["stamps_monotonic"], len(r.get("restarts", []))] for n, r in result["faults"].items()]
    print_table(f"Fault matrix ({result['profile']}, synthetic)",
                ["fault", "lost", "lost_reported", "recovered_s", "back_s", "bag_complete", "stamps_monotonic",
                 "restarts"], rows)

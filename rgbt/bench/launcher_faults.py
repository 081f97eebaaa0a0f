"""The launcher's own faults for ``rgbt bench faults``: ``kill_launcher`` and ``power_loss``.

The flight runs under a real ``rgbt up`` process (the profile with the fault flight's parameters,
written to the flight's folder). ``LEAD_S`` after the sources start publishing:

* ``kill_launcher``: ``kill -9`` of ``rgbt up`` alone. Its process groups must follow it (they ask
  the kernel to be told of its death) and close what they hold: ``orphans`` counts the processes of
  the graph still alive ``ORPHAN_WAIT_S`` later; everything due up to the kill (less
  ``KILL_MARGIN_S`` in transit) must be in the bag.
* ``power_loss``: ``kill -9`` of every process of the graph at once, the launcher included (what a
  power cut does to the processes; the page cache survives it here, so this measures the bag's
  recovery, while the writer's fsync interval bounds what a real cut loses): nothing due before the
  last second (the fsync interval) may be missing once the bag is recovered.

Then the profile is started again on the same bag folder, recording nothing (``start: manual``), for
``RESTART_S``: its recorder must recover the unfinished bag before it records (``state_after_kill``,
``state_after_restart``), and the one-instance lock must let it start (``restart_exit_code``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil
import yaml

from rgbt.bench.faults import LEAD_S, Flight, _log, _publishing, judge_flight
from rgbt.bench.graph import _Probe
from rgbt.graph.launcher import clean_shm, ros_environment, shm_files

#: how long after the kill the graph's processes must all be gone (s)
ORPHAN_WAIT_S = 3.0
#: samples due this close before the kill (s) may still be in transit
KILL_MARGIN_S = 0.2
#: a power cut loses at most what was written since the last fsync (s; rgbt.bag.writer)
FSYNC_S = 1.0
#: how long the profile runs again to recover the bag (s)
RESTART_S = 12.0


def write_profile(specs: list[Any], path: Path, env: dict[str, str]) -> Path:
    """A profile YAML that starts exactly ``specs`` (their full parameters) with ``env``."""
    nodes = [{"name": s.name, "executable": s.executable, "process": s.process, "parameters": s.parameters}
             for s in specs]
    path.write_text(yaml.safe_dump({"description": "rgbt bench faults flight (synthetic)", "env": env,
                                    "nodes": nodes}, sort_keys=False))
    return path


def fly_launcher_fault(profile: str, fault: str, sim_s: float, cameras: list[str] | None = None,
                       keep: str | None = None, sim_root: Path | None = None) -> dict[str, dict]:

    flight = Flight(profile, [fault], sim_s, cameras, sim_root)
    env = ros_environment()
    shm_before = shm_files()
    probe = _Probe()
    row: dict[str, Any] = {}
    try:
        first = write_profile(flight.specs, flight.work / "flight.yaml", flight.env())
        with open(flight.work / "graph.log", "wb") as log:
            launcher = subprocess.Popen([sys.executable, "-m", "rgbt", "up", str(first), "--duration",
                                         str(sim_s * 8 + 60)], stdout=log, stderr=log, env=env)
            t0 = time.monotonic()
            while not _publishing(probe.status) and launcher.poll() is None and time.monotonic() - t0 < 120:
                time.sleep(0.05)
            time.sleep(LEAD_S)
            graph = [p for p in psutil.Process(launcher.pid).children(recursive=True)]
            t_kill = time.time_ns()
            if fault == "power_loss":  # every process at once, the launcher first
                for pid in [launcher.pid] + [p.pid for p in graph]:
                    _kill(pid)
            else:
                _kill(launcher.pid)
            launcher.wait()
            time.sleep(ORPHAN_WAIT_S)
            alive = [p.pid for p in graph if _alive(p)]
            for pid in alive:  # ours to end: the processes this bench started
                _kill(pid)
            row["orphans"] = len(alive)
            row["state_after_kill"] = [_state(b) for b in flight.bags()]
            _log(f"{fault}: {len(alive)} orphan(s) {ORPHAN_WAIT_S:g} s after the kill; bags: {row['state_after_kill']}")
            # the profile again on the same bag folder, recording nothing: it recovers the unfinished bag first
            again = _restart_specs(flight)
            second = write_profile(again, flight.work / "restart.yaml", flight.env())
            restart = subprocess.run([sys.executable, "-m", "rgbt", "up", str(second), "--duration", str(RESTART_S)],
                                     stdout=log, stderr=log, env=env, timeout=RESTART_S + 120)
            row["restart_exit_code"] = restart.returncode
            row["state_after_restart"] = [_state(b) for b in flight.bags()]
        row["recovered_on_restart"] = (
            "recording" in row["state_after_kill"] and "recording" not in row["state_after_restart"]
        )
        margin = FSYNC_S if fault == "power_loss" else KILL_MARGIN_S
        rows = judge_flight(flight, {fault: t_kill}, until_ns=t_kill - int(margin * 1e9))
        rows[fault].update(row, flight=[fault], sim_s=sim_s, t_kill_ns=t_kill,
                           window=f"samples due up to {margin:g} s before the kill")
        return rows
    finally:
        probe.close()
        clean_shm(shm_before)
        flight.close(keep)


def _restart_specs(flight: Any) -> list[Any]:
    """The flight's nodes again, the recorder recording nothing and the virtual stack on a new timeline."""
    out = []
    for s in flight.specs:
        params = dict(s.parameters)
        if s.executable == "recorder":
            params["start"] = "manual"
        if s.executable == "virtual_stack":
            params.update(schedule_anchor_path=str(flight.work / "anchor_restart.json"),
                          manifest_path=str(flight.work / "sources_restart.json"))
        out.append(replace(s, parameters=params))
    return out


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _alive(proc: Any) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _state(bag: Path) -> str:
    try:
        return str(json.loads((bag / "rgbt_manifest.json").read_text()).get("state", "closed"))
    except (OSError, ValueError):
        return "no manifest"

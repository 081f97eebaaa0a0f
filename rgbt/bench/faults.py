"""``rgbt bench faults``: fly ``bench-sim`` once per fault, inject it mid-flight, judge the bag.

Each flight is the simulated stack at full rate (virtual stack -> trigger sync -> preprocess ->
rectify -> segmentation, the recorder writing everything) as real processes on loopback, under the
same supervisor as ``rgbt up`` (:mod:`rgbt.ros.supervisor`), in a private DDS domain. ``LEAD_S``
after the sources start publishing, one fault is injected (``--quick``: the thermal camera only, and
the kills that leave the sources up one after the other, ``SPACING_S`` apart, in one flight):

* ``kill_<group>``: ``kill -9`` of each non-recorder process group (the supervisor restarts it).
* ``kill_recorder``: ``kill -9`` of the recorder's process (the flight ends, by design), then
  ``rgbt bag recover`` (:func:`rgbt.bag.recover.recover_bag`) on its bag.
* ``source_gone``: the sources' process stopped (``SIGSTOP``) for ``GONE_S`` and continued: every
  sensor stream disappears and comes back (the virtual stack then publishes what a driver's device
  buffers would still hold, ``DEVICE_BUFFER_S``; what it skips is in its manifest, ``late_dropped``).
* ``cpu_starvation``: 2 busy processes per core for 2 s, each ending itself: at normal priority (a
  user's ordinary load; the shipped profiles' nice levels outrank it), or ``SCHED_FIFO`` one above
  the profile's highest ``realtime_priority`` when the graph runs real time (then they outrank it).
* ``clock_step_+5s`` / ``clock_step_-5s``: the drivers' wall clock steps by +-5 s. Simulated through
  the virtual stack's injected offset (:mod:`rgbt.ros.wallstep`) on the wall clock its host stamps
  are made from, through one ``rgbt.hostclock.WallClockOffset`` as the drivers' are (default
  ``on_clock_step: hold``: detected, counted - ``clock_steps`` in the row - and held, so stamps stay
  continuous); sensor clocks and other processes' clocks do not step (the real clock is left alone).
* ``disk_full``: the recorder's size cap (``max_total_mb``) is reached mid-flight.

Per fault (``lost``, ``recovered_s``, ``bag_complete``, ``stamps_monotonic``):

* ``lost``: messages the sources published (the virtual stack's manifest) on the streams the recorder
  records that are not in the bag (``streams``: per stream counted, its losses and when the
  missing frames were sent): every recorded source stream, whose
  publisher stays up, except for ``kill_sources`` (then: what the restarted sources published,
  against what the bag holds after the restart) and for ``kill_recorder`` / ``disk_full`` (the
  frames and IMU samples sent before the event: their send times are in the manifest). Counted on
  the camera frames (CRC32) and IMU samples; the restamped stack topics pass through the trigger
  sync node: a frame it drops counts here too. ``source_skipped``: samples per kind the virtual stack
  did not publish because they were overdue by more than ``DEVICE_BUFFER_S`` after a stall (every
  flight but ``kill_sources``'s, whose restarted sources must repeat the first run's samples).
* ``recovered_s``: from the injection until every recorded stream that flowed before it (>= 3
  messages in the second before) is flowing again (first message after its longest gap over
  ``GAP_S``, bag log times, up to the next fault or 30 s); ``null`` when one does not come back in
  that window, and for ``kill_recorder`` / ``disk_full`` (the recording ends, by design).
  ``interrupted`` lists the streams that had a gap and when each came back.
* ``back_s`` (kills): until every node of the killed group publishes ``/diagnostics`` again. A kill
  waits (``spare_wait_s``, at most ``SPARE_WAIT_S``) until its group's warm spare is ready, as in a
  recording's steady state; ``restarts[].warm`` says whether the spare took over.
* ``bag_complete``: the bag opens and, per camera stream, the frames logged before the event are,
  in order, the first frames published (CRC32), and every frame sent before the event is in the
  bag in publication order (when the recorder stops at the event - ``kill_recorder``,
  ``disk_full`` - the last ``MARGIN_S`` before it are excused: in transit or in the writer's last chunk).
* ``stamps_monotonic``: header stamps never decrease within any recorded stream.
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
import zlib
from pathlib import Path
from typing import Any

#: after the sources finish, how long (s) to wait at most for a killed group to publish diagnostics again
BACK_WAIT_S = 20.0
#: seconds between the sources' first message and the injection
LEAD_S = 2.5
#: simulated seconds after the last fault of a flight (full matrix, --quick)
TAIL_S = 7.0
TAIL_QUICK_S = 8.0  # long enough for a restarted group (2-4.5 s here) to publish again before the end
#: a stream interrupted for longer than this (s) counts as down until its next message
GAP_S = 0.5
#: frames published less than this (s) before the event may be missing from a complete bag
MARGIN_S = 1.0
#: how long a source disappears (s) / how long the CPU is starved (s) / the clock step (s)
GONE_S = 3.0
STARVE_S = 2.0
STEP_S = 5.0
#: what a stalled driver still finds in its device buffers when it runs again (s; VirtualStackOptions.drop_late_s)
DEVICE_BUFFER_S = 0.3
#: the recorder's size cap in the disk_full flight (MB; the full stack writes ~110 MB/s)
CAP_MB = 250.0
#: the preprocess output recorded in a fault flight (the pipeline group's stream when rectify has no colour)
PREPROCESS_TOPIC = "/rgbt/thermal/image_mono8"
#: a kill waits at most this long (s) for its group's warm spare to be ready (imports, DDS participant:
#: the steady state of a recording), and flights with kills simulate this much longer to leave room
SPARE_WAIT_S = 8.0
#: seconds between two faults of one flight (--quick)
SPACING_S = 4.5
#: the quick set (CI): the acceptance faults and a host-clock step
QUICK = ("kill_segmentation", "kill_pipeline", f"clock_step_+{STEP_S:g}s", "kill_sources")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true",
                        help=f"only {', '.join(QUICK)}: thermal camera only, two short flights (CI)")
    parser.add_argument("--fault", action="append", default=[], metavar="NAME", help="run only these faults")
    parser.add_argument("--sim-s", type=float, default=None,
                        help=f"simulated seconds per flight (default: {LEAD_S:g} s before the first fault, "
                             f"{SPACING_S:g} s between faults, {TAIL_S:g} s after the last, --quick {TAIL_QUICK_S:g} s)")
    parser.add_argument("--profile", default="bench-sim", help="profile to fly (default bench-sim)")
    parser.add_argument("--keep", help="keep each flight's folder (bag, logs) under this directory")


def fault_names(specs: list[Any]) -> list[str]:
    """Every fault of the full matrix for a profile (one ``kill_<group>`` per non-recorder group)."""
    from rgbt.ros.launcher import recorder_groups

    recorders = recorder_groups(specs)
    groups = [g for g in dict.fromkeys(s.process for s in specs) if g not in recorders]
    return ([f"kill_{g}" for g in groups] + ["kill_recorder", "source_gone", "cpu_starvation",
                                             f"clock_step_+{STEP_S:g}s", f"clock_step_-{STEP_S:g}s", "disk_full"])


def flights(names: list[str], quick: bool) -> list[list[str]]:
    """Faults per flight: one each; ``quick`` flies the faults that leave the sources up (kills of
    processing groups, clock steps) one after the other in one flight (``SPACING_S`` apart) and
    ``kill_sources`` (it restarts the simulation) alone."""
    if not quick:
        return [[n] for n in names]
    shared = [n for n in names if (n.startswith("kill_") and n not in ("kill_sources", "kill_recorder"))
              or n.startswith("clock_step_")]
    return ([shared] if shared else []) + [[n] for n in names if n not in shared]


def run(args: argparse.Namespace) -> dict:
    from rgbt.errors import ConfigError
    from rgbt.ros.launcher import ros_environment_defaults
    from rgbt.ros.profile import node_specs

    # a private DDS domain unless one is set: other graphs on this machine must not reach the bag
    os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(100, 180)))
    ros_environment_defaults()
    known = fault_names(node_specs(args.profile))
    names = list(args.fault) or ([n for n in known if n in QUICK] if args.quick else known)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError("--fault", "NAME", unknown, f"one of {known}")
    cameras = ["thermal"] if args.quick else None
    faults: dict[str, dict] = {}
    plan = flights(names, args.quick)
    # each flight length is rendered once ahead and played from disk: rendering while publishing runs the
    # stack below real time on 2 cores (every stream later and later), which is not what a flight does
    sim_root = Path(tempfile.mkdtemp(prefix="rgbt_faults_sim_"))
    try:
        for i, group in enumerate(plan):
            sim_s = args.sim_s or (LEAD_S + SPACING_S * (len(group) - 1) + (TAIL_QUICK_S if args.quick else TAIL_S)
                                   + (SPARE_WAIT_S if any(f.startswith("kill_") for f in group) else 0.0))
            _log(f"flight {i + 1}/{len(plan)}: {', '.join(group)} ...")
            rows = fly_with_faults(args.profile, group, sim_s, cameras=cameras, keep=args.keep, sim_root=sim_root)
            for name, row in rows.items():
                _log(f"{name}: {_short(row)}")
            faults.update(rows)
    finally:
        shutil.rmtree(sim_root, ignore_errors=True)
    return {"faults": faults, "profile": args.profile, "quick": bool(args.quick),
            "cameras": cameras or "all", "synthetic": True,
            "sources": "simulated run rendered ahead (rgbt.sim.cache) and played at the real rate",
            "note": "shared 2-core machine under load from other jobs: recovery times are noisy"}


def _log(line: str) -> None:
    print(f"rgbt bench faults: {line}", file=sys.stderr, flush=True)


def prerendered(specs: list[Any], root: Path) -> str:
    """Render the virtual stack's run of ``specs`` once under ``root`` (reused by later flights of the
    same length); the folder to play (``VirtualStackOptions.sim_cache``)."""
    from rgbt.sim.cache import render_for_virtual_stack

    vs = next(s for s in specs if s.executable == "virtual_stack").parameters
    return str(render_for_virtual_stack(vs, root, log=_log))


def _short(r: dict) -> str:
    return ", ".join(f"{k}={r[k]}" for k in ("lost", "recovered_s", "back_s", "bag_complete", "stamps_monotonic"))


def fly_with_faults(profile: str, faults: list[str], sim_s: float, cameras: list[str] | None = None,
                    keep: str | None = None, sim_root: Path | None = None) -> dict[str, dict]:
    """One bench-sim flight; ``faults`` injected one at a time (the first ``LEAD_S`` after the sources
    start publishing, the next ``SPACING_S`` later); the judged row of each. With ``sim_root`` the
    simulated run is rendered there first (:func:`prerendered`) and played from it."""
    from rgbt.bench.graph import _Probe
    from rgbt.ros.launcher import clean_shm, shm_files, start_graph, supervise
    from rgbt.ros.profile import node_specs, profile_env, processes
    from rgbt.ros.wallstep import WALL_STEP_ENV

    work = Path(tempfile.mkdtemp(prefix=f"rgbt_faults_{faults[0]}_"))
    sources = work / "sources.json"
    overrides = _overrides(profile, faults, sim_s, cameras, work, sources)
    specs = node_specs(profile, overrides)
    if sim_root is not None:
        overrides["virtual_stack"]["sim_cache"] = prerendered(specs, sim_root)
        specs = node_specs(profile, overrides)
    members = {g: [s.name for s in nodes] for g, nodes in processes(specs).items()}
    top = max((int(s.parameters.get("realtime_priority", 0)) for s in specs), default=0)
    hog_priority = min(top + 1, 99) if top else 0  # cpu_starvation: above the graph's real time
    step_file = work / "wall_step_ns"
    env = {**profile_env(profile), WALL_STEP_ENV: str(step_file)}
    shm_before = shm_files()
    probe = _Probe()
    events: list[str] = []
    t_events: dict[str, int] = {}  # fault -> injection wall time (ns)
    back: dict[str, float] = {}  # fault -> s until the killed group's nodes publish diagnostics again
    spare_wait: dict[str, float] = {}  # kill -> s it waited for its group's warm spare to be ready
    try:
        with open(work / "graph.log", "wb") as log:
            graph = start_graph(specs, env, duration_s=sim_s * 8 + 120, stdout=log, stderr=log)
            sup = supervise(graph, specs, log=events.append)
            recorder = next(iter(sup.recorder_groups))
            t0, t_pub, t_last, t_done = time.monotonic(), None, 0.0, 0.0
            try:
                while time.monotonic() - t0 < sim_s * 8 + 90:
                    now = time.monotonic()
                    reason = sup.poll()
                    if reason:
                        events.append(reason)
                        break
                    if t_pub is None and _publishing(probe.status):
                        t_pub = now
                    pending = [f for f in faults if f not in t_events]
                    if t_pub is not None and pending and now - max(t_pub + LEAD_S - SPACING_S, t_last) >= SPACING_S:
                        group = _killed_group(pending[0], recorder)
                        waited = now - spare_wait.setdefault(pending[0], now)
                        # a steady-state recording has its spares ready: wait for the killed group's (bounded)
                        if group not in sup.spare_due or graph.spare_ready(group) or waited >= SPARE_WAIT_S:
                            spare_wait[pending[0]] = round(waited, 2)
                            t_events[pending[0]], t_last = inject(pending[0], graph, recorder, step_file, hog_priority), now
                    for fault in t_events:
                        group = _killed_group(fault, recorder)
                        if fault not in back and group in members and sup.state[group].restarts:
                            t_restart = sup.state[group].restarts[-1]
                            if all(probe.seen.get(n, 0.0) > t_restart for n in members[group]):
                                back[fault] = round(time.time_ns() / 1e9 - t_events[fault] / 1e9, 3)
                    if not pending and _done(sources):
                        t_done = t_done or now
                        killed = [f for f in t_events if _killed_group(f, recorder) in members]
                        # a group killed late in the flight may still be starting: wait for it (bounded)
                        if all(f in back for f in killed) or now - t_done > BACK_WAIT_S:
                            time.sleep(2.5)  # the last messages through the graph
                            break
                    time.sleep(0.05)
            finally:
                t_stop = time.monotonic()
                graph.stop()
                restarts = sup.status()["restarts"]
                wall = {"startup": round((t_pub or t_stop) - t0, 1), "flight": round(t_stop - (t_pub or t_stop), 1),
                        "stop": round(time.monotonic() - t_stop, 1)}
        bags = sorted((work / "bags").glob("rgbt_*"))
        bag = bags[-1] if bags else None
        recover = None
        if "kill_recorder" in faults and bag is not None:
            from rgbt.bag.recover import recover_bag

            recover = recover_bag(bag)
        published = json.loads(sources.read_text()) if sources.exists() else {}
        manifest_restarts = _manifest_restarts(bag)
        rows = {}
        order = [f for f in faults if f in t_events]
        for i, fault in enumerate(faults):
            t_next = t_events[order[i + 1]] if fault in t_events and i + 1 < len(order) else None
            t_prev = t_events[order[i - 1]] if fault in t_events and i > 0 else None
            row = judge(fault, bag, published, t_events.get(fault), t_prev, t_next)
            group = _killed_group(fault, recorder)
            row.update({"t_event_ns": t_events.get(fault), "back_s": back.get(fault),
                        "spare_wait_s": spare_wait.get(fault) if group in sup.spare_due else None, "restarts": [
                {"group": r["group"], "exit_code": r["exit_code"], "warm": bool(r.get("warm")),
                 "restart_after_s": round((r["restart_wall_ns"] - r["exit_wall_ns"]) / 1e9, 3)}
                for r in restarts if r["group"] == group],
                "manifest_restarts": None if manifest_restarts is None else
                sum(1 for r in manifest_restarts if r["group"] == group),
                "flight": faults, "sim_s": sim_s, "events": events, "wall_s": wall})
            if fault == "kill_recorder" and recover is not None:
                row["recover"] = recover
            rows[fault] = row
        return rows
    finally:
        probe.close()
        clean_shm(shm_before)
        if keep:
            shutil.move(str(work), str(Path(keep) / work.name))
        else:
            shutil.rmtree(work, ignore_errors=True)


def _overrides(profile: str, faults: list[str], sim_s: float, cameras: list[str] | None, work: Path,
               sources: Path) -> dict[str, dict[str, Any]]:
    """Per-node parameters of a fault flight (fast diagnostics: they time a group's return)."""
    from rgbt.ros.options import RAW_PREFIX
    from rgbt.ros.profile import node_specs
    from rgbt.stack import load_stack

    specs = node_specs(profile)
    out: dict[str, dict[str, Any]] = {s.name: {"diagnostics_period_s": 0.25} for s in specs}
    sim: dict[str, Any] = {"duration_s": sim_s, "world_size_px": 1024}
    # a stalled driver finds at most its device buffers when it runs again (Spinnaker's 10 frames at
    # 30 Hz: 0.33 s), not the whole stall: samples later than DEVICE_BUFFER_S are not published. Not in a
    # kill_sources flight: its bag is judged against the restarted sources' manifest, which must then
    # repeat the first run's samples exactly (a skip in either run would differ)
    drop = 0.0 if "kill_sources" in faults else DEVICE_BUFFER_S
    vs = {"manifest_path": str(sources), "preload_s": 2.0, "sim": sim, "drop_late_s": drop}
    if cameras:
        stack = load_stack()
        sim["cameras"] = list(cameras)
        recorder = next(s.name for s in specs if s.executable == "recorder")
        vs["wait_for"] = [f"{RAW_PREFIX}/{c}/image" for c in cameras] + [f"{RAW_PREFIX}/imu"]
        vs["wait_for_nodes"] = {recorder: [stack.imu.topic] + [stack.cameras[c].topic for c in cameras]}
        out["trigger_sync"]["cameras"] = list(cameras)
    out["virtual_stack"].update(vs)
    out["trigger_sync"]["restamper"] = {"min_fit_s": 1.5}
    extra = next(list(s.parameters["extra_topics"]) for s in specs if s.executable == "recorder")
    out["recorder"].update({"out_dir": str(work / "bags"), "start": "always", "min_free_mb": 100,
                            "extra_topics": extra + [PREPROCESS_TOPIC],
                            **({"max_total_mb": CAP_MB} if "disk_full" in faults else {})})
    return out


def _killed_group(fault: str, recorder: str) -> str | None:
    if not fault.startswith("kill_"):
        return None
    return recorder if fault == "kill_recorder" else fault[len("kill_"):]


def _manifest_restarts(bag: Path | None) -> list[dict] | None:
    path = None if bag is None else bag / "rgbt_manifest.json"
    if path is None or not path.exists():
        return None
    return json.loads(path.read_text()).get("restarts", [])


def _publishing(status: dict[str, dict[str, str]]) -> bool:
    """The virtual stack reports IMU samples out (its diagnostics' topic counts)."""
    vs = next((v for k, v in status.items() if k.startswith("virtual_stack")), {})
    return any(k.endswith("imu.count") and float(v or 0) > 0 for k, v in vs.items())


def _done(path: Path) -> bool:
    try:
        return bool(json.loads(path.read_text()).get("done"))
    except (OSError, ValueError):
        return False


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


def inject(fault: str, graph: Any, recorder: str, step_file: Path, hog_priority: int = 0) -> int:
    """Inject ``fault`` now; returns its wall-clock time (ns). Faults that last (a source gone, the
    CPU starved) are ended by a timer thread. ``hog_priority``: the busy processes' ``SCHED_FIFO``
    priority for ``cpu_starvation`` (0: normal priority)."""
    t = time.time_ns()
    group = _killed_group(fault, recorder)
    if group is not None:
        os.kill(graph.procs[group].pid, signal.SIGKILL)
    elif fault == "source_gone":
        pid = graph.procs[_source_group(graph)].pid
        os.kill(pid, signal.SIGSTOP)
        threading.Timer(GONE_S, os.kill, (pid, signal.SIGCONT)).start()
    elif fault == "cpu_starvation":
        end = time.monotonic() + STARVE_S
        busy = [subprocess.Popen([sys.executable, "-c", HOG, str(hog_priority), repr(end)])
                for _ in range(2 * (os.cpu_count() or 1))]
        threading.Timer(STARVE_S, lambda: [p.kill() or p.wait() for p in busy]).start()
    elif fault.startswith("clock_step_"):
        tmp = step_file.with_suffix(".tmp")  # replaced whole: the virtual stack never reads a partial value
        tmp.write_text(str(int(float(fault[len("clock_step_"):-1]) * 1e9)))
        os.replace(tmp, step_file)
    # disk_full: the size cap set at start ends the recording by itself; the event is its last message
    return t


def _source_group(graph: Any) -> str:
    return next(g for g, cmd in graph.commands.items() if any(a.endswith(":virtual_stack") for a in cmd))


def judge(fault: str, bag: Path | None, published: dict, t_event: int | None, t_prev: int | None = None,
          t_next: int | None = None) -> dict:
    """The fault's row from the bag, the sources' manifest and the injection time (wall ns);
    ``t_prev`` / ``t_next``: the flight's previous / next injection (its window is between them)."""
    row: dict[str, Any] = {"lost": None, "recovered_s": None, "bag_complete": False, "stamps_monotonic": False}
    if bag is None or not published:
        row["problem"] = "no bag" if bag is None else "the sources wrote no manifest"
        return row
    try:
        streams = read_streams(bag)
    except Exception as exc:  # noqa: BLE001 - a bag that does not open is this row's finding
        row["problem"] = f"bag does not open: {exc}"
        return row
    if fault == "disk_full":
        t_event = max(t for s in streams.values() for t in s["log"])  # the cap: the last message written
    if t_event is None:
        row["problem"] = "the fault was never injected (the sources did not start)"
        return row
    row["stamps_monotonic"] = all(all(b >= a for a, b in zip(s["stamp"], s["stamp"][1:]))
                                  for s in streams.values() if s["stamp"])
    streams = with_before_lock(streams)  # a frame the sync published before lock is recorded, not lost
    row["bag_complete"] = _complete(streams, published, t_event, fault in ("kill_recorder", "disk_full"))
    if fault in ("kill_recorder", "disk_full"):
        window = (0, t_event)  # what went out before the event
    elif fault == "kill_sources":
        window = (t_event, t_next or 2**63)  # the restarted sources' messages
    else:
        window = (t_event if t_prev else 0, t_next or 2**63)
    row["lost"], row["streams"] = lost(streams, published, window)
    row["source_skipped"] = dict(published.get("late_dropped", {}))  # never published (a stalled driver's overflow)
    if fault.startswith("clock_step_"):
        clock = published.get("clock", {})  # what the sources' clock saw
        row["clock_steps"], row["clock_last_step_ns"] = int(clock.get("steps", 0)), int(clock.get("last_step_ns", 0))
    if fault not in ("kill_recorder", "disk_full"):
        row["recovered_s"], row["interrupted"] = recovered_s(streams, t_event,
                                                             (t_next - t_event) / 1e9 if t_next else 30.0)
    return row


def read_streams(bag: Path) -> dict[str, dict[str, list]]:
    """Topic -> log times, header stamps (stamped types) and image CRC32s, in bag order."""
    from rgbt.bag.reader import open_bag
    from rgbt.ros.recording import STAMPED_TYPES
    from rgbt.ros.stamps import cdr_stamp_ns

    out: dict[str, dict[str, list]] = {}
    with open_bag(bag) as reader:
        for rec in reader.messages():
            s = out.setdefault(rec.topic, {"log": [], "stamp": [], "crc": []})
            s["log"].append(rec.t_ns)
            if rec.msgtype in STAMPED_TYPES:
                s["stamp"].append(cdr_stamp_ns(bytes(rec.raw)))
            if rec.msgtype == "sensor_msgs/msg/Image":
                s["crc"].append(zlib.crc32(rec.msg.data))
    return out


def with_before_lock(streams: dict[str, dict[str, list]], stack_path: Path | None = None) -> dict[str, dict[str, list]]:
    """``streams`` with each ``/rgbt/raw/<sensor>/unlocked`` topic (what the trigger sync publishes,
    host-stamped, before it locks: ``rgbt.ros.options.unlocked_topic``) merged into its stack topic in
    log-time order: for completeness and loss those are the same sensor's messages. Header stamps
    are not comparable across the two (host vs trigger time): check them on the recorded topics."""
    from rgbt.paths import DEFAULT_STACK
    from rgbt.ros.options import unlocked_topic
    from rgbt.stack import load_stack

    stack = load_stack(stack_path or DEFAULT_STACK)
    pairs = {unlocked_topic(name): cam.topic for name, cam in stack.cameras.items()}
    pairs[unlocked_topic("imu")] = stack.imu.topic
    out = dict(streams)
    for before, topic in pairs.items():
        if before not in out:
            continue
        a, b = out.pop(before), out.get(topic, {"log": [], "stamp": [], "crc": []})
        merged: dict[str, list] = {}
        for key in ("log", "stamp", "crc"):
            if len(a[key]) == len(a["log"]) and len(b[key]) == len(b["log"]):
                merged[key] = [v for _, v in sorted(zip(a["log"] + b["log"], a[key] + b[key]), key=lambda x: x[0])]
            else:  # only some messages have this (e.g. no CRC for IMU samples)
                merged[key] = a[key] + b[key]
        out[topic] = merged
    return out


def _complete(streams: dict, published: dict, t_event: int, terminal: bool) -> bool:
    """Per camera stream: the frames logged up to the event are, in order and without a gap, the
    first frames published; and every frame sent before the event is in the bag in publication
    order (``terminal`` events - the recorder gone - excuse the last ``MARGIN_S`` before it: in
    transit or in the writer's last chunk)."""
    margin = MARGIN_S * 1e9 if terminal else 0
    for topic, frames in published.get("frames", {}).items():
        s = streams.get(topic, {"log": [], "crc": []})
        before = [c for t, c in zip(s["log"], s["crc"]) if t <= t_event]
        sent = [c for c, t in zip(frames["crc32"], frames["t_pub_ns"]) if t < t_event - margin]
        if before != frames["crc32"][:len(before)] or s["crc"][:len(sent)] != sent:
            return False
    return True


def lost(streams: dict, published: dict, window: tuple[int, int]) -> tuple[int, dict[str, dict]]:
    """Messages the sources published (sent) in ``window`` (wall ns) that the bag lacks: frames by
    CRC32; IMU samples by count (their true times against the restamped stamps in the bag). Also,
    per stream counted: ``{"lost": n, "sent_s": [...]}`` with when the missing frames were sent (s
    after the window opened; a window from 0: after the stream's first frame); IMU samples are
    counted, not matched one by one."""
    a, b = window
    per: dict[str, dict] = {}
    for topic, frames in published.get("frames", {}).items():
        s = streams.get(topic, {"log": [], "crc": []})
        have = {c for t, c in zip(s["log"], s["crc"]) if t >= a}  # logged after it was sent
        gone = [t for c, t in zip(frames["crc32"], frames["t_pub_ns"]) if a <= t < b and c not in have]
        ref = a or min(frames["t_pub_ns"], default=0)
        per[topic] = {"lost": len(gone), "sent_s": [round((t - ref) / 1e9, 3) for t in gone[:10]]}
    names = sorted(published.get("frames", {}))
    imu = next((t for t in published.get("stack_topics", {}) if t not in names), None)
    if imu and published.get("imu_t_pub_ns"):
        sent = [tt for tt, tp in zip(published["imu_t_true_ns"], published["imu_t_pub_ns"]) if a <= tp < b]
        got = 0
        if sent:
            got = sum(1 for t in streams.get(imu, {"stamp": []})["stamp"] if sent[0] - 2e6 <= t <= sent[-1] + 2e6)
        per[imu] = {"lost": max(0, len(sent) - got), "sent": len(sent)}
    return sum(v["lost"] for v in per.values()), dict(sorted(per.items()))


def recovered_s(streams: dict, t_event: int, window_s: float = 30.0) -> tuple[float | None, dict[str, float | None]]:
    """Seconds from ``t_event`` until every stream that flowed in the second before it (3 messages
    or more) flows again: the first message after its longest gap over :data:`GAP_S` within
    ``window_s``; and the streams that were interrupted -> their seconds (None: never back)."""
    down: dict[str, float | None] = {}
    for topic, s in streams.items():
        log = s["log"]
        if sum(1 for t in log if t_event - 1e9 <= t <= t_event) < 3:
            continue  # not flowing before the event
        after = [t for t in log if t_event < t <= t_event + window_s * 1e9]
        if not after:
            down[topic] = None
            continue
        prev, back = t_event, None
        for t in after:
            gap = (t - prev) / 1e9
            if gap > GAP_S and (back is None or gap > back[0]):
                back = (gap, t)
            prev = t
        if back is not None:
            down[topic] = round((back[1] - t_event) / 1e9, 3)
    if any(v is None for v in down.values()):
        return None, down
    return max(down.values(), default=0.0), down


def print_result(result: dict) -> None:
    from rgbt.cli.output import print_table

    rows = [[n, r["lost"], r["recovered_s"], r.get("back_s"), r["bag_complete"], r["stamps_monotonic"],
             len(r.get("restarts", []))] for n, r in result["faults"].items()]
    print_table(f"Fault matrix ({result['profile']}, synthetic)",
                ["fault", "lost", "recovered_s", "back_s", "bag_complete", "stamps_monotonic", "restarts"], rows)

"""``rgbt bench graph``: the ROS 2 sensor graph at full rate - drops, latency per hop and where it goes.

Runs a profile (``bench-sim``: virtual stack -> trigger sync -> preprocess -> rectify -> fusion,
thermal segmentation, the recorder writing into a temporary folder) as real processes. The
simulated run is generated first (``preload_s``) and then played at the real rate. Nothing extra
subscribes to the images (a probe would load the 2 cores it measures): the numbers come from the
graph itself (its ``/diagnostics``, the recorder's manifest, psutil on its processes).

* driver topics (``/rgbt/raw/...``, stamped at publication): the first hop, virtual stack ->
  trigger sync; ``received`` and latency from the sync node's diagnostics.
* stack topics and pipeline outputs: ``received`` = messages in the recorder's bag, latency =
  arrival at the recorder - header stamp. Restamped topics carry the trigger time, so theirs is
  trigger-to-recorder (the simulated sensor-to-host latency, 8-12 ms + N(0, 3 ms), + the runtime):
  ``"since": "trigger"``. Theirs also has ``host_p50_ms`` / ``host_p99_ms``: from the frame's arrival at
  the host (the driver's stamp) to the recorder, the runtime's own latency (the recorder's
  ``arrival_trace`` joined with the virtual stack's manifest); ``sensor_topic_p99_ms`` is the largest
  of those, ``sensor_topic_trigger_p99_ms`` the largest since the trigger.
* ``processing``: per pipeline output, the p99 from its input's host arrival (the last camera frame
  of that trigger) to the recorder, in ms and in frame periods of that input (thermal 60 Hz for the
  masks, the colour camera's 30 Hz for rectified pairs and fusion); for a node limited to
  ``max_rate_hz`` also in its own periods (``p99_own_periods``).
* driver topics carry ``transport``: ``in-process`` when the virtual stack's thread hands them to the
  trigger sync of the same process (``rgbt.ros.local_topics``), else ``middleware``.
* ``published``: the virtual stack's manifest; ``dropped`` = published - received.
* ``recorder``: ``received`` / ``dropped`` summed over every stream the virtual stack published,
  plus what the middleware reported lost, what exceeded the recorder's memory budget, and
  ``stamp_gaps``: messages the recorder saw missing by each stream's own header stamps (a reader
  queue overrun the middleware does not report shows there; so do the sensor's own drops).
* ``breakdown``: per processing node, p50 / p99 ms of ``arrival`` (stamp -> subscription callback:
  upstream, transport and executor wait), ``wait`` (callback -> worker), ``work`` (processing),
  ``serialize`` (array -> CDR) and ``publish`` (middleware write), with the frames dropped as stale;
  ``virtual_stack.late`` (how far behind its schedule the source published each stream: part of
  the first hop that is neither transport nor the sync node) and ``recorder.executor_lag`` (how
  late the recorder's 4 Hz timer ran: the executor wait a message meets there).
* ``cpu``: share of one core per process group (psutil, over the playback window), per processing
  worker thread, the whole machine's busy share and load average (other users' load included).

``--load N`` adds N busy processes (pure Python loops, bounded in time, ended by PID) to show the
overload policy: the recorder keeps everything, processing drops stale frames with counts.
``segmentation_hz``: rate of the class-id masks in the bag while the graph ran at full rate.
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
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rgbt.graph.launcher import Graph

import numpy as np

from rgbt.errors import ConfigError
from rgbt.output import print_table
from rgbt.topics import (
    FUSION_CLASS_IDS_TOPIC,
    FUSION_PREFIX,
    RAW_PREFIX,
    RECTIFIED_PREFIX,
    SEG_CLASS_IDS_TOPIC,
    SEG_PREFIX,
    THERMAL_PREFIX,
)

#: stages of a processing node's latest-frame mailbox (``rgbt.ros.mailbox``) in the breakdown
STAGES = ("arrival", "wait", "work", "serialize", "publish")
#: pipeline output topic prefix -> (node, diagnostics key of the messages it published)
OUTPUTS = {f"{SEG_PREFIX}/": ("segmentation", "pipeline.processed"),
           f"{RECTIFIED_PREFIX}/": ("rectify", "pairs.processed"),
           f"{FUSION_PREFIX}/": ("fusion", "pairs.processed"),
           f"{THERMAL_PREFIX}/": ("thermal_preprocess", "latest.processed")}
#: pipeline output topic prefix -> the cameras its input needs (its frame period is the slowest one's)
OUTPUT_INPUTS = {f"{SEG_PREFIX}/": ("thermal",), f"{THERMAL_PREFIX}/": ("thermal",),
                 f"{RECTIFIED_PREFIX}/": ("thermal", "color"), f"{FUSION_PREFIX}/": ("thermal", "color")}


@dataclass(frozen=True)
class GraphBenchOptions:
    """What ``rgbt bench graph`` runs: a profile's graph on simulated full-rate data."""

    duration_s: float = 10.0  #: seconds of full-rate data (simulated first, kept in memory, ~110 MB/s)
    profile: str = "bench-sim"
    segmentation: bool = True  #: run the segmentation node
    fusion: bool = True  #: run the RGB-T fusion node
    load: int = 0  #: extra busy processes while the graph runs (overload; 0-8)
    single_process: bool = False  #: all nodes in one process
    isolate_drivers: bool = False  #: each device driver in its own process (rgbt.graph.profile.isolate_drivers)
    overrides: tuple[str, ...] = ()  #: ``NODE.PARAM=VALUE`` parameter overrides (``--set``)


def options_from_args(args: argparse.Namespace) -> GraphBenchOptions:
    """The options of the command line :func:`add_arguments` defines."""
    return GraphBenchOptions(duration_s=args.duration, profile=args.profile, segmentation=not args.no_segmentation,
                             fusion=not args.no_fusion, load=args.load, single_process=args.single_process,
                             isolate_drivers=args.isolate_drivers, overrides=tuple(args.set))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--duration", type=float, default=10.0,
                        help="seconds of full-rate data (default 10; simulated first, kept in memory ~110 MB/s)")
    parser.add_argument("--profile", default="bench-sim", help="profile to run (default bench-sim)")
    parser.add_argument("--no-segmentation", action="store_true", help="leave the segmentation node out")
    parser.add_argument("--no-fusion", action="store_true", help="leave the RGB-T fusion node out")
    parser.add_argument("--load", type=int, default=0, metavar="N",
                        help="N extra busy processes while the graph runs (overload; 0-8)")
    parser.add_argument("--single-process", action="store_true", help="all nodes in one process")
    parser.add_argument("--isolate-drivers", action="store_true",
                        help="each device driver in its own process (the virtual stack split per camera; "
                             "rgbt.graph.profile.isolate_drivers)")
    parser.add_argument("--set", action="append", default=[], metavar="NODE.PARAM=VALUE")


def run(options: GraphBenchOptions) -> dict:
    from rgbt.graph.launcher import GraphRun, clean_shm, shm_files
    from rgbt.graph.profile import node_specs, parse_set, profile_env
    from rgbt.graph.recording import ARRIVALS
    from rgbt.ros_env import apply_ros_defaults
    from rgbt.stack import load_stack

    if not 0 <= options.load <= 8:
        raise ConfigError("--load", "load", options.load, "0 to 8 busy processes")
    if options.duration_s <= 0:
        raise ConfigError("--duration", "duration", options.duration_s, "a positive number of seconds")
    apply_ros_defaults()
    # a private DDS domain (unless one is set): another graph on this host must not join the measurement
    os.environ.setdefault("ROS_DOMAIN_ID", str(random.SystemRandom().randint(30, 200)))
    work = Path(tempfile.mkdtemp(prefix="rgbt_bench_graph_"))
    manifest = work / "sources.json"
    overrides = parse_set(list(options.overrides))
    specs = node_specs(options.profile, overrides)
    for s in specs:
        if s.executable == "virtual_stack":  # the whole run simulated first, then played at the real rate
            node = overrides.setdefault(s.name, {})
            # counts and send times only: the frames' CRC32s (the fault bench's check) would load the sources
            node.update({"manifest_path": str(manifest), "manifest_crc": False, "preload_s": options.duration_s})
            node.setdefault("sim", {}).update({"duration_s": options.duration_s, "world_size_px": 1024})
            if options.isolate_drivers:
                # one virtual stack per camera process, on one timeline: played from a run rendered ahead
                # (each starts at once, not after its own preload; the timeline waits 3 s for them all)
                from rgbt.sim.cache import render_for_virtual_stack

                params = next(x for x in node_specs(options.profile, overrides) if x.name == s.name).parameters
                cache = render_for_virtual_stack(params, work / "sim",
                                                 log=lambda line: print(f"rgbt bench graph: {line}", file=sys.stderr))
                node.update({"sim_cache": str(cache), "preload_s": 0.0, "start_delay_s": 3.0})
        elif s.executable == "recorder":
            overrides.setdefault(s.name, {}).update({"out_dir": str(work / "bags"), "start": "always",
                                                     "min_free_mb": 100, "arrival_trace": True})
    specs = node_specs(options.profile, overrides)
    dropped_nodes = {"segmentation"} if not options.segmentation else set()
    dropped_nodes |= {"fusion"} if not options.fusion else set()
    specs = [s for s in specs if s.executable not in dropped_nodes]
    if options.single_process:
        specs = [replace(s, process="all") for s in specs]
    if options.isolate_drivers:
        from rgbt.graph.profile import isolate_drivers

        specs = isolate_drivers(specs, work / "anchor.json")
    manifests = [Path(s.parameters["manifest_path"]) for s in specs if s.executable == "virtual_stack"]

    shm_before = shm_files()
    probe = _Probe()
    # the run is simulated first (preload: ~2-10 s per simulated second, more on a loaded machine)
    limit_s = options.duration_s * 20 + 120
    load = _Load(options.load, limit_s + 30)
    cpu = _CpuSampler()
    try:
        run = GraphRun(specs, profile_env(options.profile), duration_s=limit_s + 30)
        graph = run.start()
        cpu.procs = {g: p.pid for g, p in graph.procs.items()}
        cpu.procs.update({f"load-{i}": p.pid for i, p in enumerate(load.procs)})  # what the load got
        t_start = time.monotonic()
        try:
            while graph.alive() and time.monotonic() - t_start < limit_s:
                cpu.sample()
                if read_sources(manifests).get("done"):
                    break
                time.sleep(0.2)
            cpu.sample()
            _wait_for_recorder(probe, manifest, graph)
            status = dict(probe.status)
        finally:
            codes = run.stop()
            load.stop()
        sources = read_sources(manifests)
        bag_manifests = sorted((work / "bags").glob("*/rgbt_manifest.json"))
        recorded = json.loads(bag_manifests[-1].read_text()) if bag_manifests else {}
        arrivals_file = bag_manifests[-1].parent / ARRIVALS if bag_manifests else None
        arrivals = json.loads(arrivals_file.read_text()) if arrivals_file and arrivals_file.exists() else {}
        stack = load_stack(next((s.parameters["stack_path"] for s in specs if s.parameters.get("stack_path")), None))
        prefix = next((s.parameters["raw_prefix"] for s in specs if s.executable == "virtual_stack"), RAW_PREFIX)
        raw_to_stack = {f"{prefix}/{name}/image": cam.topic for name, cam in stack.cameras.items()}
        raw_to_stack[f"{prefix}/imu"] = stack.imu.topic
        result = summarize(sources, recorded, status, raw_to_stack, arrivals,
                           {name: cam.rate_hz for name, cam in stack.cameras.items()})
        t0 = sources.get("t0_wall_ns")
        result["cpu"] = cpu.shares(t0 / 1e9 if t0 else None, specs, status)
    finally:
        load.stop()
        probe.close()
        clean_shm(shm_before)  # the probe's own Fast DDS files too
        shutil.rmtree(work, ignore_errors=True)
    result.update(
        {
            "profile": options.profile,
            "duration_s": options.duration_s,
            "load": options.load,
            "exit_codes": codes,
            "ros_domain_id": int(os.environ["ROS_DOMAIN_ID"]),
            "processes": sorted({s.process for s in specs}),
            "nodes": [s.name for s in specs],
            "synthetic": True,
            "note": "shared machine: see cpu.machine for the load during the run",
        }
    )
    return result


def read_sources(paths: list[Path]) -> dict:
    """The virtual stacks' manifests as one (several when the drivers are isolated: one per camera and
    one for the rest): counts added, frames and IMU lists joined, the earliest start; ``done`` once
    every one is. {} while none is written."""
    parts = []
    for path in paths:
        try:
            parts.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            return {}
    if len(parts) == 1 or not parts:
        return parts[0] if parts else {}
    out: dict = {"done": all(p.get("done") for p in parts), "frames": {}}
    for part in parts:
        for key in ("topics", "stack_topics", "late_dropped", "restart_skipped", "unplugged"):
            for k, n in part.get(key, {}).items():
                out.setdefault(key, {})[k] = out.get(key, {}).get(k, 0) + n
        out["frames"].update(part.get("frames", {}))
        clock = part.get("clock")
        if clock:  # every part holds its own clock step (the same injected one)
            c = out.setdefault("clock", {"steps": 0, "last_step_ns": 0})
            c["steps"] = max(c["steps"], int(clock.get("steps", 0)))
            c["last_step_ns"] = max(c["last_step_ns"], int(clock.get("last_step_ns", 0)))
        for key in ("imu_t_true_ns", "imu_t_host_ns", "imu_t_pub_ns"):
            out.setdefault(key, []).extend(part.get(key, []))
        if part.get("t0_wall_ns") is not None:
            out["t0_wall_ns"] = min(out.get("t0_wall_ns", part["t0_wall_ns"]), part["t0_wall_ns"])
    return out


def _wait_for_recorder(probe: _Probe, manifest: Path, graph: Graph, timeout_s: float = 15.0) -> None:
    """After the last sample went out: wait until the recorder's received counts stop growing for
    1.5 s (it has caught up; two diagnostics rounds) or ``timeout_s`` passes, so that a recorder
    that is behind is measured as late, not as lossy."""
    deadline = time.monotonic() + timeout_s
    last, since = None, time.monotonic()
    time.sleep(1.0)
    while time.monotonic() < deadline and graph.alive():
        rec = next((v for k, v in probe.status.items() if k.startswith("recorder")), {})
        counts = tuple(sorted((k, v) for k, v in rec.items() if k.startswith("/") and k.endswith(".count")))
        if counts != last:
            last, since = counts, time.monotonic()
        elif time.monotonic() - since >= 1.5:
            return
        time.sleep(0.1)


class _Probe:
    """Listens to ``/diagnostics`` (cheap: no image subscriptions) in a background thread."""

    def __init__(self) -> None:
        from diagnostic_msgs.msg import DiagnosticArray

        from rgbt.ros.qos import qos_profile
        from rgbt.ros.spin import BackgroundNode

        self.status: dict[str, dict[str, str]] = {}
        self.seen: dict[str, float] = {}  # node -> monotonic time of its last diagnostics
        self._bg = BackgroundNode("rgbt_bench_probe", period_s=0.1, handle_signals=False)
        self._bg.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diag,
                                          qos_profile("reliable", 100))
        self._bg.start()

    def _on_diag(self, msg: Any) -> None:  # msg: diagnostic_msgs/DiagnosticArray
        for st in msg.status:
            self.status[st.name] = {kv.key: kv.value for kv in st.values}
            self.seen[st.name] = time.monotonic()

    def close(self) -> None:
        self._bg.close()


class _Load:
    """``n`` busy processes (a pure Python loop each, ending by itself after ``max_s``), ended by PID."""

    def __init__(self, n: int, max_s: float) -> None:
        code = f"import time\nd = time.monotonic() + {float(max_s)}\nwhile time.monotonic() < d: pass\n"
        self.procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(n)]

    def stop(self) -> None:
        from rgbt.graph.launcher import STOP_GRACE_S, stop_child

        for p in self.procs:
            stop_child(p, STOP_GRACE_S, sig=signal.SIGKILL)
        self.procs = []


def runqueue_wait_s(pid: int) -> float | None:
    """Seconds the threads of process ``pid`` have spent runnable but waiting for a CPU (the
    kernel's ``/proc/<pid>/task/<tid>/schedstat``, second field); None where it cannot be read."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    total = 0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as fh:
                total += int(fh.read().split()[1])
        except (OSError, ValueError, IndexError):  # a thread that ended meanwhile
            continue
    return total / 1e9


class _CpuSampler:
    """CPU seconds and CPU-wait seconds (runnable, not running) of the graph's processes, and the
    whole machine's times, sampled a few times a second."""

    def __init__(self) -> None:
        self.procs: dict[str, int] = {}
        # (wall s, group -> (cpu s, runqueue wait s or None), machine)
        self.samples: list[tuple[float, dict[str, tuple[float, float | None]], Any]] = []  # Any: psutil scputimes

    def sample(self) -> None:
        import psutil

        per: dict[str, tuple[float, float | None]] = {}
        for group, pid in self.procs.items():
            try:
                t = psutil.Process(pid).cpu_times()
                per[group] = (t.user + t.system, runqueue_wait_s(pid))
            except psutil.Error:
                continue
        self.samples.append((time.time(), per, psutil.cpu_times()))

    def shares(self, t0_s: float | None, specs: list, status: dict[str, dict[str, str]]) -> dict:
        """Share of one core (%) per process group over the playback window (from ``t0_s``), the
        processing workers' share from their diagnostics, and the machine's busy / steal share.
        ``cpu_wait_pct``: the time the group's threads were ready to run but waited for a CPU, in %
        of the window (summed over threads: 50 = on average half a thread waiting); on a short CPU
        it is where the latency goes."""
        if not self.samples:
            return {}
        first = next((s for s in self.samples if t0_s is None or s[0] >= t0_s), self.samples[0])
        last = self.samples[-1]
        span = max(last[0] - first[0], 1e-9)
        groups = {}
        for group in self.procs:
            if group in first[1] and group in last[1]:
                (cpu0, wait0), (cpu1, wait1) = first[1][group], last[1][group]
                groups[group] = {"cpu_pct": round(100 * (cpu1 - cpu0) / span, 1),
                                 "cpu_wait_pct": (round(100 * max(wait1 - wait0, 0.0) / span, 1)
                                                  if wait0 is not None and wait1 is not None else None),
                                 "nodes": [s.name for s in specs if s.process == group]
                                 or (["busy loop (--load)"] if group.startswith("load-") else [])}
        workers = {}
        for name, values in status.items():
            cpu_s = _num(values.get("latest.cpu_s") or values.get("pairs.cpu_s"))
            if cpu_s is not None:
                workers[name] = cpu_s
        m0, m1 = first[2], last[2]
        total = sum(m1) - sum(m0)
        idle = (m1.idle + getattr(m1, "iowait", 0)) - (m0.idle + getattr(m0, "iowait", 0))
        steal = getattr(m1, "steal", 0) - getattr(m0, "steal", 0)
        cores = os.cpu_count() or 1
        return {"window_s": round(span, 1), "processes": groups,
                "worker_cpu_s": workers,  # processing worker threads, whole run (not only the window)
                "machine": {"busy_pct": round(100 * (total - idle) / total, 1) if total > 0 else None,
                            "steal_pct": round(100 * steal / total, 1) if total > 0 else None,
                            "cores": cores, "loadavg_1min": round(os.getloadavg()[0], 2)}}


def _num(value: str | None) -> float | None:
    try:
        return float(value) if value not in (None, "", "None") else None
    except ValueError:
        return None


def _count(value: str | None) -> int | None:
    v = _num(value)
    return None if v is None else int(v)


def breakdown(status: dict[str, dict[str, str]]) -> dict:
    """Per node with a latest-frame mailbox (``<box>.*`` keys in its diagnostics) or a segmentation
    pipeline: p50 / p99 ms of each stage, frames processed and dropped as stale or as late."""
    out: dict[str, dict] = {}
    for node, values in sorted(status.items()):
        boxes = sorted({k.split(".")[0] for k in values if k.endswith(".dropped_stale")})
        for box in boxes:
            entry: dict = {"box": box, "processed": _count(values.get(f"{box}.processed")),
                           "dropped_stale": _count(values.get(f"{box}.dropped_stale")),
                           "dropped_late": _count(values.get(f"{box}.dropped_late")),
                           "submitted": _count(values.get(f"{box}.submitted"))}
            for stage in STAGES:
                p50, p99 = _num(values.get(f"{box}.{stage}_p50_ms")), _num(values.get(f"{box}.{stage}_p99_ms"))
                if p50 is not None:
                    entry[stage] = {"p50_ms": round(p50, 2), "p99_ms": round(p99 or p50, 2)}
            if node.startswith("segmentation"):
                entry["timing"] = {k.split(".", 1)[1]: v for k, v in values.items() if k.startswith("timing.")}
            out[node if len(boxes) == 1 else f"{node}.{box}"] = entry
    vs = next((v for k, v in status.items() if k.startswith("virtual_stack")), {})
    late = {k[: -len(".p99_ms")]: {"p50_ms": round(_num(vs.get(k[:-7] + ".p50_ms")) or 0.0, 2),
                                   "p99_ms": round(_num(v) or 0.0, 2)}
            for k, v in vs.items() if k.startswith("/") and k.endswith(".p99_ms") and _num(v) is not None}
    if late:  # the source publishing behind its schedule: part of the first hop, not transport
        out["virtual_stack"] = {"late": late}
    rec = next((v for k, v in status.items() if k.startswith("recorder")), {})
    lag_p50_ms = _num(rec.get("executor_lag.p50_ms"))
    if lag_p50_ms is not None:  # how late the recorder's 4 Hz timer ran
        out["recorder"] = {"executor_lag": {"p50_ms": round(lag_p50_ms, 2),
                                            "p99_ms": round(_num(rec["executor_lag.p99_ms"]) or 0.0, 2)}}
    return out


def since_host(sources: dict, arrivals: dict[str, list], stack_topics: list[str]) -> dict[str, dict]:
    """p50 / p99 ms from arrival at the host to arrival at the recorder (``arrivals``: the recorder's
    trace of header stamp and arrival, ns), per restamped stack topic and per pipeline output.

    A stack message is matched to the published frame (or IMU sample) of its own stream by its
    restamped stamp = the true trigger / sample time (within 1 ms); its host arrival is the driver's
    stamp in the virtual stack's manifest. A pipeline output (``OUTPUTS``: segmentation masks,
    rectified pairs, fusion) carries the stamp of its input frames: its host arrival is the latest of
    the camera frames of that trigger (when the input was complete). This is the runtime's own
    latency; the latency since the trigger also holds the simulated sensor-to-host transport."""
    from rgbt.timematch import nearest_index

    def table(true_ns: list | np.ndarray, host_ns: list | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(true times sorted, host arrival of each); empty without host arrivals (an older manifest)."""
        true, host = np.asarray(true_ns, dtype=np.int64), np.asarray(host_ns, dtype=np.int64)
        if len(true) != len(host):
            true = host = np.zeros(0, dtype=np.int64)
        order = np.lexsort((host, true))
        return true[order], host[order]

    frames = sources.get("frames", {})
    streams = {t: table(frames[t]["t_true_ns"], frames[t].get("t_host_ns", [])) for t in stack_topics if t in frames}
    streams.update({t: table(sources.get("imu_t_true_ns", []), sources.get("imu_t_host_ns", []))
                    for t in stack_topics if t not in frames})
    cams = [streams[t] for t in frames if t in streams]
    if cams:  # per trigger time, the last camera frame to arrive
        true, host = table(np.concatenate([c[0] for c in cams]), np.concatenate([c[1] for c in cams]))
        last = np.append(true[1:] != true[:-1], True)
        complete = (true[last], host[last])
    out: dict[str, dict] = {}
    for topic, arrived in arrivals.items():
        if topic in streams:
            true, host = streams[topic]
        elif cams and topic.startswith(tuple(OUTPUTS)):
            true, host = complete
        else:
            continue
        rec = np.asarray(arrived, dtype=np.int64).reshape(-1, 2)
        if not len(true) or not len(rec):
            continue
        i = nearest_index(true, rec[:, 0])
        ok = np.abs(true[i] - rec[:, 0]) < 1_000_000
        if ok.any():
            p50, p99 = np.percentile((rec[ok, 1] - host[i[ok]]) / 1e6, (50, 99))
            out[topic] = {"p50_ms": float(p50), "p99_ms": float(p99), "matched": int(ok.sum())}
    return out


def summarize(sources: dict, recorded: dict, status: dict[str, dict[str, str]], raw_to_stack: dict[str, str],
              arrivals: dict[str, list] | None = None, camera_hz: dict[str, float] | None = None) -> dict:
    """The bench result from the virtual stack's manifest, the recorder's manifest and arrival trace
    and the nodes' last diagnostics (``status``: node -> key -> value). ``camera_hz``: the stack's
    camera rates, for the processing latency in frame periods."""
    topics: dict[str, dict] = {}
    sync = next((v for k, v in status.items() if k.startswith("trigger_sync")), {})
    published = sources.get("topics", {})
    restamped = sources.get("stack_topics", {})
    recorded_topics = recorded.get("topics", {})
    for raw, stack_topic in raw_to_stack.items():  # hop: driver (virtual stack) -> trigger sync
        # the sync node's last diagnostics may lag on a loaded machine: it received at least what it
        # republished and the recorder wrote
        received = _count(sync.get(f"{stack_topic}.count"))
        in_bag = recorded_topics.get(stack_topic, {}).get("count")
        if received is not None and in_bag is not None:
            received = max(received, int(in_bag))
        pub = published.get(raw)
        topics[raw] = {"published": pub, "received": received,
                       "dropped": None if pub is None or received is None else int(pub - received),
                       "p50_ms": _num(sync.get(f"{stack_topic}.p50_ms")),
                       "p99_ms": _num(sync.get(f"{stack_topic}.p99_ms")),
                       "since": "publish", "hop": "virtual_stack -> trigger_sync",
                       # the driver's thread calls the sync (same process) or the middleware carries it
                       "transport": sync.get("inputs") or "middleware"}
    expected = {**published, **restamped}
    rec_received = rec_dropped = lost = over_budget = gaps = 0
    unstamped: dict[str, dict] = {}
    rec_topics = recorded.get("topics", {})
    # frames from before the sync lock arrive host-stamped on {raw}/unlocked (nodes/trigger_sync.py): counted
    # with their stack topic
    before_lock = {stack: raw.removesuffix("/image") + "/unlocked" for raw, stack in raw_to_stack.items()}
    for topic, rec in rec_topics.items():  # everything the recorder received
        if (not rec["count"] and topic not in expected) or topic in before_lock.values():
            continue
        pub = expected.get(topic)
        received = int(rec["count"] + rec_topics.get(before_lock.get(topic, ""), {}).get("count", 0))
        output = next((v for k, v in OUTPUTS.items() if topic.startswith(k)), None)
        if output is not None:  # a pipeline output: published = what its node says it published
            node = next((v for k, v in status.items() if k.startswith(output[0])), {})
            pub = _count(node.get(output[1]))  # at its last diagnostics: a lower bound
            pub = None if pub is None else max(pub, received)
        if rec.get("latency_p50_ms") is None or pub is None:  # no header stamp (armed state), or written by
            unstamped[topic] = {"published": pub, "received": received}  # the recorder itself (state)
            if pub is not None:
                rec_received += received
                rec_dropped += max(0, int(pub - received))
            continue
        since_trigger = topic in restamped or topic.startswith((SEG_PREFIX, RECTIFIED_PREFIX, THERMAL_PREFIX,
                                                                 FUSION_PREFIX))
        topics[topic] = {"published": pub, "received": received,
                         "dropped": None if pub is None else max(0, int(pub - received)),
                         "p50_ms": rec.get("latency_p50_ms"), "p99_ms": rec.get("latency_p99_ms"),
                         "since": "trigger" if since_trigger else "publish", "hop": "-> recorder"}
        lost += int(rec.get("lost", 0))
        over_budget += int(rec.get("dropped_budget", 0))
        gaps += int(rec.get("stamp_gaps", 0))
        if topic in expected:
            rec_received += received
            rec_dropped += max(0, int(pub - received))
    for topic, pub in expected.items():  # published, never recorded at all
        if topic not in topics and topic not in raw_to_stack and topic not in unstamped:
            topics[topic] = {"published": pub, "received": 0, "dropped": pub, "p50_ms": None, "p99_ms": None,
                             "since": "publish", "hop": "-> recorder"}
            rec_dropped += pub
    processing: dict[str, dict] = {}
    for topic, lat in since_host(sources, arrivals or {}, list(raw_to_stack.values())).items():
        if topic in topics:
            topics[topic].update({"host_p50_ms": lat["p50_ms"], "host_p99_ms": lat["p99_ms"]})
        cams = next((v for k, v in OUTPUT_INPUTS.items() if topic.startswith(k)), ())
        hz = min((camera_hz or {}).get(c, 0.0) for c in cams) if cams else 0.0
        output = next((v for k, v in OUTPUTS.items() if topic.startswith(k)), ("", ""))
        diag = next((v for k, v in status.items() if output[0] and k.startswith(output[0])), {})
        limit = _num(diag.get(output[1].split(".")[0] + ".max_rate_hz")) or 0.0
        if hz > 0:  # host arrival of the input -> output at the recorder, in the input's frame periods
            entry = {"p99_ms": round(lat["p99_ms"], 2), "frame_period_ms": round(1e3 / hz, 2),
                     "p99_frame_periods": round(lat["p99_ms"] * hz / 1e3, 2)}
            if 0 < limit < hz:  # a node limited to fewer frames a second: its own period, too
                entry.update({"max_rate_hz": limit, "p99_own_periods": round(lat["p99_ms"] * limit / 1e3, 2)})
            processing[topic] = entry
    seg = recorded.get("topics", {}).get(SEG_CLASS_IDS_TOPIC)
    fused = recorded.get("topics", {}).get(FUSION_CLASS_IDS_TOPIC)
    recorder_diag = next((v for k, v in status.items() if k.startswith("recorder")), {})
    return {"topics": topics,
            "recorder": {"received": rec_received, "dropped": rec_dropped, "lost_in_middleware": lost,
                         "dropped_budget": over_budget, "stamp_gaps": gaps, "bag_written": bool(recorded),
                         "unstamped_topics": unstamped,
                         "writer_budget_mb": _num(recorder_diag.get("writer_budget_mb"))},
            "segmentation_hz": seg["rate_hz"] if seg and seg["count"] > 1 else None,
            "fusion_hz": fused["rate_hz"] if fused and fused["count"] > 1 else None,
            "first_hop_p99_ms": max((v["p99_ms"] for t, v in topics.items() if t in raw_to_stack
                                     and v["p99_ms"] is not None), default=None),
            # host arrival (driver stamp) -> recorder, the runtime's own cost; and since the trigger,
            # which adds the simulated sensor-to-host transport (thermal 12 ms + N(0, 3 ms), ...)
            "sensor_topic_p99_ms": max((v["host_p99_ms"] for t, v in topics.items() if t in raw_to_stack.values()
                                        and v.get("host_p99_ms") is not None), default=None),
            "sensor_topic_trigger_p99_ms": max((v["p99_ms"] for t, v in topics.items() if t in raw_to_stack.values()
                                                and v["p99_ms"] is not None), default=None),
            # processing latency (issue 18's overload bound: p99 <= 3 frame periods of the input)
            "processing": processing,
            "breakdown": breakdown(status)}


def print_result(result: dict) -> None:
    rows = [[t, v["published"], v["received"], v["dropped"], _ms(v["p50_ms"]), _ms(v["p99_ms"]), v["since"],
             _ms(v.get("host_p50_ms")), _ms(v.get("host_p99_ms"))]
            for t, v in result["topics"].items()]
    print_table(f"ROS 2 graph ({result['profile']}, {result['duration_s']} s, load {result['load']}, synthetic)",
                ["topic", "published", "received", "dropped", "p50_ms", "p99_ms", "from",
                 "host_p50_ms", "host_p99_ms"], rows)
    rows = []
    for node, b in result["breakdown"].items():
        if "box" not in b:
            continue
        rows.append([node, b["processed"], b["dropped_stale"], b["dropped_late"]] +
                    [f"{b[s]['p50_ms']:.1f} / {b[s]['p99_ms']:.1f}" if s in b else "" for s in STAGES])
    print_table("where the latency goes (p50 / p99 ms)", ["node", "processed", "stale dropped", "late dropped",
                                                          *STAGES], rows)
    cpu = result.get("cpu", {})
    rows = [
        [g, v["cpu_pct"], v.get("cpu_wait_pct"), ", ".join(v["nodes"])] for g, v in cpu.get("processes", {}).items()
    ]
    print_table(f"CPU share of one core over {cpu.get('window_s')} s (machine: {cpu.get('machine')}); "
                "cpu_wait: ready to run, waiting for a CPU", ["process", "cpu_pct", "cpu_wait_pct", "nodes"], rows)
    print(f"recorder: {result['recorder']}")
    rows = [[t, v["p99_ms"], v["frame_period_ms"], v["p99_frame_periods"]] for t, v in result["processing"].items()]
    print_table("processing latency: input's host arrival -> output at the recorder",
                ["output", "p99_ms", "frame_period_ms", "p99_frame_periods"], rows)
    print(f"segmentation_hz: {result['segmentation_hz']}  fusion_hz: {result['fusion_hz']}")
    print(f"first hop p99: {_ms(result['first_hop_p99_ms'])} ms  sensor topics host -> recorder p99: "
          f"{_ms(result['sensor_topic_p99_ms'])} ms (since trigger {_ms(result['sensor_topic_trigger_p99_ms'])} ms)")


def _ms(v: float | None) -> str:
    return "" if v is None else f"{v:.1f}"

"""``rgbt bench graph``: the ROS 2 sensor graph at full rate - drops and latency per topic.

Runs a profile (``bench-sim``: virtual stack -> trigger sync -> preprocess -> rectify ->
segmentation, the recorder writing into a temporary folder) as real processes. The simulated run
is generated first (``preload_s``) and then played at the real rate. Nothing extra subscribes to
the images (a probe would load the 2 cores it measures): the numbers come from the graph itself.

* driver topics (``/rgbt/raw/...``, stamped at publication): one hop, virtual stack -> trigger
  sync; ``received`` and latency from the sync node's diagnostics.
* stack topics and pipeline outputs: ``received`` = messages in the recorder's bag, latency =
  arrival at the recorder - header stamp. Restamped topics carry the trigger time, so theirs is
  trigger-to-recorder (the simulated transport latency, 8-12 ms, + two hops): ``"since": "trigger"``.
* ``published``: the virtual stack's manifest; ``dropped`` = published - received.

``segmentation_hz``: rate of the class-id masks in the bag while the graph ran at full rate.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--duration", type=float, default=10.0,
                        help="seconds of full-rate data (default 10; simulated first, kept in memory ~110 MB/s)")
    parser.add_argument("--profile", default="bench-sim", help="profile to run (default bench-sim)")
    parser.add_argument("--no-segmentation", action="store_true", help="leave the segmentation node out")
    parser.add_argument("--single-process", action="store_true", help="all nodes in one process")
    parser.add_argument("--set", action="append", default=[], metavar="NODE.PARAM=VALUE")


def run(args: argparse.Namespace) -> dict:
    from rgbt.ros.launcher import clean_shm, ros_environment_defaults, shm_files, start_graph
    from rgbt.ros.profile import node_specs, parse_set, profile_env
    from rgbt.stack import load_stack

    ros_environment_defaults()
    work = Path(tempfile.mkdtemp(prefix="rgbt_bench_graph_"))
    manifest = work / "sources.json"
    overrides = parse_set(args.set)
    specs = node_specs(args.profile, overrides)
    for s in specs:
        if s.executable == "virtual_stack":  # the whole run simulated first, then played at the real rate
            node = overrides.setdefault(s.name, {})
            node.update({"manifest_path": str(manifest), "preload_s": args.duration})
            node.setdefault("sim", {}).update({"duration_s": args.duration, "world_size_px": 1024})
        elif s.executable == "recorder":
            overrides.setdefault(s.name, {}).update({"out_dir": str(work / "bags"), "start": "always",
                                                     "min_free_mb": 100})
    specs = node_specs(args.profile, overrides)
    if args.no_segmentation:
        specs = [s for s in specs if s.executable != "segmentation"]
    if args.single_process:
        specs = [replace(s, process="all") for s in specs]

    shm_before = shm_files()
    probe = _Probe()
    try:
        graph = start_graph(specs, profile_env(args.profile), duration_s=args.duration * 6 + 90)
        t_start = time.monotonic()
        try:
            while graph.alive() and time.monotonic() - t_start < args.duration * 6 + 60:
                if manifest.exists() and json.loads(manifest.read_text()).get("done"):
                    time.sleep(2.5)  # the last messages through the graph, one more diagnostics round
                    break
                time.sleep(0.2)
            status = dict(probe.status)
        finally:
            codes = graph.stop()
        sources = json.loads(manifest.read_text()) if manifest.exists() else {}
        bag_manifests = sorted((work / "bags").glob("*/rgbt_manifest.json"))
        recorded = json.loads(bag_manifests[-1].read_text()) if bag_manifests else {}
        stack = load_stack(next((s.parameters["stack_path"] for s in specs if s.parameters.get("stack_path")), None))
        prefix = next((s.parameters["raw_prefix"] for s in specs if s.executable == "virtual_stack"), "/rgbt/raw")
        raw_to_stack = {f"{prefix}/{name}/image": cam.topic for name, cam in stack.cameras.items()}
        raw_to_stack[f"{prefix}/imu"] = stack.imu.topic
        result = summarize(sources, recorded, status, raw_to_stack)
    finally:
        probe.close()
        clean_shm(shm_before)  # the probe's own Fast DDS files too
        shutil.rmtree(work, ignore_errors=True)
    result.update({"profile": args.profile, "duration_s": args.duration, "exit_codes": codes,
                   "processes": sorted({s.process for s in specs}), "nodes": [s.name for s in specs],
                   "synthetic": True, "note": "shared 2-core machine: numbers are noisy"})
    return result


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

    def _on_diag(self, msg) -> None:  # type: ignore[no-untyped-def]
        for st in msg.status:
            self.status[st.name] = {kv.key: kv.value for kv in st.values}
            self.seen[st.name] = time.monotonic()

    def close(self) -> None:
        self._bg.close()


def _num(value: str | None) -> float | None:
    try:
        return float(value) if value not in (None, "", "None") else None
    except ValueError:
        return None


def summarize(sources: dict, recorded: dict, status: dict[str, dict[str, str]], raw_to_stack: dict[str, str]) -> dict:
    """The bench result from the virtual stack's manifest, the recorder's manifest and the nodes'
    last diagnostics (``status``: node -> key -> value)."""
    topics: dict[str, dict] = {}
    sync = next((v for k, v in status.items() if k.startswith("trigger_sync")), {})
    published = sources.get("topics", {})
    restamped = sources.get("stack_topics", {})
    for raw, stack_topic in raw_to_stack.items():  # hop: driver (virtual stack) -> trigger sync
        received = _num(sync.get(f"{stack_topic}.count"))
        pub = published.get(raw)
        topics[raw] = {"published": pub, "received": None if received is None else int(received),
                       "dropped": None if pub is None or received is None else int(pub - received),
                       "p50_ms": _num(sync.get(f"{stack_topic}.p50_ms")),
                       "p99_ms": _num(sync.get(f"{stack_topic}.p99_ms")),
                       "since": "publish", "hop": "virtual_stack -> trigger_sync"}
    expected = {**published, **restamped}
    for topic, rec in recorded.get("topics", {}).items():  # everything the recorder received
        if not rec["count"] and topic not in expected:
            continue
        pub = expected.get(topic)
        since_trigger = topic in restamped or topic.startswith(("/rgbt/seg", "/rgbt/rectified", "/rgbt/thermal"))
        topics[topic] = {"published": pub, "received": rec["count"],
                         "dropped": None if pub is None else int(pub - rec["count"]),
                         "p50_ms": rec.get("latency_p50_ms"), "p99_ms": rec.get("latency_p99_ms"),
                         "since": "trigger" if since_trigger else "publish", "hop": "-> recorder"}
    seg = recorded.get("topics", {}).get("/rgbt/seg/class_ids")
    seg_node = next((v for k, v in status.items() if k.startswith("segmentation")), {})
    return {"topics": topics,
            "segmentation_hz": seg["rate_hz"] if seg and seg["count"] > 1 else None,
            "segmentation_timing": {k: v for k, v in seg_node.items() if k.startswith("timing.")}}


def print_result(result: dict) -> None:
    from rgbt.cli.output import print_table

    rows = [[t, v["published"], v["received"], v["dropped"], v["p50_ms"], v["p99_ms"], v["since"]]
            for t, v in result["topics"].items()]
    print_table(f"ROS 2 graph ({result['profile']}, {result['duration_s']} s, synthetic)",
                ["topic", "published", "received", "dropped", "p50_ms", "p99_ms", "from"], rows)
    print(f"segmentation_hz: {result['segmentation_hz']}")

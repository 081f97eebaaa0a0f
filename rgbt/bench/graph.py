"""``rgbt bench graph``: the ROS 2 sensor graph at full rate - drops and latency per topic.

Starts a profile (``bench-sim``: virtual stack -> trigger sync -> preprocess -> rectify ->
segmentation, recorder into a temporary folder) as real processes, and subscribes to every topic
from this process (a probe on raw CDR, so it adds no deserialization). Per topic:

* ``published``: what the virtual stack published (its manifest) for driver topics and the
  restamped stack topics (the sync node forwards every frame); ``null`` for pipeline outputs;
* ``received`` by the probe, ``dropped`` = published - received;
* ``p50_ms`` / ``p99_ms``: receive time minus header stamp. Driver topics (``/rgbt/raw/...``) are
  stamped at publication, so this is one hop. Restamped topics carry the trigger time, so theirs is
  trigger-to-consumer (simulated transport delay + driver hop + sync hop), labelled ``"since": "trigger"``.

``segmentation_hz``: class-id masks received per second while the graph ran.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--duration", type=float, default=10.0, help="seconds of full-rate data (default 10)")
    parser.add_argument("--profile", default="bench-sim", help="profile to run (default bench-sim)")
    parser.add_argument("--no-segmentation", action="store_true", help="leave the segmentation node out")
    parser.add_argument("--no-record", action="store_true", help="leave the recorder out")
    parser.add_argument("--single-process", action="store_true", help="all nodes in one process")
    parser.add_argument("--set", action="append", default=[], metavar="NODE.PARAM=VALUE")


def run(args: argparse.Namespace) -> dict:
    from rgbt.ros.launcher import ros_environment_defaults, start_graph
    from rgbt.ros.profile import node_specs, parse_set, profile_env

    ros_environment_defaults()
    work = Path(tempfile.mkdtemp(prefix="rgbt_bench_graph_"))
    manifest = work / "sources.json"
    overrides = parse_set(args.set)
    specs = node_specs(args.profile, overrides)
    stack_nodes = [s.name for s in specs if s.executable == "virtual_stack"]
    for name in stack_nodes:
        overrides.setdefault(name, {}).update({"manifest_path": str(manifest), "start_delay_s": 3.0})
    for s in specs:
        if s.executable == "recorder":
            overrides.setdefault(s.name, {}).update({"out_dir": str(work / "bags"), "start": "always",
                                                     "min_free_mb": 100})
    specs = node_specs(args.profile, overrides)
    if args.no_segmentation:
        specs = [s for s in specs if s.executable != "segmentation"]
    if args.no_record:
        specs = [s for s in specs if s.executable != "recorder"]
    if args.single_process:
        specs = [replace(s, process="all") for s in specs]

    probe = _Probe(specs)
    try:
        graph = start_graph(specs, profile_env(args.profile), duration_s=args.duration + 30)
        t_start = time.monotonic()
        try:
            while time.monotonic() - t_start < args.duration + 3.0 and graph.alive():
                time.sleep(0.1)
        finally:
            codes = graph.stop()
            time.sleep(0.5)
        result = probe.result(json.loads(manifest.read_text()) if manifest.exists() else {})
    finally:
        probe.close()
        shutil.rmtree(work, ignore_errors=True)
    result.update({"profile": args.profile, "duration_s": args.duration, "exit_codes": codes,
                   "processes": sorted({s.process for s in specs}), "nodes": [s.name for s in specs],
                   "note": "shared 2-core machine: numbers are noisy"})
    return result


class _Probe:
    """An rclpy node in a background thread subscribing (raw) to every topic of the graph."""

    def __init__(self, specs) -> None:  # type: ignore[no-untyped-def]
        import rclpy
        from rclpy.experimental import EventsExecutor
        from rclpy.node import Node
        from rclpy.signals import SignalHandlerOptions

        from rgbt.ros.msgtypes import get_message
        from rgbt.ros.qos import qos_profile
        from rgbt.ros.stamps import cdr_stamp_ns
        from rgbt.stack import load_stack

        stack = load_stack(next((s.parameters.get("stack_path") for s in specs if s.parameters.get("stack_path")),
                                None))
        self.topics = _graph_topics(stack, specs)
        self.received: dict[str, list[int]] = {t: [] for t in self.topics}
        self.first_last: dict[str, list[int]] = {}
        self.context = rclpy.Context()
        rclpy.init(context=self.context, signal_handler_options=SignalHandlerOptions.NO)
        self.node = Node("rgbt_bench_probe", context=self.context)
        qos = qos_profile("sensor_data", depth=100)
        for topic, (msgtype, _) in self.topics.items():
            def on_raw(raw: bytes, t=topic) -> None:
                now = time.time_ns()
                self.received[t].append(now - cdr_stamp_ns(raw))
                fl = self.first_last.setdefault(t, [now, now])
                fl[1] = now

            self.node.create_subscription(get_message(msgtype), topic, on_raw, qos, raw=True)
        self.executor = EventsExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        from rclpy.task import Future

        while not self._stop.is_set():
            self.executor.spin_until_future_complete(Future(), timeout_sec=0.1)

    def result(self, manifest: dict) -> dict:
        import numpy as np

        published = {**manifest.get("topics", {}), **manifest.get("stack_topics", {})}
        topics = {}
        for topic, (msgtype, since) in self.topics.items():
            lat = np.asarray(self.received[topic], dtype=np.float64) / 1e6
            pub = published.get(topic)
            topics[topic] = {
                "published": pub, "received": int(lat.size),
                "dropped": None if pub is None else int(pub - lat.size),
                "p50_ms": float(np.percentile(lat, 50)) if lat.size else None,
                "p99_ms": float(np.percentile(lat, 99)) if lat.size else None,
                "since": since, "msgtype": msgtype,
            }
        seg = [t for t in self.topics if t.endswith("/class_ids")]
        seg_hz = None
        if seg and seg[0] in self.first_last and len(self.received[seg[0]]) > 1:
            first, last = self.first_last[seg[0]]
            seg_hz = (len(self.received[seg[0]]) - 1) / max((last - first) / 1e9, 1e-9)
        return {"topics": topics, "segmentation_hz": seg_hz}

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.executor.shutdown()
        self.node.destroy_node()
        self.context.try_shutdown()


def _graph_topics(stack, specs) -> dict[str, tuple[str, str]]:  # type: ignore[no-untyped-def]
    """Topic -> (message type, what the latency is measured from) for the nodes in ``specs``."""
    exes = {s.executable for s in specs}
    topics: dict[str, tuple[str, str]] = {}
    if "virtual_stack" in exes:
        prefix = next(s.parameters["raw_prefix"] for s in specs if s.executable == "virtual_stack")
        for cam in stack.cameras:
            topics[f"{prefix}/{cam}/image"] = ("sensor_msgs/msg/Image", "publish")
        topics[f"{prefix}/imu"] = ("sensor_msgs/msg/Imu", "publish")
    if "trigger_sync" in exes:
        for cam in stack.cameras.values():
            topics[cam.topic] = ("sensor_msgs/msg/Image", "trigger")
        topics[stack.imu.topic] = ("sensor_msgs/msg/Imu", "trigger")
    for s in specs:
        p = s.parameters
        if s.executable == "thermal_preprocess":
            for out in ("normalized", "image_mono8", "colormap"):
                topics[f"{p['output_prefix']}/{out}"] = ("sensor_msgs/msg/Image", "trigger")
        elif s.executable == "rectify":
            for out in ("color", "thermal"):
                topics[f"{p['output_prefix']}/{out}"] = ("sensor_msgs/msg/Image", "trigger")
        elif s.executable == "segmentation":
            topics[f"{p['output_prefix']}/class_ids"] = ("sensor_msgs/msg/Image", "trigger")
    return topics


def print_result(result: dict) -> None:
    from rgbt.cli.output import print_table

    rows = [[t, v["published"], v["received"], v["dropped"], v["p50_ms"], v["p99_ms"], v["since"]]
            for t, v in result["topics"].items()]
    print_table(f"ROS 2 graph ({result['profile']}, {result['duration_s']} s)",
                ["topic", "published", "received", "dropped", "p50_ms", "p99_ms", "from"], rows)
    print(f"segmentation_hz: {result['segmentation_hz']}")

"""Recording state machine behind the recorder node (no rclpy import: testable on its own).

One :class:`Recording` owns at most one open ``rgbt.bag.writer.BagWriter``. It starts on arm
(or always / manually), stops when disarmed for ``debounce_s``, on a write error, at the size cap
or when free disk space falls below ``min_free_mb`` - each time closing the bag with its summary
and writing ``rgbt_manifest.json`` beside the MCAP files. Times are integer ns (host clock).
"""

from __future__ import annotations

import json
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from rgbt.ros.diagnostics import TopicStats
from rgbt.ros.options import ARMED_TOPIC, TRIGGER_TOPIC, RecorderOptions
from rgbt.ros.stamps import cdr_stamp_ns

MANIFEST = "rgbt_manifest.json"

#: message types whose first field is a std_msgs/Header (latency = arrival - header stamp)
STAMPED_TYPES = frozenset({"sensor_msgs/msg/Image", "sensor_msgs/msg/Imu", "sensor_msgs/msg/NavSatFix",
                           "sensor_msgs/msg/TimeReference", "geometry_msgs/msg/PoseStamped",
                           "diagnostic_msgs/msg/DiagnosticArray", "sensor_msgs/msg/CameraInfo"})


def stack_topic_types(stack: Any) -> dict[str, str]:
    """Topic -> ROS 2 message type of everything the stack publishes (what the recorder records)."""
    types = {cam.topic: "sensor_msgs/msg/Image" for cam in stack.cameras.values()}
    types[stack.imu.topic] = "sensor_msgs/msg/Imu"
    types[stack.gnss.topic] = "sensor_msgs/msg/NavSatFix"
    types[stack.autopilot.pose_topic] = "geometry_msgs/msg/PoseStamped"
    types[stack.autopilot.global_topic] = "sensor_msgs/msg/NavSatFix"
    types[ARMED_TOPIC] = "std_msgs/msg/Bool"
    types[TRIGGER_TOPIC] = "sensor_msgs/msg/TimeReference"
    return types


class Recording:
    """Arm-to-disarm recording of raw CDR messages into MCAP bags under ``options.out_dir``."""

    def __init__(self, options: RecorderOptions, log: Callable[[str], None] = print, synthetic: bool = False,
                 writer_factory: Callable[..., Any] | None = None) -> None:
        self.o = options
        self.log = log
        self.synthetic = synthetic
        self.writer_factory = writer_factory
        self.topics: dict[str, tuple[str, str]] = {}  # name -> (msgtype, qos yaml)
        self.topic_stats: dict[str, TopicStats] = {}
        self.state = "idle"
        self.started_by = ""
        self.writer: Any = None
        self.bag_path: Path | None = None
        self.bags: list[str] = []
        self.armed = False
        self.disarmed_since: int | None = None
        self.peers: dict[str, dict[str, str]] = {}
        self.bag: dict[str, Any] = {}
        self.last_stop_reason = ""
        self.error_ns = 0

    # -- topics and messages -----------------------------------------------------------------
    def add_topic(self, name: str, msgtype: str, qos_yaml: str = "") -> None:
        self.topics[name] = (msgtype, qos_yaml)
        self.topic_stats.setdefault(name, TopicStats(name))
        if self.writer is not None:
            self.writer.add_topic(name, msgtype, qos_yaml)

    def on_message(self, topic: str, raw: bytes, t_ns: int) -> None:
        stats = self.topic_stats[topic]
        stamped = self.topics[topic][0] in STAMPED_TYPES
        stats.tick(t_ns - cdr_stamp_ns(raw) if stamped else None, now_ns=t_ns)
        if self.writer is None:
            return
        try:
            self.writer.write(topic, t_ns, raw)
        except Exception as exc:  # noqa: BLE001 - close what we have, never corrupt
            self.error_ns = t_ns
            self.stop(f"write error: {type(exc).__name__}: {exc}", state="error")
            raise
        b = self.bag
        b["bytes"] += len(raw)
        b["counts"][topic] = b["counts"].get(topic, 0) + 1
        b.setdefault("first_ns", {}).setdefault(topic, t_ns)
        b.setdefault("last_ns", {})[topic] = t_ns
        if self.o.max_total_mb and b["bytes"] >= self.o.max_total_mb * 1e6:
            self.stop("size cap reached", state="stopped")

    def lost(self, topic: str, count: int) -> None:
        """Messages the middleware reported lost before they reached this subscription."""
        self.topic_stats[topic].drops += int(count)
        if self.writer is not None:
            self.bag["lost"][topic] = self.bag["lost"].get(topic, 0) + int(count)

    def on_peer_status(self, name: str, values: dict[str, str]) -> None:
        self.peers[name] = values

    # -- arm / disarm ----------------------------------------------------------------------
    def on_armed(self, armed: bool, now_ns: int) -> None:
        self.armed = armed
        if armed:
            self.disarmed_since = None
            if self.o.start == "arm" and self.writer is None and self.state != "error":
                self.start("arm")
        elif self.disarmed_since is None:
            self.disarmed_since = now_ns
        self.tick(now_ns)

    def tick(self, now_ns: int) -> None:
        """Debounced disarm stop, the free-disk check, and a new bag after a write error (call a few
        times a second)."""
        if (self.writer is not None and self.started_by == "arm" and self.disarmed_since is not None
                and now_ns - self.disarmed_since >= self.o.debounce_s * 1e9):
            self.stop("disarmed")
        if self.writer is not None and self.o.min_free_mb and self._free_mb() < self.o.min_free_mb:
            self.stop(f"free disk space below {self.o.min_free_mb} MB", state="stopped")
        if (self.state == "error" and self.writer is None and now_ns - self.error_ns >= 1e9
                and (self.o.start == "always" or (self.o.start == "arm" and self.armed))):
            self.state = "idle"
            self.start(self.started_by or self.o.start)  # a new bag; the failed one is closed

    # -- start / stop / split ---------------------------------------------------------------
    def start(self, reason: str) -> tuple[bool, str]:
        if self.writer is not None:
            return False, f"already recording to {self.bag_path}"
        from rgbt.bag.writer import BagWriter

        out = Path(self.o.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
        path = out / f"rgbt_{stamp}"
        n = 1
        while path.exists():
            n += 1
            path = out / f"rgbt_{stamp}_{n}"
        custom = {"rgbt.synthetic": "true" if self.synthetic else "false", "rgbt.start_reason": reason}
        factory = self.writer_factory or BagWriter
        self.writer = factory(path, split_size_bytes=int(self.o.split_size_mb * 1e6) or None,
                              split_duration_ns=int(self.o.split_duration_s * 1e9) or None,
                              compression=self.o.compression, custom_data=custom)
        for name, (msgtype, qos) in self.topics.items():
            self.writer.add_topic(name, msgtype, qos)
        self.bag_path, self.state, self.started_by = path, "recording", reason
        self.bag = {"path": str(path), "start_reason": reason, "start_wall_ns": time.time_ns(), "bytes": 0,
                    "counts": {}, "lost": {}, "disk_free_mb_start": round(self._free_mb(), 1),
                    "drops_at_start": {t: s.drops for t, s in self.topic_stats.items()}}
        self.log(f"recording to {path} ({reason})")
        return True, str(path)

    def stop(self, reason: str, state: str = "idle") -> tuple[bool, str]:
        if self.writer is None:
            return False, "not recording"
        writer, self.writer = self.writer, None
        try:
            writer.close()
        finally:
            self.state, self.last_stop_reason = state, reason
            self._write_manifest(reason)
            self.bags.append(str(self.bag_path))
            self.log(f"closed {self.bag_path} ({reason})")
        return True, str(self.bag_path)

    def split(self) -> tuple[bool, str]:
        reason = self.started_by or "manual"
        if self.writer is not None:
            self.stop("split")
        return self.start(reason)

    def manual_start(self) -> tuple[bool, str]:
        if self.state == "error":
            self.state = "idle"
        return self.start("manual")

    def manual_stop(self) -> tuple[bool, str]:
        return self.stop("manual stop")

    # -- reports ---------------------------------------------------------------------------
    def prearm_report(self) -> tuple[bool, dict]:
        """Pre-arm checks: sync locked, every recorded sensor at rate, disk space for N minutes."""
        checks: dict[str, Any] = {}
        sync = {k: v for vals in self.peers.values() for k, v in vals.items() if k.startswith("sync.")}
        locked = sync.get("sync.locked")
        checks["sync_locked"] = {"ok": locked in ("True", "true", "1"), "value": locked}
        rates = {t: round(s.rate_hz(), 2) for t, s in self.topic_stats.items()}
        silent = sorted(t for t, r in rates.items() if r <= 0 and t not in (ARMED_TOPIC,))
        checks["sensors_at_rate"] = {"ok": not silent, "silent": silent, "rates_hz": rates}
        bytes_per_s = self._data_rate_bytes_s()
        need_mb = bytes_per_s * 60 * self.o.prearm_minutes / 1e6 + self.o.min_free_mb
        free = self._free_mb()
        checks["disk_space"] = {"ok": free >= need_mb, "free_mb": round(free, 1), "needed_mb": round(need_mb, 1),
                                "minutes": self.o.prearm_minutes}
        ok = all(c["ok"] for c in checks.values())
        return ok, {"ok": ok, "checks": checks}

    def diag_values(self) -> dict[str, str]:
        return {"state": self.state, "bag": str(self.bag_path or ""), "armed": str(self.armed),
                "bags_closed": str(len(self.bags)), "last_stop_reason": self.last_stop_reason,
                "bytes": str(self.bag.get("bytes", 0) if self.writer is not None else 0)}

    # -- internals -------------------------------------------------------------------------
    def _data_rate_bytes_s(self) -> float:
        b = self.bag
        if b.get("bytes") and self.writer is not None:
            span = (time.time_ns() - b["start_wall_ns"]) / 1e9
            return b["bytes"] / span if span > 0 else 0.0
        return float(self._last_rate_bytes_s)

    _last_rate_bytes_s = 0.0

    def _free_mb(self) -> float:
        path = Path(self.o.out_dir)
        while not path.exists() and path != path.parent:
            path = path.parent
        return shutil.disk_usage(path).free / 1e6

    def _write_manifest(self, reason: str) -> None:
        b = self.bag
        end = time.time_ns()
        span_s = max((end - b["start_wall_ns"]) / 1e9, 1e-9)
        if b["bytes"]:
            self._last_rate_bytes_s = b["bytes"] / span_s
        topics = {}
        for name, (msgtype, _) in self.topics.items():
            count = b["counts"].get(name, 0)
            first, last = b.get("first_ns", {}).get(name), b.get("last_ns", {}).get(name)
            rate = (count - 1) * 1e9 / (last - first) if count > 1 and last > first else 0.0
            stats = self.topic_stats[name]
            p50, p99 = stats.latency_ms()
            topics[name] = {"msgtype": msgtype, "count": count, "rate_hz": round(rate, 3),
                            "latency_p50_ms": p50, "latency_p99_ms": p99,
                            "lost": b["lost"].get(name, 0),
                            "drops": stats.drops - b["drops_at_start"].get(name, 0)}
        sync = {name: {k: v for k, v in vals.items() if k.startswith("sync.") or "ffc" in k}
                for name, vals in self.peers.items()}
        manifest = {
            "bag": b["path"], "synthetic": self.synthetic, "start_reason": b["start_reason"], "stop_reason": reason,
            "start_wall_ns": b["start_wall_ns"], "end_wall_ns": end, "bytes": b["bytes"], "topics": topics,
            "sync": {k: v for k, v in sync.items() if v},
            "disk": {"free_mb_start": b["disk_free_mb_start"], "free_mb_end": round(self._free_mb(), 1)},
        }
        path = Path(b["path"])
        path.mkdir(parents=True, exist_ok=True)
        tmp = path / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(manifest, indent=2))
        tmp.replace(path / MANIFEST)

"""Recording state machine behind the recorder node (no rclpy import: testable on its own).

One :class:`Recording` owns at most one open ``rgbt.bag.writer.BagWriter``, written by its own
thread from a queue (subscription callbacks never wait for the disk). It starts on arm
(or always / manually), stops when disarmed for ``debounce_s``, on a write error, at the size cap
or when free disk space falls below ``min_free_mb`` - each time closing the bag with its summary
and writing ``rgbt_manifest.json`` beside the MCAP files. Times are integer ns (host clock).
"""

from __future__ import annotations

import json
import math
import queue
import shutil
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from rgbt.ros.diagnostics import TopicStats
from rgbt.ros.options import ARMED_TOPIC, TRIGGER_TOPIC, RecorderOptions
from rgbt.ros.stamps import cdr_stamp_ns
from rgbt.ros.supervisor import read_status
from rgbt.threadname import name_native_thread

MANIFEST = "rgbt_manifest.json"
#: with ``arrival_trace``: ``{topic: [[header stamp ns, arrival ns], ...]}`` of the bag (rgbt bench graph)
ARRIVALS = "arrivals.json"

#: message types whose first field is a std_msgs/Header (latency = arrival - header stamp)
STAMPED_TYPES = frozenset({"sensor_msgs/msg/Image", "sensor_msgs/msg/Imu", "sensor_msgs/msg/NavSatFix",
                           "sensor_msgs/msg/TimeReference", "geometry_msgs/msg/PoseStamped",
                           "diagnostic_msgs/msg/DiagnosticArray", "sensor_msgs/msg/CameraInfo"})


#: a sensor passes the pre-arm rate check at this fraction of its nominal rate
RATE_TOLERANCE = 0.9


def stack_rates(stack: Any) -> dict[str, float]:
    """Topic -> nominal rate (Hz) of the stack's sensors (what the pre-arm check expects)."""
    rates = {cam.topic: float(cam.rate_hz) for cam in stack.cameras.values()}
    rates[stack.imu.topic] = float(stack.imu.rate_hz)
    rates[stack.gnss.topic] = float(stack.gnss.rate_hz)
    rates[stack.autopilot.pose_topic] = float(stack.autopilot.pose_rate_hz)
    return rates


#: bytes of a serialized image message beyond its pixels (header, encoding, sizes), and of small messages
IMAGE_OVERHEAD_BYTES = 100
SMALL_MESSAGE_BYTES = {"sensor_msgs/msg/Imu": 340, "sensor_msgs/msg/NavSatFix": 150,
                       "geometry_msgs/msg/PoseStamped": 100, "sensor_msgs/msg/TimeReference": 60}
_BYTES_PER_PIXEL = {"mono16": 2, "mono8": 1, "rgb8": 3, "bgr8": 3}


def stack_message_bytes(stack: Any) -> dict[str, int]:
    """Topic -> serialized size (bytes) of one message of each stack stream (images from their size)."""
    out = {cam.topic: cam.width * cam.height * _BYTES_PER_PIXEL[cam.encoding] + IMAGE_OVERHEAD_BYTES
           for cam in stack.cameras.values()}
    for topic, msgtype in stack_topic_types(stack).items():
        out.setdefault(topic, SMALL_MESSAGE_BYTES.get(msgtype, 64))
    return out


@dataclass(frozen=True)
class BufferPlan:
    """Where the recorder may hold messages while it is behind, within ``budget_bytes`` in all:
    ``depths`` (topic -> middleware reader queue depth, ``dds_window_s`` of the stream) and the
    writer queue (``writer_bytes``: the budget less what the reader queues can hold)."""

    budget_bytes: int
    depths: dict[str, int]
    writer_bytes: int


def plan_buffers(options: RecorderOptions, rates: dict[str, float], sizes: dict[str, int],
                 same_stream: dict[str, str] | None = None) -> BufferPlan:
    """The recorder's memory plan from its options and each recorded stream's nominal rate (Hz) and
    message size (bytes): budget = ``memory_budget_mb`` or ``buffer_s`` x the streams' data rate;
    reader queues hold ``dds_window_s`` of each stream (at least 5 messages; ``input_depth`` for
    streams without a nominal rate); the writer queue gets the rest (at least 2 of the largest
    message).

    ``same_stream``: topic -> the planned topic whose stream it carries at another time (a before-lock
    topic -> its stack topic: a frame goes to one or the other). It gets the same queue depth, and the
    budget counts the pair once (the two queues are not full at once)."""
    data_rate = sum(rates[t] * sizes.get(t, 64) for t in rates)
    budget = int(options.memory_budget_mb * 1e6) if options.memory_budget_mb else int(options.buffer_s * data_rate)
    depths = {t: max(5, math.ceil(hz * options.dds_window_s)) for t, hz in rates.items()}
    reserve = sum(depths[t] * sizes.get(t, 64) for t in depths)
    depths.update({t: depths[of] for t, of in (same_stream or {}).items() if of in depths})
    largest = max(sizes.values(), default=0)
    return BufferPlan(budget, depths, max(budget - reserve, 2 * largest))


def before_lock_streams(stack: Any) -> dict[str, str]:
    """The trigger sync's before-lock topic -> the stack topic of the same stream (cameras and IMU)."""
    from rgbt.ros.options import unlocked_topic

    out = {unlocked_topic(name): cam.topic for name, cam in stack.cameras.items()}
    out[unlocked_topic("imu")] = stack.imu.topic
    return out


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


def driver_extra_topic_types(stack: Any) -> dict[str, str]:
    """Topic -> type of what the recorder also records by default beside :func:`stack_topic_types`
    (when present): the trigger sync node's before-lock streams (host-stamped) and the GNSS fix's UTC
    time reference."""
    from rgbt.ros.options import time_reference_topic

    stack_types = stack_topic_types(stack)
    types = {t: stack_types[of] for t, of in before_lock_streams(stack).items()}  # their stream's type
    types[time_reference_topic(stack.gnss.topic)] = "sensor_msgs/msg/TimeReference"
    return types


def reliable_stack_topics(stack: Any) -> list[str]:
    """The topics the trigger sync publishes reliable (``TriggerSyncOptions.output_qos``) and the
    recorder subscribes reliable (``RecorderOptions.reliable_stack``): the restamped camera and IMU
    topics and their before-lock topics."""
    return [cam.topic for cam in stack.cameras.values()] + [stack.imu.topic] + list(before_lock_streams(stack))


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
        self.sink: _BagSink | None = None
        self._lock = threading.RLock()
        self.bag_path: Path | None = None
        self.bags: list[str] = []
        self.armed = False
        self.disarmed_since: int | None = None
        self.peers: dict[str, dict[str, str]] = {}
        self.write_errors = 0
        self.state_topic = ""  # set by enable_state_topic()
        self.expected_rates: dict[str, float] = {}  # topic -> Hz the pre-arm check expects
        self.last_stop_reason = ""
        self.error_ns = 0
        self.waiting_for_sync_since: int | None = None  # armed, start deferred until the sync locks
        self.sync_deferrals = 0  # arm starts deferred for the sync lock
        self.sync_timeouts = 0  # deferred starts that gave up waiting (recorded unlocked)
        self.writer_budget_bytes = 0  # writer queue bound (0: unbounded); set from plan_buffers()

    # -- topics and messages -----------------------------------------------------------------
    def add_topic(self, name: str, msgtype: str, qos_yaml: str = "") -> None:
        with self._lock:
            self.topics[name] = (msgtype, qos_yaml)
            self.topic_stats.setdefault(name, TopicStats(name))
            if self.sink is not None:
                self.sink.add_topic(name, msgtype, qos_yaml)

    def on_message(self, topic: str, raw: bytes, t_ns: int) -> None:
        """Count a message and queue it for the bag's writer thread (never blocks on the disk)."""
        stats = self.topic_stats[topic]
        if self.topics[topic][0] in STAMPED_TYPES:
            stamp = cdr_stamp_ns(raw)
            stats.tick(t_ns - stamp, now_ns=t_ns)
            hz = self.expected_rates.get(topic)
            if hz:  # a stream of known rate: what its own stamps say is missing
                stats.check_gap(stamp, int(1e9 / hz))
        else:
            stamp = None
            stats.tick(None, now_ns=t_ns)
        with self._lock:
            sink = self.sink
            if sink is None:
                return
            if self.o.arrival_trace and stamp is not None:
                sink.info["arrivals"].setdefault(topic, []).append((stamp, t_ns))
            if not sink.put(topic, t_ns, raw):
                stats.drops += 1  # over the memory budget: counted, the manifest says so
            capped = bool(self.o.max_total_mb) and sink.queued_bytes >= self.o.max_total_mb * 1e6
        if capped:
            self.stop("size cap reached", state="stopped")

    def enable_state_topic(self, topic: str) -> None:
        """Write each armed message into the bag as ``mavros_msgs/msg/State`` on ``topic`` (what
        mavros would have published: ``mavros_msgs`` has no PyPI wheel, rosbags carries the type)."""
        self.state_topic = topic
        self.add_topic(topic, "mavros_msgs/msg/State", "")
        self.topic_stats[topic] = TopicStats(topic)

    def lost(self, topic: str, count: int) -> None:
        """Messages the middleware reported lost before they reached this subscription."""
        self.topic_stats[topic].drops += int(count)
        sink = self.sink
        if sink is not None:
            sink.info["lost"][topic] = sink.info["lost"].get(topic, 0) + int(count)

    def on_peer_status(self, name: str, values: dict[str, str]) -> None:
        self.peers[name] = values
        if self.waiting_for_sync_since is not None and self.armed and self.sync_locked():
            waited = (time.time_ns() - self._wait_wall_ns) / 1e9
            self.log(f"trigger sync locked after {waited:.1f} s armed: starting the deferred recording")
            self._start_armed(self.waiting_for_sync_since)

    def sync_locked(self) -> bool:
        """Whether a trigger sync node reports lock (``sync.locked`` in its diagnostics)."""
        return any(vals.get("sync.locked") in ("True", "true", "1") for vals in self.peers.values())

    # -- arm / disarm ----------------------------------------------------------------------
    def on_armed(self, armed: bool, now_ns: int) -> None:
        """The autopilot's armed state (every message, repeats included)."""
        changed = armed != self.armed
        self.armed = armed
        if armed:
            self.disarmed_since = None
            if self.o.start == "arm" and self.sink is None and self.state != "error":
                self._start_armed(now_ns)
        else:
            if self.waiting_for_sync_since is not None:
                self.log("disarmed before the trigger sync locked: nothing recorded")
                self.waiting_for_sync_since, self.state = None, "idle"
            if self.disarmed_since is None:
                self.disarmed_since = now_ns
        if self.state_topic and (changed or self.sink is not None):
            with self._lock:
                if self.sink is not None:
                    self.sink.put(self.state_topic, now_ns, mavros_state_cdr(armed, now_ns))
        self.tick(now_ns)

    def _start_armed(self, now_ns: int) -> None:
        """Start on arm, unless ``require_sync_lock`` and the trigger sync has not locked yet: then
        wait (state ``waiting_for_sync``, counted once per arm) until it does (:meth:`on_peer_status`)
        or ``sync_lock_timeout_s`` passes (:meth:`tick`)."""
        waiting = self.waiting_for_sync_since is not None
        timed_out = (waiting and self.o.sync_lock_timeout_s > 0
                     and now_ns - self.waiting_for_sync_since >= self.o.sync_lock_timeout_s * 1e9)
        if self.o.require_sync_lock and not self.sync_locked() and not timed_out:
            if not waiting:
                self.waiting_for_sync_since, self._wait_wall_ns = now_ns, time.time_ns()
                self.sync_deferrals += 1
                self.state = "waiting_for_sync"
                self.log("armed, but the trigger sync is not locked: recording deferred until it locks "
                         "(frames before the lock carry host stamps)")
            return
        if timed_out:
            self.sync_timeouts += 1
            self.log(f"trigger sync still not locked {self.o.sync_lock_timeout_s:g} s after arming: "
                     "recording anyway (stamps are host arrival times until it locks)")
        self.waiting_for_sync_since = None
        if self.state == "waiting_for_sync":
            self.state = "idle"
        self.start("arm")

    _wait_wall_ns = 0

    def tick(self, now_ns: int) -> None:
        """Debounced disarm stop, the free-disk check, the sync-lock wait's timeout, and a new bag
        after a write error (call a few times a second)."""
        if self.waiting_for_sync_since is not None and self.armed and self.sink is None:
            self._start_armed(now_ns)
        stop = None
        with self._lock:
            if (self.sink is not None and self.started_by == "arm" and self.disarmed_since is not None
                    and now_ns - self.disarmed_since >= self.o.debounce_s * 1e9):
                stop = ("disarmed", "idle")
            elif self.sink is not None and self.o.min_free_mb and self._free_mb() < self.o.min_free_mb:
                stop = (f"free disk space below {self.o.min_free_mb} MB", "stopped")
        if stop:
            self.stop(*stop)
        with self._lock:
            if (self.state == "error" and self.sink is None and time.time_ns() - self.error_ns >= 1e9
                    and (self.o.start == "always" or (self.o.start == "arm" and self.armed))):
                self.state = "idle"
                self.start(self.started_by or self.o.start)  # a new bag; the failed one is closed

    # -- start / stop / split ---------------------------------------------------------------
    def start(self, reason: str) -> tuple[bool, str]:
        with self._lock:
            if self.sink is not None:
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
            writer = factory(path, split_size_bytes=int(self.o.split_size_mb * 1e6) or None,
                             split_duration_ns=int(self.o.split_duration_s * 1e9) or None,
                             compression=self.o.compression, custom_data=custom, direct_io=self.o.direct_io)
            info = {"path": str(path), "start_reason": reason, "start_wall_ns": time.time_ns(),
                    "counts": {}, "first_ns": {}, "last_ns": {}, "bytes": 0, "lost": {},
                    "disk_free_mb_start": round(self._free_mb(), 1),
                    "drops_at_start": {t: s.drops for t, s in self.topic_stats.items()},
                    "gaps_at_start": {t: s.gaps for t, s in self.topic_stats.items()}}
            info["dropped_budget"] = {}
            info["arrivals"] = {}  # topic -> [(header stamp, arrival) ns] with arrival_trace
            self.sink = _BagSink(writer, info, self._on_write_error, self.writer_budget_bytes)
            for name, (msgtype, qos) in self.topics.items():
                self.sink.add_topic(name, msgtype, qos)
            self.bag_path, self.state, self.started_by = path, "recording", reason
            self.log(f"recording to {path} ({reason})")
            return True, str(path)

    def stop(self, reason: str, state: str = "idle") -> tuple[bool, str]:
        """Close the current bag after every queued message is written; write its manifest."""
        with self._lock:
            sink, self.sink = self.sink, None
            if sink is None:
                return False, "not recording"
            self.state, self.last_stop_reason = state, reason
        sink.close()
        self._finish(sink, reason if sink.error is None else f"write error: {sink.error}")
        return True, sink.info["path"]

    def _on_write_error(self, sink: "_BagSink", exc: BaseException) -> None:
        """Called from the writer thread: the bag is closed there; recording restarts after 1 s."""
        with self._lock:
            self.write_errors += 1
            if self.sink is sink:
                self.sink = None
                self.state, self.error_ns = "error", time.time_ns()
                self.last_stop_reason = f"write error: {type(exc).__name__}: {exc}"
            else:
                return
        self._finish(sink, self.last_stop_reason)

    def _finish(self, sink: "_BagSink", reason: str) -> None:
        with self._lock:
            if sink.info.get("finished"):
                return
            sink.info["finished"] = True
        self._write_manifest(sink.info, reason)
        self.bags.append(sink.info["path"])
        self.log(f"closed {sink.info['path']} ({reason})")

    def split(self) -> tuple[bool, str]:
        reason = self.started_by or "manual"
        if self.sink is not None:
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
        slow = {t: {"rate_hz": rates.get(t, 0.0), "expected_hz": hz} for t, hz in self.expected_rates.items()
                if rates.get(t, 0.0) < RATE_TOLERANCE * hz}
        checks["sensors_at_rate"] = {"ok": not slow, "below_rate": slow, "rates_hz": rates}
        bytes_per_s = self._data_rate_bytes_s()
        need_mb = bytes_per_s * 60 * self.o.prearm_minutes / 1e6 + self.o.min_free_mb
        free = self._free_mb()
        checks["disk_space"] = {"ok": free >= need_mb, "free_mb": round(free, 1), "needed_mb": round(need_mb, 1),
                                "minutes": self.o.prearm_minutes}
        ok = all(c["ok"] for c in checks.values())
        return ok, {"ok": ok, "checks": checks}

    def diag_values(self) -> dict[str, str]:
        return {"state": self.state, "bag": str(self.bag_path or ""), "armed": str(self.armed),
                "sync_deferrals": str(self.sync_deferrals), "sync_timeouts": str(self.sync_timeouts),
                "write_errors": str(self.write_errors),
                "bags_closed": str(len(self.bags)), "last_stop_reason": self.last_stop_reason,
                "bytes": str(self.sink.info["bytes"] if self.sink is not None else 0),
                "queued_mb": f"{self.sink.backlog_bytes / 1e6:.1f}" if self.sink is not None else "0",
                "writer_budget_mb": f"{self.writer_budget_bytes / 1e6:.1f}",
                "dropped_budget": str(sum(self.sink.info["dropped_budget"].values()) if self.sink is not None else 0),
                **supervisor_values(read_status())}

    # -- internals -------------------------------------------------------------------------
    def _data_rate_bytes_s(self) -> float:
        sink = self.sink
        if sink is not None and sink.info["bytes"]:
            span = (time.time_ns() - sink.info["start_wall_ns"]) / 1e9
            return sink.info["bytes"] / span if span > 0 else 0.0
        return float(self._last_rate_bytes_s)

    _last_rate_bytes_s = 0.0

    def _free_mb(self) -> float:
        path = Path(self.o.out_dir)
        while not path.exists() and path != path.parent:
            path = path.parent
        return shutil.disk_usage(path).free / 1e6

    def _write_manifest(self, b: dict, reason: str) -> None:
        end = time.time_ns()
        span_s = max((end - b["start_wall_ns"]) / 1e9, 1e-9)
        if b["bytes"]:
            self._last_rate_bytes_s = b["bytes"] / span_s
        topics = {}
        for name, (msgtype, _) in list(self.topics.items()):
            count = b["counts"].get(name, 0)
            first, last = b["first_ns"].get(name), b["last_ns"].get(name)
            rate = (count - 1) * 1e9 / (last - first) if count > 1 and last > first else 0.0
            stats = self.topic_stats[name]
            p50, p99 = stats.latency_ms()
            topics[name] = {"msgtype": msgtype, "count": count, "rate_hz": round(rate, 3),
                            "latency_p50_ms": p50, "latency_p99_ms": p99,
                            "lost": b["lost"].get(name, 0),
                            "dropped_budget": b.get("dropped_budget", {}).get(name, 0),
                            "drops": stats.drops - b["drops_at_start"].get(name, 0),
                            "stamp_gaps": stats.gaps - b.get("gaps_at_start", {}).get(name, 0)}
        sync = {name: {k: v for k, v in vals.items() if k.startswith("sync.") or "ffc" in k}
                for name, vals in self.peers.items()}
        manifest = {
            "bag": b["path"], "synthetic": self.synthetic, "start_reason": b["start_reason"], "stop_reason": reason,
            "start_wall_ns": b["start_wall_ns"], "end_wall_ns": end, "bytes": b["bytes"], "topics": topics,
            "sync": {k: v for k, v in sync.items() if v},
            "disk": {"free_mb_start": b["disk_free_mb_start"], "free_mb_end": round(self._free_mb(), 1)},
            **supervisor_section(read_status(), b["start_wall_ns"], end),
        }
        path = Path(b["path"])
        path.mkdir(parents=True, exist_ok=True)
        if b["arrivals"]:
            (path / ARRIVALS).write_text(json.dumps(b["arrivals"]))
        tmp = path / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(manifest, indent=2))
        tmp.replace(path / MANIFEST)


def supervisor_section(status: dict | None, start_ns: int, end_ns: int) -> dict:
    """Manifest keys from the supervisor's status: ``restarts`` (process groups restarted while this
    bag was open, wall-clock ns) and ``supervisor`` (counts over the whole run, groups left down)."""
    if status is None:
        return {"restarts": [], "supervisor": None}
    during = [r for r in status.get("restarts", []) if start_ns <= r["exit_wall_ns"] <= end_ns]
    return {"restarts": during, "supervisor": {"restarts": status.get("counts", {}), "gave_up": status.get("gave_up", []),
                                               "options": status.get("options", {})}}


def supervisor_values(status: dict | None) -> dict[str, str]:
    """Diagnostics values from the supervisor's status (restart counts per process group)."""
    if status is None:
        return {}
    out = {f"supervisor.restarts.{g}": str(n) for g, n in status.get("counts", {}).items()}
    out["supervisor.restarts"] = str(sum(status.get("counts", {}).values()))
    out["supervisor.gave_up"] = ",".join(status.get("gave_up", []))
    return out


def mavros_state_cdr(armed: bool, t_ns: int, mode: str = "") -> bytes:
    """CDR of a ``mavros_msgs/msg/State`` (connected, ``armed``, header stamp ``t_ns``)."""
    from rgbt.bag.types import ros2_typestore

    store = ros2_typestore()
    State = store.types["mavros_msgs/msg/State"]
    Header = store.types["std_msgs/msg/Header"]
    Time = store.types["builtin_interfaces/msg/Time"]
    sec, nsec = divmod(int(t_ns), 1_000_000_000)
    msg = State(header=Header(stamp=Time(sec=sec, nanosec=nsec), frame_id=""), connected=True, armed=bool(armed),
                guided=False, manual_input=False, mode=mode, system_status=0)
    return bytes(store.serialize_cdr(msg, "mavros_msgs/msg/State"))


class _BagSink:
    """One open bag and the thread that writes it: the executor only queues messages, so a slow disk
    (fsync, a busy SSD) never stalls the subscriptions. ``info`` holds what was written."""

    def __init__(self, writer: Any, info: dict, on_error: Callable[["_BagSink", BaseException], None],
                 budget_bytes: int = 0) -> None:
        self.writer, self.info, self.on_error = writer, info, on_error
        self.budget_bytes = budget_bytes  # bound of backlog_bytes (0: none)
        self._count_lock = threading.Lock()  # backlog_bytes changes on two threads
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.queued_bytes = 0  # everything queued so far (the size cap counts these)
        self.backlog_bytes = 0  # queued, not yet written
        self.error: str | None = None
        self.thread = threading.Thread(target=self._run, name="rgbt-bag-writer", daemon=True)
        self.thread.start()

    def add_topic(self, name: str, msgtype: str, qos: str) -> None:
        self.queue.put(("topic", name, msgtype, qos))

    def put(self, topic: str, t_ns: int, raw: bytes) -> bool:
        """Queue one message; False (and counted in ``info["dropped_budget"]``) when the backlog
        would exceed the budget."""
        if self.error is not None:
            return True  # the bag is closed; the recorder restarts one (write_errors counts it)
        with self._count_lock:
            if self.budget_bytes and self.backlog_bytes + len(raw) > self.budget_bytes:
                dropped = self.info.setdefault("dropped_budget", {})
                dropped[topic] = dropped.get(topic, 0) + 1
                return False
            self.queued_bytes += len(raw)
            self.backlog_bytes += len(raw)
        self.queue.put(("msg", topic, t_ns, raw))
        return True

    def _run(self) -> None:
        info = self.info
        name_native_thread()
        while True:
            item = self.queue.get()
            if item is None:
                break
            if self.error is not None:
                continue
            try:
                if item[0] == "topic":
                    self.writer.add_topic(item[1], item[2], item[3])
                    continue
                _, topic, t_ns, raw = item
                self.writer.write(topic, t_ns, raw)
                with self._count_lock:
                    self.backlog_bytes -= len(raw)
            except Exception as exc:  # noqa: BLE001 - close what we have, never corrupt
                self.error = f"{type(exc).__name__}: {exc}"
                try:
                    self.writer.close()
                finally:
                    self.on_error(self, exc)
                continue
            info["bytes"] += len(raw)
            info["counts"][topic] = info["counts"].get(topic, 0) + 1
            info["first_ns"].setdefault(topic, t_ns)
            info["last_ns"][topic] = t_ns

    def close(self) -> None:
        """Write everything queued, then close the bag (idempotent)."""
        self.queue.put(None)
        if self.thread is not threading.current_thread():
            self.thread.join()
        self.writer.close()

"""Recording state machine behind the recorder node (no rclpy import: testable on its own).

One :class:`Recording` owns at most one open ``rgbt.bag.writer.BagWriter``, written by its own
thread from a queue (subscription callbacks never wait for the disk). It starts on arm
(or always / manually), stops when disarmed for ``debounce_s``, on a write error, at the flight's
size cap or when free disk space falls below ``min_free_mb`` - each time closing the bag with its
summary and writing ``rgbt_manifest.json`` beside the MCAP files. Times are integer ns (host clock).

The manifest is written when a bag opens (``state: recording``, the flight id, the recorder's PID),
refreshed every second and rewritten when it closes (``state: closed``), fsynced with its directory.
A recorder that starts finds the bags an earlier one left open (its process gone: killed, power
lost): those of another flight are recovered at once (``rgbt.bag.recover``; ``state: recovered``);
the latest of its own flight (the recorder was restarted) is taken over: its first bag
``continues`` it, and when that bag closes (not during the flight: the copy would compete with the
recording) the old bag is recovered without what the new one holds again from the publishers'
retained history (``duplicates_skipped``) and without the losses its manifest had written from
there on (the new bag holds or counts those), and the stamps between the two that neither holds
nor had counted are written as lost (``recorder restart``): each message is counted once. Every topic's
``loss_ranges`` (:mod:`rgbt.bag.loss`) say what the bag lacks and why: nothing is lost silently.
"""

from __future__ import annotations

import atexit
import bisect
import errno
import json
import math
import os
import queue
import shutil
import threading
import time
from array import array
from collections import deque
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from rgbt.bag.loss import (
    MEMORY_BUDGET,
    NO_BAG,
    NOT_RECEIVED,
    RECORDER_RESTART,
    WRITE_ERROR,
    LossLog,
    missing_between,
    ranges_before,
    steps_not_counted,
)
from rgbt.bag.recover import recover_bag
from rgbt.bag.spool import Spool, read_unwritten
from rgbt.bag.types import ros2_typestore
from rgbt.bag.writer import BagWriter
from rgbt.errors import BagError
from rgbt.fileio import write_json_atomic
from rgbt.graph.diagnostics import TopicStats
from rgbt.graph.instance_lock import pid_alive
from rgbt.graph.launcher import new_flight_id
from rgbt.graph.options import RecorderOptions
from rgbt.graph.supervisor import FLIGHT_ID_ENV, read_status
from rgbt.stamps import cdr_stamp_ns
from rgbt.threadname import name_native_thread
from rgbt.topics import TIME_REFERENCE, stack_topic_types, time_reference_topic, unlocked_topic

MANIFEST = "rgbt_manifest.json"
#: a file of RESERVE_BYTES kept in an open bag's folder: deleted to make room for its last manifest
#: when the disk is full
RESERVE, RESERVE_BYTES = ".rgbt_manifest_reserve", 1 << 20
#: with ``arrival_trace``: ``{topic: [[header stamp ns, arrival ns], ...]}`` of the bag (rgbt bench graph)
ARRIVALS = "arrivals.json"

#: message types whose first field is a std_msgs/Header (latency = arrival - header stamp)
STAMPED_TYPES = frozenset({"sensor_msgs/msg/Image", "sensor_msgs/msg/Imu", "sensor_msgs/msg/NavSatFix",
                           "sensor_msgs/msg/TimeReference", "geometry_msgs/msg/PoseStamped",
                           "diagnostic_msgs/msg/DiagnosticArray", "sensor_msgs/msg/CameraInfo"})


#: a sensor passes the pre-arm rate check at this fraction of its nominal rate
RATE_TOLERANCE = 0.9
#: after a low-disk stop or a full disk, a new bag starts once this much more than ``min_free_mb`` is free (MB)
RESUME_FREE_MB = 200.0
#: how long (s) a recorder that took over waits for its first bag to hold every stream before it
#: recovers the bag its predecessor left open (the publishers' retained history arrives first)
TAKEOVER_WAIT_S = 3.0
#: a writer with at most this much queued (bytes, ~0.1 s of the CART stack) has caught up
CAUGHT_UP_BYTES = 16 << 20
#: the crash spool's room beyond the writer queue's budget: entry headers and the bytes a ring lap
#: skips (at most one message each)
SPOOL_SLACK_BYTES = 32 << 20
#: a recorder that took over reserves its heap once its writer has caught up for this long (s), or
#: after TAKEOVER_RESERVE_MAX_S whatever the writer's state
TAKEOVER_SETTLE_S, TAKEOVER_RESERVE_MAX_S = 2.0, 30.0
#: the manifest of an open bag is refreshed this often (s)
CHECKPOINT_S = 1.0
#: stamps of a stream may arrive this much out of order (s): steps are counted once they are older
REORDER_S = 3.0
#: message types stamped on one clock by the trigger sync (the cameras' and the IMU's)
TRIGGER_CLOCK_TYPES = frozenset({"sensor_msgs/msg/Image", "sensor_msgs/msg/Imu"})
#: the writer thread flushes (closes the chunk, fsyncs) after this long without a message (s)
IDLE_FLUSH_S = 0.5
#: why no new bag starts until it clears (``Recording.hold``)
SIZE_CAP, LOW_DISK, DISK_FULL = "size cap", "low disk space", "disk full"


def stack_rates(stack: Any) -> dict[str, float]:
    """Topic -> nominal rate (Hz) of the stack's sensors (what the pre-arm check expects)."""
    rates = {cam.topic: float(cam.rate_hz) for cam in stack.cameras.values()}
    rates[stack.imu.topic] = float(stack.imu.rate_hz)
    rates[stack.gnss.topic] = float(stack.gnss.rate_hz)
    rates[stack.autopilot.pose_topic] = float(stack.autopilot.pose_rate_hz)
    return rates


#: bytes of a serialized image message beyond its pixels (header, encoding, sizes), and of small messages
#: (the recorder's memory plan and ``rgbt doctor``'s disk estimate)
IMAGE_OVERHEAD_BYTES = 100
SMALL_MESSAGE_BYTES = {"sensor_msgs/msg/Imu": 340, "sensor_msgs/msg/NavSatFix": 150,
                       "geometry_msgs/msg/PoseStamped": 100, "sensor_msgs/msg/TimeReference": 60,
                       "std_msgs/msg/Bool": 8}
DEFAULT_MESSAGE_BYTES = 64  # a message type not in SMALL_MESSAGE_BYTES
#: bytes per pixel of the stack's image encodings
BYTES_PER_PIXEL = {"mono8": 1, "mono16": 2, "rgb8": 3, "bgr8": 3, "rgba8": 4, "bgra8": 4, "8UC1": 1, "16UC1": 2}


def stack_message_bytes(stack: Any) -> dict[str, int]:
    """Topic -> serialized size (bytes) of one message of each stack stream (images from their size)."""
    out = {cam.topic: cam.width * cam.height * BYTES_PER_PIXEL[cam.encoding] + IMAGE_OVERHEAD_BYTES
           for cam in stack.cameras.values()}
    for topic, msgtype in stack_topic_types(stack).items():
        out.setdefault(topic, SMALL_MESSAGE_BYTES.get(msgtype, DEFAULT_MESSAGE_BYTES))
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
                 same_stream: dict[str, str] | None = None, durable: Collection[str] = ()) -> BufferPlan:
    """The recorder's memory plan from its options and each recorded stream's nominal rate (Hz) and
    message size (bytes): budget = ``memory_budget_mb`` or ``buffer_s`` x the streams' data rate
    plus the ``durable`` streams' retained history; reader queues hold ``dds_window_s`` of each stream
    (at least 5 messages; ``input_depth`` for streams without a nominal rate), a ``durable`` stream's
    also its publisher's history (``durable_history_s``: what arrives at once when the recorder
    subscribes mid-flight); the writer queue gets the rest (at least 2 of the largest message).

    ``same_stream``: topic -> the planned topic whose stream it carries at another time (a before-lock
    topic -> its stack topic: a frame goes to one or the other). It gets the same queue depth, and the
    budget counts the pair once (the two queues are not full at once)."""
    data_rate = sum(rates[t] * sizes.get(t, 64) for t in rates)
    history = {t: math.ceil(hz * options.durable_history_s) if t in durable else 0 for t, hz in rates.items()}
    history_bytes = sum(n * sizes.get(t, 64) for t, n in history.items())
    budget = (int(options.memory_budget_mb * 1e6) if options.memory_budget_mb
              else int(options.buffer_s * data_rate) + history_bytes)
    depths = {t: max(5, math.ceil(hz * options.dds_window_s)) + history[t] for t, hz in rates.items()}
    reserve = sum(depths[t] * sizes.get(t, 64) for t in depths)
    depths.update({t: depths[of] - history[of] for t, of in (same_stream or {}).items() if of in depths})
    largest = max(sizes.values(), default=0)
    return BufferPlan(budget, depths, max(budget - reserve, 2 * largest))


@dataclass(frozen=True)
class RecorderLayout:
    """What a recorder with these options records of a stack and how it holds it while behind."""

    topics: list[str]  #: recorded topics, in subscription order
    rates: dict[str, float]  #: recorded topic -> nominal rate (Hz) of the stack's sensors
    same_stream: dict[str, str]  #: recorded before-lock topic -> the stack topic of its stream
    reliable: set[str]  #: subscribed reliable (as the trigger sync publishes them)
    durable: set[str]  #: subscribed transient local too: a restarted recorder receives what it missed
    plan: BufferPlan
    #: heap it touches once and keeps (``reserve_memory``: the budget + 25 %, less the writer queue's
    #: share with a crash spool; else 0)
    heap_bytes: int


def recorder_layout(options: RecorderOptions, stack: Any) -> RecorderLayout:
    """The recorder's topics (``topics``, default the stack's, its before-lock streams and the GNSS
    time reference, then ``extra_topics``), their QoS and its :func:`plan_buffers` for ``stack``."""
    known = [*stack_topic_types(stack), *driver_extra_topic_types(stack)]
    topics = list(dict.fromkeys((options.topics or known) + list(options.extra_topics)))
    rates = {t: hz for t, hz in stack_rates(stack).items() if t in topics}
    same = {t: of for t, of in before_lock_streams(stack).items() if t in topics}
    reliable = set(reliable_stack_topics(stack)) if options.reliable_stack else set()
    durable = set(durable_stack_topics(stack)) & reliable if options.durable_stack else set()
    plan = plan_buffers(options, rates, stack_message_bytes(stack), same, durable)
    # the writer queue's share waits in the crash spool (its own memory) when there is one
    heap = plan.budget_bytes - (plan.writer_bytes if options.spool_dir else 0)
    return RecorderLayout(topics, rates, same, reliable, durable, plan,
                          heap * 5 // 4 if options.reserve_memory else 0)


def spool_path(spool_dir: str, pid: int | None = None) -> Path:
    """The crash spool of the recorder process ``pid`` (default this one; its warm spare's standby
    allocates it before the take-over, :meth:`Recording.open_spool` takes it)."""
    return Path(spool_dir) / f"rgbt_spool_{os.getpid() if pid is None else pid}"


def spool_capacity(writer_bytes: int) -> int:
    """A crash spool's bytes for a writer queue of ``writer_bytes``."""
    return writer_bytes + SPOOL_SLACK_BYTES


#: the crash spool this process's warm-spare standby made (:func:`prepare_standby_spool`), until a
#: recorder takes it (:meth:`Recording.open_spool`)
_standby_spool: list[Spool] = []


def prepare_standby_spool(options: RecorderOptions, layout: RecorderLayout) -> None:
    """A warm spare makes the crash spool its take-over will use, allocated and mapped in (~1 s for
    ~600 MB on a loaded 2-core host, and page faults while recording, else spent by the take-over).
    Removed at the process's exit unless a recorder took it (a kill: the launcher removes it)."""
    if not options.spool_dir or not layout.plan.writer_bytes:
        return
    spool = Spool(spool_path(options.spool_dir), spool_capacity(layout.plan.writer_bytes))
    _standby_spool[:] = [spool]

    def remove_unless_taken() -> None:
        if spool in _standby_spool:
            spool.close()

    atexit.register(remove_unless_taken)


def before_lock_streams(stack: Any) -> dict[str, str]:
    """The trigger sync's before-lock topic -> the stack topic of the same stream (cameras and IMU)."""
    out = {unlocked_topic(name): cam.topic for name, cam in stack.cameras.items()}
    out[unlocked_topic("imu")] = stack.imu.topic
    return out


def driver_extra_topic_types(stack: Any) -> dict[str, str]:
    """Topic -> type of what the recorder also records by default beside :func:`stack_topic_types`
    (when present): the trigger sync node's before-lock streams (host-stamped) and the GNSS fix's UTC
    time reference."""
    stack_types = stack_topic_types(stack)
    types = {t: stack_types[of] for t, of in before_lock_streams(stack).items()}  # their stream's type
    types[time_reference_topic(stack.gnss.topic)] = TIME_REFERENCE
    return types


def reliable_stack_topics(stack: Any) -> list[str]:
    """The topics the trigger sync publishes reliable (``TriggerSyncOptions.output_qos``) and the
    recorder subscribes reliable (``RecorderOptions.reliable_stack``): the restamped camera and IMU
    topics and their before-lock topics."""
    return [cam.topic for cam in stack.cameras.values()] + [stack.imu.topic] + list(before_lock_streams(stack))


def durable_stack_topics(stack: Any) -> list[str]:
    """The topics the trigger sync also publishes transient local (``durable_output``) and the recorder
    subscribes so (``durable_stack``): the restamped camera and IMU topics, not their before-lock ones."""
    return [cam.topic for cam in stack.cameras.values()] + [stack.imu.topic]


class Recording:
    """Arm-to-disarm recording of raw CDR messages into MCAP bags under ``options.out_dir``."""

    def __init__(self, options: RecorderOptions, log: Callable[[str], None] = print, synthetic: bool = False,
                 writer_factory: Callable[..., Any] | None = None, flight_id: str | None = None) -> None:
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
        #: the flight this recorder belongs to (the launcher's, else its own): bags of one flight continue
        #: each other across recorder restarts, and ``max_total_mb`` is per flight
        self.flight_id = flight_id or os.environ.get(FLIGHT_ID_ENV) or _own_flight_id()
        self.hold = ""  # why no bag starts on its own (SIZE_CAP, LOW_DISK, DISK_FULL): until it clears
        self.pending_loss = LossLog()  # lost while no bag was open (a write error): into the next bag
        self.loss_after_stop = LossLog()  # lost while held (disk full, size cap): into the last bag's manifest
        #: topic -> the newest stamp of the bag before, when the next continues it (a split, a write error)
        self.seed_last: dict[str, int] = {}
        #: another topic that carries a stream at other times -> the stream's topic (the trigger sync's
        #: before-lock topics): what it holds inside a step of the stream's stamps is not missing
        self.same_stream: dict[str, str] = {}
        self.flight_bytes = 0  # bytes of this flight's bags closed so far (earlier recorders' included)
        self.previous: tuple[Path, dict] | None = None  # this flight's bag an earlier recorder left open
        self.later: list[tuple[Path, dict]] = []  # this flight's older open bags: recovered with it
        self._takeover: threading.Thread | None = None
        self._takeover_go = threading.Event()  # set when the continuing bag closes: recover the old one now
        self.handed = self.done = 0  # messages queued for the writers / written or lost by them (closed bags)
        self._last_checkpoint = 0.0
        self.spool: Spool | None = None  # the writer queue's copy that outlives this process (open_spool)

    def open_spool(self) -> None:
        """Keep the writer queue's messages in a :class:`rgbt.bag.spool.Spool` under ``spool_dir`` too
        (sized from ``writer_budget_bytes``): a recorder that takes this flight over after this one is
        killed writes what this one had queued and not written. Takes the one this process's warm-spare
        standby made (:func:`prepare_standby_spool`) when it is the one wanted. Logged and left off
        where the memory filesystem lacks the room."""
        if not self.o.spool_dir or not self.writer_budget_bytes:
            return
        path, capacity = spool_path(self.o.spool_dir), spool_capacity(self.writer_budget_bytes)
        ready = _standby_spool.pop() if _standby_spool else None
        if ready is not None and ready.path == path and ready.capacity == capacity:
            self.spool = ready
            self.log(f"crash spool {path}: {capacity / 1e6:.0f} MB, made in standby")
            return
        t0 = time.monotonic()
        try:
            self.spool = Spool(path, capacity)
        except (OSError, BagError) as exc:
            self.log(f"no crash spool: {exc}; a killed recorder loses what its writer had queued")
            return
        self.log(f"crash spool {path}: {self.spool.capacity / 1e6:.0f} MB in {time.monotonic() - t0:.2f} s")

    # -- topics and messages -----------------------------------------------------------------
    def add_topic(self, name: str, msgtype: str, qos_yaml: str = "") -> None:
        with self._lock:
            self.topics[name] = (msgtype, qos_yaml)
            self.topic_stats.setdefault(name, TopicStats(name))
            if self.sink is not None:
                self.sink.add_topic(name, msgtype, qos_yaml)

    def on_message(self, topic: str, raw: bytes, t_ns: int) -> None:
        """Count a message and queue it for the bag's writer thread (never blocks on the disk); what
        cannot be written is counted in the bag's ``loss_ranges``."""
        stats = self.topic_stats[topic]
        stamp: int | None = None
        if self.topics[topic][0] in STAMPED_TYPES:
            stamp = cdr_stamp_ns(raw)
            stats.tick(t_ns - stamp, now_ns=t_ns)
            hz = self.expected_rates.get(topic)
            if hz:  # a stream of known rate: what its own stamps say is missing
                stats.check_gap(stamp, int(1e9 / hz))
        else:
            stats.tick(None, now_ns=t_ns)
        key = stamp if stamp is not None else t_ns
        with self._lock:
            sink = self.sink
            if sink is not None and stamp is not None and stamp <= sink.replayed.get(topic, -1):
                # a take-over's durable history up to the newest its predecessor's spool gave: in the
                # spool, in the old bag (the history reaches further back), or a hole the old one had
                # (its step is counted); written in stamp order after the spool's, never twice
                sink.info["spool_duplicates"] = sink.info.get("spool_duplicates", 0) + 1
                return
            if sink is None:
                if self.state == "error":  # between a failed bag and the next: in the next one's manifest
                    self.pending_loss.lost(topic, key, NO_BAG)
                elif self.hold:
                    self.loss_after_stop.lost(topic, key, self.hold)
                return
            self._note_stamp(sink, topic, stamp)
            if self.o.arrival_trace and stamp is not None:
                sink.info["arrivals"].setdefault(topic, []).append((stamp, t_ns))
            if not sink.put(topic, t_ns, raw, key):
                stats.drops += 1  # over the memory budget (or the bag just failed): counted in loss_ranges
            capped = bool(self.o.max_total_mb) and self.flight_bytes + sink.queued_bytes >= self.o.max_total_mb * 1e6
        if capped:
            self.stop(f"flight size cap reached ({self.o.max_total_mb:g} MB)", state="stopped", hold=SIZE_CAP)

    def _note_stamp(self, sink: _BagSink, topic: str, stamp: int | None) -> None:
        """Note a known-rate stream's stamp in ``sink`` (its steps are counted when the bag closes, in
        any arrival order); a before-lock topic's stamp counts as carried for its stream."""
        if stamp is not None and topic in self.same_stream:
            sink.stamp_of(self.same_stream[topic], stamp, carried=True)
        elif stamp is not None and topic in self.expected_rates:
            sink.stamp_of(topic, stamp)

    def _replay_spool(self, sink: _BagSink, manifest: dict) -> None:
        """Queue into ``sink`` (a take-over's first bag) what the killed recorder's spool holds past
        what its bag file surely holds (:func:`rgbt.bag.spool.read_unwritten`): its writer queue and its
        unfinished chunk. The take-over cuts the old bag before each stream's first message here, and
        the durable history is taken only after each stream's newest here (``spool_duplicates``: what
        it repeated)."""
        path = manifest.get("spool")
        if not path or not Path(path).exists():
            return
        t0 = time.monotonic()
        count = nbytes = skipped = 0
        try:
            for entry in read_unwritten(Path(path)):
                if entry.topic not in self.topics:
                    skipped += 1  # a topic this recorder has not subscribed (yet): its gap is counted
                    continue
                stamped = self.topics[entry.topic][0] in STAMPED_TYPES
                self._note_stamp(sink, entry.topic, entry.key if stamped else None)
                sink.put_replayed(entry.topic, entry.log_ns, entry.data, entry.key)
                if stamped:
                    sink.replayed[entry.topic] = max(entry.key, sink.replayed.get(entry.topic, entry.key))
                count, nbytes = count + 1, nbytes + len(entry.data)
        except (OSError, BagError) as exc:
            self.log(f"spool {path} not read whole: {exc}")
        Path(path).unlink(missing_ok=True)  # the mapping lives on until the writer has written the views
        sink.info["spool_replayed"] = {"messages": count, "bytes": nbytes, "skipped": skipped,
                                       "seconds": round(time.monotonic() - t0, 3)}
        self.log(f"spool of recorder PID {manifest.get('pid')}: {count} messages ({nbytes / 1e6:.0f} MB) "
                 "its writer had not surely written, queued again")

    def enable_state_topic(self, topic: str) -> None:
        """Write each armed message into the bag as ``mavros_msgs/msg/State`` on ``topic`` (what
        mavros would have published: ``mavros_msgs`` has no PyPI wheel, rosbags carries the type)."""
        self.state_topic = topic
        self.add_topic(topic, "mavros_msgs/msg/State", "")
        self.topic_stats[topic] = TopicStats(topic)

    def lost(self, topic: str, count: int) -> None:
        """Messages the middleware reported lost before they reached this subscription (they show
        as a step in the stream's stamps: ``loss_ranges``)."""
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
            if self.o.start == "arm" and self.sink is None and self.state != "error" and not self.hold:
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
                    self.sink.put(self.state_topic, now_ns, mavros_state_cdr(armed, now_ns), now_ns)
        self.tick(now_ns)

    def _start_armed(self, now_ns: int) -> None:
        """Start on arm, unless ``require_sync_lock`` and the trigger sync has not locked yet: then
        wait (state ``waiting_for_sync``, counted once per arm) until it does (:meth:`on_peer_status`)
        or ``sync_lock_timeout_s`` passes (:meth:`tick`)."""
        since = self.waiting_for_sync_since
        waiting = since is not None
        timed_out = (since is not None and self.o.sync_lock_timeout_s > 0
                     and now_ns - since >= self.o.sync_lock_timeout_s * 1e9)
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

    def _wants_bag(self) -> bool:
        return self.o.start == "always" or (self.o.start == "arm" and self.armed)

    def tick(self, now_ns: int) -> None:
        """Debounced disarm stop, the free-disk check, the sync-lock wait's timeout, a new bag after a
        write error (after 1 s) or once the disk has room again, and the open bag's manifest refresh
        (call a few times a second)."""
        if self.waiting_for_sync_since is not None and self.armed and self.sink is None:
            self._start_armed(now_ns)
        stop = None
        with self._lock:
            if (self.sink is not None and self.started_by == "arm" and self.disarmed_since is not None
                    and now_ns - self.disarmed_since >= self.o.debounce_s * 1e9):
                stop = ("disarmed", "idle", "")
            elif self.sink is not None and self.o.min_free_mb and self._free_mb() < self.o.min_free_mb:
                stop = (f"free disk space below {self.o.min_free_mb:g} MB", "stopped", LOW_DISK)
        if stop:
            self.stop(*stop)
        with self._lock:
            if self.hold in (LOW_DISK, DISK_FULL) and self.sink is None:
                free = self._free_mb()
                if free >= self.o.min_free_mb + RESUME_FREE_MB:
                    self.log(f"{free:.0f} MB free again: recording resumes")
                    self.hold, self.state, self.error_ns = "", "error", 0  # restarts below, as after an error
            if (self.state == "error" and self.sink is None and not self.hold and self._wants_bag()
                    and time.time_ns() - self.error_ns >= 1e9):
                self.state = "idle"
                self.start(self.started_by or self.o.start)  # a new bag; the failed one is closed
            sink = self.sink
            if sink is not None and time.monotonic() - self._last_checkpoint >= CHECKPOINT_S:
                self._last_checkpoint = time.monotonic()
                self._count_steps(sink, final=False)
                self._write_manifest(sink, "", state="recording", fsync=False)

    # -- start / stop / split ---------------------------------------------------------------
    def start(self, reason: str) -> tuple[bool, str]:
        with self._lock:
            if self.sink is not None:
                return False, f"already recording to {self.bag_path}"

            out = Path(self.o.out_dir)
            out.mkdir(parents=True, exist_ok=True)
            stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
            path = out / f"rgbt_{stamp}"
            n = 1
            while path.exists():
                n += 1
                path = out / f"rgbt_{stamp}_{n}"
            custom = {"rgbt.synthetic": "true" if self.synthetic else "false", "rgbt.start_reason": reason,
                      "rgbt.flight_id": self.flight_id}
            factory = self.writer_factory or BagWriter
            writer = factory(path, split_size_bytes=int(self.o.split_size_mb * 1e6) or None,
                             split_duration_ns=int(self.o.split_duration_s * 1e9) or None,
                             compression=self.o.compression, custom_data=custom, direct_io=self.o.direct_io,
                             fsync_interval_s=self.o.fsync_interval_s)
            info = {"path": str(path), "start_reason": reason, "start_wall_ns": time.time_ns(),
                    "counts": {}, "first_ns": {}, "last_ns": {}, "bytes": 0, "lost": {},
                    "disk_free_mb_start": round(self._free_mb(), 1),
                    "drops_at_start": {t: s.drops for t, s in self.topic_stats.items()},
                    "gaps_at_start": {t: s.gaps for t, s in self.topic_stats.items()}}
            info["dropped_budget"] = {}
            info["arrivals"] = {}  # topic -> [(header stamp, arrival) ns] with arrival_trace
            continues = self.bags[-1] if self.bags else None
            if self.previous is not None and self._takeover is None:
                continues = str(self.previous[0])
            info["continues"] = Path(continues).name if continues else None
            self.sink = _BagSink(writer, info, self._on_write_error, self.writer_budget_bytes, self.spool)
            self.sink.seed = dict(self.seed_last)
            self.sink.loss.absorb(self.pending_loss)
            for name, (msgtype, qos) in self.topics.items():
                self.sink.add_topic(name, msgtype, qos)
            if self.previous is not None and self._takeover is None:
                self._replay_spool(self.sink, self.previous[1])
            self.bag_path, self.state, self.started_by = path, "recording", reason
            self._write_manifest(self.sink, "", state="recording", fsync=True)
            self._last_checkpoint = time.monotonic()
            if self.previous is not None and self._takeover is None:
                self._takeover = threading.Thread(target=self._take_over, args=(self.sink, *self.previous),
                                                  name="rgbt-takeover", daemon=True)
                self._takeover.start()
            self.log(f"recording to {path} ({reason})")
            return True, str(path)

    def stop(self, reason: str, state: str = "idle", hold: str = "") -> tuple[bool, str]:
        """Close the current bag after every queued message is written; write its manifest.
        ``hold``: no new bag starts on its own until it clears (see :meth:`tick`)."""
        with self._lock:
            sink, self.sink = self.sink, None
            if sink is None:
                return False, "not recording"
            self.state, self.last_stop_reason = state, reason
            if hold:
                self.hold = hold
                self.log(f"recording stopped: {reason}; no new bag until {hold} clears")

        sink.close()
        self._finish(sink, reason if sink.error is None else f"write error: {sink.error}")
        return True, sink.info["path"]

    def _on_write_error(self, sink: _BagSink, exc: BaseException) -> None:
        """Called from the writer thread once the bag is closed: a new bag after 1 s, or, when the
        disk is full, once it has room again (``hold``)."""
        cause = exc.__cause__ if isinstance(exc.__cause__, OSError) else exc
        full = isinstance(cause, OSError) and cause.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
        with self._lock:
            self.write_errors += 1
            if self.sink is not sink:
                return
            self.sink = None
            self.last_stop_reason = f"write error: {type(exc).__name__}: {exc}"
            if full:
                self.state, self.hold = "stopped", DISK_FULL
                self.log(f"disk full: bag closed; no new bag until {self.o.min_free_mb + RESUME_FREE_MB:g} MB are free")
            else:
                self.state, self.error_ns = "error", time.time_ns()
        sink.drain_lost()
        self._finish(sink, self.last_stop_reason)

    def _finish(self, sink: _BagSink, reason: str) -> None:
        with self._lock:
            if sink.info.get("finished"):
                return
            sink.info["finished"] = True
            self._count_steps(sink, final=True)
            # the next bag continues this one (a split, a write error): its first stamps follow these
            sink.continued = reason == "split" or reason.startswith("write error")
            self.seed_last = sink.newest() if sink.continued else {}
            if not sink.continued and not self.hold:  # held: what arrives later is counted as it comes
                self._count_tails(sink)
            self.flight_bytes += sink.info["bytes"]
            self.handed, self.done = self.handed + sink.accepted, self.done + sink.accepted
        self._write_manifest(sink, reason, state="closed", fsync=True)
        self.bags.append(sink.info["path"])
        self.log(f"closed {sink.info['path']} ({reason})")
        if self._takeover is not None and self._takeover.is_alive() and sink.info.get("continues"):
            self._join_takeover()  # the bag it continues is recovered now; then its manifest says what was lost
            self._write_manifest(sink, reason, state="closed", fsync=True)

    def _count_steps(self, sink: _BagSink, final: bool) -> None:
        """Write the steps of each known-rate stream's stamps in ``sink``'s bag into its loss ranges
        (``not received``), less what its before-lock topic carried inside a step (arrival times: up
        to a period after the sample's). Stamps come in any order (a durable history may follow live
        samples): only those :data:`REORDER_S` older than the newest are settled (``final``: all),
        from the newest settled one (or the bag before's, when this one continues it)."""
        with sink.loss_lock:
            for topic, hz in self.expected_rates.items():
                arr = sink.stamps.get(topic)
                if not arr:
                    continue
                horizon = max(arr) - (0 if final else int(REORDER_S * 1e9))
                settle = sorted(s for s in arr if s <= horizon)
                if not settle:
                    continue
                period = int(1e9 / hz)
                prev = sink.settled.get(topic, sink.seed.get(topic))
                carried = sorted(sink.carried.get(topic, ()))
                for stamp in settle:
                    if prev is not None and stamp > prev:
                        sink.loss.gap(topic, prev + period, stamp - period,
                                      steps_missing(prev, stamp, period, carried))
                    prev = stamp if prev is None else max(prev, stamp)
                assert prev is not None  # settle is not empty
                sink.settled[topic] = prev
                sink.stamps[topic] = array("q", (s for s in arr if s > horizon))
                if carried:
                    sink.carried[topic] = array("q", (s for s in carried if s > prev - period))

    def _clocked_streams(self) -> list[str]:
        """The known-rate streams stamped on the trigger sync's clock (cameras, IMU)."""
        return [t for t in self.expected_rates if self.topics.get(t, ("",))[0] in TRIGGER_CLOCK_TYPES]

    def _count_tails(self, sink: _BagSink) -> None:
        """At the end of a recording (not continued by another bag): each camera or IMU stream lost
        every sample of its rate from its last stamp up to the newest stamp of the others (less what
        its before-lock topic carried meanwhile): frames still in transit when the recording stopped,
        a camera gone for good, a stream a recorder that took over never received."""
        newest = sink.newest()
        clocked = [t for t in self._clocked_streams() if t in newest]
        if clocked:
            end = max(newest[t] for t in clocked)
            for topic in clocked:
                self._lost_until(sink, topic, newest[topic], end, NOT_RECEIVED)

    def _lost_until(self, sink: _BagSink, topic: str, last: int, end: int, cause: str) -> int:
        """Write into ``sink``'s loss ranges the samples of ``topic``'s rate after its stamp ``last``
        up to ``end`` (ns), less what its before-lock topic carried meanwhile; returns the count."""
        period = int(1e9 / self.expected_rates[topic])
        steps = (end - last) // period
        if steps <= 0:
            return 0
        n = max(0, steps - sum(1 for s in sink.carried.get(topic, ()) if last < s <= end + period))
        sink.gap(topic, last + period, last + steps * period, n, cause)
        return n

    def split(self) -> tuple[bool, str]:
        reason = self.started_by or "manual"
        if self.sink is not None:
            self.stop("split")
        return self.start(reason)

    def manual_start(self) -> tuple[bool, str]:
        if self.state in ("error", "stopped"):
            self.state, self.hold = "idle", ""  # the operator's call: a held recording starts again
        return self.start("manual")

    def manual_stop(self) -> tuple[bool, str]:
        return self.stop("manual stop")

    def shutdown(self) -> None:
        """The recorder ends: close the bag, finish a take-over (or recover the bag it would have
        continued), and write what was not recorded while held into the last bag's manifest."""
        self.stop("shutdown")
        self._join_takeover()
        if self.spool is not None:
            self.spool.close()
            self.spool = None
        if self.previous is not None and self._takeover is None:
            for bag in (self.previous, *self.later):
                self._recover(*bag)
            self.previous, self.later = None, []
        if self.loss_after_stop.ranges and self.bags:
            path = Path(self.bags[-1]) / MANIFEST
            try:
                manifest = json.loads(path.read_text())
            except (OSError, ValueError):
                return
            manifest["not_recorded_after_stop"] = {
                "hold": self.hold, "lost_total": self.loss_after_stop.count(),
                "loss_ranges": {t: self.loss_after_stop.to_json(t) for t in self.loss_after_stop.ranges}}
            write_json_atomic(path, manifest, indent=2, fsync=True)

    # -- bags an earlier recorder left open --------------------------------------------------
    def recover_at_start(self) -> list[dict]:
        """Find the bags under ``out_dir`` an earlier recorder left open (:func:`unfinished_bags`):
        recover those of other flights now (a power loss, a killed graph), and keep this flight's
        latest for the first bag to take over (:meth:`_take_over`). Returns what was recovered."""
        found = unfinished_bags(Path(self.o.out_dir))
        mine = [(b, m) for b, m in found if m.get("flight_id") == self.flight_id]
        if mine:
            self.previous = max(mine, key=lambda bm: int(bm[1].get("start_wall_ns", 0)))
            self.log(f"taking over {self.previous[0].name}, left open by recorder PID {self.previous[1].get('pid')} "
                     "of this flight: it is recovered once the next bag has started")
        # this flight's older open bags (two recorders killed in a row) wait with the one taken over:
        # recovering them now would delay this recorder's start by seconds mid-flight
        self.later = [(b, m) for b, m in mine if b != self.previous[0]] if self.previous else []
        done = [self._recover(b, m) for b, m in found if m.get("flight_id") != self.flight_id]
        self.flight_bytes = sum(int(m.get("bytes") or _bag_bytes(b)) for b, m in _manifests(Path(self.o.out_dir))
                                if m.get("flight_id") == self.flight_id and m.get("state") != "recording")
        if self.previous is not None:
            self.flight_bytes += _bag_bytes(self.previous[0])
        return done

    def _recover(self, bag: Path, manifest: dict, keep: Callable[[str, str, int, bytes], bool] | None = None,
                 cut: dict[str, int] | None = None) -> dict:
        """Recover ``bag`` (``rgbt.bag.recover.recover_bag``) and mark its manifest ``recovered``. With
        ``cut`` (a take-over: per stream, the first stamp the newer bag keeps; ``keep`` drops what
        follows) the losses its manifest had written from there on are the newer bag's to count."""
        # what the bag holds past what its manifest had settled: its steps are counted here
        stamped = {t for t, (msgtype, _) in self.topics.items() if msgtype in STAMPED_TYPES}
        seen: dict[str, list[int]] = {}
        carried: dict[str, list[int]] = {}

        def collect(topic: str, msgtype: str, log_ns: int, data: bytes) -> bool:
            if keep is not None and not keep(topic, msgtype, log_ns, data):
                return False
            stream = self.same_stream.get(topic)
            if topic in stamped and (topic in self.expected_rates or stream):
                (carried.setdefault(stream, []) if stream else seen.setdefault(topic, [])).append(cdr_stamp_ns(data))
            return True

        t0 = time.monotonic()
        try:
            result = recover_bag(bag, collect)
        except BagError as exc:
            result = {"error": str(exc)}
            self.log(f"could not recover {bag}: {exc}")
        result["seconds"] = round(time.monotonic() - t0, 3)
        manifest = dict(manifest)
        manifest["state"] = "recovered" if "error" not in result else "unrecoverable"
        manifest["recovered"] = {k: result.get(k) for k in ("recovered", "removed", "bytes_lost", "message_count",
                                                            "seconds", "error")}
        manifest["duplicates_skipped"] = int(result.get("skipped", 0))
        manifest["stop_reason"] = manifest.get("stop_reason") or "recorder gone (recovered)"
        manifest["end_wall_ns"] = manifest.get("end_wall_ns") or int(manifest.get("checkpoint_wall_ns") or 0) or None
        for topic, count in _metadata_counts(bag).items():
            manifest.setdefault("topics", {}).setdefault(topic, {})["count"] = count
        for topic, cut_ns in (cut or {}).items():
            entry = manifest.get("topics", {}).get(topic)
            if entry is not None and topic in stamped and entry.get("loss_ranges"):
                entry["loss_ranges"] = ranges_before(entry["loss_ranges"], cut_ns)
                entry["lost_total"] = sum(r[2] for r in entry["loss_ranges"])
        for topic, stamps in seen.items():
            entry = manifest.setdefault("topics", {}).setdefault(topic, {})
            period, prev = int(1e9 / self.expected_rates[topic]), entry.get("settled_ns")
            ranges, cover = list(entry.get("loss_ranges", [])), sorted(carried.get(topic, []))
            for stamp in sorted(s for s in stamps if prev is None or s > prev):
                n = 0 if prev is None else steps_missing(prev, stamp, period, cover)
                if n:
                    ranges.append([prev + period, stamp - period, n, NOT_RECEIVED])
                prev = stamp
            entry["loss_ranges"], entry["lost_total"] = ranges, sum(r[2] for r in ranges)
        manifest["lost_total"] = sum(int(v.get("lost_total", 0)) for v in manifest.get("topics", {}).values())
        manifest["bytes"] = _bag_bytes(bag)
        (bag / RESERVE).unlink(missing_ok=True)
        if manifest.get("spool"):  # its recorder's crash spool (a take-over has read it): memory freed
            Path(manifest["spool"]).unlink(missing_ok=True)
        write_json_atomic(bag / MANIFEST, manifest, indent=2, fsync=True)
        entry = {"bag": bag.name, **manifest["recovered"], "duplicates_skipped": manifest["duplicates_skipped"]}
        self.log(f"recovered {bag.name}: {result.get('message_count')} messages in {result['seconds']:.1f} s "
                 f"({manifest['duplicates_skipped']} written again by this recorder left out)")
        return entry

    def _take_over(self, sink: _BagSink, bag: Path, manifest: dict) -> None:
        """Recover this flight's bag a killed recorder left open when ``sink`` (the first bag of this
        recorder) closes: the old bag keeps what comes before each stream's first message in the new
        bag (taken once it has every stream or ``TAKEOVER_WAIT_S`` passed; the rest was written again:
        ``duplicates_skipped``); a step between the two is lost and written into the new bag's
        ``loss_ranges`` (``recorder restart``). Older open bags of the flight (a recorder killed while
        it was taking over) are recovered in the same chain, each against the next one."""
        t0 = time.monotonic()
        deadline = t0 + TAKEOVER_WAIT_S
        wanted = [t for t in self.expected_rates if t in self.topics]
        while time.monotonic() < deadline and not all(t in sink.first_key for t in wanted):
            if self._takeover_go.wait(0.05):
                break
        first = dict(sink.first_key)
        waited = time.monotonic() - t0
        self._takeover_go.wait()
        for topic, key in sink.first_key.items():  # a stream that came later: its gap counts too
            first.setdefault(topic, key)
        stamped = {t for t, (msgtype, _) in self.topics.items() if msgtype in STAMPED_TYPES}
        # the bags this flight's killed recorders left, newest first: the one taken over, then older
        # ones (a recorder killed while it was taking over never recovered its own predecessor). Each
        # keeps what comes before the next bag's first kept sample of a stream (the rest was written
        # again), and the step at each boundary is lost and counted here, also for a stream that the
        # bag in between never received
        chain = [(bag, manifest), *sorted(self.later, key=lambda bm: -int(bm[1].get("start_wall_ns", 0)))]
        after = dict(first)  # per stream: the first sample kept in the newer bag
        gaps: dict[str, int] = {}
        duplicates = 0
        for old_bag, old_manifest in chain:
            keep, kept_first, last_kept = _keep_before(after, stamped)
            # what the old bag's manifest had counted lost already (its memory budget, its own steps)
            counted = {t: list(e.get("loss_ranges", [])) for t, e in old_manifest.get("topics", {}).items()}
            entry = self._recover(old_bag, old_manifest, keep, cut=after)
            duplicates += int(entry.get("duplicates_skipped", 0))
            for topic, hz in self.expected_rates.items():
                if topic in after and topic in last_kept:
                    steps = steps_not_counted(last_kept[topic], after[topic], int(1e9 / hz), counted.get(topic, []))
                    for lo, hi, n in steps:
                        sink.gap(topic, lo, hi, n, RECORDER_RESTART)
                        gaps[topic] = gaps.get(topic, 0) + n
            for topic, n in self._never_received(sink, after, last_kept).items():
                gaps[topic] = gaps.get(topic, 0) + n
            after = {**after, **kept_first}
        self.later = []
        sink.info["takeover"] = {"bag": bag.name, "duplicates_skipped": duplicates, "lost": gaps,
                                 "waited_s": round(waited, 2), "older_bags": [b.name for b, _ in chain[1:]]}
        self.previous = None

    def _never_received(self, sink: _BagSink, after: dict[str, int], last_kept: dict[str, int]) -> dict[str, int]:
        """The camera / IMU streams an old bag holds (``last_kept``: its last kept stamp of each) that
        ``sink``'s bag, which continues it, never received: when a bag continues that one (a split),
        its first stamps follow the old bag's; else each lost every sample of its rate up to the
        newest stamp of the others (:meth:`_count_tails`). Returns the counts written."""
        newest = sink.newest()
        clocked = self._clocked_streams()
        end = max((newest[t] for t in clocked if t in newest), default=None)
        out: dict[str, int] = {}
        for topic in clocked:
            if topic in after or topic not in last_kept:
                continue
            if sink.continued:
                self.seed_last.setdefault(topic, last_kept[topic])
            elif end is not None and (n := self._lost_until(sink, topic, last_kept[topic], end, RECORDER_RESTART)):
                out[topic] = n
        return out

    def counted_by_stamps(self, topic: str) -> bool:
        """Whether what ``topic`` loses shows as steps in a known-rate stream's stamps (``loss_ranges``):
        such a subscription needs no lost-message event from the middleware."""
        return topic in self.expected_rates or topic in self.same_stream

    def _join_takeover(self) -> None:
        """Let the take-over recover the old bag now (the continuing bag is closing) and wait for it."""
        thread = self._takeover
        self._takeover_go.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    # -- reports ---------------------------------------------------------------------------
    def progress(self) -> tuple[int, int]:
        """(messages handed to the writer threads, messages they wrote or counted as lost): the
        liveness check's view of the writer (a writer stuck on the disk stops the second)."""
        sink = self.sink
        if sink is None:
            return self.handed, self.done
        return self.handed + sink.accepted, self.done + sink.done

    def wait_caught_up(self, settle_s: float = TAKEOVER_SETTLE_S, max_s: float = TAKEOVER_RESERVE_MAX_S) -> None:
        """Return once the writer has held at most :data:`CAUGHT_UP_BYTES` unwritten (or no bag was
        open) for ``settle_s`` in a row, or after ``max_s`` whatever its state (polls every 0.25 s)."""
        start = settled = time.monotonic()
        while time.monotonic() - start < max_s:
            sink = self.sink
            if sink is not None and sink.backlog_bytes > CAUGHT_UP_BYTES:
                settled = time.monotonic()
            elif time.monotonic() - settled >= settle_s:
                return
            time.sleep(0.25)

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
        sink = self.sink
        return {"state": self.state, "bag": str(self.bag_path or ""), "armed": str(self.armed),
                "flight_id": self.flight_id, "hold": self.hold,
                "sync_deferrals": str(self.sync_deferrals), "sync_timeouts": str(self.sync_timeouts),
                "write_errors": str(self.write_errors),
                "bags_closed": str(len(self.bags)), "last_stop_reason": self.last_stop_reason,
                "bytes": str(sink.info["bytes"] if sink is not None else 0),
                "flight_mb": f"{(self.flight_bytes + (sink.info['bytes'] if sink is not None else 0)) / 1e6:.1f}",
                "queued_mb": f"{sink.backlog_bytes / 1e6:.1f}" if sink is not None else "0",
                "writer_budget_mb": f"{self.writer_budget_bytes / 1e6:.1f}",
                "lost": str(sink.loss.count() if sink is not None else 0),
                "not_recorded": str(self.loss_after_stop.count() + self.pending_loss.count()),
                "dropped_budget": str(sum(sink.info["dropped_budget"].values()) if sink is not None else 0),
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

    def _write_manifest(self, sink: _BagSink, reason: str, state: str, fsync: bool) -> None:
        """``rgbt_manifest.json`` of ``sink``'s bag: ``state`` ``recording`` (at the start and every
        ``CHECKPOINT_S``) or ``closed``; written whole (a reader never sees half of it)."""
        b = sink.info
        end = time.time_ns()
        span_s = max((end - b["start_wall_ns"]) / 1e9, 1e-9)
        if state == "closed" and b["bytes"]:
            self._last_rate_bytes_s = b["bytes"] / span_s
        topics = {}
        with sink.loss_lock:
            loss = {name: sink.loss.to_json(name) for name in list(self.topics)}
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
                            "stamp_gaps": stats.gaps - b.get("gaps_at_start", {}).get(name, 0),
                            "loss_ranges": loss[name], "lost_total": sum(r[2] for r in loss[name]),
                            "settled_ns": sink.settled.get(name)}
        sync = {name: {k: v for k, v in vals.items() if k.startswith("sync.") or "ffc" in k}
                for name, vals in list(self.peers.items())}
        devices = {name: {k: v for k, v in vals.items() if k.startswith("device")}
                   for name, vals in list(self.peers.items())}
        writer = sink.writer
        manifest = {
            "bag": b["path"], "state": state, "flight_id": self.flight_id, "pid": os.getpid(), "boot_id": boot_id(),
            "continues": b.get("continues"), "synthetic": self.synthetic,
            "start_reason": b["start_reason"], "stop_reason": reason or None,
            "start_wall_ns": b["start_wall_ns"], "end_wall_ns": end if state == "closed" else None,
            "checkpoint_wall_ns": end, "bytes": b["bytes"], "topics": topics,
            "lost_total": sum(t["lost_total"] for t in topics.values()),
            "takeover": b.get("takeover"), "spool": str(self.spool.path) if self.spool is not None else None,
            "spool_replayed": b.get("spool_replayed"), "spool_duplicates": b.get("spool_duplicates", 0),
            "fsync": {"count": getattr(writer, "fsyncs", 0), "seconds": round(getattr(writer, "fsync_s", 0.0), 3),
                      "interval_s": self.o.fsync_interval_s},
            "sync": {k: v for k, v in sync.items() if v},
            "devices": {k: v for k, v in devices.items() if v},
            "disk": {"free_mb_start": b["disk_free_mb_start"], "free_mb_end": round(self._free_mb(), 1)},
            **supervisor_section(read_status(), b["start_wall_ns"], end),
        }
        path = Path(b["path"])
        reserve = path / RESERVE
        for attempt in (1, 2):
            try:
                path.mkdir(parents=True, exist_ok=True)
                if state == "recording" and not reserve.exists():
                    reserve.write_bytes(bytes(RESERVE_BYTES))  # room for the last manifest on a full disk
                if state == "closed" and b["arrivals"]:
                    (path / ARRIVALS).write_text(json.dumps(b["arrivals"]))
                write_json_atomic(path / MANIFEST, manifest, indent=2, fsync=fsync)
                if state == "closed":
                    reserve.unlink(missing_ok=True)
                return
            except OSError as exc:  # a full disk: give the manifest the reserved room, once
                if attempt == 1 and reserve.exists():
                    reserve.unlink(missing_ok=True)
                    (path / (MANIFEST + ".tmp")).unlink(missing_ok=True)
                    continue
                self.log(f"{path / MANIFEST}: not written ({exc.strerror or exc})")


def steps_missing(prev_ns: int, next_ns: int, period_ns: int, carried: list[int]) -> int:
    """Samples missing between two consecutive stamps of a stream (:func:`rgbt.bag.loss.missing_between`)
    less those its before-lock topic carried meanwhile (``carried``: sorted arrival stamps, up to a
    period after the sample's)."""
    missing = missing_between(prev_ns, next_ns, period_ns)
    if missing and carried:
        missing -= bisect.bisect_left(carried, next_ns + period_ns) - bisect.bisect_right(carried, prev_ns)
    return max(0, missing)


def _own_flight_id() -> str:
    """A flight id for a recorder started without a launcher (``rgbt record``, a test)."""
    return new_flight_id()


def boot_id() -> str:
    """This boot of the machine (Linux; "" elsewhere): a PID in a manifest of another boot is not alive."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _manifests(out_dir: Path) -> list[tuple[Path, dict]]:
    out = []
    for manifest in sorted(out_dir.glob(f"*/{MANIFEST}")):
        try:
            out.append((manifest.parent, json.loads(manifest.read_text())))
        except (OSError, ValueError):
            continue
    return out


def _keep_before(cut: dict[str, int], stamped: set[str]
                 ) -> tuple[Callable[[str, str, int, bytes], bool], dict[str, int], dict[str, int]]:
    """A ``keep`` filter for :func:`rgbt.bag.recover.recover_bag` that keeps each stream's messages
    before ``cut[topic]`` (header stamp for ``stamped`` topics, else log time), and the first and
    last key it kept per topic (filled as it runs)."""
    kept_first: dict[str, int] = {}
    last_kept: dict[str, int] = {}

    def keep(topic: str, msgtype: str, log_ns: int, data: bytes) -> bool:
        key = cdr_stamp_ns(data) if topic in stamped else log_ns
        if topic in cut and key >= cut[topic]:
            return False
        kept_first[topic] = min(kept_first.get(topic, key), key)
        last_kept[topic] = max(last_kept.get(topic, key), key)
        return True

    return keep, kept_first, last_kept


def unfinished_bags(out_dir: Path) -> list[tuple[Path, dict]]:
    """Bags under ``out_dir`` whose manifest says ``recording`` while the recorder that wrote it is gone
    (its PID not alive, or another boot): what a killed recorder or a power loss left open."""
    me, boot = os.getpid(), boot_id()
    found = []
    for bag, manifest in _manifests(out_dir):
        if manifest.get("state") != "recording":
            continue
        pid = int(manifest.get("pid") or 0)
        if manifest.get("boot_id") == boot and pid and (pid == me or pid_alive(pid)):
            continue  # a live recorder (this one, or another) is writing it
        found.append((bag, manifest))
    return found


def bag_is_closed(bag: Path) -> bool:
    """Whether ``bag`` (a recorder's bag directory) has been closed or recovered (its manifest)."""
    try:
        return json.loads((bag / MANIFEST).read_text()).get("state", "closed") != "recording"
    except (OSError, ValueError):
        return False


def _bag_bytes(bag: Path) -> int:
    return sum(f.stat().st_size for f in bag.glob("*.mcap"))


def _metadata_counts(bag: Path) -> dict[str, int]:
    try:
        meta = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
        return {t["topic_metadata"]["name"]: int(t["message_count"]) for t in meta["topics_with_message_count"]}
    except (OSError, KeyError, TypeError, ValueError):
        return {}


def supervisor_section(status: dict | None, start_ns: int, end_ns: int) -> dict:
    """Manifest keys from the supervisor's status: ``restarts`` (process groups restarted while this
    bag was open, wall-clock ns) and ``supervisor`` (counts over the whole run, groups left down)."""
    if status is None:
        return {"restarts": [], "supervisor": None}
    during = [r for r in status.get("restarts", []) if start_ns <= r["exit_wall_ns"] <= end_ns]
    return {
        "restarts": during,
        "supervisor": {
            "restarts": status.get("counts", {}),
            "gave_up": status.get("gave_up", []),
            "options": status.get("options", {}),
        },
    }


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
    (fsync, a busy SSD) never stalls the subscriptions. ``info`` holds what was written, ``loss``
    what was not (:class:`rgbt.bag.loss.LossLog`, guarded by ``loss_lock``)."""

    #: written messages remembered per topic (log time, stamp): after a write error, those past the
    #: last whole chunk on disk are the ones the closed bag lacks
    RECENT = 4096

    def __init__(self, writer: Any, info: dict, on_error: Callable[[_BagSink, BaseException], None],
                 budget_bytes: int = 0, spool: Spool | None = None) -> None:
        self.writer, self.info, self.on_error = writer, info, on_error
        self.budget_bytes = budget_bytes  # bound of backlog_bytes (0: none)
        self.spool = spool  # queued messages are copied there (views of the copies are queued)
        self.replayed: dict[str, int] = {}  # topic -> the newest stamp queued from a dead recorder's spool
        self._count_lock = threading.Lock()  # backlog_bytes changes on two threads
        self.loss_lock = threading.Lock()
        self.loss = LossLog()
        self.first_key: dict[str, int] = {}  # topic -> earliest stamp (log time if unstamped) queued
        self.stamps: dict[str, array] = {}  # known-rate stream -> its stamps received (ns), for its steps
        self.carried: dict[str, array] = {}  # stream -> stamps its before-lock topic carried
        self.seed: dict[str, int] = {}  # stream -> the newest stamp of the bag this one continues
        self.settled: dict[str, int] = {}  # stream -> the newest stamp whose steps are counted
        self.continued = False  # closed for a bag that continues it (a split, a write error)
        self._recent: dict[str, deque] = {}
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.queued_bytes = 0  # everything queued so far (the size cap counts these)
        self.backlog_bytes = 0  # queued, not yet written
        self.accepted = self.done = 0  # messages queued / written or counted lost by the writer thread
        self.error: str | None = None
        self.thread = threading.Thread(target=self._run, name="rgbt-bag-writer", daemon=True)
        self.thread.start()

    def add_topic(self, name: str, msgtype: str, qos: str) -> None:
        self.queue.put(("topic", name, msgtype, qos))

    def stamp_of(self, stream: str, stamp_ns: int, carried: bool = False) -> None:
        """Note a stamp of ``stream`` received on its own topic (or, ``carried``, on its before-lock one)."""
        table = self.carried if carried else self.stamps
        arr = table.get(stream)
        if arr is None:
            arr = table[stream] = array("q")
        arr.append(stamp_ns)

    def newest(self) -> dict[str, int]:
        """Stream -> its newest stamp in this bag."""
        out = dict(self.settled)
        for t, a in self.stamps.items():
            if a:
                out[t] = max(max(a), out.get(t, max(a)))
        return out

    def gap(self, topic: str, first_ns: int, last_ns: int, count: int, cause: str = NOT_RECEIVED) -> None:
        with self.loss_lock:
            self.loss.gap(topic, first_ns, last_ns, count, cause)

    def _lose(self, topic: str, key: int, cause: str) -> None:
        with self.loss_lock:
            self.loss.lost(topic, key, cause)

    def put(self, topic: str, t_ns: int, raw: bytes | memoryview, key: int) -> bool:
        """Queue one message (``key``: its header stamp, else ``t_ns``); False when it is not written:
        the backlog would exceed the budget (``info["dropped_budget"]``), or the bag has just failed.
        Either way it is in ``loss``."""
        if self.error is not None:
            self._lose(topic, key, WRITE_ERROR)
            return False
        # only this thread adds to the backlog (the writer takes from it): checked without the lock
        size = len(raw)
        over = bool(self.budget_bytes) and self.backlog_bytes + size > self.budget_bytes
        end = 0
        if not over and self.spool is not None:
            spooled = self.spool.append(topic, t_ns, key, raw)
            over = spooled is None  # the ring holds only unwritten messages: as full as the budget
            if spooled is not None:
                raw, end = spooled
        if over:
            dropped = self.info.setdefault("dropped_budget", {})
            dropped[topic] = dropped.get(topic, 0) + 1
            self._lose(topic, key, MEMORY_BUDGET)
            return False
        with self._count_lock:
            self.queued_bytes += size
            self.backlog_bytes += size
            self.accepted += 1
        self._queue(topic, t_ns, raw, key, size, end)
        return True

    def put_replayed(self, topic: str, t_ns: int, data: memoryview, key: int) -> None:
        """Queue one message of a dead recorder's spool (its memory is that spool's mapping: not
        counted in this bag's budget, not copied into this recorder's spool)."""
        with self._count_lock:
            self.queued_bytes += len(data)
            self.accepted += 1
        self._queue(topic, t_ns, data, key, 0, 0)

    def _queue(self, topic: str, t_ns: int, raw: bytes | memoryview, key: int, counted: int, end: int) -> None:
        """The writer's item: ``counted`` bytes of the backlog, ``end`` its spool offset (0: none)."""
        first = self.first_key.get(topic)  # the earliest, not the first to come: a durable history
        if first is None or key < first:  # may arrive after the first live samples
            self.first_key[topic] = key
        with self.loss_lock:
            self.loss.kept(topic)
        self.queue.put(("msg", topic, t_ns, raw, key, counted, end))

    def _run(self) -> None:
        info = self.info
        name_native_thread()
        while True:
            try:
                item = self.queue.get(timeout=IDLE_FLUSH_S)
            except queue.Empty:  # nothing for a while: what was written reaches the disk now
                if self.error is None and hasattr(self.writer, "flush"):
                    try:
                        self.writer.flush()
                    except Exception as exc:  # noqa: BLE001 - the bag is closed by the writer; say so
                        self._failed(exc, None)
                continue
            if item is None:
                break
            if self.error is not None:
                self._lost_item(item)
                continue
            try:
                if item[0] == "topic":
                    self.writer.add_topic(item[1], item[2], item[3])
                    continue
                _, topic, t_ns, raw, key, counted, end = item
                self.writer.write(topic, t_ns, raw)
                with self._count_lock:
                    self.backlog_bytes -= counted
            except Exception as exc:  # noqa: BLE001 - close what we have, never corrupt
                self._failed(exc, item)
                continue
            if end and self.spool is not None:
                self.spool.mark_written(end)
            self.done += 1
            recent = self._recent.get(topic)
            if recent is None:
                recent = self._recent[topic] = deque(maxlen=self.RECENT)
            recent.append((t_ns, key))
            info["bytes"] += len(raw)
            info["counts"][topic] = info["counts"].get(topic, 0) + 1
            info["first_ns"].setdefault(topic, t_ns)
            info["last_ns"][topic] = t_ns

    def _lost_item(self, item: tuple) -> None:
        if item[0] == "msg":
            self._lose(item[1], item[4], WRITE_ERROR)
            self.done += 1
            with self._count_lock:
                self.backlog_bytes -= item[5]
            if item[6] and self.spool is not None:
                self.spool.mark_written(item[6])

    def _failed(self, exc: BaseException, item: tuple | None) -> None:
        """A write failed: the writer has closed the bag at its last whole chunk. Count what it lacks
        (written messages past that chunk, this one), then let the recording react."""
        self.error = f"{type(exc).__name__}: {exc}"
        try:
            self.writer.close()
        except Exception:  # noqa: BLE001 - closed already (the writer closes itself on a write error)
            pass
        durable = self.writer.durable_last_log() if hasattr(self.writer, "durable_last_log") else {}
        for topic, recent in self._recent.items():
            cutoff = durable.get(topic, -1)
            for t_ns, key in recent:
                if t_ns > cutoff:
                    self._lose(topic, key, WRITE_ERROR)
                    info = self.info
                    info["counts"][topic] = max(0, info["counts"].get(topic, 0) - 1)
        self._recent.clear()
        if item is not None:
            self._lost_item(item)
        self.on_error(self, exc)
        self.queue.put(None)  # the thread ends once what is still queued is counted

    def drain_lost(self) -> None:
        """Count every message still queued after a write error as lost (nothing else is queued now)."""
        while True:
            try:
                item = self.queue.get_nowait()
            except queue.Empty:
                return
            if item is not None:
                self._lost_item(item)

    def close(self) -> None:
        """Write everything queued, then close the bag (idempotent)."""
        self.queue.put(None)
        if self.thread is not threading.current_thread():
            self.thread.join()
        self.writer.close()

"""One pydantic options model per node (no rclpy import: profiles are validated without ROS).

A node's ROS parameters (from a profile's ``parameters`` or a ``--params-file``) are validated by
its model at start-up and the result is printed, so every run says exactly what it did. Nested
dicts (``sim``, ``stage``, ...) arrive as dotted ROS parameter names (``sim.seed``) and are
folded back by :func:`unflatten`. Each nested dict holds fields of a core options class
(:data:`NodeOptions.nested`: ``rgbt.sim.SimOptions``, ``rgbt.seg.stage.SegStageOptions``, ...): it
is validated field by field against that class (so ``rgbt doctor`` and ``rgbt up`` report a bad
nested value with its path, ``segmentation.parameters.stage.prep_priority``) and kept as given (the
node builds the core options from it and what it sets itself).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import typing
from collections.abc import Callable
from typing import Any, ClassVar, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator

from rgbt.errors import ConfigError
from rgbt.hostclock import WallClockOffset
from rgbt.sensors.reconnect import ReconnectPolicy
from rgbt.topics import (
    ARMED_TOPIC,
    FUSION_PREFIX,
    HEALTH_TOPIC,
    RAW_PREFIX,
    RECTIFIED_COLOR_TOPIC,
    RECTIFIED_PREFIX,
    RECTIFIED_THERMAL_TOPIC,
    SEG_CLASS_IDS_TOPIC,
    SEG_PREFIX,
    THERMAL_PREFIX,
    THERMAL_QUERY_REQUEST_TOPIC,
    THERMAL_QUERY_RESPONSE_TOPIC,
    THERMAL_QUERY_SERVICE,
)

QosName = Literal["sensor_data", "reliable", "latched"]
#: the simulated stack's sample kinds (``rgbt.sim.simstack.KINDS``)
SimKind = Literal["thermal", "color", "mono", "imu", "gnss", "global", "pose", "state", "trigger"]

# processing nodes: drop a frame whose work would start more than this many frame periods after the
# stream's quickest recent arrival (rgbt.lateness.LatenessGate)
LATE_AFTER_PERIODS = 2.0


class CoreOptions(NamedTuple):
    """The core options class a node's nested options dict holds fields of: ``target``
    (``"module:Class"``, a dataclass or a pydantic model; imported when first validated) and the
    fields the node sets itself (``set_by_node``: not allowed in the dict)."""

    target: str
    set_by_node: tuple[str, ...] = ()


@functools.cache
def core_fields_model(core: CoreOptions) -> type[BaseModel]:
    """A pydantic model of what a nested options dict may hold: the fields of ``core.target`` less
    ``core.set_by_node``, each optional (the node fills what is not given), no others."""
    module, name = core.target.split(":")
    cls = getattr(importlib.import_module(module), name)
    fields: dict[str, Any]
    if isinstance(cls, type) and issubclass(cls, BaseModel):  # with its constraints (ge, le, ...)
        fields = {n: (f.annotation, f) for n, f in cls.model_fields.items()}
    else:  # a dataclass: its field types (a default is not validated: None stands for "not given")
        hints = typing.get_type_hints(cls)
        fields = {f.name: (hints[f.name], None) for f in dataclasses.fields(cls)}
    fields = {n: v for n, v in fields.items() if n not in core.set_by_node}
    return create_model(f"{name}Fields", __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=True),
                        **fields)


class NodeOptions(BaseModel):
    """Options every node takes.

    Every field is a declared ROS parameter of the node (``rgbt.ros.params``). Fields named in
    ``live`` may be changed while the node runs (``ros2 param set``) and take effect at once; the
    others are read-only: a change needs a restart and is refused with that reason.
    """

    model_config = ConfigDict(extra="forbid")
    live: ClassVar[frozenset[str]] = frozenset({"diagnostics_period_s"})
    #: nested options dict field -> the core options class it holds fields of (validated, kept as given)
    nested: ClassVar[dict[str, CoreOptions]] = {}
    input_qos: QosName = "sensor_data"
    output_qos: QosName = "sensor_data"
    input_depth: int = Field(5, ge=1)  # subscription queue (keep last N)
    # a reliable publisher of a stream with a known rate keeps this many seconds of it (history depth
    # = rate x s, at least 10): what a reliable reader (the recorder) can still have repaired after a hiccup
    output_history_s: float = Field(1.0, gt=0)
    diagnostics_period_s: float = Field(1.0, gt=0)
    stack_path: str = ""  # calib/stack.yaml of the repository when empty
    # the process's niceness (all its threads, rgbt.graph.priority): > 0 yields the CPU (processing),
    # < 0 takes it first (drivers, sync, recorder; needs CAP_SYS_NICE, else logged and kept)
    nice: int = Field(0, ge=-20, le=19)
    # the nice value a warm spare of this node's process group starts up and waits at (0: the group's
    # own); it takes the group's priority when it takes over (raising it back needs CAP_SYS_NICE, else
    # logged and kept). For a profile with segmentation below the pipeline (--set segmentation.nice=0):
    # --set thermal_preprocess.spare_nice=19, else the pipeline spare's start-up at -13 right after a
    # restart stopped the masks for 10 s (rgbt bench faults); at 19 a segmentation spare was not ready
    # 15 s later, and a second fault met a cold start
    spare_nice: int = Field(0, ge=-20, le=19)
    # real-time priority of the whole process (SCHED_RR 1-98, every thread, rgbt.graph.priority; 0: off,
    # the nice value alone, as in the shipped profiles: real time cost kill -9 recoveries recorded
    # frames): above every ordinary process whatever its nice, higher numbers first. Needs
    # CAP_SYS_NICE or an rtprio limit (systemd LimitRTPRIO=); without it: logged, the nice value only
    realtime_priority: int = Field(0, ge=0, le=98)
    # the process's oom_score_adj (-1000..1000): who the kernel's OOM killer takes first when memory runs
    # out. < 0 protects (the recorder: the bag is what a flight cannot redo; needs CAP_SYS_RESOURCE, else
    # logged and kept), > 0 offers (heavy processing stages). Applied by rgbt.ros.spin at process start.
    oom_score_adj: int = Field(0, ge=-1000, le=1000)
    # write this node's messages on its process's publish thread (rgbt.ros.publish_thread), the GIL
    # released: a middleware write that blocks (Fast DDS waits ~1 s per write on a killed reader's full
    # port) then delays them instead of stopping the node's loop (a driver's device buffer overflows),
    # its executor (no heartbeat: killed as hung) or the whole process (rclpy's publish holds the GIL).
    # Off: written on the caller's thread, the GIL released all the same
    publish_thread: bool = True
    # the lease (s) the process's DDS participant announces (rgbt.ros_env.use_participant_lease; the
    # shortest of its nodes'): how long the other processes keep a killed process's readers matched.
    # At Fast DDS's 20 s, writers to a killed recorder's or pipeline's readers delivered the stack
    # seconds late to everyone else until the 20 s were over (on shared memory and UDP alike): a
    # recorder's take-over lost 2-15 s. 0: the profile's (20 s)
    participant_lease_s: float = Field(2.0, ge=0)

    @model_validator(mode="after")
    def _check_nested(self) -> NodeOptions:
        """Each nested dict of :data:`nested` against its core options class; errors keep their path."""
        errors: list[Any] = []
        for name, core in self.nested.items():
            try:
                core_fields_model(core).model_validate(getattr(self, name))
            except ValidationError as exc:
                errors += [{**{k: e[k] for k in ("type", "input", "ctx") if k in e}, "loc": (name, *e["loc"])}
                           for e in exc.errors()]
        if errors:
            raise ValidationError.from_exception_data(type(self).__name__, errors)
        return self


class ProcessingOptions(NodeOptions):
    """A processing node (preprocess, rectify, fusion, VIO bridge): the newest frame is processed on a
    worker thread, stale ones are dropped and counted (``rgbt.ros.mailbox``); never a growing queue."""

    input_depth: int = Field(2, ge=1)  # the mailbox holds the newest frame; DDS needs no backlog
    # CPU priority of the worker thread: low (nice 19: drivers, sync and recorder first), idle
    # (SCHED_IDLE: only otherwise idle cores; may starve beside segmentation) or normal
    worker_priority: Literal["idle", "low", "normal"] = "low"
    # at most this many frames (pairs) a second (0: every frame the CPU allows), chosen by header stamp
    # and taken as they arrive (10 of 30 Hz: every third; rgbt.ros.mailbox): a heavy stage on a small
    # host keeps a bounded CPU share and latency instead of taking what is left
    max_rate_hz: float = Field(0.0, ge=0)
    # the newest frame is dropped too (counted dropped_late) when its work would start more than this
    # many frame periods after the stream's quickest recent arrival (rgbt.lateness; 0: off): on a
    # short CPU what is published stays fresh instead of late
    late_after_periods: float = Field(LATE_AFTER_PERIODS, ge=0)
    # OpenCV's threads in this node's process (cv2.setNumThreads: process-wide, set as each processing
    # node starts; 0: OpenCV's default, a thread per core). 1: the workers and the other process groups
    # already fill the cores; on 2 cores the pool's extra thread (rectify's remap) cost the pipeline
    # more in CPU waits than it saved (rgbt bench graph --load 1; BENCHMARKS.md)
    opencv_threads: int = Field(1, ge=0)
    live: ClassVar[frozenset[str]] = NodeOptions.live | {"max_rate_hz", "late_after_periods"}


class HostClockOptions(BaseModel):
    """Host arrival (monotonic) -> ROS time: one offset per driver (rgbt.hostclock.WallClockOffset);
    a wall-clock step larger than the threshold is logged and counted, and held (stamps stay
    continuous) or followed."""

    clock_step_threshold_ms: float = Field(20.0, gt=0)
    on_clock_step: Literal["hold", "follow"] = "hold"

    def host_clock(self, log: Callable[[str], None], wall: Callable[[], int] | None = None) -> WallClockOffset:
        """The node's one monotonic -> wall offset with these step rules (``wall``: the wall clock, ns)."""
        if wall is None:
            return WallClockOffset(step_threshold_ms=self.clock_step_threshold_ms, on_step=self.on_clock_step, log=log)
        return WallClockOffset(step_threshold_ms=self.clock_step_threshold_ms, on_step=self.on_clock_step, log=log,
                               wall=wall)


class ReconnectOptions(BaseModel):
    """Devices that come and go (``rgbt.sensors.reconnect``): a device that fails or is missing is
    closed and reopened after ``reopen_first_s``, each wait ``reopen_factor`` times the previous, at
    most ``reopen_max_s`` apart (s); ``max_failed_reads`` failed reads in a row, or none good for
    ``failed_read_timeout_s`` while they fail, count as the device gone (one bad frame costs only itself)."""

    reopen_first_s: float = Field(0.1, gt=0)
    reopen_factor: float = Field(2.0, ge=1)
    reopen_max_s: float = Field(1.0, gt=0)
    max_failed_reads: int = Field(5, ge=1)
    failed_read_timeout_s: float = Field(1.0, gt=0)

    @model_validator(mode="after")
    def _max_not_below_first(self) -> ReconnectOptions:
        if self.reopen_max_s < self.reopen_first_s:
            raise ValueError(f"reopen_max_s {self.reopen_max_s} is below reopen_first_s {self.reopen_first_s}: "
                             "expected the longest wait >= the first")
        return self

    def reconnect_policy(self) -> ReconnectPolicy:
        """The core policy of these options."""
        return ReconnectPolicy(first_s=self.reopen_first_s, factor=self.reopen_factor, max_s=self.reopen_max_s,
                               max_failed_reads=self.max_failed_reads,
                               failed_read_timeout_s=self.failed_read_timeout_s)


class VirtualStackOptions(NodeOptions, HostClockOptions, ReconnectOptions):
    """Publishes ``rgbt.sim.SimStack.samples()`` at the real rate as the drivers would. The reopen
    options (``ReconnectOptions``) drive the simulated unplug of a device (``rgbt.graph.devicecontrol``)."""

    sim: dict[str, Any] = Field(default_factory=dict)  # rgbt.sim.SimOptions fields
    nested: ClassVar[dict[str, CoreOptions]] = {"sim": CoreOptions("rgbt.sim.options:SimOptions")}
    realtime: bool = True  # False: as fast as possible
    preload_s: float = Field(0.0, ge=0)  # simulate this much before playing (kept in memory: ~110 MB/s)
    sim_cache: str = (
        ""  # folder of the run pre-rendered (rgbt.sim.cache) to play; rendered live when it is not for `sim`
    )
    wait_for: list[str] = Field(default_factory=list)  # start once each of these topics has a subscriber
    # node name -> topics that node must subscribe to as well (the recorder: the run recorded from its first sample)
    wait_for_nodes: dict[str, list[str]] = Field(default_factory=dict)
    wait_timeout_s: float = Field(30.0, ge=0)
    start_delay_s: float = Field(1.0, ge=0)  # then this long for the matching to complete
    # after a stall longer than this (the process stopped or starved), samples this late are not published,
    # as a driver's device buffers would have overflowed (manifest `late_dropped`); 0 = all go out
    drop_late_s: float = Field(0.0, ge=0)
    raw_prefix: str = RAW_PREFIX
    manifest_path: str = ""  # JSON: counts + CRC32 of every published frame, written at exit
    manifest_crc: bool = True  # the CRC32s (the fault bench's ground truth; ~0.1 of a core at full rate)
    exit_when_done: bool = False
    # the sensor kinds this virtual stack publishes (rgbt.sim.simstack.KINDS; empty: all): publishers of
    # the others are not created (several virtual stacks, one per driver, on one schedule anchor)
    kinds: list[SimKind] = Field(default_factory=list)
    # JSON {"t0_wall_ns", "t0_sim_ns"}: the wall time at which simulated host time t0_sim_ns is due. The first
    # virtual stack to start writes it; a restarted one (or another one on the same anchor) plays on that
    # timeline, skipping the samples already overdue by more than drop_late_s (0.1 s when drop_late_s is 0)
    schedule_anchor_path: str = ""


#: seconds of each restamped camera / IMU stream the trigger sync retains for a restarted recorder
#: (its ``output_history_s``; the recorder's ``durable_history_s``)
RETAINED_HISTORY_S = 3.0


class TriggerSyncOptions(NodeOptions):
    """Restamps frames and IMU samples onto the trigger grid (``rgbt.sync.TriggerRestamper``)."""

    input_depth: int = Field(150, ge=1)  # must never lose a frame: deep queues (2.5 s of thermal)
    # the restamped stack topics are what the recorder keeps: reliable, so a sample the transport drops
    # (a peer process killed mid-transfer stalls shared memory ~1 s) is repaired from the history
    output_qos: QosName = "reliable"
    # ... and transient local, their history (output_history_s of each stream: ~3 s is ~330 MB for the
    # CART stack's cameras) kept for a recorder that restarts: it covers what the killed recorder had
    # not written yet (its writer up to ~1.2 s behind; 1.4-4.6 s on a slower 2-core host, where it falls
    # short: BENCHMARKS.md) and the take-over (the warm spare's start and subscription, 0.4-0.8 s)
    durable_output: bool = True
    output_history_s: float = Field(RETAINED_HISTORY_S, gt=0)
    raw_prefix: str = RAW_PREFIX
    cameras: list[str] = Field(default_factory=lambda: ["thermal", "color", "mono"])
    restamper: dict[str, Any] = Field(default_factory=dict)  # rgbt.sync.RestamperOptions fields
    # the trigger rate and the cameras' dividers come from the stack (RestamperOptions.from_stack)
    nested: ClassVar[dict[str, CoreOptions]] = {
        "restamper": CoreOptions("rgbt.sync:RestamperOptions", ("trigger_rate_hz", "cameras"))}
    camera_latency_ms: dict[str, float] = Field(default_factory=dict)  # nominal host-arrival latency per camera
    # before lock (no trigger time yet): "separate" publishes host-stamped on unlocked_topic(kind),
    # "drop" does not publish; both are counted (``unlocked``). Never on the restamped stack topics.
    unlocked: Literal["separate", "drop"] = "separate"


class PreprocessOptions(ProcessingOptions):
    """Thermal normalization (percentiles + CLAHE) to 32FC1, mono8 and a colormapped view."""

    input_topic: str = ""  # the stack's thermal topic when empty
    output_prefix: str = THERMAL_PREFIX
    low: float = 1.0
    high: float = 99.0
    clahe: bool = True
    colormap: str = "ironbow"
    publish_float: bool = True
    publish_mono8: bool = True
    publish_colormap: bool = True
    live: ClassVar[frozenset[str]] = ProcessingOptions.live | {"low", "high", "clahe", "colormap", "publish_float",
                                                               "publish_mono8", "publish_colormap"}


class RectifyNodeOptions(ProcessingOptions):
    """Stereo-rectifies a stack pair's images (same restamped trigger time) onto its canvas."""

    pair: str = "color_thermal"
    cam0_topic: str = ""  # the stack topic of the pair's cam0 when empty
    cam1_topic: str = ""
    output_prefix: str = RECTIFIED_PREFIX
    max_pending: int = 8


class SegmentationOptions(NodeOptions):
    """Runs ``rgbt.seg.stage.SegmentationStage`` on raw thermal; publishes class ids + colours."""

    input_depth: int = Field(1, ge=1)  # newest frame only: skip what inference cannot keep up with
    input_topic: str = ""
    output_prefix: str = SEG_PREFIX
    model: str = "engines/sim_thermal_seg.onnx"
    backend: str = "onnxruntime"
    stage: dict[str, Any] = Field(default_factory=dict)  # rgbt.seg.stage.SegStageOptions fields
    nested: ClassVar[dict[str, CoreOptions]] = {
        "stage": CoreOptions("rgbt.seg.stage:SegStageOptions", ("engine", "backend"))}  # model, backend
    publish_color: bool = True
    # a frame whose inference would start more than this many thermal periods after the stream's
    # quickest recent arrival is dropped (pipeline.dropped_late; rgbt.lateness; 0: off)
    late_after_periods: float = Field(LATE_AFTER_PERIODS, ge=0)
    live: ClassVar[frozenset[str]] = NodeOptions.live | {"late_after_periods"}


class FusionNodeOptions(ProcessingOptions):
    """RGB-T fusion on rectified pairs (``rgbt.seg.fusion``)."""

    color_topic: str = RECTIFIED_COLOR_TOPIC
    thermal_topic: str = RECTIFIED_THERMAL_TOPIC
    output_prefix: str = FUSION_PREFIX
    # rgbt.seg.fusion.FusionOptions fields; default: the tiny two-input late-fusion demo model
    # (trained on synthetic pairs, 192x120 input), each pair resized to it before it is normalized
    # (resize_first: a third less CPU per pair, the same mIoU; rgbt.seg.fusion)
    fusion: dict[str, Any] = Field(default_factory=lambda: {"mode": "graph", "resize_first": True,
                                                            "model": "engines/fusion_late_tiny.onnx"})
    nested: ClassVar[dict[str, CoreOptions]] = {"fusion": CoreOptions("rgbt.seg.fusion:FusionOptions")}
    publish_color: bool = True


class RecorderOptions(NodeOptions):
    """Records raw CDR to MCAP (``rgbt.bag.writer.BagWriter``), arm-to-disarm by default."""

    input_qos: QosName = "sensor_data"
    # the component that never loses data, within an explicit memory budget. Messages wait in two
    # places while the recorder is behind: the middleware's reader queue (``dds_window_s`` of each
    # stream: depth = rate x window, bridging a starved executor) and the writer queue (bridging a
    # slow disk). ``memory_budget_mb`` bounds both together; 0: ``buffer_s`` seconds of every recorded
    # stream at its nominal rate (~110 MB/s for the CART stack). Beyond it messages are dropped and
    # counted (``dropped_budget`` in diagnostics and the manifest), never lost silently.
    # Defaults (8 s, 3 s: ~880 MB for the CART stack) measured on a 2-core host at full rate: the
    # recorder's executor lags up to ~0.6 s there, and 1 s reader queues / 4 s in all dropped frames.
    input_depth: int = Field(30, ge=1)  # reader queue of topics without a nominal rate (extra topics)
    buffer_s: float = Field(8.0, gt=0)
    memory_budget_mb: float = Field(0, ge=0)
    dds_window_s: float = Field(3.0, gt=0)
    # touch the budget's memory (+25 %; less the writer queue's share when it waits in the crash spool)
    # once at start and keep it (``rgbt.memory.reserve_heap``), so
    # falling behind never costs page faults: a heap that first grows while the recorder is behind
    # (~20-30 k faults/s) made it fall further behind on a 2-core host (BENCHMARKS.md). Costs the
    # memory (resident from the start) and ~0.7 s per GB at start-up.
    reserve_memory: bool = True
    out_dir: str = "bags"
    topics: list[str] = Field(default_factory=list)  # the stack topics when empty
    extra_topics: list[str] = Field(default_factory=list)
    start: Literal["arm", "always", "manual"] = "arm"
    armed_topic: str = ARMED_TOPIC
    state_topic: str = ""  # armed changes go into the bag as mavros_msgs/State here (the stack's when empty)
    write_state: bool = True
    debounce_s: float = Field(1.0, ge=0)
    split_size_mb: float = Field(0, ge=0)  # 0: no split
    split_duration_s: float = Field(0, ge=0)
    compression: Literal["none", "zstd"] = "none"
    # whole blocks of the open bag file with O_DIRECT (no page-cache copy: ~6x less CPU per MB measured),
    # where the filesystem takes it; false: ordinary buffered writes (rgbt.bag.writer._DirectFile)
    direct_io: bool = True
    # the stack's camera and IMU topics (and their before-lock topics) subscribed reliable, as the trigger
    # sync publishes them: what the transport drops is repaired. A best-effort publisher on one of them
    # (QoS incompatible with a reliable reader) makes the recorder subscribe that topic best effort instead.
    reliable_stack: bool = True
    # those reliable stack topics also transient local (the trigger sync keeps output_history_s of each
    # as durable history): a recorder restarted mid-flight receives what it missed while it was down
    # and its predecessor did not write (rgbt.graph.recording's take-over). Falls back to volatile when a
    # publisher offers volatile
    durable_stack: bool = True
    # the history each durable topic's publisher retains (the trigger sync's output_history_s): such a
    # reader's queue holds it besides dds_window_s of live samples, and the budget counts it, so a
    # take-over's history is not pushed out by the live stream before the recorder takes it (queues of
    # dds_window_s only lost the oldest 0.45-0.8 s of the colour and mono history on a loaded 2-core host)
    durable_history_s: float = Field(RETAINED_HISTORY_S, ge=0)
    # the open bag file is fsynced at least this often while data flows (s): what a power loss can lose
    # (0: only when a file is finished)
    fsync_interval_s: float = Field(1.0, ge=0)
    # a memory filesystem where the writer queue's messages also wait (rgbt.bag.spool, the writer queue's
    # budget in RAM): a recorder killed mid-flight leaves them to the one that takes the flight over,
    # which the publishers' 3 s history did not always cover (a writer seconds behind on a 2-core host).
    # "": none (a killed recorder then loses what its writer had queued, and counts it)
    spool_dir: str = "/dev/shm"
    # 0: no cap; the whole flight's bags (every bag of one ``rgbt up``, across splits and recorder
    # restarts): reaching it closes the bag (never corrupt) and no new bag starts on its own
    max_total_mb: float = Field(0, ge=0)
    # stop recording below this free disk space; a new bag starts once RESUME_FREE_MB more is free
    min_free_mb: float = Field(500, ge=0)
    prearm_minutes: float = Field(10, ge=0)  # disk space needed for this many minutes
    # pre-arm: an arm start waits for the trigger sync's lock (frames before it carry host stamps);
    # the wait is logged and counted, and recording starts as soon as the lock arrives while armed
    require_sync_lock: bool = False
    sync_lock_timeout_s: float = Field(30.0, ge=0)  # armed this long without lock: record anyway (0: wait)
    synthetic: bool = False  # labels the bag rgbt.synthetic=true
    # instrumentation (rgbt bench graph): header stamp and arrival time (ns) of every stamped message,
    # written to arrivals.json beside the manifest at close (16 bytes a message in memory)
    arrival_trace: bool = False
    live: ClassVar[frozenset[str]] = NodeOptions.live | {"debounce_s", "max_total_mb", "min_free_mb", "prearm_minutes",
                                                         "require_sync_lock", "sync_lock_timeout_s"}


class ReplayOptions(NodeOptions):
    """Plays a ROS 1 or ROS 2 bag onto topics with ``/clock``."""

    output_qos: QosName = "reliable"
    path: str = ""
    rate: float = Field(1.0, ge=0)  # 0: as fast as possible
    start_s: float = Field(0.0, ge=0)  # offset from the bag start
    duration_s: float = Field(0.0, ge=0)  # 0: to the end
    topics: list[str] = Field(default_factory=list)  # all when empty
    renames: list[str] = Field(default_factory=list)  # "old:=new"
    clock: bool = True
    loop: bool = False
    exit_when_done: bool = True
    wait_for: list[str] = Field(default_factory=list)  # start once each of these topics has a subscriber
    wait_timeout_s: float = Field(30.0, ge=0)
    start_delay_s: float = Field(1.0, ge=0)


class VioBridgeOptions(ProcessingOptions):
    """The estimator feed (``rgbt.vio.feed.StreamFeed``): one camera -> mono8 on the trigger grid,
    FFC-frozen frames dropped, plus the IMU relayed with strictly increasing stamps; published reliable.

    Topic and rate defaults come from ``rgbt.vio.feed`` (what ``rgbt vio export`` writes into the
    estimator configs). Stamps stay camera (trigger) time: the configs carry ``td``."""

    output_qos: QosName = "reliable"
    input_depth: int = Field(60, ge=1)  # 1 s of thermal; the IMU gets 8x (small_qos)
    camera: Literal["thermal", "color", "mono"] = "thermal"
    input_topic: str = ""  # the stack topic of the camera when empty
    imu_input_topic: str = ""  # the stack's IMU topic when empty
    output_topic: str = ""  # rgbt.topics.vio_feed_image_topic(camera) when empty
    imu_output_topic: str = ""  # rgbt.topics.VIO_FEED_IMU_TOPIC when empty
    rate_hz: float = Field(0.0, ge=0)  # 0: rgbt.vio.feed.feed_rate_hz of the camera (20 Hz thermal)
    normalization: Literal["percentile", "fixed", "temporal", "temporal_clahe"] = "temporal"
    drop_frozen: bool = True  # drop FFC-frozen frames (the temporal modes detect them)
    relay_imu: bool = True
    # an estimator wants every frame it can get, late or not (it has its own time offset): no deadline
    late_after_periods: float = Field(0.0, ge=0)


class OdometryCaptureOptions(NodeOptions):
    """Writes ``nav_msgs/Odometry`` of an external estimator to a TUM file (``rgbt.graph.odometry``)."""

    input_qos: QosName = "reliable"
    input_depth: int = Field(500, ge=1)
    topics: list[str] = Field(default_factory=list)  # every estimator's odometry topic when empty
    out_path: str = "odometry.tum"


class HealthOptions(NodeOptions):
    """CPU, memory, disk and temperatures (psutil; tegrastats / jtop when present)."""

    period_s: float = Field(1.0, gt=0)
    disk_path: str = "bags"
    topic: str = HEALTH_TOPIC
    live: ClassVar[frozenset[str]] = NodeOptions.live | {"period_s"}


class MavlinkBridgeOptions(NodeOptions, ReconnectOptions):
    """MAVLink (UDP or serial) -> armed state, local pose, global position; a serial link that is
    missing or goes away is reopened with the back-off of ``ReconnectOptions``."""

    url: str = "udpin:127.0.0.1:14550"
    armed_topic: str = ARMED_TOPIC
    pose_topic: str = ""
    global_topic: str = ""
    poll_period_s: float = Field(0.005, gt=0)


class ThermalQueryOptions(NodeOptions):
    """Answers temperature queries (pixel / region / class) on radiometric thermal frames: the typed
    service ``rgbt_interfaces/srv/ThermalQuery`` where that package is importable, and JSON over
    ``std_msgs/String`` request / response topics always (:mod:`rgbt.graph.thermal_query`)."""

    thermal_topic: str = ""
    class_topic: str = SEG_CLASS_IDS_TOPIC
    service: str = THERMAL_QUERY_SERVICE  # the typed service's name; empty: JSON topics only
    request_topic: str = THERMAL_QUERY_REQUEST_TOPIC
    response_topic: str = THERMAL_QUERY_RESPONSE_TOPIC
    # rgbt.image.radiometry.RadiometryOptions fields (empty: the camera is not radiometric)
    radiometry: dict[str, Any] = Field(default_factory=dict)
    nested: ClassVar[dict[str, CoreOptions]] = {"radiometry": CoreOptions("rgbt.image.radiometry:RadiometryOptions")}


class DriverOptions(NodeOptions, HostClockOptions, ReconnectOptions):
    """A hardware driver (VN-100, u-blox, Boson, Blackfly) over a serial port or SDK; a device that is
    missing at start or goes away is retried with the back-off of ``ReconnectOptions``."""

    port: str = ""
    baud: int = 921600
    camera: str = "thermal"
    raw_prefix: str = RAW_PREFIX
    driver: dict[str, Any] = Field(default_factory=dict)


class Vn100DriverOptions(DriverOptions):
    """The VN-100 driver: ``driver`` holds ``rgbt.sensors.vn100.Vn100Options`` fields (the port and
    baud rate are the node's own; the rate and SyncIn wiring come from the stack unless given)."""

    nested: ClassVar[dict[str, CoreOptions]] = {
        "driver": CoreOptions("rgbt.sensors.vn100:Vn100Options", ("port", "baudrate"))}


class ThermalCameraOptions(DriverOptions):
    """The Boson driver: ``driver`` holds ``rgbt.sensors.boson.V4l2Options`` fields."""

    nested: ClassVar[dict[str, CoreOptions]] = {"driver": CoreOptions("rgbt.sensors.boson:V4l2Options")}


class ColorCameraOptions(DriverOptions):
    """The Blackfly driver: ``driver`` holds ``rgbt.sensors.blackfly.BlackflyOptions`` fields."""

    nested: ClassVar[dict[str, CoreOptions]] = {"driver": CoreOptions("rgbt.sensors.blackfly:BlackflyOptions")}


#: executable (``nodes/<executable>.py``) -> its options model
OPTIONS: dict[str, type[NodeOptions]] = {
    "virtual_stack": VirtualStackOptions,
    "trigger_sync": TriggerSyncOptions,
    "thermal_preprocess": PreprocessOptions,
    "rectify": RectifyNodeOptions,
    "segmentation": SegmentationOptions,
    "fusion": FusionNodeOptions,
    "recorder": RecorderOptions,
    "replay": ReplayOptions,
    "health": HealthOptions,
    "vio_bridge": VioBridgeOptions,
    "odometry_capture": OdometryCaptureOptions,
    "mavlink_bridge": MavlinkBridgeOptions,
    "thermal_query": ThermalQueryOptions,
    "vn100": Vn100DriverOptions,
    "gnss": DriverOptions,
    "thermal_camera": ThermalCameraOptions,
    "color_camera": ColorCameraOptions,
}


def changed_options(options: NodeOptions, changes: dict[str, Any]) -> NodeOptions:
    """``options`` with ``changes`` (field -> new value) applied and validated; a
    :class:`ConfigError` naming the field and the reason when a change is refused (not ``live``,
    unknown, or invalid)."""
    where = f"{type(options).__name__} (live change)"
    for name, value in changes.items():
        if name not in type(options).model_fields:
            raise ConfigError(where, name, value, f"one of the fields of {type(options).__name__}")
        if name not in options.live:
            raise ConfigError(where, name, value, "no change while the node runs (read-only: restart the node)")
    try:
        return type(options).model_validate({**options.model_dump(), **changes})
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(where, ".".join(map(str, err["loc"])), err.get("input"), err["msg"]) from None


def unflatten(params: dict[str, Any]) -> dict[str, Any]:
    """``{"sim.seed": 1, "rate": 2}`` -> ``{"sim": {"seed": 1}, "rate": 2}`` (ROS params to options)."""
    out: dict[str, Any] = {}
    for key, value in params.items():
        parts = key.split(".")
        cur = out
        for part in parts[:-1]:
            cur = cur.setdefault(part, {})
        cur[parts[-1]] = value
    return out


def flatten(params: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Inverse of :func:`unflatten` (options to ROS parameter names)."""
    out: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out

"""``RgbtNode``: the base of every node in ``nodes/``.

It reads the node's ROS parameters, validates them with the node's options model (printed at
start-up), declares every option as a ROS parameter with a descriptor (``rgbt.ros.params``: live
ones change through ``ros2 param set`` via :meth:`RgbtNode.apply_options`, the others are
read-only), counts every publisher / subscription that meets an incompatible QoS on its topic
(diagnostics ``qos_incompatible``, an error naming the topic and the policy) and every message the
middleware reports lost before a subscription (``lost``, logged), publishes ``diagnostic_msgs/DiagnosticArray`` on
``/diagnostics`` every ``diagnostics_period_s``, and wraps callbacks so an exception is logged and counted, never fatal.
"""

from __future__ import annotations

import functools
import importlib
import math
import os
import threading
import time
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from pydantic import ValidationError
from rcl_interfaces.msg import SetParametersResult
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.node import Node
from rclpy.qos import QoSProfile, qos_policy_name_from_kind

from rgbt.errors import ConfigError, RgbtError
from rgbt.graph.diagnostics import NodeDiagnostics
from rgbt.graph.options import NodeOptions, changed_options, unflatten
from rgbt.graph.priority import realtime_priority, set_process_nice, set_process_realtime
from rgbt.memory import tune_allocator
from rgbt.ros import local_topics
from rgbt.ros.local_topics import LocalPublisher
from rgbt.ros.params import declare_options
from rgbt.ros.publish_thread import DIAGNOSTICS, PublishThread, process_publish_thread, publish_released, to_cdr
from rgbt.ros.qos import qos_profile, topic_qos
from rgbt.stamps import ns_to_stamp

if TYPE_CHECKING:
    from rgbt.ros.local_topics import LocalPublisher
    from rgbt.stack import Stack


#: a node's publish thread that has written nothing for this long while messages wait is stuck (s): the
#: middleware's own waits after a peer's death last ~1-2 s (rgbt.ros.publish_thread)
PUBLISH_STALL_S = 5.0

#: parameters every rclpy node declares itself (not part of an options model)
ROS_BUILTIN_PARAMETERS = frozenset({"use_sim_time", "start_type_description_service", "qos_overrides"})


class RgbtNode(Node):
    """A node with validated options (``self.options``), diagnostics (``self.diag``) and guarded callbacks."""

    #: guarded callbacks run so far (the shutdown drain waits until this stops growing)
    callbacks_run: int = 0

    options_model: ClassVar[type[NodeOptions]] = NodeOptions
    default_name: ClassVar[str] = "rgbt_node"
    #: modules the node imports when it starts (models, simulators): a warm spare imports them ahead
    prewarm_modules: ClassVar[tuple[str, ...]] = ()
    #: the node makes and frees multi-MB frames per message (drivers, sync, processing): glibc then keeps
    #: them on the heap instead of an mmap / munmap each (``rgbt.memory.tune_allocator``, process-wide)
    handles_frames: ClassVar[bool] = False
    #: the node may reserve heap at start (``rgbt.memory.reserve_heap``): its process then allocates from
    #: one glibc arena (``rgbt.memory.single_arena``, set by ``rgbt.ros.spin`` before rclpy starts threads)
    reserves_memory: ClassVar[bool] = False

    @staticmethod
    def subscribed(publisher: Any) -> bool:
        """Whether anyone subscribes to ``publisher`` now (display outputs are built only then)."""
        return publisher.get_subscription_count() > 0

    @classmethod
    def prewarm(cls) -> None:
        """Import :attr:`prewarm_modules` (a warm spare's start-up work; creates nothing). One that is
        not installed is left to the node's own start, which says what is missing."""
        for name in cls.prewarm_modules:
            try:
                importlib.import_module(name)
            except ImportError:
                pass

    @classmethod
    def standby_reserve_bytes(cls, params: dict[str, Any]) -> int:
        """Heap (bytes) a warm spare of this node touches while it waits (``rgbt.memory.reserve_heap``),
        from the node's ROS parameters (flat names): what the node would reserve when it starts. 0:
        none (a node that does not reserve memory)."""
        return 0

    @classmethod
    def participant_lease_s(cls, params: dict[str, Any]) -> float:
        """The DDS participant lease (s) this node asks of its process (``NodeOptions.participant_lease_s``
        from its ROS parameters, flat names): how soon the other processes let go of it after a
        ``kill -9``. 0: the profile's."""
        try:
            return cls.options_model.model_validate(unflatten(params)).participant_lease_s
        except ValidationError:  # the node says what is wrong with its options when it starts
            return 0.0

    @classmethod
    def standby_prepare(cls, params: dict[str, Any]) -> None:
        """What else a warm spare of this node makes ready while it waits, after its heap (from the
        node's ROS parameters, flat names). Default: nothing."""

    def __init__(self, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name or self.default_name, **kwargs)
        params = {n: p.value for n, p in self._parameter_overrides.items()
                  if n.split(".")[0] not in ROS_BUILTIN_PARAMETERS}
        try:
            self.options = self.options_model.model_validate(unflatten(params))
        except ValidationError as exc:
            err = exc.errors()[0]
            raise ConfigError(f"node {self.get_name()}", ".".join(map(str, err["loc"])), err.get("input"),
                              err["msg"]) from None
        self.get_logger().info(f"{type(self.options).__name__}: {self.options.model_dump_json()}")
        if self.handles_frames:
            tune_allocator()
        self.option_parameters = declare_options(self, self.options)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        nice, current = self.options.nice, os.getpriority(os.PRIO_PROCESS, 0)
        # e.g. segmentation yields the CPU to sync and recorder (nice > 0, wins in a shared process);
        # drivers, sync and recorder ask for more (nice < 0; needs CAP_SYS_NICE, else logged); a node
        # that leaves nice at 0 keeps what its process has (health beside the recorder reset it to 0)
        if nice and (nice > current or (nice < 0 and current <= 0 and nice < current)):
            self.get_logger().info(f"process priority: {set_process_nice(nice)}")
        # real time above the nice value (an option: the shipped profiles leave it off, rgbt.graph.priority);
        # like nice, a node never lowers what another node of its process raised
        if self.options.realtime_priority:
            if self.options.realtime_priority > realtime_priority():
                self.get_logger().info(
                    f"process real-time priority: {set_process_realtime(self.options.realtime_priority)}"
                )
        self.diag = NodeDiagnostics(self.get_name())
        self.diag.values["qos_incompatible"] = "0"
        self.finished = False  # set by a node whose work is done (spin loop then exits)
        # on a thread of their own: a report never waits behind frames, nor stops the executor
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", topic_qos("/diagnostics"))
        self._diag_pub.use_thread(process_publish_thread(DIAGNOSTICS))
        self._diag_timer = self.create_timer(self.options.diagnostics_period_s, self.guard(self.publish_diagnostics))

    # -- QoS incompatibilities: counted, never silent -----------------------------------------------
    def create_subscription(self, msg_type, topic, callback, qos_profile, **kwargs):  # type: ignore[no-untyped-def]
        """rclpy's, counting what arrives (liveness) and saying what the middleware lost or could not
        match; ``message_lost_event=False``: no lost-message event (the caller counts losses itself)."""
        lost_event = kwargs.pop("message_lost_event", True)
        events = kwargs.get("event_callbacks") or SubscriptionEventCallbacks()
        if events.incompatible_qos is None:
            events.incompatible_qos = lambda info, t=topic: self._qos_incompatible(t, "subscription", info)
        if events.message_lost is None and lost_event:
            events.message_lost = lambda info, t=topic: self._message_lost(t, info)
        kwargs["event_callbacks"] = events
        sub = super().create_subscription(msg_type, topic, self._count_received(topic, callback), qos_profile,
                                          **kwargs)
        self.__dict__.setdefault("_matched_subscriptions", {})[topic] = sub
        return sub

    def create_publisher(self, msg_type, topic, qos_profile, **kwargs):  # type: ignore[no-untyped-def]
        events = kwargs.get("event_callbacks") or PublisherEventCallbacks()
        if events.incompatible_qos is None:
            events.incompatible_qos = lambda info, t=topic: self._qos_incompatible(t, "publisher", info)
        kwargs["event_callbacks"] = events
        options = self.__dict__.get("options")  # None for rclpy's own publishers made before ours
        thread = process_publish_thread() if options is not None and options.publish_thread else None
        return _CountedPublisher(super().create_publisher(msg_type, topic, qos_profile, **kwargs),
                                 self.__dict__.setdefault("_sent", {}), topic, thread)

    # -- liveness: messages in and out, for the supervisor (rgbt.graph.liveness) -----------------------
    def _count_received(self, topic: str, callback: Callable[[Any], Any]) -> Callable[[Any], Any]:
        received = self.__dict__.setdefault("_received", {})
        received.setdefault(topic, 0)

        def counted(msg: Any) -> Any:
            received[topic] += 1
            return callback(msg)

        return counted

    def heartbeat_state(self) -> dict[str, Any]:
        """This node's part of its process's heartbeat (``rgbt.graph.liveness``): guarded callbacks run,
        :meth:`progress`, messages received per subscribed topic (topics whose QoS cannot match a
        peer left out: nothing can arrive there) and sent per published topic, and the publishers the
        middleware matched per subscribed topic (what a deaf verdict is told apart by: no match is
        discovery, a match with nothing arriving is the data path)."""
        bad = self.__dict__.get("_qos_bad", set())
        progress = self.progress()
        if self.options.publish_thread:  # a write blocked longer than this in the middleware is a stuck process
            progress["publish_thread"] = (*process_publish_thread().progress(), PUBLISH_STALL_S)
        return {"callbacks": self.callbacks_run, "progress": progress,
                "received": {t: n for t, n in self.__dict__.get("_received", {}).items() if t not in bad},
                "sent": dict(self.__dict__.get("_sent", {})),
                "matched": {t: sub.get_publisher_count()
                            for t, sub in self.__dict__.get("_matched_subscriptions", {}).items() if t not in bad}}

    def create_local_publisher(self, msg_type: Any, topic: str, qos_profile: QoSProfile) -> LocalPublisher:
        """A publisher that also delivers to nodes of this process by a direct call
        (:class:`rgbt.ros.local_topics.LocalPublisher`): drivers' topics, consumed by the trigger sync."""
        pub = LocalPublisher(self.create_publisher(msg_type, topic, qos_profile), topic)
        self.__dict__.setdefault("_local_endpoints", []).append(pub)
        return pub

    def subscribe_local_first(self, msg_type: Any, topic: str, callback: Callable[[Any], None], qos_profile: QoSProfile,
                              raw: bool = False) -> str:
        """Subscribe in-process when a node of this process publishes ``topic`` through
        :meth:`create_local_publisher` (``callback`` then runs on the publisher's thread), else
        through the middleware. Returns ``"in-process"`` or ``"middleware"``."""
        if local_topics.has_local_publisher(topic):
            sub = local_topics.subscribe(topic, msg_type, self._count_received(topic, callback), raw=raw)
            self.__dict__.setdefault("_local_endpoints", []).append(sub)
            return "in-process"
        self.create_subscription(msg_type, topic, callback, qos_profile, raw=raw)
        return "middleware"

    def count_subscribers(self, topic: str) -> int:
        """Subscribers of ``topic`` in the middleware's graph plus this process's in-process ones."""
        return super().count_subscribers(topic) + local_topics.subscriber_count(topic)

    def destroy_node(self) -> None:
        for endpoint in self.__dict__.pop("_local_endpoints", []):
            endpoint.close()
        super().destroy_node()

    def _message_lost(self, topic: str, info: Any) -> None:  # info: rclpy QoSMessageLostInfo
        """The middleware lost messages on ``topic`` before they reached this subscription (a best-effort
        reader that fell behind): counted (diagnostics ``lost``) and logged, never silent."""
        n = int(info.total_count_change)
        self.diag.values["lost"] = str(int(self.diag.values.get("lost", "0")) + n)
        self.get_logger().warning(f"{topic}: {n} message(s) lost before this subscription "
                                  f"({self.diag.values['lost']} in all)", throttle_duration_sec=5.0)

    def _qos_incompatible(self, topic: str, side: str, info: Any) -> None:
        """A peer on ``topic`` cannot be matched with this endpoint's QoS (``info``: rclpy's event)."""
        policy = qos_policy_name_from_kind(info.last_policy_kind)
        if side == "subscription":
            self.__dict__.setdefault("_qos_bad", set()).add(topic)
        self.diag.values["qos_incompatible"] = str(int(self.diag.values.get("qos_incompatible", "0"))
                                                   + int(info.total_count_change))
        self.diag.error(f"incompatible QoS ({policy}) between this {side} and a peer on {topic}", topic)
        self.get_logger().error(f"{topic}: a peer's QoS is incompatible with this {side}'s ({policy})")

    # -- live parameters -----------------------------------------------------------------------
    def _on_set_parameters(self, params: list) -> SetParametersResult:
        """A change through the parameter service: validated by the options model, applied by
        :meth:`apply_options`, or refused with the reason (read-only ones never get here)."""
        changes = {p.name: p.value for p in params if p.name in self.option_parameters}
        if not changes:
            return SetParametersResult(successful=True)
        try:
            new = changed_options(self.options, changes)
            self.apply_options(new, set(changes))
        except (RgbtError, ValueError) as exc:
            self.get_logger().warn(f"parameter change refused: {exc}")
            return SetParametersResult(successful=False, reason=str(exc))
        self.options = new
        self.get_logger().info(f"parameters changed: {changes}")
        return SetParametersResult(successful=True)

    def apply_options(self, new: NodeOptions, changed: set[str]) -> None:
        """Make the ``changed`` live options of ``new`` take effect (before ``self.options`` becomes
        ``new``); raise :class:`RgbtError` or ``ValueError`` to refuse the change with its message.
        Subclasses with more live options extend this and call ``super()``."""
        if "diagnostics_period_s" in changed:
            self._diag_timer.cancel()
            self.destroy_timer(self._diag_timer)
            self._diag_timer = self.create_timer(new.diagnostics_period_s, self.guard(self.publish_diagnostics))

    # -- helpers -------------------------------------------------------------------------------
    @property
    def in_qos(self) -> QoSProfile:
        return qos_profile(self.options.input_qos, depth=self.options.input_depth)

    @property
    def small_qos(self) -> QoSProfile:
        """``in_qos`` with a queue 8x deeper, for small high-rate messages (IMU, frame info): a
        stalled process then holds seconds of them instead of a fraction."""
        return qos_profile(self.options.input_qos, depth=8 * self.options.input_depth)

    @property
    def out_qos(self) -> QoSProfile:
        return qos_profile(self.options.output_qos)

    def out_qos_for(self, rate_hz: float | None, durable: bool = False) -> QoSProfile:
        """``out_qos`` for a stream of ``rate_hz`` (Hz): a reliable publisher's history holds
        ``output_history_s`` of it (at least 10 samples) for repairs, and with ``durable`` also for
        subscribers that join late (transient local: a restarted recorder); others keep their default
        depth."""
        o = self.options
        if o.output_qos != "reliable" or not rate_hz:
            return self.out_qos
        return qos_profile("latched" if durable else o.output_qos,
                           depth=max(10, math.ceil(rate_hz * o.output_history_s)))

    def stack(self) -> Stack:
        """The stack model from ``stack_path`` (the repository's calib/stack.yaml when empty)."""
        from rgbt.stack import load_stack

        return load_stack(self.options.stack_path or None)

    def now_ns(self) -> int:
        return self.get_clock().now().nanoseconds

    def guard(self, fn: Callable[..., Any], topic: str | None = None) -> Callable[..., Any]:
        """Wrap a callback: exceptions are logged, counted in diagnostics and swallowed."""

        @functools.wraps(fn)
        def wrapped(*args: Any) -> Any:
            self.callbacks_run += 1
            try:
                return fn(*args)
            except Exception as exc:  # noqa: BLE001 - a node keeps running: the error is logged and counted
                self.report_error(fn.__name__, exc, topic)
                return None

        return wrapped

    def report_error(self, where: str, exc: BaseException, topic: str | None = None) -> None:
        """Count an error in diagnostics (on ``topic`` when given) and log it; the first five with
        their traceback, later ones only in the counts."""
        self.diag.error(f"{type(exc).__name__}: {exc}", topic)
        if self.diag.errors <= 5:
            self.get_logger().error(f"{where}: {exc}\n{''.join(traceback.format_exception(exc))}")

    def wait_for_subscribers(self, topics: list[str], timeout_s: float, stop: threading.Event,
                             by_node: dict[str, list[str]] | None = None) -> bool:
        """Block (in a worker thread) until every topic of ``topics`` has a subscriber and every topic of
        ``by_node`` (node name -> topics) a subscription of that node, ``timeout_s`` passes or ``stop``
        is set. Returns True when all were seen."""
        wanted = [(t, "") for t in topics] + [(t, n) for n, ts in (by_node or {}).items() for t in ts]

        def subscribed(topic: str, node: str) -> bool:
            if not node:
                return self.count_subscribers(topic) > 0
            return any(info.node_name == node for info in self.get_subscriptions_info_by_topic(topic))

        deadline = time.monotonic() + timeout_s
        missing = wanted
        while missing and time.monotonic() < deadline and not stop.is_set():
            missing = [(t, n) for t, n in missing if not subscribed(t, n)]
            if missing:
                stop.wait(0.1)
        if missing:
            what = [f"{t} (by {n})" if n else t for t, n in missing]
            self.get_logger().warn(f"no subscriber after {timeout_s} s on {what}; starting anyway")
        return not missing

    def publish_diagnostics(self) -> None:
        if self.options.publish_thread:
            thread = process_publish_thread()
            stats = thread.stats
            self.diag.set_values("publish_thread", {"pending": thread.pending, "written": stats.written,
                                                    "dropped": sum(stats.dropped.values()), "failed": stats.failed,
                                                    "max_wait_s": round(stats.max_wait_s, 3)})
            if thread.last_error:
                self.diag.values["publish_thread.last_error"] = thread.last_error
        status = DiagnosticStatus()
        status.name = self.get_name()
        status.hardware_id = "rgbt"
        status.level = bytes([max(self.diag.level, 1 if self.diag.errors else 0)])
        status.message = self.diag.message
        status.values = [KeyValue(key=k, value=v) for k, v in self.diag.key_values()]
        msg = DiagnosticArray()
        ns_to_stamp(time.time_ns(), msg.header.stamp)
        msg.status = [status]
        self._diag_pub.publish(msg)

    def progress(self) -> dict[str, tuple[int, int, float]]:
        """Work handed to this node's own threads and how much of it they finished, for the
        supervisor's liveness check (``rgbt.graph.liveness``): name -> (items handed over, items
        finished or dropped, stall_s). Both counts only grow; while the first grows and the second
        has not moved for ``stall_s`` (s) the worker is stuck and the process is restarted. Default:
        nothing (a node without worker threads is judged by its executor's heartbeat alone)."""
        return {}

    def stop_producing(self) -> None:
        """Stop the node's own producer threads (a driver's reader, the virtual stack's playback) at the
        start of the shutdown drain, so the drain ends once what is in flight is handled; :meth:`close`
        follows. Default: nothing (timers are stopped by the drain itself)."""

    def close(self) -> None:
        """Release resources (files, sockets) before the node is destroyed; must be idempotent."""


class _CountedPublisher:
    """An rclpy publisher that counts what it publishes into ``sent[topic]`` (the node's heartbeat);
    it writes on the caller's thread with the GIL released (:func:`rgbt.ros.publish_thread.publish_released`)
    or, with a ``thread`` (``NodeOptions.publish_thread``), hands each message to that
    :class:`rgbt.ros.publish_thread.PublishThread`.
    Everything else is the publisher's own."""

    def __init__(self, publisher: Any, sent: dict[str, int], topic: str, thread: PublishThread | None = None) -> None:
        self._pub, self._sent, self._topic, self._thread = publisher, sent, topic, thread
        sent.setdefault(topic, 0)

    def publish(self, msg: Any) -> None:
        if self._thread is None:  # on this thread, the GIL released for the middleware's write
            publish_released(self._pub, to_cdr(msg))
            self._count()
        else:  # counted once written: what others are owed (a deaf reader's judge) is what reached them
            self._thread.submit(self._pub, msg, self._count)

    def use_thread(self, thread: PublishThread) -> None:
        """Write through ``thread`` from now on."""
        self._thread = thread

    def _count(self) -> None:
        self._sent[self._topic] += 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pub, name)

"""Recorder: raw CDR from the subscriptions into MCAP through ``rgbt.bag.writer.BagWriter``.

The stack's camera and IMU topics (and their before-lock topics) are subscribed reliable, as the
trigger sync publishes them, so a sample the transport drops is repaired from the publisher's
history (``reliable_stack``; a best-effort publisher there makes it fall back to best effort, logged
and counted as ``qos_fallbacks``); other topics best effort (``input_qos``).

Starts on the autopilot's arm (``std_msgs/Bool`` on ``/rgbt/armed``, latched on both ends: a recorder
(re)started after the arm learns it at once) and stops when disarmed for ``debounce_s``; ``start: always`` records from
start-up; services ``~/start``, ``~/stop``, ``~/split`` (``std_srvs/Trigger``) and ``~/prearm_check`` (its ``message``
is a JSON report). Memory: lossless within ``memory_budget_mb`` (default ``buffer_s`` seconds of the recorded streams),
split between the middleware's reader queues and the writer queue (``rgbt.graph.recording.plan_buffers``);
a message beyond it is dropped and counted (``dropped_budget``), never lost silently.
Never corrupts a bag: SIGINT / SIGTERM (the spin loop calls ``close()``), a write error, the size
cap or low disk space close the current file with its summary; the open file is fsynced every
``fsync_interval_s``. Each bag directory gets ``rgbt_manifest.json`` when it opens and when it closes
(state, flight, topics, counts, rates, what was lost and why, sync status, FFC events, devices,
disk, why it stopped). Restarted mid-flight (by the supervisor), it first takes over the bag its
predecessor left open: the stack topics are durable (transient local), so the new recorder receives
the publishers' last seconds and the old bag is recovered without what the new one holds again
(``rgbt.graph.recording``). Bags of an earlier run left open (a power loss) are recovered at start.
By default it records the stack topics, the trigger sync's before-lock streams
(``/rgbt/raw/<kind>/unlocked``) and the GNSS fix's UTC (``/gps/time_reference``). Each topic's offered QoS in the bag is
its publishers' (``rgbt.ros.qos.topic_qos``), so ``ros2 bag play`` republishes ``/rgbt/armed`` latched. Thresholds
(``debounce_s``, size cap, disk space, the sync-lock gate) are live parameters.
The logic lives in :mod:`rgbt.graph.recording`; this module is the wiring.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.subscription import Subscription
from std_msgs.msg import Bool
from std_srvs.srv import Trigger

from rgbt.bag.types import ros2_typestore
from rgbt.graph.options import RecorderOptions, unflatten
from rgbt.graph.recording import (
    RecorderLayout,
    Recording,
    driver_extra_topic_types,
    prepare_standby_spool,
    recorder_layout,
)
from rgbt.memory import heap_reserved, reserve_heap
from rgbt.ros.msgtypes import get_message
from rgbt.ros.node import RgbtNode
from rgbt.ros.qos import TOPIC_QOS, qos_profile, qos_to_yaml, topic_qos
from rgbt.ros.spin import node_main
from rgbt.topics import ARMED_TOPIC, stack_topic_types

#: a take-over's heap reservation sleeps this long after each 8 MB it touches (s): ~1.4 s for 1.1 GB
TAKEOVER_RESERVE_PAUSE_S = 0.005


class RecorderNode(RgbtNode):
    options_model = RecorderOptions
    options: RecorderOptions
    default_name = "recorder"
    reserves_memory = True

    @classmethod
    def prewarm(cls) -> None:
        """A warm spare builds the typestore (0.1-3 s) before a take-over needs it."""
        super().prewarm()
        ros2_typestore()

    @staticmethod
    def _standby_layout(params: dict[str, Any]) -> tuple[RecorderOptions, RecorderLayout]:
        """A warm spare's view of the recorder it would start: its options and layout."""
        from rgbt.stack import load_stack

        o = RecorderOptions.model_validate(unflatten(params))
        return o, recorder_layout(o, load_stack(o.stack_path or None))

    @classmethod
    def standby_reserve_bytes(cls, params: dict[str, Any]) -> int:
        """A warm spare touches the heap its take-over would reserve while it waits: a take-over that
        grew its heap as the history and the live streams arrived (page faults) wrote slower than they
        came on a loaded 2-core host, and dropped frames over its memory budget for 20 s and more."""
        return cls._standby_layout(params)[1].heap_bytes

    @classmethod
    def standby_prepare(cls, params: dict[str, Any]) -> None:
        """A warm spare makes its take-over's crash spool while it waits."""
        prepare_standby_spool(*cls._standby_layout(params))

    def __init__(self, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        o = self.options
        stack = self.stack()
        known = {**stack_topic_types(stack), **driver_extra_topic_types(stack)}
        self.rec = Recording(o, log=self.get_logger().info, synthetic=o.synthetic or bool(stack.synthetic))
        self.diag.values["flight_id"] = self.rec.flight_id
        ros2_typestore()  # built now (0.5-3 s on a small CPU), not when the arm starts the first bag
        layout = recorder_layout(o, stack)
        self.wanted = layout.topics
        self.rec.expected_rates = layout.rates
        # the before-lock topics carry the same streams before the sync locks (the first seconds, when a
        # recorder started with the graph is still slow): the same queue depths
        self.rec.same_stream = layout.same_stream
        # reliable until a best-effort publisher shows up; durable: a restarted recorder receives what it missed
        self.reliable, self.durable, self.plan = layout.reliable, layout.durable, layout.plan
        heap = self._heap_bytes = layout.heap_bytes
        self.rec.writer_budget_bytes = self.plan.writer_bytes
        self.rec.open_spool()
        self.get_logger().info(f"memory budget {self.plan.budget_bytes / 1e6:.0f} MB: reader queues "
                               f"{self.plan.depths}, writer queue {self.plan.writer_bytes / 1e6:.0f} MB")
        # topic -> message type (not `subscribed`: RgbtNode.subscribed(publisher) is a method)
        self.subscribed_types: dict[str, str] = {}
        self._recorded_subs: dict[str, Subscription] = {}
        self._fall_back: set[str] = set()  # reliable subscriptions a best-effort publisher could not match
        self.diag.values["qos_fallbacks"] = "0"
        self._write_errors_seen = 0
        # the heap first, then the subscriptions: a recorder that subscribes is ready to take the streams at
        # their rate (sources that wait for its subscriptions start then). Subscribed first, the streams
        # would queue in the reader queues during the reservation (~3 s) and come out of them topic by
        # topic, not in their arrival order
        # bags an earlier recorder left open: another run's are recovered now, this flight's is taken over
        for entry in self.rec.recover_at_start():
            self.get_logger().warning(f"recovered {entry['bag']}, left open by an earlier run: {entry}")
        # reserved now unless a take-over must subscribe first and its warm spare has not reserved it all
        reserve_now = heap and (self.rec.previous is None or heap_reserved() >= heap)
        if reserve_now:
            self.diag.values["heap_reserved_mb"] = str(self._reserve(heap))
        for topic in self.wanted:
            if topic in known:
                self._subscribe(topic, known[topic])
        if heap and not reserve_now:
            # a take-over subscribes first (the streams' retained history must still hold what was missed)
            # and reserves once it has written that history, paced: touching 1 GB at once while the history
            # and the live streams arrive starved the executor and the writer (hung 6 s); at nice 19 the
            # thread, preempted, held the heap's and the address space's locks that every thread of the
            # process allocates under, and every stream reached the bag 0.4 s late as it finished
            threading.Thread(target=self._reserve_when_caught_up, daemon=True).start()
        if o.write_state:
            self.rec.enable_state_topic(o.state_topic or stack.autopilot.state_topic)
        # latched like its publishers: a recorder (re)started after the arm learns the state at once
        self.create_subscription(Bool, o.armed_topic, self.guard(self.on_armed), topic_qos(ARMED_TOPIC))
        self.create_subscription(DiagnosticArray, "/diagnostics", self.guard(self.on_diagnostics),
                                 topic_qos("/diagnostics", depth=50))
        for srv, fn in (("start", self.rec.manual_start), ("stop", self.rec.manual_stop),
                        ("split", self.rec.split), ("prearm_check", self.rec.prearm_report)):
            self.create_service(Trigger, f"~/{srv}", self._service(fn))
        self._tick_period_ns = 250_000_000
        self._last_tick_ns: int | None = None
        self.create_timer(0.25, self.guard(self.tick))
        if o.start == "always":
            self.rec.start("always")

    def _reserve(self, nbytes: int, pause_s: float = 0.0) -> int:
        """Touch ``nbytes`` of heap now (``rgbt.memory.reserve_heap``, ``pause_s`` after each chunk); MB
        reserved. Nothing to do when a warm spare's standby reserved as much already."""
        if heap_reserved() >= nbytes:
            self.get_logger().info(f"heap reserved: {heap_reserved() / 1e6:.0f} MB in standby (warm spare)")
            return round(heap_reserved() / 1e6)
        t0 = time.monotonic()
        done = reserve_heap(nbytes, pause_s=pause_s)
        self.get_logger().info(f"heap reserved: {done / 1e6:.0f} MB in {time.monotonic() - t0:.2f} s"
                               if done else "heap not reserved (needs Linux glibc)")
        return round(done / 1e6)

    def _reserve_when_caught_up(self) -> None:
        """:meth:`_reserve` on this thread, paced, once the writer has caught up."""
        self.rec.wait_caught_up()
        reserved = self._reserve(self._heap_bytes, pause_s=TAKEOVER_RESERVE_PAUSE_S)
        self.diag.values["heap_reserved_mb"] = str(reserved)

    def _subscribe(self, topic: str, msgtype: str) -> None:
        o = self.options
        depth = self.plan.depths.get(topic)
        reliable = topic in self.reliable
        durable = topic in self.durable
        if topic in TOPIC_QOS:  # fixed on both ends (a latched topic's last sample arrives on subscribing)
            qos = topic_qos(topic, depth=depth or o.input_depth)
        else:  # the planned depth, else in_qos's / small_qos's
            depth = depth or (o.input_depth if msgtype == "sensor_msgs/msg/Image" else 8 * o.input_depth)
            qos = qos_profile("latched" if durable else "reliable" if reliable else o.input_qos, depth)
        def on_lost(info: Any, t: str = topic) -> None:
            self.rec.lost(t, info.total_count_change)

        # A stream whose losses its stamps show (loss_ranges) takes no lost-message event: taking one
        # waits for the middleware's reader lock (the GIL most likely held) while a take-over's history
        # arrives; all three recorders found hung or deaf after a take-over stood there
        counted_by_stamps = self.rec.counted_by_stamps(topic)
        events = SubscriptionEventCallbacks(message_lost=None if counted_by_stamps else on_lost)
        if reliable:  # a volatile / best-effort publisher cannot match: subscribe less strictly (next tick)
            events.incompatible_qos = lambda info, t=topic: self._fall_back.add(t)
        self._recorded_subs[topic] = self.create_subscription(
            get_message(msgtype), topic, self.guard(lambda raw, t=topic: self.rec.on_message(t, raw, self.now_ns()),
                                                    topic), qos, raw=True, event_callbacks=events,
            message_lost_event=not counted_by_stamps)
        if topic not in self.subscribed_types:
            # the publishers' QoS (what ``ros2 bag play`` offers again)
            self.rec.add_topic(topic, msgtype, qos_to_yaml(qos_profile("reliable") if reliable else topic_qos(topic)))
        self.subscribed_types[topic] = msgtype

    def _fall_back_to_best_effort(self) -> None:
        """Durable -> reliable volatile -> best effort, one step per incompatible publisher seen."""
        for topic in sorted(self._fall_back):
            if topic in self.durable:
                self.durable.discard(topic)
                why = ("a publisher offers volatile; recording it volatile (a restarted recorder then loses "
                       "what it missed while down, and counts it)")
            else:
                self.reliable.discard(topic)
                why = "a publisher offers best effort; recording it best effort (what the transport drops " \
                      "is then lost, and counted)"
            sub = self._recorded_subs.pop(topic, None)
            if sub is not None:
                self.destroy_subscription(sub)
            self._subscribe(topic, self.subscribed_types[topic])
            self.diag.values["qos_fallbacks"] = str(int(self.diag.values["qos_fallbacks"]) + 1)
            self.get_logger().warning(f"{topic}: {why}")
        self._fall_back.clear()

    def apply_options(self, new: RecorderOptions, changed: set[str]) -> None:  # type: ignore[override]
        super().apply_options(new, changed)
        self.rec.o = new  # live: debounce, size cap, disk-space thresholds, the sync-lock gate

    def tick(self) -> None:
        """Discover extra topics' types, apply debounced arm state, check disk space; count how late
        this timer ran (``executor_lag``: how long a ready callback waits for this process's executor)."""
        now = time.monotonic_ns()
        if self._last_tick_ns is not None:
            self.diag.topic("executor_lag").tick(max(0, now - self._last_tick_ns - self._tick_period_ns))
        self._last_tick_ns = now
        if self._fall_back:
            self._fall_back_to_best_effort()
        if len(self.subscribed_types) < len(self.wanted):
            types = dict(self.get_topic_names_and_types())
            for topic in self.wanted:
                if topic not in self.subscribed_types and types.get(topic):
                    self._subscribe(topic, types[topic][0])
        self.rec.tick(self.now_ns())
        while self._write_errors_seen < self.rec.write_errors:  # errors of the writer thread
            self._write_errors_seen += 1
            self.diag.error(self.rec.last_stop_reason)
        self.diag.values.update(self.rec.diag_values())
        for topic, stats in self.rec.topic_stats.items():
            self.diag.topics[topic] = stats

    def on_armed(self, msg: Bool) -> None:
        self.rec.on_armed(bool(msg.data), self.now_ns())

    def on_diagnostics(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            if status.name != self.get_name():
                self.rec.on_peer_status(status.name, {kv.key: kv.value for kv in status.values})

    def _service(self, fn: Callable[[], tuple[bool, object]]) -> Callable[[Any, Any], Any]:
        def handle(_request: Any, response: Any) -> Any:  # std_srvs/Trigger request and response
            try:
                ok, message = fn()
            except Exception as exc:  # noqa: BLE001 - a service answers, never kills the recorder
                ok, message = False, f"{type(exc).__name__}: {exc}"
            response.success, response.message = bool(ok), message if isinstance(message, str) else json.dumps(message)
            return response

        return handle

    def progress(self) -> dict[str, tuple[int, int, float]]:
        """The writer thread: messages handed to it and written (or counted lost) by it; stuck for
        10 s (a hung disk) the supervisor restarts the recorder, which takes its bag over."""
        handed, done = self.rec.progress()
        return {"writer": (handed, done, 10.0)}

    def close(self) -> None:
        self.rec.shutdown()


NODE = RecorderNode


def main(args: list[str] | None = None) -> int:
    return node_main(NODE, args)


if __name__ == "__main__":
    raise SystemExit(main())

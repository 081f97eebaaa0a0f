"""The executor loop and the node-process entry point.

``rclpy.experimental.EventsExecutor`` driven by ``spin_until_future_complete(Future(), 0.2)`` in a
loop: its ``spin()`` busy-loops and ignores SIGINT. Where rclpy has no EventsExecutor (ROS 2 Humble)
the standard ``SingleThreadedExecutor`` runs instead; ``RGBT_EXECUTOR=single`` forces that fallback,
``RGBT_EXECUTOR=events`` requires the EventsExecutor (default ``auto``). The choice is logged at
start-up. Each loop writes the process's heartbeat (:mod:`rgbt.graph.liveness`: what the supervisor judges hangs,
stuck workers and deaf subscribers by; the last one says whether the process ends because its job is
done). SIGINT / SIGTERM set a stop flag; on the way out the process drains (:func:`drain`: timers
stopped, queued messages handled) and every node's ``close()`` runs (the recorder closes its bag)
before rclpy shuts down.

``python -m rgbt.ros.spin --node NAME:EXECUTABLE [...] [--duration S] --ros-args ...`` runs
several nodes of ``nodes/`` in one process (how ``rgbt up`` starts a profile's process groups).
With ``--standby`` the process is a warm spare (:mod:`rgbt.graph.supervisor`): it imports the node
modules and what they load at start (``RgbtNode.prewarm``) and creates its DDS participant (a
hidden placeholder node, :data:`STANDBY_NODE`: the participant is what makes a process's first
node slow, 1.2-2.5 s of a loaded 2-core host, and once it exists the other processes have
discovered it), then waits for one line on stdin before it creates the nodes, so a restart skips
the interpreter's, the libraries' and the middleware's start-up. It starts up and waits at
``--standby-nice`` when given (``NodeOptions.spare_nice``) and takes ``--nice`` when it takes over.
It says it is ready (``--ready-file``) once its participant has discovered the graph
(:class:`GraphDiscovery`): taken over earlier, its subscriptions waited seconds for their
publishers. A spare in standby exits at once, cleanly and without starting, on SIGTERM / SIGINT or
at the end of its input.

Started by ``rgbt up`` (``RGBT_LAUNCHER_PID`` in the environment), the process first ties its life
to the launcher's (:mod:`rgbt.graph.parent_death`): SIGTERM when the launcher dies, so the graph
drains and closes instead of flying on unsupervised; a launcher already gone: exit 1 at once.
"""

from __future__ import annotations

import argparse
import faulthandler
import gc
import importlib
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from rgbt.graph.priority import set_process_nice, set_process_realtime
from rgbt.memory import single_arena
from rgbt.ros_env import check_single_rclpy, use_participant_lease

check_single_rclpy()  # two rclpy stacks (PyPI wheels + /opt/ros) refuse here, before rclpy loads

import rclpy
from rclpy.executors import Executor, SingleThreadedExecutor
from rclpy.logging import get_logger
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from rclpy.task import Future

from rgbt.errors import ConfigError
from rgbt.graph.liveness import BEAT_PERIOD_S, HeartbeatWriter
from rgbt.graph.parent_death import die_with_launcher, launcher_gone
from rgbt.graph.supervisor import HEARTBEAT_ENV
from rgbt.paths import REPO_ROOT
from rgbt.ros.publish_thread import close_process_publish_thread

if TYPE_CHECKING:
    from rgbt.ros.node import RgbtNode

try:  # Jazzy and later; Humble's rclpy has none
    from rclpy.experimental import EventsExecutor
except ImportError:  # pragma: no cover - depends on the installed rclpy
    EventsExecutor = None  # type: ignore[assignment]

#: environment variable choosing the executor: auto (EventsExecutor where present), events, single
EXECUTOR_ENV = "RGBT_EXECUTOR"
#: shutdown drain (s): at most this long, ended once no callback ran for DRAIN_IDLE_S
DRAIN_MAX_S, DRAIN_IDLE_S = 3.0, 0.3
#: the drain's bound when the launcher is gone (s)
DRAIN_ORPHAN_S = 1.0


def executor_choice(environ: dict[str, str] | None = None) -> str:
    """``"events"`` or ``"single"``: the executor class :func:`make_executor` builds.

    ``RGBT_EXECUTOR`` = ``auto`` (default: events where rclpy has ``EventsExecutor``), ``events``
    (an error where it is missing) or ``single`` (``SingleThreadedExecutor``, as on Humble).
    """
    value = (os.environ if environ is None else environ).get(EXECUTOR_ENV, "auto").strip().lower() or "auto"
    if value not in ("auto", "events", "single"):
        raise ConfigError(EXECUTOR_ENV, "environment", value, "auto, events or single")
    if value == "events" and EventsExecutor is None:
        raise ConfigError(EXECUTOR_ENV, "environment", value,
                          "auto or single: this rclpy has no rclpy.experimental.EventsExecutor")
    if value == "auto":
        return "events" if EventsExecutor is not None else "single"
    return value


def make_executor(context: rclpy.Context | None = None) -> Executor:
    """The executor of :func:`executor_choice` (both are driven by ``spin_until_future_complete``)."""
    if executor_choice() == "events":
        return EventsExecutor(context=context)
    return SingleThreadedExecutor(context=context)


def node_class(executable: str) -> type[RgbtNode]:
    """The node class of ``nodes/<executable>.py`` (module attribute ``NODE``)."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    try:
        module = importlib.import_module(f"nodes.{executable}")
    except ModuleNotFoundError as exc:
        if exc.name != f"nodes.{executable}":
            raise
        module = importlib.import_module(f"rgbt_nodes.{executable}")  # installed by ros2_ws (colcon)
    return module.NODE


def freeze_startup_objects() -> None:
    """Move everything built at start-up (modules, message types, rosbags' typestore, models) out of
    the cyclic garbage collector's reach (``gc.freeze``), so its full collections during the flight
    walk only what the flight allocates instead of pausing the executor for the whole heap."""
    gc.collect()
    gc.freeze()


#: what a warm spare's ready file says after its PID while its participant discovers the graph
DISCOVERING = "discovering"
#: name of a warm spare's placeholder node (hidden: leading underscore; no parameter services, no rosout)
STANDBY_NODE = "_rgbt_standby"


def standby_placeholder(args: list[str] | None = None) -> Node:
    """Initialise rclpy and create the DDS participant ahead of the nodes: a hidden node with no
    services, topics or log publisher, for :func:`run_nodes` to end once the real nodes exist
    (ending it first would end the participant with it)."""
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    return Node(STANDBY_NODE, start_parameter_services=False, enable_rosout=False)


#: how long a node process's or :meth:`BackgroundNode.close`'s middleware teardown may take (s)
CLOSE_TIMEOUT_S = 15.0
_STUCK: list[str] = []  # node processes / background nodes whose middleware never shut down


def run_nodes(factories: Sequence[Callable[[], Node]], args: list[str] | None = None,
              duration_s: float | None = None, placeholder: Node | None = None) -> int:
    """Create the nodes, spin them until SIGINT/SIGTERM, ``duration_s`` or every node ``finished``.

    Returns 0 on a clean stop. ``args`` are the ROS arguments (``--ros-args ...``). With a
    ``placeholder`` (:func:`standby_placeholder`) rclpy is already initialised; it is destroyed
    once the nodes exist.
    """
    if placeholder is None:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    stop = {"signal": 0}

    def on_signal(signum: int, _frame: object) -> None:
        stop["signal"] = signum

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    nodes: list[Node] = []
    executor = make_executor()
    get_logger("rgbt.spin").info(
        f"executor: {type(executor).__name__} ({EXECUTOR_ENV}={os.environ.get(EXECUTOR_ENV, 'auto')}, "
        f"EventsExecutor {'available' if EventsExecutor is not None else 'missing'})")
    try:
        for make in factories:
            nodes.append(make())
            executor.add_node(nodes[-1])
        if placeholder is not None:
            placeholder.destroy_node()
            placeholder = None
        freeze_startup_objects()
        heart = HeartbeatWriter(os.environ.get(HEARTBEAT_ENV))

        def state() -> dict:
            return {n.get_name(): n.heartbeat_state() for n in nodes if hasattr(n, "heartbeat_state")}

        if nodes:  # also from a timer: under a flood of events a spin call may not return for seconds,
            # while the executor does run callbacks (a recorder taking over receives seconds of history)
            nodes[0].create_timer(BEAT_PERIOD_S, lambda: heart.beat(state))
        deadline = None if not duration_s else time.monotonic() + duration_s
        finished = False  # the nodes' job is done or the duration passed (not a signal, not a failure)
        while rclpy.ok() and not stop["signal"]:
            heart.beat(state)
            if deadline is not None and time.monotonic() >= deadline:
                finished = True
                break
            if nodes and all(getattr(n, "finished", False) for n in nodes):
                finished = True
                break
            executor.spin_until_future_complete(Future(), timeout_sec=0.2)
        # all at once when the launcher died (PR_SET_PDEATHSIG): nobody stops the groups in order, and
        # a supervisor restarting the unit waits for them; what is in flight gets a short drain only
        drain(executor, nodes, max_s=DRAIN_ORPHAN_S if launcher_gone() else DRAIN_MAX_S)
        heart.beat(state, finished=finished, force=True)  # the last one: why this process ends
    finally:
        for node in nodes:
            try:
                getattr(node, "close", lambda: None)()
            except Exception as exc:  # noqa: BLE001 - keep closing the others
                print(f"rgbt: closing {node.get_name()} failed: {exc}", file=sys.stderr)
        close_process_publish_thread()  # what the nodes handed it is written before they are destroyed
        for s, handler in old.items():
            signal.signal(s, handler)
        end_middleware(executor, nodes + ([placeholder] if placeholder is not None else []))
    return 0


def end_middleware(executor: Executor, nodes: Sequence[Node], timeout_s: float = CLOSE_TIMEOUT_S,
                   context: rclpy.Context | None = None, what: str = "node process") -> bool:
    """Shut ``executor``, ``nodes`` and ``context`` (default rclpy's) down; what the nodes hold is
    closed already. False when that did not finish within ``timeout_s`` (Fast DDS's threads
    deadlocked: a lease check against a participant's removal, eProsima/Fast-DDS issue 6502): it is
    left, said on stderr, and :func:`middleware_stuck` turns True (a node process then ends with
    ``os._exit``, :func:`exit_code`). A teardown that fails raises here."""
    failed: list[BaseException] = []

    def end() -> None:
        try:
            executor.shutdown()
            for node in nodes:
                node.destroy_node()
            rclpy.try_shutdown(context=context)
        except BaseException as exc:  # noqa: BLE001 - raised again on the caller's thread
            failed.append(exc)

    closer = threading.Thread(target=end, daemon=True, name="rgbt-close")
    closer.start()
    closer.join(timeout_s)
    if closer.is_alive():
        _STUCK.append(what)
        print(f"rgbt: {what} did not shut down in {timeout_s:g} s (the middleware's threads are deadlocked: "
              "Fast DDS, eProsima/Fast-DDS issue 6502); leaving it", file=sys.stderr, flush=True)
        return False
    if failed:
        raise failed[0]
    return True


def exit_code(code: int) -> int:
    """``code``, or the process ends here with it when the middleware could not be shut down (the
    interpreter's own teardown would wait on the same deadlock)."""
    if middleware_stuck():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def drain(executor: Executor, nodes: Sequence[Node], max_s: float = DRAIN_MAX_S, idle_s: float = DRAIN_IDLE_S) -> None:
    """Before the nodes close: stop their timers and their producer threads
    (:meth:`rgbt.ros.node.RgbtNode.stop_producing`: sources stop producing) and keep spinning until no
    guarded callback has run for ``idle_s`` (s) or ``max_s`` (s) passed, so messages already queued
    for this process (frames waiting for the trigger sync, samples for the recorder) are handled
    instead of dropped by a Ctrl-C. The launcher stops groups in profile order, so what a group
    publishes while draining reaches the groups still running."""
    for node in nodes:
        for timer in list(node.timers):
            timer.cancel()
        getattr(node, "stop_producing", lambda: None)()  # reader / playback threads stop publishing

    def runs() -> int:
        return sum(getattr(n, "callbacks_run", 0) for n in nodes)

    deadline = time.monotonic() + max_s
    last, idle_since = runs(), time.monotonic()
    while time.monotonic() < deadline and executor.context.ok():
        executor.spin_until_future_complete(Future(), timeout_sec=0.05)
        now, count = time.monotonic(), runs()
        if count != last:
            last, idle_since = count, now
        elif now - idle_since >= idle_s:
            break



class BackgroundNode:
    """A plain rclpy node in its own context, spun by :func:`make_executor`'s executor in a daemon thread.

    For test-side listeners/publishers and bench probes that sit beside the nodes under test.
    Create the node's publishers/subscriptions on ``self.node``, then call :meth:`start`;
    :meth:`close` stops the thread and shuts the context down. ``period_s`` is the executor's
    wake-up period (s); ``handle_signals=False`` leaves SIGINT/SIGTERM to the caller.
    """

    def __init__(self, name: str, period_s: float = 0.1, handle_signals: bool = True) -> None:
        self.context = rclpy.Context()
        if handle_signals:
            rclpy.init(context=self.context)
        else:
            rclpy.init(context=self.context, signal_handler_options=SignalHandlerOptions.NO)
        self.node = Node(name, context=self.context)
        self.executor = make_executor(self.context)
        self.executor.add_node(self.node)
        self._period_s = period_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _spin(self) -> None:
        while not self._stop.is_set():
            self.executor.spin_until_future_complete(Future(), timeout_sec=self._period_s)

    def close(self, timeout_s: float = CLOSE_TIMEOUT_S) -> bool:
        """Stop the thread, end the node and the context; False (said on stderr, and
        :func:`middleware_stuck` then True) when that did not finish within ``timeout_s`` seconds."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        return end_middleware(self.executor, [self.node], timeout_s, context=self.context,
                              what=f"node {self.node.get_name()!r}")


def middleware_stuck() -> bool:
    """Whether this process's middleware could not be shut down (:func:`end_middleware`): the process
    should then end with ``os._exit`` (the interpreter's own teardown would wait on the same deadlock)."""
    return bool(_STUCK)


def prepare_process(classes: Sequence[type]) -> None:
    """Process-wide settings the node classes ask for, applied before rclpy starts the middleware's
    threads: one glibc arena when a node reserves heap (``RgbtNode.reserves_memory``)."""
    if any(getattr(cls, "reserves_memory", False) for cls in classes):
        single_arena()


def node_main(cls: type, args: list[str] | None = None) -> int:
    """``main()`` of a single-node executable (ament entry point or ``python nodes/X.py``)."""
    prepare_process([cls])
    return exit_code(run_nodes([lambda: cls()], args if args is not None else sys.argv))


def main(argv: list[str] | None = None) -> int:
    gone = die_with_launcher()  # first: SIGTERM when the launcher dies (rgbt.graph.parent_death)
    if gone:
        _say(f"rgbt.ros.spin: {gone}: exiting")
        return 1
    argv = list(sys.argv[1:] if argv is None else argv)
    ros_args: list[str] = []
    if "--ros-args" in argv:
        i = argv.index("--ros-args")
        argv, ros_args = argv[:i], argv[i:]
    parser = argparse.ArgumentParser(prog="python -m rgbt.ros.spin")
    parser.add_argument("--node", action="append", required=True, help="NAME:EXECUTABLE")
    parser.add_argument("--duration", type=float, default=None)
    parser.add_argument("--standby", action="store_true",
                        help="a warm spare: import everything, then wait for a line on stdin before starting "
                             "the nodes (end of input: exit 0 without starting them)")
    parser.add_argument("--ready-file", default=None,
                        help="with --standby: write this process's PID here once it is ready to start")
    parser.add_argument(
        "--nice",
        type=int,
        default=0,
        help="the whole process's nice value from its start (< 0 needs CAP_SYS_NICE; rgbt.graph.priority)",
    )
    parser.add_argument("--standby-nice", type=int, default=None,
                        help="with --standby: the nice value it starts up and waits at (default: --nice); it "
                             "takes --nice when it takes over")
    parser.add_argument("--realtime-priority", type=int, default=0,
                        help="SCHED_RR priority of the whole process from its start (1-98; 0: none; "
                             "rgbt.graph.priority)")
    parser.add_argument("--oom-score-adj", type=int, default=0,
                        help="the process's /proc/self/oom_score_adj (-1000..1000; < 0 needs CAP_SYS_RESOURCE): "
                             "who the kernel's OOM killer takes first")
    args = parser.parse_args(argv)
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the supervisor asks a hung process for its stacks
    standby_nice = args.standby_nice if args.standby and args.standby_nice is not None else args.nice
    _priority(standby_nice, args.realtime_priority)
    if args.oom_score_adj:
        _say(f"rgbt.ros.spin: OOM score: {set_oom_score_adj(args.oom_score_adj)}")
    factories, classes = [], []
    for item in args.node:
        name, _, exe = item.partition(":")
        cls = node_class(exe or name)
        classes.append(cls)
        factories.append(lambda cls=cls, name=name: cls(name))
        if args.standby:
            cls.prewarm()
    names = [item.partition(":")[0] for item in args.node]
    params = [node_parameters(ros_args, n) for n in names]  # each node's, from the params files, once
    leases = [cls.participant_lease_s(p) for cls, p in zip(classes, params, strict=True)]
    if any(s > 0 for s in leases):  # before rclpy creates the participant
        _say(f"rgbt.ros.spin: {use_participant_lease(min(s for s in leases if s > 0))}")
    prepare_process(classes)
    if not args.standby:
        return exit_code(run_nodes(factories, ["rgbt", *ros_args], args.duration))
    placeholder = standby_placeholder(["rgbt", *ros_args])
    discovery = GraphDiscovery(placeholder, graph_node_names(ros_args))
    if args.ready_file:  # started up (the next spare may start); ready once it has discovered the graph
        with open(args.ready_file, "w") as fh:
            fh.write(f"{os.getpid()} {DISCOVERING}")
    reserving = StandbyReservation(list(zip(names, classes, params, strict=True)))

    def ready_once_discovered() -> None:  # ready: a take-over now matches its peers at once, from a warm heap
        if args.ready_file and discovery.done() and reserving.done():
            with open(args.ready_file, "w") as fh:
                fh.write(str(os.getpid()))
            args.ready_file = None
            _say(f"rgbt.ros.spin: warm spare ready ({discovery.describe()})")

    started = wait_for_start(ready_once_discovered)
    reserving.stop()  # taken over mid-reservation: what is touched is kept, the node reserves the rest
    if not started:  # the supervisor went away or stopped the graph: never started
        placeholder.destroy_node()
        rclpy.try_shutdown()
        return 0
    if standby_nice != args.nice:  # taken over: the group's priority from now on
        _say(f"rgbt.ros.spin: process priority: {set_process_nice(args.nice)}")
    return exit_code(run_nodes(factories, ["rgbt", *ros_args], args.duration, placeholder=placeholder))


def set_oom_score_adj(value: int) -> str:
    """Write ``value`` (-1000..1000) to ``/proc/self/oom_score_adj``; what happened, in words. Lowering
    it below the current value needs CAP_SYS_RESOURCE (systemd: run as root or
    ``AmbientCapabilities=CAP_SYS_RESOURCE``); refused, the value is kept and the refusal said."""
    path = "/proc/self/oom_score_adj"
    try:
        with open(path, "w") as fh:
            fh.write(str(int(value)))
        with open(path) as fh:
            return f"oom_score_adj {fh.read().strip()}"
    except OSError as exc:
        return f"oom_score_adj {value} refused ({exc.strerror}; lowering it needs CAP_SYS_RESOURCE), kept as it was"


#: how often (s) a warm spare waiting for its start line looks at the signals it received
STANDBY_POLL_S = 0.1
#: a warm spare is ready once every node of the graph is discovered and the topics seen have not
#: changed for DISCOVERY_SETTLE_S, or after DISCOVERY_MAX_S whatever it has found (s)
DISCOVERY_SETTLE_S, DISCOVERY_MAX_S = 0.5, 15.0


def _params_files(ros_args: list[str]) -> list[dict]:
    """The documents of the ``--params-file`` arguments in ``ros_args`` (unreadable ones left out)."""
    import yaml

    docs = []
    for i, arg in enumerate(ros_args[:-1]):
        if arg == "--params-file":
            try:
                with open(ros_args[i + 1]) as fh:
                    data = yaml.safe_load(fh) or {}
            except (OSError, yaml.YAMLError):
                continue
            if isinstance(data, dict):
                docs.append(data)
    return docs


def graph_node_names(ros_args: list[str]) -> set[str]:
    """The nodes of the graph a process belongs to: the names in its ``--params-file`` (``rgbt up``
    writes one for the whole profile); empty without one."""
    return {str(k).lstrip("/") for data in _params_files(ros_args) for k in data if str(k) != "/**"}


def node_parameters(ros_args: list[str], name: str) -> dict:
    """The ROS parameters the ``--params-file`` arguments give node ``name`` (``/**`` first, then its own)."""
    params: dict = {}
    for data in _params_files(ros_args):
        for key in ("/**", name, f"/{name}"):
            section = data.get(key)
            if isinstance(section, dict) and isinstance(section.get("ros__parameters"), dict):
                params.update(section["ros__parameters"])
    return params


#: a warm spare's heap reservation sleeps this long after each 8 MB it touches (s): it yields the CPU
#: to the flight it waits beside (~2 s of sleep for 1.5 GB)
STANDBY_RESERVE_PAUSE_S = 0.01


class StandbyReservation:
    """A warm spare touches the heap its nodes (name, node class, ROS parameters from the graph's
    params file) will reserve when they start (``RgbtNode.standby_reserve_bytes``), paced, on
    a thread of its own while it waits: once past its imports the next spare may start, and a take-over
    then allocates from a warm heap. :meth:`stop` ends it at the next chunk (a take-over does not
    wait for it; the node reserves what is missing). Options that do not validate are left to the
    node's start to report."""

    def __init__(self, nodes: list[tuple[str, Any, dict]]) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(nodes,), name="rgbt-standby-heap", daemon=True)
        self._thread.start()

    def _run(self, nodes: list[tuple[str, Any, dict]]) -> None:
        from rgbt.memory import reserve_heap

        try:
            nbytes = sum(cls.standby_reserve_bytes(params) for _, cls, params in nodes)
        except Exception as exc:  # noqa: BLE001 - the node reports its options when it starts
            _say(f"rgbt.ros.spin: warm spare: no heap reserved in standby ({exc.__class__.__name__})")
            return
        if nbytes:
            t0 = time.monotonic()
            done = reserve_heap(nbytes, pause_s=STANDBY_RESERVE_PAUSE_S, stop=self._stop)
            _say(f"rgbt.ros.spin: warm spare: heap reserved in standby: {done / 1e6:.0f} MB in "
                 f"{time.monotonic() - t0:.1f} s" if done else "rgbt.ros.spin: warm spare: heap not reserved")
        for name, cls, params in nodes:
            if self._stop.is_set():
                return
            try:
                cls.standby_prepare(params)
            except Exception as exc:  # noqa: BLE001 - the node does it (and reports) when it starts
                _say(f"rgbt.ros.spin: warm spare: {name} not prepared in standby ({exc})")

    def done(self) -> bool:
        return not self._thread.is_alive()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


class GraphDiscovery:
    """Whether a warm spare's DDS participant has discovered the graph: a participant that is merely
    created learns the others' endpoints over the next seconds (the periodic announcements of a
    loaded 2-core host), and a recorder that took over then matched its publishers 1.2-4.6 s after
    subscribing (``rgbt bench faults --fault kill_recorder``: 1-4 s of every stream lost), against
    milliseconds once discovery is complete."""

    def __init__(self, node: Node, expected: set[str], settle_s: float = DISCOVERY_SETTLE_S,
                 max_s: float = DISCOVERY_MAX_S) -> None:
        self.node, self.expected, self.settle_s, self.max_s = node, set(expected), settle_s, max_s
        self.t0 = time.monotonic()
        self._topics: list[tuple[str, list[str]]] = []
        self._since = self.t0
        self.missing = set(self.expected)

    def done(self) -> bool:
        now = time.monotonic()
        self.missing = self.expected - set(self.node.get_node_names())
        topics = sorted(self.node.get_topic_names_and_types())
        if topics != self._topics:
            self._topics, self._since = topics, now
        settled = not self.missing and now - self._since >= self.settle_s
        return settled or now - self.t0 >= self.max_s

    def describe(self) -> str:
        took = f"{time.monotonic() - self.t0:.1f} s"
        if self.missing:
            return f"after {took}; not discovered: {', '.join(sorted(self.missing))}"
        return f"graph discovered in {took}: {len(self.expected)} nodes, {len(self._topics)} topics"


def wait_for_start(on_poll: Callable[[], None] = lambda: None) -> bool:
    """A warm spare's wait for its start line on stdin: True when it came; False at end of input
    (the launcher stopped the graph or is gone) or on SIGTERM / SIGINT (its launcher died:
    ``PR_SET_PDEATHSIG``; or a stop by PID), so a spare in standby exits promptly and cleanly.
    ``on_poll`` runs every :data:`STANDBY_POLL_S` meanwhile (the readiness check).

    The handlers are the default ones again when this returns (a signal after it ends the process
    before :func:`run_nodes` installs its own, while no node exists yet)."""
    stop = {"signal": 0}

    def on_signal(signum: int, _frame: object) -> None:
        stop["signal"] = signum

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    line = ""
    try:
        while not stop["signal"]:
            on_poll()
            if select.select([sys.stdin], [], [], STANDBY_POLL_S)[0]:
                line = sys.stdin.readline()
                break
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
    return bool(line) and not stop["signal"]


def _say(line: str) -> None:
    """One line on stderr, whatever became of it (the launcher reading it may be gone)."""
    try:
        print(line, file=sys.stderr, flush=True)
    except OSError:
        pass


def _priority(nice: int, realtime: int) -> None:
    """The process's nice value and real-time priority (every thread; 0: left as is), logged on stderr."""
    if nice:
        print(f"rgbt.ros.spin: process priority: {set_process_nice(nice)}", file=sys.stderr, flush=True)
    if realtime:
        print(
            f"rgbt.ros.spin: process real-time priority: {set_process_realtime(realtime)}", file=sys.stderr, flush=True
        )


if __name__ == "__main__":
    sys.exit(main())

"""Start a profile's node processes without ``ros2 launch`` (``rgbt up``); no rclpy import here.

One child process per profile process group (``python -m rgbt.ros.spin``), a ROS ``--params-file``
written from the validated profile, loopback-only discovery and the shipped Fast DDS profile unless
the caller's environment says otherwise. A failed group is restarted with back-off by
:class:`rgbt.graph.supervisor.Supervisor` (``--strict``: the graph stops instead). Children are ended
by PID (SIGINT, then SIGKILL after a grace period) and the ``/dev/shm`` Fast DDS files they leave
behind are removed.

The launcher is no single point of failure (:func:`run_graph`, what ``rgbt up`` runs):

- every child dies with it: it names its PID in their environment (``RGBT_LAUNCHER_PID``) and each
  asks the kernel for SIGTERM when the launcher dies (:mod:`rgbt.graph.parent_death`): a ``kill -9``
  of the launcher ends the graph cleanly (the recorder closes its bag) instead of leaving it flying
  unsupervised. Children are started from the main thread only (the signal follows the forking thread);
- SIGHUP (a dropped SSH session) does not stop the flight: the children's output reaches the
  terminal through the launcher, which moves it and its own to ``up.log`` in the graph's work
  folder (printed at start) when the terminal hangs up (:mod:`rgbt.graph.console`);
- one graph per profile: the caller's :class:`rgbt.graph.instance_lock.InstanceLock`, inherited by
  every child, so it is held until the graph's last process is gone;
- under systemd (``rgbt service``), ``sd_notify`` (:mod:`rgbt.graph.sdnotify`): ``READY=1`` once
  every group is started, ``WATCHDOG=1`` from the supervision loop (a hung launcher stops pinging
  and systemd restarts it), ``STATUS=`` when the groups' state changes, ``STOPPING=1`` on the way out.

:func:`start_graph` alone (the bench, the demo) takes no lock and leaves the children's output where
the caller says.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

import yaml

from rgbt.graph.console import LOG_FILE, Console
from rgbt.graph.instance_lock import InstanceLock
from rgbt.graph.parent_death import LAUNCHER_PID_ENV
from rgbt.graph.profile import NodeSpec, group_oom_score_adj, params_file_data, processes
from rgbt.graph.sdnotify import NOTIFY_ENV, Notifier
from rgbt.graph.supervisor import FLIGHT_ID_ENV, HEARTBEAT_ENV, STATUS_ENV, STATUS_FILE, Supervisor, SupervisorOptions
from rgbt.paths import REPO_ROOT
from rgbt.ros_env import ros_defaults

SHM_DIR = Path("/dev/shm")
SHM_PREFIXES = ("fastrtps_", "sem.fastrtps_", "fastdds_", "sem.fastdds_", "rgbt_spool_")  # + recorders' crash spools
#: how long (s) :meth:`Graph.stop` waits for each group after its SIGINT, and for the warm spares,
#: and pauses (s) between groups
STOP_GRACE_S, SPARE_GRACE_S, STOP_SETTLE_S = 15.0, 5.0, 0.3


def ros_environment(base: dict[str, str] | None = None, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for node processes: loopback discovery + the shipped Fast DDS profile by default."""
    env = dict(os.environ if base is None else base)
    env.update(ros_defaults(env))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    for key in NOTIFY_ENV:  # systemd's notifications are the launcher's alone
        env.pop(key, None)
    env.update(extra or {})
    return env


def shm_files() -> set[str]:
    try:
        return {n for n in os.listdir(SHM_DIR) if n.startswith(SHM_PREFIXES)}
    except OSError:
        return set()


def _shm_in_use() -> set[str]:
    """Names under /dev/shm that some process still maps or holds open."""
    used: set[str] = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/maps") as fh:
                for line in fh:
                    i = line.find("/dev/shm/")
                    if i >= 0:
                        used.add(line[i + 9:].strip().split(" ")[0])
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("/dev/shm/"):
                    used.add(target[9:])
        except OSError:
            continue
    return used


def clean_shm(before: set[str]) -> list[str]:
    """Remove Fast DDS shared-memory files created since ``before`` that no process uses any more."""
    removed: list[str] = []
    candidates = shm_files() - before
    if not candidates:
        return removed
    in_use = _shm_in_use()
    for name in sorted(candidates - in_use):
        try:
            os.unlink(SHM_DIR / name)
            removed.append(name)
        except OSError:
            pass
    return removed


@dataclass
class Graph:
    """Running node processes of one profile."""

    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    workdir: Path | None = None
    shm_before: set[str] = field(default_factory=set)
    commands: dict[str, list[str]] = field(default_factory=dict)
    popen_kw: dict = field(default_factory=dict)  # env, stdout, stderr, pass_fds of every child

    @property
    def status_path(self) -> Path | None:
        """The supervisor's status file (named in every child's environment)."""
        return None if self.workdir is None else self.workdir / STATUS_FILE

    spares: dict[str, subprocess.Popen] = field(default_factory=dict)  # warm spares (``--standby``), by group

    def start_group(self, group: str) -> subprocess.Popen:
        """Start (or start again) one process group's child."""
        self.procs[group] = self._popen(self.commands[group])
        return self.procs[group]

    def _popen(self, cmd: list[str], **kw: object) -> subprocess.Popen:
        """Start a child in its own session (a terminal's Ctrl-C or hang-up reaches the launcher
        only, which stops the children in order), from the main thread: a child's parent-death
        signal fires when the thread that forked it ends, and the main thread ends with the launcher."""
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("node processes are started from the launcher's main thread only "
                               "(their PR_SET_PDEATHSIG fires when the forking thread ends)")
        return subprocess.Popen(cmd, start_new_session=True, **{**self.popen_kw, **kw})

    def start_spare(self, group: str) -> subprocess.Popen:
        """Start a warm spare of ``group``: its command with ``--standby`` (imported, waiting on stdin;
        with a ``workdir`` it writes its PID to :meth:`spare_ready_path` once it is ready)."""
        cmd = list(self.commands[group])
        at = cmd.index("--ros-args") if "--ros-args" in cmd else len(cmd)
        standby = ["--standby"]
        ready = self.spare_ready_path(group)
        if ready is not None:
            ready.unlink(missing_ok=True)
            standby += ["--ready-file", str(ready)]
        self.spares[group] = self._popen(cmd[:at] + standby + cmd[at:], stdin=subprocess.PIPE)
        return self.spares[group]

    def spare_ready_path(self, group: str) -> Path | None:
        return None if self.workdir is None else self.workdir / f"spare_{group}.ready"

    def spare_ready(self, group: str) -> bool:
        """``group`` has a live warm spare that has finished its start-up (imports, DDS participant)
        and discovered the graph: its ready file holds its PID alone."""
        return self._spare_says(group) == "ready"

    def spare_started_up(self, group: str) -> bool:
        """``group`` has a live warm spare past its imports (its ready file names its PID; it may
        still be discovering the graph, which costs little CPU)."""
        return self._spare_says(group) in ("ready", "discovering")

    def _spare_says(self, group: str) -> str:
        """A live spare's ready file: ``ready`` (its PID), ``discovering`` (its PID and that word) or ""."""
        spare, path = self.spares.get(group), self.spare_ready_path(group)
        if spare is None or spare.poll() is not None or path is None:
            return ""
        try:
            words = path.read_text().split()
        except OSError:
            return ""
        if not words or words[0] != str(spare.pid):
            return ""
        return "ready" if len(words) == 1 else "discovering"

    def activate_spare(self, group: str) -> subprocess.Popen | None:
        """Let ``group``'s warm spare start its nodes and make it the group's process; None when there
        is no spare ready (none started, or it died)."""
        spare = self.spares.pop(group, None)
        if spare is None or spare.poll() is not None or spare.stdin is None:
            return None
        try:
            spare.stdin.write(b"start\n")
            spare.stdin.flush()
        except OSError:  # it died between the poll and the write
            return None
        self.procs[group] = spare
        return spare

    def stop_spares(self, groups: list[str] | None = None, grace_s: float = SPARE_GRACE_S) -> None:
        """End the warm spares of ``groups`` (default all): end of input (they exit 0 without
        starting), SIGKILL if they linger."""
        spares = [self.spares.pop(g) for g in (list(self.spares) if groups is None else groups) if g in self.spares]
        for spare in spares:
            try:
                if spare.stdin is not None:
                    spare.stdin.close()
            except OSError:
                pass
        for spare in spares:
            stop_child(spare, grace_s, sig=None)  # told by its stdin

    def alive(self) -> list[str]:
        return [n for n, p in self.procs.items() if p.poll() is None]

    def stop(self, grace_s: float = STOP_GRACE_S, settle_s: float = STOP_SETTLE_S) -> dict[str, int]:
        """End the children by PID in profile order (sources first, so what they published reaches
        the recorder): SIGINT, wait up to ``grace_s``, SIGKILL if still alive; then clean /dev/shm.
        Warm spares are ended first (they never started nodes)."""
        self.stop_spares()
        for proc in self.procs.values():
            if proc.poll() is None:
                stop_child(proc, grace_s)
                time.sleep(settle_s)  # messages in flight reach the later processes
        clean_shm(self.shm_before)
        return {n: p.returncode for n, p in self.procs.items()}


def stop_child(proc: subprocess.Popen, grace_s: float, sig: int | None = signal.SIGINT) -> int:
    """End the child ``proc`` by its PID: ``sig`` (None: none, it was told to end another way), then
    up to ``grace_s`` for it to exit, ``SIGKILL`` if it has not; returns its exit code."""
    if sig is not None and proc.poll() is None:
        proc.send_signal(sig)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return proc.returncode


def stop_time_s(groups: int) -> float:
    """The longest :meth:`Graph.stop` of ``groups`` process groups can take (s): spares, then every
    group its grace period and the pause after it."""
    return SPARE_GRACE_S + groups * (STOP_GRACE_S + STOP_SETTLE_S)


def new_flight_id() -> str:
    """A flight id (UTC start time and this launcher's PID): what ties the bags of one flight together."""
    return f"{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%SZ')}-{os.getpid()}"


def write_params_file(specs: list[NodeSpec], directory: Path | None = None) -> Path:
    """Write the ROS ``--params-file`` of ``specs`` (``params.yaml`` in ``directory``, default a new
    temporary folder) and return its path."""
    directory = Path(tempfile.mkdtemp(prefix="rgbt_up_")) if directory is None else Path(directory)
    params = directory / "params.yaml"
    params.write_text(yaml.safe_dump(params_file_data(specs), sort_keys=False))
    return params


def group_commands(specs: list[NodeSpec], params_file: str | Path, duration_s: float | None = None,
                   python: str | None = None) -> dict[str, list[str]]:
    """Process group -> its command line: ``python -m rgbt.ros.spin --node NAME:EXECUTABLE ...
    [--duration S] [--nice N] [--standby-nice N] [--realtime-priority N] [--oom-score-adj N] --ros-args
    --params-file FILE`` (the lowest negative ``nice``, the highest ``spare_nice`` and ``realtime_priority``
    and the group's :func:`group_oom_score_adj` of its nodes).

    The one place both ``rgbt up`` (:func:`start_graph`) and ``launch/rgbt.launch.py`` (one
    ``ExecuteProcess`` per group) build their processes from, so the two layouts cannot drift.
    ``duration_s`` (s) is each process's own stop time; ``python`` defaults to this interpreter.
    """
    out: dict[str, list[str]] = {}
    for group, members in processes(specs).items():
        cmd = [python or sys.executable, "-m", "rgbt.ros.spin"]
        for spec in members:
            cmd += ["--node", f"{spec.name}:{spec.executable}"]
        if duration_s:
            cmd += ["--duration", str(duration_s)]
        # the group's priority from the process's first instruction: a warm spare starts up at it too (at
        # nice 0 beside a graph at -20..-13 a spare took over 8 s to be ready), unless its nodes set spare_nice
        nice = min(int(spec.parameters.get("nice", 0)) for spec in members)
        if nice < 0:
            cmd += ["--nice", str(nice)]
        spare_nice = max(int(spec.parameters.get("spare_nice", 0)) for spec in members)
        if spare_nice:  # used only by a warm spare (--standby)
            cmd += ["--standby-nice", str(spare_nice)]
        realtime = max(int(spec.parameters.get("realtime_priority", 0)) for spec in members)
        if realtime:
            cmd += ["--realtime-priority", str(realtime)]
        oom = group_oom_score_adj([int(spec.parameters.get("oom_score_adj", 0)) for spec in members])
        if oom:
            cmd += ["--oom-score-adj", str(oom)]
        cmd += ["--ros-args", "--params-file", str(params_file)]
        out[group] = cmd
    return out


def start_graph(specs: list[NodeSpec], env_extra: dict[str, str] | None = None, duration_s: float | None = None,
                stdout: int | IO[Any] | None = None, stderr: int | IO[Any] | None = None,
                keep_fds: tuple[int, ...] = ()) -> Graph:
    """Start one ``python -m rgbt.ros.spin`` process per process group of ``specs`` (from the main
    thread: :meth:`Graph.start_group`); each dies with this process (``RGBT_LAUNCHER_PID``).

    ``stdout`` / ``stderr``: the children's (file objects or descriptors; default this process's);
    ``keep_fds``: descriptors every child inherits (the profile's lock).
    """
    graph = Graph(shm_before=shm_files())
    params = write_params_file(specs)
    graph.workdir = params.parent
    env = ros_environment(extra={STATUS_ENV: str(graph.status_path), HEARTBEAT_ENV: str(graph.workdir),
                                 **(env_extra or {}), LAUNCHER_PID_ENV: str(os.getpid())})
    env.setdefault(FLIGHT_ID_ENV, new_flight_id())
    graph.popen_kw = {"env": env, "stdout": stdout, "stderr": stderr, "pass_fds": tuple(keep_fds)}
    backstop = duration_s + 5.0 if duration_s else None  # the launcher stops them first
    graph.commands = group_commands(specs, params, backstop)
    for group in graph.commands:
        graph.start_group(group)
    return graph


class GraphRun:
    """One run of a graph: ``with GraphRun(specs, ...) as run:`` (or :meth:`start`) starts it
    (:func:`start_graph`), :meth:`supervise` puts a :class:`Supervisor` over it, and :meth:`stop` (at
    the latest when the ``with`` ends, an exception included) ends every child (:meth:`Graph.stop`)
    once and keeps their exit codes in ``codes``. ``rgbt up``, the demo flight and the graph and fault
    benchmarks run their graphs through it; each polls it its own way."""

    def __init__(self, specs: list[NodeSpec], env_extra: dict[str, str] | None = None,
                 duration_s: float | None = None, stdout: Any = None, stderr: Any = None,
                 keep_fds: tuple[int, ...] = ()) -> None:
        self.specs, self.env_extra, self.duration_s = specs, env_extra, duration_s
        self.stdout, self.stderr, self.keep_fds = stdout, stderr, keep_fds
        self.graph: Graph | None = None
        self.sup: Supervisor | None = None
        self.codes: dict[str, int] | None = None  # set by stop()

    def start(self) -> Graph:
        """Start the graph's process groups."""
        self.graph = start_graph(self.specs, self.env_extra, self.duration_s, stdout=self.stdout, stderr=self.stderr,
                                 keep_fds=self.keep_fds)
        return self.graph

    def __enter__(self) -> GraphRun:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def supervise(self, options: SupervisorOptions | None = None, log=print) -> Supervisor:  # type: ignore[no-untyped-def]
        """The supervisor of this run (:func:`supervise`)."""
        assert self.graph is not None, "supervise() after start()"
        self.sup = supervise(self.graph, self.specs, options, log)
        return self.sup

    def stop(self) -> dict[str, int]:
        """Stop the graph once (:meth:`Graph.stop`); its children's exit codes."""
        if self.codes is None:
            self.codes = self.graph.stop() if self.graph is not None else {}
        return self.codes


def recorder_groups(specs: list[NodeSpec]) -> set[str]:
    """Process groups that run a recorder."""
    return {s.process for s in specs if s.executable == "recorder"}


def supervise(graph: Graph, specs: list[NodeSpec], options: SupervisorOptions | None = None,
              log: Callable[[str], None] = print) -> Supervisor:
    """A :class:`Supervisor` over ``graph`` writing the status file its children read."""
    return Supervisor(graph, options, recorder_groups(specs), log, graph.status_path, heartbeat_dir=graph.workdir)


def run_graph(specs: list[NodeSpec], duration_s: float | None = None, env_extra: dict[str, str] | None = None,
              log: Callable[[str], None] = print, supervision: SupervisorOptions | None = None,
              lock: InstanceLock | None = None) -> int:
    """Start the graph and supervise it (``supervision``, default :class:`SupervisorOptions`) until
    ``duration_s`` passes, SIGINT/SIGTERM, every child has exited, or the supervisor ends the flight
    (the recorder exited; with ``strict``: any failure); stop it.

    ``lock``: the profile's held lock (``rgbt up``, ``rgbt record``), inherited by every child. SIGHUP
    keeps the flight going and moves the output to the work folder's ``up.log``; under systemd the
    launcher sends ``READY=1``, ``WATCHDOG=1``, ``STATUS=`` and ``STOPPING=1`` (module docstring).

    Returns 0 when every child exited cleanly and no group was left down, 1 otherwise.
    """
    options = supervision or SupervisorOptions()
    console, notifier = Console(), Notifier()
    say = console.guard(log)
    flags = {"signal": 0, "hangup": 0}

    def on_signal(signum: int, _frame: object) -> None:
        flags["signal"] = signum

    def on_hangup(_signum: int, _frame: object) -> None:
        flags["hangup"] = 1

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    old[signal.SIGHUP] = signal.signal(signal.SIGHUP, on_hangup)
    run = GraphRun(specs, env_extra, duration_s, stdout=console.child_stdout, stderr=console.child_stderr,
                   keep_fds=() if lock is None else (lock.fd,))
    why = "every process exited"
    try:
        graph = run.start()
        assert graph.workdir is not None  # start_graph sets it
        console.start(graph.workdir / LOG_FILE)
        say(f"rgbt up: {len(graph.procs)} process(es): " + ", ".join(f"{g}[{p.pid}]" for g, p in graph.procs.items()))
        say(f"rgbt up: supervision: {options.describe()}")
        say(f"rgbt up: work folder {graph.workdir} (on a hang-up the output goes on in {console.log_path})")
        sup = run.supervise(options, say)
        last_status = graph_status(graph, sup)
        notifier.ready(last_status)
        deadline = None if duration_s is None else time.monotonic() + duration_s
        while not flags["signal"] and (graph.alive() or sup.pending()):
            if deadline is not None and time.monotonic() >= deadline:
                why = f"--duration {duration_s:g} s passed"
                break
            if flags["hangup"]:
                flags["hangup"] = 0
                say(console.hang_up())
            reason = sup.poll()
            if reason:
                say(f"rgbt up: {reason}")
                why = reason
                break
            notifier.ping()  # only from this loop: a launcher stuck anywhere stops the pings
            status = graph_status(graph, sup)
            if status != last_status:
                notifier.status(status)
                last_status = status
            time.sleep(0.1)
        if flags["signal"]:
            why = signal.Signals(flags["signal"]).name
    finally:
        notifier.stopping(f"stopping: {why}")
        codes = run.stop()
        console.close()
        for s, handler in old.items():
            signal.signal(s, handler)
        notifier.close()
    bad = {g: c for g, c in codes.items() if c not in (0, -signal.SIGINT)}
    if bad:
        say(f"rgbt up: processes exited with errors: {bad}")
    counts = {g: n for g, n in sup.counts().items() if n}
    if counts or sup.gave_up():
        say(f"rgbt up: restarts {counts}; left down: {sup.gave_up()}")
    return 1 if bad or sup.gave_up() else 0


def graph_status(graph: Graph, sup: Supervisor) -> str:
    """One line on the groups (systemd's ``STATUS=``): how many run, restarts, groups left down."""
    restarts = ", ".join(f"{g} {n}" for g, n in sup.counts().items() if n) or "none"
    down = ", ".join(sup.gave_up()) or "none"
    return f"{len(graph.alive())}/{len(graph.procs)} process groups running; restarts: {restarts}; left down: {down}"



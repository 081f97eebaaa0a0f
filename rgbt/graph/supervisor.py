"""Supervision of a graph's process groups (``rgbt up``, the demo, ``rgbt bench faults``); no rclpy here.

A group that fails is started again after a back-off delay (``backoff_initial_s`` x
``backoff_factor`` ^ restarts in the last ``window_s``, at most ``backoff_max_s``). Failing means: a
non-zero exit (an exception, ``kill -9``, a segfault, the OOM killer); an exit 0 whose last heartbeat
does not say its job was done (only a finished replay or simulation, or a process's ``--duration``,
ends a group for good); or being judged dead while it runs by the liveness check
(:mod:`rgbt.graph.liveness`: hung, a stuck worker, deaf), which kills it first (``SIGUSR1`` for the
threads' stacks in its log, then ``SIGKILL``). After ``max_restarts`` restarts within ``window_s``
the group is left down and the flight goes on without it, and it is tried again every
``retry_after_s`` (one failure of such a retry leaves it down again; one that holds ``window_s`` gets
the usual restarts back). The recorder's group is supervised like every other: a restarted recorder
continues the flight in a new bag (``rgbt.graph.recording``). With ``strict`` any failure stops the
graph (the fail-fast behaviour tests may want).

Warm spares (``warm_spares``, default on): ``spare_delay_s`` after the graph starts, each group gets
a spare process (``python -m rgbt.ros.spin ... --standby``) that has imported the
interpreter's share of the work (rclpy, numpy, OpenCV, onnxruntime, the node modules) and waits.
A restart hands the group to it (a line on its stdin), so the new nodes start without that
start-up (about 1 s of CPU per group here, several seconds of wall time on a loaded 2-core host);
a new spare follows ``spare_delay_s`` later, once the restart has settled. No spare starts
``spare_hold_after_failure_s`` (22 s) after a group failed, so that the dead participant is gone
from its peers first: a participant started while a killed one's lease (Fast DDS's 20 s) still ran
reused its shared-memory port ("Failed init_port ... open_and_lock_file failed" in the log), and the
peers' writes to that port then stalled 2 s at a time until the lease ran out (measured after a
recorder's ``kill -9``: every stream up to 7 s late, the sources' publish queue full, 2 s of every
stream lost, in 2 of 3 flights where a spare started within 5 s); a spare of another group still
importing when a group fails (no participant yet) is ended for the same reason. Spares start one at a
time, the recorder's first, then those ``spares_first`` names (the next once the last is past its
imports, or ``spare_start_max_s`` after it started): four interpreters importing together beside the
running graph took 6-8 s on a loaded 2-core host, and a recorder killed in that time had no spare to
take over. A spare is
ready once its DDS participant has discovered the graph (``rgbt.ros.spin.GraphDiscovery``). A spare costs the
memory of an idle interpreter with those libraries (101-128 MB RSS measured); a dead spare means a cold start.

Known limit (Fast DDS, eProsima/Fast-DDS issues 5053 and 6117): after a ``kill -9`` under heavy CPU
load a restarted participant's shared-memory ports can fail to open ("Failed init_port ...
open_and_lock_file failed") and its data then never arrives; ``rgbt bench faults`` shows it as a
stream that does not come back (``recovered_s: null``). Every restart is logged and written, with the counts, to a small
JSON status file (:data:`STATUS_ENV` names it in every child's environment); the recorder reads it into its
``/diagnostics`` values and into each bag's ``rgbt_manifest.json`` (``restarts``). :class:`RestartLog`
keeps those records and writes that file, for this supervisor and for ``ros2 launch``'s respawns
(:class:`rgbt.graph.launch_restarts.LaunchRestarts`).
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rgbt.fileio import write_json_atomic
from rgbt.graph.liveness import BEAT_PERIOD_S, LivenessJudge, LivenessOptions

#: environment variable naming the supervisor's status file (set for every node process)
STATUS_ENV = "RGBT_SUPERVISOR_STATUS"
STATUS_FILE = "supervisor.json"
#: environment variable naming the folder where every node process writes its heartbeat
#: (``rgbt.graph.liveness``), read by the supervisor's liveness check
HEARTBEAT_ENV = "RGBT_HEARTBEAT_DIR"
#: environment variable with one id per flight (one ``rgbt up`` run), the same for every process of
#: the graph and its restarts: the recorder ties the bags of one flight together with it
FLIGHT_ID_ENV = "RGBT_FLIGHT_ID"


class SupervisorOptions(BaseModel):
    """How failed process groups are restarted (times in seconds)."""

    model_config = ConfigDict(extra="forbid")
    strict: bool = False  # any non-zero exit stops the whole graph (no restarts)
    backoff_initial_s: float = Field(0.25, ge=0)  # delay before the first restart
    backoff_factor: float = Field(2.0, ge=1)  # each further restart within window_s waits this much longer
    backoff_max_s: float = Field(5.0, ge=0)
    max_restarts: int = Field(5, ge=0)  # restarts of one group within window_s before it is left down
    window_s: float = Field(60.0, gt=0)
    retry_after_s: float = Field(30.0, gt=0)  # a group left down is tried again this long after (and again...)
    warm_spares: bool = True  # keep one imported, waiting process per group (a restart skips start-up)
    spare_delay_s: float = Field(5.0, ge=0)  # start a spare this long after the graph starts / the last one was used
    # the groups whose spares start next after the recorder's, in this order (then the others): spares
    # start one at a time at a low priority, the fourth seconds after the first on a busy 2-core host
    spares_first: list[str] = Field(default_factory=list)
    spare_start_max_s: float = Field(20.0, gt=0)  # the next spare waits this long at most for one still starting
    # no spare starts this long after a group failed: the dead process's DDS participant stays in its peers
    # until its lease runs out, and a participant started meanwhile takes its shared-memory port over (see
    # the module's docstring). Measured with Fast DDS's 20 s lease; node processes now announce 2 s
    # (NodeOptions.participant_lease_s), but a shorter hold is not measured yet
    spare_hold_after_failure_s: float = Field(22.0, ge=0)
    liveness: LivenessOptions = Field(default_factory=LivenessOptions)  # hung / stuck / deaf processes

    def describe(self) -> str:
        if self.strict:
            return "strict (a failed process stops the graph)"
        spares = (f"; a warm spare per group (started {self.spare_delay_s:g} s after the graph / its last use, "
                  f"one at a time (first: {', '.join(dict.fromkeys(['recorder', *self.spares_first]))}), none within "
                  f"{self.spare_hold_after_failure_s:g} s "
                  f"of a failure)"
                  if self.warm_spares else "; no warm spares")
        return (f"restart failed groups (the recorder's too) after {self.backoff_initial_s:g} s x "
                f"{self.backoff_factor:g}^n (max {self.backoff_max_s:g} s), at most {self.max_restarts} per "
                f"{self.window_s:g} s, then every {self.retry_after_s:g} s{spares}; {self.liveness.describe()}")

    def delay_s(self, recent_restarts: int) -> float:
        """Back-off before the next restart of a group that restarted ``recent_restarts`` times lately."""
        return min(self.backoff_initial_s * self.backoff_factor ** recent_restarts, self.backoff_max_s)


@dataclass
class Restart:
    """One restart of a process group (wall-clock times, ns)."""

    group: str
    attempt: int  # 1 for the group's first restart
    exit_code: int  # negative: killed by that signal
    exit_wall_ns: int  # when the supervisor saw the exit
    restart_wall_ns: int  # when the new process was started
    delay_s: float
    pid: int  # the new process
    warm: bool = False  # the group's warm spare took over (no interpreter / library start-up)
    reason: str = ""  # why: the exit (code or signal) or the liveness check's finding (hung, stuck, deaf)


class RestartLog:
    """The restarts of a graph's process groups, the groups left down, and the JSON status file the
    recorder reads (:func:`read_status`). Shared by :class:`Supervisor` (``rgbt up``) and
    :class:`rgbt.graph.launch_restarts.LaunchRestarts` (``ros2 launch`` respawns): one format.

    ``options``: the restart policy as written in the file (``SupervisorOptions`` fields);
    ``spares``: the warm spares' state per group at writing time (``{}`` without spares);
    ``status_path``: None writes nothing."""

    def __init__(self, groups: Iterable[str], options: dict[str, Any], status_path: Path | None = None,
                 spares: Callable[[], dict[str, str]] = dict) -> None:
        self.groups = list(groups)
        self.options = options
        self.status_path = status_path
        self.spares = spares
        self.history: list[Restart] = []
        self.left_down: set[str] = set()

    def _check(self, group: str) -> None:
        if group not in self.groups:
            raise ValueError(f"unknown process group {group!r}: expected one of {self.groups}")

    def add(self, group: str, exit_code: int, exit_wall_ns: int, delay_s: float, pid: int, warm: bool = False,
            restart_wall_ns: int | None = None, reason: str = "") -> Restart:
        """Record a restart of ``group`` (its ``exit_code`` seen at ``exit_wall_ns``, restarted after
        ``delay_s`` s as process ``pid``; ``restart_wall_ns`` default: now) and write the status file."""
        self._check(group)
        restart = Restart(group, self.count(group) + 1, exit_code, exit_wall_ns,
                          time.time_ns() if restart_wall_ns is None else restart_wall_ns,
                          round(delay_s, 3), pid, warm, reason or exit_text(exit_code))
        self.history.append(restart)
        self.write_status()
        return restart

    def give_up(self, group: str) -> None:
        """``group`` stays down (no restart left) and write the status file."""
        self._check(group)
        self.left_down.add(group)
        self.write_status()

    def count(self, group: str) -> int:
        return sum(1 for r in self.history if r.group == group)

    def counts(self) -> dict[str, int]:
        return {g: self.count(g) for g in self.groups}

    def gave_up(self) -> list[str]:
        return [g for g in self.groups if g in self.left_down]

    def status(self) -> dict[str, Any]:
        return {"options": self.options, "restarts": [asdict(r) for r in self.history],
                "counts": self.counts(), "gave_up": self.gave_up(), "spares": self.spares(),
                "updated_wall_ns": time.time_ns()}

    def write_status(self) -> None:
        """Write the status file atomically (read by the recorder)."""
        if self.status_path is None:
            return
        write_json_atomic(self.status_path, self.status())


@dataclass
class _GroupState:
    restarts: list[float] = field(default_factory=list)  # monotonic times of restarts
    due: float | None = None  # monotonic time of a pending restart (or a slow retry)
    exit_code: int = 0
    exit_wall_ns: int = 0
    delay_s: float = 0.0
    reason: str = ""  # why the pending restart: the exit, or the liveness check's finding
    killed_for: str = ""  # the liveness check killed the process for this (its exit follows)
    retrying: bool = False  # a slow retry after the group was left down: one failure leaves it down again
    finished: bool = False  # exited 0 with its job done (its last heartbeat says so): not restarted


class Supervisor:
    """Restart policy over a :class:`rgbt.graph.launcher.Graph` (which knows how to start a group).

    ``heartbeat_dir``: where the groups' processes write their heartbeats (the liveness check,
    :mod:`rgbt.graph.liveness`; None: exit codes only). ``recorder_groups`` are only named in the log
    and the status: a recorder's group is restarted like any other."""

    def __init__(self, graph: Any, options: SupervisorOptions | None = None,
                 recorder_groups: set[str] | frozenset[str] = frozenset(),
                 log: Callable[[str], None] = print, status_path: Path | None = None,
                 heartbeat_dir: str | Path | None = None) -> None:
        self.graph = graph
        self.o = options or SupervisorOptions()
        self.recorder_groups = set(recorder_groups)
        self.log = log
        self.state = {g: _GroupState() for g in graph.procs}
        self.record = RestartLog(graph.procs, self.o.model_dump(), status_path, self.spares)
        self.judge = LivenessJudge(heartbeat_dir, self.o.liveness)
        now_ns = time.monotonic_ns()
        for group, proc in graph.procs.items():
            if proc is not None:
                self.judge.watch(group, proc.pid, now_ns)
        self._next_check = 0.0
        # when each group's next warm spare is due (monotonic s; None: it has one)
        spares = self.o.warm_spares and not self.o.strict and hasattr(graph, "start_spare")
        start = time.monotonic() + self.o.spare_delay_s
        # the recorder's spare first (the bag is what a flight cannot redo), then spares_first's, then the others
        rank = {g: i for i, g in enumerate(self.o.spares_first)}
        order = sorted(graph.procs, key=lambda g: (g not in self.recorder_groups, rank.get(g, len(rank))))
        self.spare_due: dict[str, float | None] = {g: start for g in order if spares}
        self._spare_starting: tuple[str, float] | None = None  # the spare started last and when, till it is ready
        self._spares_held_until = 0.0  # no spare starts before (monotonic s): a dead participant's lease
        self.write_status()

    @property
    def status_path(self) -> Path | None:
        return self.record.status_path

    @property
    def history(self) -> list[Restart]:
        return self.record.history

    def pending(self) -> bool:
        """Whether a restart (or a slow retry of a group left down) is waiting for its time."""
        return any(s.due is not None for s in self.state.values())

    def poll(self, now: float | None = None) -> str | None:
        """Check the groups once: judge liveness, schedule / run restarts. Returns why the whole
        graph must stop (only with ``strict``), or None."""
        now = time.monotonic() if now is None else now
        self._start_spares(now)
        if now >= self._next_check:
            self._next_check = now + BEAT_PERIOD_S
            for group, why in self.judge.check().items():
                self._kill_dead(group, why)
        for group, proc in list(self.graph.procs.items()):
            st = self.state[group]
            if st.due is not None:
                if now >= st.due:
                    self._restart(group, now)
                continue
            code = proc.poll()
            if code is None:
                if st.retrying and st.restarts and now - st.restarts[-1] >= self.o.window_s:
                    st.retrying = False  # the retried group held: the usual restarts again
                continue
            if st.finished or group in self.record.left_down:
                continue
            if code == 0:
                beat = self.judge.last_beat(group, proc.pid)
                if beat is not None and beat.get("finished"):
                    st.finished = True  # its job is done (a replay, a simulation): left down
                    self.judge.forget(group)
                    continue
            why = st.killed_for or (exit_text(code) if code else "exited 0 without finishing its job")
            st.killed_for = ""
            if self.o.strict:
                return f"process group {group!r} failed ({why}, --strict): stopping the graph"
            self._failed(group, code, why, now)
        return None

    def _failed(self, group: str, code: int, why: str, now: float) -> None:
        st = self.state[group]
        self.judge.forget(group)
        st.exit_code, st.exit_wall_ns, st.reason = code, time.time_ns(), why
        self._spares_held_until = now + self.o.spare_hold_after_failure_s
        self._end_spares_still_starting(group)
        st.restarts = [t for t in st.restarts if now - t < self.o.window_s]
        if st.retrying or len(st.restarts) >= self.o.max_restarts:
            if group in self.spare_due:
                self.spare_due[group] = None
                self.graph.stop_spares([group])  # left down: its spare would only hold memory
            tries = "its slow retry failed" if st.retrying else f"{len(st.restarts)} restarts in {self.o.window_s:g} s"
            self.log(f"rgbt up: process group {group!r} failed ({why}); {tries}: left down, the flight goes on "
                     f"without it; trying again in {self.o.retry_after_s:g} s")
            self.record.give_up(group)
            st.due, st.retrying, st.delay_s = now + self.o.retry_after_s, True, self.o.retry_after_s
            return
        st.delay_s = self.o.delay_s(len(st.restarts))
        st.due = now + st.delay_s
        self.log(f"rgbt up: process group {group!r} failed ({why}); restarting in {st.delay_s:.2f} s")

    def _kill_dead(self, group: str, why: str) -> None:
        """The liveness check found ``group`` dead while its process runs: ask it for its threads'
        stacks (``SIGUSR1``: faulthandler, into its log), then ``SIGKILL``; its exit is handled as a
        failure with this reason."""
        proc, st = self.graph.procs[group], self.state[group]
        if proc.poll() is not None or st.killed_for:
            return
        st.killed_for = why
        self.log(f"rgbt up: process group {group!r} [{proc.pid}] {why}: killing it")
        try:
            os.kill(proc.pid, signal.SIGUSR1)
            time.sleep(0.05)
            os.kill(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def _end_spares_still_starting(self, failed: str) -> None:
        """End (SIGKILL: no participant, no nodes yet) the other groups' spares still importing when
        ``failed`` failed: each would create its DDS participant within the dead one's lease and could
        take its shared-memory port (the module's doc: a spare started just before a recorder's
        ``kill -9`` did, and the take-over received its history and nothing after it). Each is started
        again once the hold after the failure is over."""
        for group in [g for g in getattr(self.graph, "spares", {}) if g != failed and not self._spare_settled(g)]:
            self.graph.stop_spares([group], grace_s=0.0)
            self.spare_due[group] = self._spares_held_until
            if self._spare_starting is not None and self._spare_starting[0] == group:
                self._spare_starting = None
            self.log(f"rgbt up: ended the warm spare of process group {group!r}, still starting when "
                     f"{failed!r} failed; another follows in {self.o.spare_hold_after_failure_s:g} s")

    def _start_spares(self, now: float) -> None:
        """Start the spares that are due, one at a time (in :attr:`spare_due`'s order: the recorder's
        first): the next once the last one is ready, dead or ``spare_start_max_s`` old; none while a
        failed group's participant may still be in its peers (``spare_hold_after_failure_s``)."""
        if now < self._spares_held_until:
            return
        if self._spare_starting is not None:
            group, since = self._spare_starting
            if not self._spare_settled(group) and now - since < self.o.spare_start_max_s:
                return
            self._spare_starting = None
        for group, due in self.spare_due.items():
            if due is None or now < due:
                continue
            self.spare_due[group] = None
            if not (self.state[group].finished or group in self.record.left_down):
                spare = self.graph.start_spare(group)
                self.log(f"rgbt up: started a warm spare of process group {group!r} [{spare.pid}]")
                self._spare_starting = (group, now)
                return

    def _spare_settled(self, group: str) -> bool:
        """``group``'s last spare no longer needs the machine for its start-up: past its imports, gone (used or
        dead), or a graph that cannot tell (no ready file)."""
        ready_path = getattr(self.graph, "spare_ready_path", lambda _g: None)
        if group not in getattr(self.graph, "spares", {}) or ready_path(group) is None:
            return True
        spare = self.graph.spares[group]
        return spare.poll() is not None or self.graph.spare_started_up(group)

    def _restart(self, group: str, now: float) -> None:
        st = self.state[group]
        st.due = None
        st.restarts.append(now)
        proc = self.graph.activate_spare(group) if group in self.spare_due else None
        warm = proc is not None
        if proc is None:
            proc = self.graph.start_group(group)
        self.judge.watch(group, proc.pid)
        if group in self.spare_due:
            self.spare_due[group] = now + self.o.spare_delay_s  # the next spare, once this start has settled
        if st.retrying:
            self.record.left_down.discard(group)
        restart = self.record.add(group, st.exit_code, st.exit_wall_ns, st.delay_s, proc.pid, warm, reason=st.reason)
        self.log(f"rgbt up: restarted process group {group!r} [{proc.pid}] (restart {restart.attempt}"
                 f"{', its warm spare' if warm else ''}{', a slow retry' if st.retrying else ''})")

    def counts(self) -> dict[str, int]:
        return self.record.counts()

    def gave_up(self) -> list[str]:
        return self.record.gave_up()

    def status(self) -> dict[str, Any]:
        return self.record.status()

    def spares(self) -> dict[str, str]:
        """Per group with warm spares: ``ready`` (a restart now is warm), ``starting``
        (its spare is still importing) or ``none`` (not started yet, used, or the group left down)."""
        spares, ready = getattr(self.graph, "spares", {}), getattr(self.graph, "spare_ready", lambda _g: False)
        return {g: "none" if g not in spares else "ready" if ready(g) else "starting" for g in self.spare_due}

    def write_status(self) -> None:
        """Write the status file atomically (read by the recorder)."""
        self.record.write_status()


def read_status(path: str | Path | None = None) -> dict[str, Any] | None:
    """The supervisor's status (``path``, default the file named by :data:`STATUS_ENV`); None when
    the process is not supervised or the file is not written yet."""
    path = path or os.environ.get(STATUS_ENV)
    if not path:
        return None
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def exit_text(code: int) -> str:
    """``-9`` -> ``SIGKILL``; other codes as they are."""
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            pass
    return str(code)

"""Liveness of a graph's node processes: heartbeats written by each process, judged by the supervisor.

An exit code tells only that a process ended. A process can also stop working while it still runs:
stopped (``kill -STOP``), its executor stuck in a callback, a worker thread dead or blocked (a writer
on a slow disk), or deaf (restarted, but the middleware never delivers it a message again). So every
node process (``rgbt.ros.spin``) writes a small JSON *heartbeat* from its executor loop, at most every
:data:`BEAT_PERIOD_S`, to ``<dir>/hb_<pid>.json`` (``dir``: the environment variable
``rgbt.graph.supervisor.HEARTBEAT_ENV``, set by the launcher)::

    {"pid": 123, "mono_ns": ..., "loops": 87, "finished": false,
     "nodes": {"segmentation": {"callbacks": 1200,
                                "progress": {"pipeline": [1180, 1175, 3.0]},
                                "received": {"/boson/thermal/image_raw": 1180},
                                "sent": {"/rgbt/seg/class_ids": 1175}}}}

``mono_ns`` is ``CLOCK_MONOTONIC`` (one clock for the whole machine, immune to wall-clock steps);
``progress`` is each node's :meth:`rgbt.ros.node.RgbtNode.progress` (work handed to its threads,
work they finished, the stall bound in s); ``received`` / ``sent`` count messages per topic at the
node's subscriptions and publishers; ``finished`` is set in the last heartbeat of a process that ends
because its nodes finished their job (a replay, a simulation) or its ``--duration`` passed.

:class:`LivenessJudge` (used by :class:`rgbt.graph.supervisor.Supervisor`) reads them and names a
process group that must be restarted:

* **no heartbeat** ``start_timeout_s`` after the process became the group's process (it never
  reached its executor loop);
* **hung**: its newest heartbeat is older than ``hang_timeout_s`` (stopped, or the executor stuck);
  unless another group's heartbeat is late too (older than half of it): a stall shared by several
  processes has a common cause (the middleware waiting for a killed peer's shared memory to be
  released, the machine starved) that passes, so they are judged hung only after
  :data:`COMMON_STALL_FACTOR` times ``hang_timeout_s``; so is a process in its first
  :data:`STARTUP_GRACE_S` (a recorder that took over receives seconds of retained history at once),
  and one that is starved, not stuck: its main thread (the executor's) waited on the CPU run queue
  for a good part of the silence (``/proc/PID/schedstat``; a stopped or deadlocked process does not);
* **stuck worker**: a ``progress`` entry got new work and finished nothing for its ``stall_s``;
* **deaf**: a topic it subscribes to was published by another process of the graph all along (at
  least :data:`DEAF_MIN_SENT` messages, the last less than :data:`DEAF_RECENT_S` ago) while it
  received none for ``deaf_timeout_s``.

Nothing here imports rclpy.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rgbt.fileio import write_json_atomic

#: a process writes its heartbeat at most this often (s)
BEAT_PERIOD_S = 0.25
#: a worker thread that took no new item for this long while items came is stuck (s; processing nodes)
WORKER_STALL_S = 3.0
#: a deaf subscriber is judged only when the others sent at least this many messages meanwhile, and
#: the last of them less than DEAF_RECENT_S ago (the traffic goes on)
DEAF_MIN_SENT = 5
DEAF_RECENT_S = 1.0
#: while several groups' heartbeats are late at once, one is judged hung only after this many
#: ``hang_timeout_s`` (a killed recorder's reader ports stalled every publisher here for 2-3 s)
COMMON_STALL_FACTOR = 3.0
#: a process is judged with that longer bound in its first seconds as the group's process (s)
STARTUP_GRACE_S = 10.0
#: a silent process whose main thread waited for a CPU this share of the last ``hang_timeout_s`` is starved
STARVED_SHARE = 0.2


class LivenessOptions(BaseModel):
    """When the supervisor judges a running process group dead (times in seconds)."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    hang_timeout_s: float = Field(2.0, gt=0)  # no heartbeat for this long: hung
    start_timeout_s: float = Field(60.0, gt=0)  # no first heartbeat this long after start
    deaf_timeout_s: float = Field(5.0, gt=0)  # others publish a subscribed topic, nothing arrives

    def describe(self) -> str:
        if not self.enabled:
            return "liveness not checked (exit codes only)"
        return (f"a group is restarted when hung (no heartbeat for {self.hang_timeout_s:g} s; none "
                f"{self.start_timeout_s:g} s after start), a worker is stuck, or it is deaf "
                f"({self.deaf_timeout_s:g} s without a message others publish)")


def heartbeat_path(directory: str | Path, pid: int) -> Path:
    return Path(directory) / f"hb_{pid}.json"


class HeartbeatWriter:
    """Writes one process's heartbeat file (atomically: a reader never sees half a file)."""

    def __init__(self, directory: str | Path | None, pid: int | None = None,
                 period_s: float = BEAT_PERIOD_S) -> None:
        self.path = None if not directory else heartbeat_path(directory, pid or os.getpid())
        self.period_ns = int(period_s * 1e9)
        self.loops = 0
        self._last_ns = 0

    def beat(self, nodes: Callable[[], dict[str, Any]], finished: bool = False, force: bool = False) -> bool:
        """Count one executor loop; write the heartbeat when one is due (or ``force``). ``nodes``:
        the per-node state (built only when written). Returns whether it was written."""
        self.loops += 1
        now = time.monotonic_ns()
        if self.path is None or not (force or now - self._last_ns >= self.period_ns):
            return False
        self._last_ns = now
        data = {"pid": os.getpid(), "mono_ns": now, "loops": self.loops, "finished": finished, "nodes": nodes()}
        try:
            write_json_atomic(self.path, data)
        except OSError:  # a full or read-only disk must not stop the node; the supervisor sees it as stale
            return False
        return True


def read_heartbeat(directory: str | Path, pid: int) -> dict[str, Any] | None:
    """The newest heartbeat of process ``pid`` (None: none written yet, or unreadable)."""
    try:
        return json.loads(heartbeat_path(directory, pid).read_text())
    except (OSError, ValueError):
        return None


@dataclass
class _Work:
    """What the judge remembers of one ``progress`` entry."""

    done: int
    inputs: int
    waiting_since_ns: int | None = None  # when new work came after the last finished item


@dataclass
class _Ear:
    """What the judge remembers of one subscribed topic."""

    received: int
    others_sent: int
    deaf_since_ns: int | None = None  # when the traffic nothing of which arrived began
    sent_at_deaf: int = 0
    last_sent_ns: int = 0  # when the others' count last grew
    checked_ns: int = 0  # the previous look (the others' count was lower then: traffic began after it)


@dataclass
class _Watch:
    pid: int
    since_ns: int  # when this process became the group's process (monotonic)
    work: dict[tuple[str, str], _Work] = field(default_factory=dict)
    ears: dict[tuple[str, str], _Ear] = field(default_factory=dict)
    run_delay: list[tuple[int, int]] = field(default_factory=list)  # (now ns, main thread's run-queue wait ns)


def run_delay_ns(pid: int) -> int | None:
    """Time (ns) the main thread of ``pid`` has spent runnable, waiting for a CPU (Linux schedstat)."""
    try:
        with open(f"/proc/{pid}/schedstat") as fh:
            return int(fh.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None


class LivenessJudge:
    """Judges the heartbeats of the groups' current processes (see the module docstring).

    Call :meth:`watch` when a process becomes a group's process, :meth:`check` every poll (it reads
    every watched group's heartbeat file) and :meth:`forget` when the group is down."""

    def __init__(self, directory: str | Path | None, options: LivenessOptions | None = None,
                 run_delay: Callable[[int], int | None] | None = None) -> None:
        """``run_delay``: pid -> its main thread's run-queue wait (ns); :func:`run_delay_ns` by default."""
        self.run_delay = run_delay or run_delay_ns
        self.directory = directory
        self.o = options or LivenessOptions()
        self.watched: dict[str, _Watch] = {}
        self.beats: dict[str, dict[str, Any] | None] = {}

    def watch(self, group: str, pid: int, now_ns: int | None = None) -> None:
        self.watched[group] = _Watch(pid, time.monotonic_ns() if now_ns is None else now_ns)
        self.beats[group] = None

    def forget(self, group: str) -> None:
        self.watched.pop(group, None)
        self.beats.pop(group, None)

    def last_beat(self, group: str, pid: int) -> dict[str, Any] | None:
        """The newest heartbeat of ``pid`` (read now: a process that just exited wrote its last one)."""
        if self.directory is None:
            return None
        return read_heartbeat(self.directory, pid)

    def check(self, now_ns: int | None = None) -> dict[str, str]:
        """Group -> why it must be restarted, for every watched group judged dead now."""
        if not self.o.enabled or self.directory is None:
            return {}
        now = time.monotonic_ns() if now_ns is None else now_ns
        for group, w in self.watched.items():
            self.beats[group] = read_heartbeat(self.directory, w.pid)
        sent = self._sent_by_process()
        ages = {g: (now - int(b["mono_ns"])) / 1e9 for g, b in self.beats.items()
                if b is not None and b.get("pid") == self.watched[g].pid and not b.get("finished")}
        out: dict[str, str] = {}
        for group, w in self.watched.items():
            shared = any(a > self.o.hang_timeout_s / 2 for g, a in ages.items() if g != group) \
                or self._starved(w, now)
            reason = self._judge(w, self.beats[group], now, sent, shared)
            if reason:
                out[group] = reason
        return out

    def _starved(self, w: _Watch, now: int) -> bool:
        """Whether ``w``'s main thread waited for a CPU for :data:`STARVED_SHARE` of the last
        ``hang_timeout_s`` (it would run, the machine does not let it)."""
        delay = self.run_delay(w.pid)
        if delay is None:
            return False
        w.run_delay.append((now, delay))
        window = int(self.o.hang_timeout_s * 1e9)
        while len(w.run_delay) > 2 and w.run_delay[1][0] <= now - window:
            w.run_delay.pop(0)
        t0, d0 = w.run_delay[0]
        return now - t0 > 0 and (delay - d0) >= STARVED_SHARE * min(now - t0, window)

    # -- rules -------------------------------------------------------------------------------------
    def _judge(self, w: _Watch, beat: dict[str, Any] | None, now: int, sent: dict[int, dict[str, int]],
               shared_stall: bool = False) -> str:
        o = self.o
        if beat is None or beat.get("pid") != w.pid or beat.get("mono_ns", 0) < w.since_ns:
            if now - w.since_ns > o.start_timeout_s * 1e9:
                return f"no heartbeat {o.start_timeout_s:g} s after it started (never reached its executor loop)"
            return ""
        age_s = (now - int(beat["mono_ns"])) / 1e9
        young = now - w.since_ns < STARTUP_GRACE_S * 1e9
        if age_s > o.hang_timeout_s * (COMMON_STALL_FACTOR if shared_stall or young else 1.0):
            return f"hung: no heartbeat for {age_s:.1f} s (stopped, or its executor is stuck)"
        for node, state in beat.get("nodes", {}).items():
            for name, (inputs, done, stall_s) in state.get("progress", {}).items():
                why = self._stuck(w, (node, name), int(inputs), int(done), float(stall_s), now)
                if why:
                    return f"stuck worker: {node} {name} {why}"
            for topic, received in state.get("received", {}).items():
                others = sum(n.get(topic, 0) for pid, n in sent.items() if pid != w.pid)
                why = self._deaf(w, (node, topic), int(received), others, now)
                if why:
                    matched = state.get("matched", {}).get(topic)
                    said = [] if matched is None else [f"{matched} publisher(s) matched"]
                    if age_s > 2 * BEAT_PERIOD_S:  # its executor stopped too: blocked, not only deaf
                        said.append(f"its last heartbeat {age_s:.1f} s old")
                    return f"deaf: {node} {why}" + (f" ({'; '.join(said)})" if said else "")
        return ""

    @staticmethod
    def _stuck(w: _Watch, key: tuple[str, str], inputs: int, done: int, stall_s: float, now: int) -> str:
        work = w.work.get(key)
        if work is None or done != work.done or inputs < work.inputs:  # progress (or counters restarted)
            w.work[key] = _Work(done, inputs)
            return ""
        if inputs > work.inputs and work.waiting_since_ns is None:
            work.waiting_since_ns = now  # new work since the last finished item
        if work.waiting_since_ns is not None and now - work.waiting_since_ns > stall_s * 1e9:
            return (f"took {inputs - work.inputs} new item(s) and finished none for "
                    f"{(now - work.waiting_since_ns) / 1e9:.1f} s")
        return ""

    def _deaf(self, w: _Watch, key: tuple[str, str], received: int, others: int, now: int) -> str:
        """Deaf: the others kept publishing the topic over the whole window (at least
        :data:`DEAF_MIN_SENT` messages, the last within :data:`DEAF_RECENT_S`) and nothing arrived.
        A burst that ended (a stream's before-lock topic, messages sent before the subscription
        matched) proves nothing and starts the count again."""
        ear = w.ears.get(key)
        if ear is None or received != ear.received or others < ear.others_sent:
            w.ears[key] = _Ear(received, others, last_sent_ns=now, checked_ns=now)
            return ""
        if others > ear.others_sent:
            if ear.deaf_since_ns is None or now - ear.last_sent_ns > DEAF_RECENT_S * 1e9:
                ear.deaf_since_ns, ear.sent_at_deaf = ear.checked_ns, ear.others_sent  # traffic (again)
            ear.others_sent, ear.last_sent_ns = others, now
        ear.checked_ns = now
        if ear.deaf_since_ns is None or now - ear.last_sent_ns > DEAF_RECENT_S * 1e9:
            return ""
        if now - ear.deaf_since_ns > self.o.deaf_timeout_s * 1e9 and others - ear.sent_at_deaf >= DEAF_MIN_SENT:
            return (f"received nothing on {key[1]} for {(now - ear.deaf_since_ns) / 1e9:.1f} s while "
                    f"{others - ear.sent_at_deaf} message(s) were published to it")
        return ""

    def _sent_by_process(self) -> dict[int, dict[str, int]]:
        """PID -> topic -> messages sent, from the watched processes' newest heartbeats."""
        out: dict[int, dict[str, int]] = {}
        for group, w in self.watched.items():
            beat = self.beats.get(group)
            if not beat:
                continue
            per = out.setdefault(w.pid, {})
            for state in beat.get("nodes", {}).values():
                for topic, n in state.get("sent", {}).items():
                    per[topic] = per.get(topic, 0) + int(n)
        return out

"""Restart accounting for ``ros2 launch``'s respawns (``launch/rgbt.launch.py``); no launch, no rclpy here.

``launch`` restarts a group itself (``respawn=True``, a fixed ``respawn_delay``, at most
``respawn_max_retries`` respawns over the whole launch where that argument exists, any exit code),
but keeps no record the recorder could read. The launch file calls :meth:`LaunchRestarts.started`
from an ``OnProcessStart`` handler and :meth:`LaunchRestarts.exited` from an ``OnProcessExit``
handler of every group; an exit followed by a start of the same group is one :class:`Restart`,
written through the supervisor's :class:`RestartLog` into the same status file ``rgbt up`` writes
(:data:`rgbt.graph.supervisor.STATUS_ENV`), so ``/diagnostics`` and the bag manifest count both alike.
A group that exits with no respawn left is left down (``gave_up``) unless it exited cleanly (code 0:
a finished replay or simulation). The recorder's groups are not respawned: their exit ends the launch.
Exits while the launch shuts down are not counted.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rgbt.graph.supervisor import RestartLog, SupervisorOptions, exit_text


def launch_options(delay_s: float, max_retries: int | None, strict: bool = False) -> dict[str, Any]:
    """The ``options`` of the status file for ``launch``'s respawn: the ``SupervisorOptions`` fields
    with a fixed delay (``backoff_factor`` 1), no warm spares, ``max_restarts`` per group over the
    whole launch (``window_s`` None; ``max_restarts`` None: unlimited), and ``by: ros2 launch``."""
    o = SupervisorOptions(strict=strict, backoff_initial_s=delay_s, backoff_factor=1.0, backoff_max_s=delay_s,
                          max_restarts=max_retries or 0, warm_spares=False)
    return {**o.model_dump(), "max_restarts": max_retries, "window_s": None, "by": "ros2 launch"}


@dataclass
class _Group:
    respawns: int = 0  # respawns launch decided on so far (its respawn_retries)
    pending: tuple[int, int] | None = None  # (exit code, exit wall ns) of an exit awaiting its respawn
    pid: int = 0


class LaunchRestarts:
    """Counts ``launch``'s respawns of the process groups ``groups`` like :class:`Supervisor` counts
    its restarts. ``delay_s``: the ``respawn_delay`` (s); ``max_retries``: the
    ``respawn_max_retries`` (None: this ``launch`` respawns without limit); ``recorders``: groups
    not respawned (their exit ends the launch); ``strict``: nothing is respawned."""

    def __init__(self, groups: Iterable[str], status_path: Path | None, delay_s: float, max_retries: int | None,
                 recorders: Iterable[str] = (), strict: bool = False) -> None:
        self.groups = {g: _Group() for g in groups}
        self.recorders = set(recorders)
        unknown = self.recorders - set(self.groups)
        if unknown:
            raise ValueError(f"recorder groups {sorted(unknown)} are not among the process groups {list(self.groups)}")
        if max_retries is not None and max_retries < 0:
            raise ValueError(f"max_retries must be >= 0 or None (unlimited), got {max_retries}")
        self.delay_s = delay_s
        self.max_retries = 0 if strict else max_retries
        self.record = RestartLog(self.groups, launch_options(delay_s, max_retries, strict), status_path)
        self.record.write_status()

    def _group(self, group: str) -> _Group:
        if group not in self.groups:
            raise ValueError(f"unknown process group {group!r}: expected one of {list(self.groups)}")
        return self.groups[group]

    def respawns_left(self, group: str) -> bool:
        """Whether ``launch`` will respawn ``group`` when it exits now."""
        g = self._group(group)
        if group in self.recorders:
            return False
        return self.max_retries is None or g.respawns < self.max_retries

    def started(self, group: str, pid: int, wall_ns: int | None = None) -> str | None:
        """``group``'s process ``pid`` started (at ``wall_ns``, default now). After an exit this is a
        restart: recorded, the status file written, a log line returned; a first start returns None."""
        g = self._group(group)
        g.pid = pid
        if g.pending is None:
            return None
        code, exit_ns = g.pending
        g.pending = None
        restart = self.record.add(group, code, exit_ns, self.delay_s, pid,
                                  restart_wall_ns=time.time_ns() if wall_ns is None else wall_ns)
        return f"rgbt launch: respawned process group {group!r} [{pid}] (restart {restart.attempt})"

    def exited(self, group: str, code: int, wall_ns: int | None = None, shutting_down: bool = False) -> str | None:
        """``group``'s process exited with ``code`` (negative: killed by that signal) at ``wall_ns``
        (default now); ``shutting_down``: the launch is ending (nothing counted). Returns a log line."""
        g = self._group(group)
        if shutting_down or group in self.recorders:
            return None  # the recorder's exit shuts the launch down itself (its on_exit)
        if self.respawns_left(group):
            g.respawns += 1
            g.pending = (code, time.time_ns() if wall_ns is None else wall_ns)
            return (f"rgbt launch: process group {group!r} exited ({exit_text(code)}); "
                    f"respawning in {self.delay_s:g} s")
        if code == 0:
            return f"rgbt launch: process group {group!r} finished (exit 0): left down"
        self.record.give_up(group)
        return (f"rgbt launch: process group {group!r} failed ({exit_text(code)}); {g.respawns} respawns: "
                "left down, the flight goes on without it")

    def counts(self) -> dict[str, int]:
        return self.record.counts()

    def gave_up(self) -> list[str]:
        return self.record.gave_up()

"""CPU priority of a node process (no rclpy import): every thread of it, not only the caller.

On Linux the nice value belongs to a thread; rclpy starts the middleware's receive threads before
any node exists, so ``os.nice`` in a node's constructor would leave them at the old value. This
sets all of the process's threads (``/proc/self/task``); threads started later inherit it.

Lowering the priority (processing processes) never needs privileges. Raising it (drivers, sync,
recorder: the streams that must not lose data) needs ``CAP_SYS_NICE`` (root, or
``LimitNICE=`` / ``limits.conf`` ``nice`` for the service user); without it the process keeps its
priority and the caller logs why.

Autogroups: with ``kernel.sched_autogroup_enabled`` (Ubuntu's default, JetPack's too) the kernel
first shares the CPU between sessions, each with the weight of its autogroup's nice (0), and only
then between the threads of a session by their nice values. ``rgbt up`` starts every process group
in a session of its own, so thread nice values alone did nothing between groups: a processing
worker at nice 19 took CPU slices of the same length as the sources at nice -5 (measured with
``perf sched``: the virtual stack's thread runnable but waiting 17 % of the time, mostly behind
nice-19 workers of another process). A process that leads its session (its own autogroup) therefore
sets the autogroup's nice too (``/proc/self/autogroup``); one that shares its session (``ros2
launch`` children) leaves it, since that would change its siblings' share as well. Autogroups only
apply to processes in the root CPU cgroup: inside a service's own cgroup (systemd with the ``cpu``
controller on) thread nice values already compare across the processes of that cgroup. And
``/proc/self/autogroup`` reads empty for a session in the kernel's default group (seen on the CI
machine).
"""

from __future__ import annotations

import os


def set_process_nice(nice: int) -> str:
    """Set every thread of this process to ``nice`` (-20..19); returns what was applied, for the log."""
    current = os.getpriority(os.PRIO_PROCESS, 0)
    if nice == current:
        return f"nice {nice}"
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        tids = [0]
    try:
        for tid in tids:
            try:
                os.setpriority(os.PRIO_PROCESS, tid, nice)
            except ProcessLookupError:  # the thread ended meanwhile
                continue
    except PermissionError:
        return f"nice {current} (raising the priority to {nice} needs CAP_SYS_NICE)"
    return f"nice {nice}{set_autogroup_nice(nice)}"


def set_autogroup_nice(nice: int, path: str = "/proc/self/autogroup") -> str:
    """Give this process's autogroup the weight of ``nice`` when the process leads its session
    (see the module docstring); returns what was done, for the log ("" when nothing applies)."""
    if not os.path.exists(path) or os.getsid(0) != os.getpid():
        return ""
    try:
        with open(path, "w") as fh:
            fh.write(str(nice))
    except OSError as exc:  # e.g. EPERM: a negative value needs CAP_SYS_NICE; autogroups disabled
        return f", autogroup unchanged ({exc.strerror or exc})"
    return f", autogroup nice {nice}"

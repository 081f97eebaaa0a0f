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

Real time (``realtime_priority``, off in the shipped profiles): every thread of the process runs
``SCHED_RR`` at the given priority (threads started later inherit it); a thread that asks to be
lowered (``rgbt.seg.pipeline.lower_thread_priority``) leaves real time first. It does what nice values
cannot: with one ordinary busy process beside the graph on 2 cores (``rgbt bench graph --load 1``)
segmentation's masks came 1.0-1.3 frame periods late at p99 (nice -7/-4/-1: 2.9-3.4; nice
-20/-16/-13, the profiles' levels: 1.9-2.8). But it cost ``kill -9`` recovery: with the graph real
time, 7 of 25 ``rgbt bench faults`` flights that killed segmentation lost 7-996 recorded camera frames
(stream stalls of up to 14 s in the middleware's shared-memory transport), whatever priority the warm
spare started at; 0 of 13 kill flights at the nice levels (8 of segmentation). A flight's recording outranks a mask's
latency, so the profiles use nice values; a computer that runs nothing else may still set it (``--set
NODE.realtime_priority=N``). The kernel keeps 5 % of each second for ordinary processes
(``kernel.sched_rt_runtime_us``; ``rgbt doctor`` warns when that is off).
"""

from __future__ import annotations

import os


def set_process_nice(nice: int) -> str:
    """Set every thread of this process to ``nice`` (-20..19); returns what was applied, for the log."""
    current = os.getpriority(os.PRIO_PROCESS, 0)
    if nice == current:
        return f"nice {nice}"
    try:
        for tid in _thread_ids():
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


def realtime_priority() -> int:
    """This thread's real-time priority (0 when it runs an ordinary policy)."""
    if not hasattr(os, "sched_getscheduler"):
        return 0
    if os.sched_getscheduler(0) not in (os.SCHED_RR, os.SCHED_FIFO):
        return 0
    return os.sched_getparam(0).sched_priority


def set_process_realtime(priority: int) -> str:
    """Run every thread of this process under ``SCHED_RR`` at ``priority`` (1-98); returns what was
    applied, for the log. Without the right (``CAP_SYS_NICE``, ``RLIMIT_RTPRIO``, or a cgroup with no
    real-time budget) nothing changes and the text says why."""
    if not 1 <= priority <= 98:
        raise ValueError(f"realtime_priority: got {priority}, expected 1..98 (0 turns it off)")
    if not hasattr(os, "SCHED_RR"):
        return "real time unavailable on this OS (nice only)"
    param = os.sched_param(priority)
    for tid in sorted(
        _thread_ids(), key=lambda t: t != os.getpid()
    ):  # the main thread first: a refusal changes nothing
        try:
            os.sched_setscheduler(tid, os.SCHED_RR, param)
        except ProcessLookupError:  # the thread ended meanwhile
            continue
        except PermissionError:
            return (f"SCHED_RR {priority} not permitted (needs CAP_SYS_NICE or an rtprio limit of {priority}, "
                    f"e.g. systemd LimitRTPRIO={priority}; in a cgroup, a real-time budget): nice only")
    return f"SCHED_RR {priority}"


def _thread_ids() -> list[int]:
    """Every thread of this process (``/proc/self/task``; ``[0]``, the caller, where that is missing)."""
    try:
        return [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return [0]

"""CPU priority of a node process (no rclpy import): every thread of it, not only the caller.

On Linux the nice value belongs to a thread; rclpy starts the middleware's receive threads before
any node exists, so ``os.nice`` in a node's constructor would leave them at the old value. This
sets all of the process's threads (``/proc/self/task``); threads started later inherit it.

Lowering the priority (processing processes) never needs privileges. Raising it (drivers, sync,
recorder: the streams that must not lose data) needs ``CAP_SYS_NICE`` (root, or
``LimitNICE=`` / ``limits.conf`` ``nice`` for the service user); without it the process keeps its
priority and the caller logs why.
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
    return f"nice {nice}"

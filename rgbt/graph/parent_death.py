"""Node processes do not outlive the launcher that started them; no rclpy here.

``rgbt up`` (:func:`rgbt.graph.launcher.start_graph`) names its own PID in every node process's
environment (:data:`LAUNCHER_PID_ENV`). A node process (``python -m rgbt.ros.spin``) calls
:func:`die_with_launcher` first thing: on Linux it asks the kernel for SIGTERM when its parent dies
(``prctl(PR_SET_PDEATHSIG)``), then checks that its parent is still that launcher (a launcher that
died before the ``prctl`` left the process to PID 1 or a subreaper already: it must exit at once).
SIGTERM makes a node process drain and close its nodes (the recorder closes its bag), so a
``kill -9`` of ``rgbt up`` or a crash of it ends the graph instead of leaving it unsupervised.
:func:`launcher_gone` tells such a stop (every group at once) from the launcher's ordered one.

The kernel sends the signal when the *thread* that forked the child exits, not the process: the
launcher starts every child from its main thread (:class:`rgbt.graph.launcher.Graph` checks it).
Elsewhere than Linux there is no such ``prctl``: :func:`set_parent_death_signal` is a no-op
returning False. A process started without :data:`LAUNCHER_PID_ENV` (by hand, ``ros2 launch``) is
left alone.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

#: environment variable with the PID of the ``rgbt up`` launcher that started a node process
LAUNCHER_PID_ENV = "RGBT_LAUNCHER_PID"
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def set_parent_death_signal(signum: int = signal.SIGTERM) -> bool:
    """Ask the kernel to send ``signum`` to this process when its parent (thread) dies.

    True when set; False where the call does not exist (not Linux) or failed."""
    if not sys.platform.startswith("linux"):
        return False

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def die_with_launcher(environ: dict[str, str] | None = None) -> str | None:
    """Tie this process's life to the launcher named by :data:`LAUNCHER_PID_ENV` (SIGTERM when it
    dies). Returns None when this process may go on (tied, or no launcher named), or why it must
    exit now: its parent is no longer that launcher."""
    if not (environ if environ is not None else os.environ).get(LAUNCHER_PID_ENV, ""):
        return None
    set_parent_death_signal(signal.SIGTERM)
    return launcher_gone(environ)  # after the prctl: a launcher dying from now on sends the signal


def launcher_gone(environ: dict[str, str] | None = None) -> str | None:
    """Why the launcher named by :data:`LAUNCHER_PID_ENV` is gone (this process's parent is another
    one now), or None (it is the parent, or none is named). Tells a stop by the launcher's death
    (every group at once, nobody to stop them in order) from an ordered one."""
    value = (os.environ if environ is None else environ).get(LAUNCHER_PID_ENV, "").strip()
    parent = os.getppid()
    if value and str(parent) != value:
        return f"the launcher (PID {value}) is gone (parent now PID {parent})"
    return None

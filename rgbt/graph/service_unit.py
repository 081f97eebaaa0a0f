"""The systemd unit that flies a profile at boot (``rgbt service``); no rclpy here.

``rgbt-<instance name>.service`` runs ``<venv>/bin/rgbt up <profile>`` in the checkout and keeps it
running: ``Restart=always`` (2 s apart, never giving up: ``StartLimitIntervalSec=0``); ``Type=notify``
with ``WatchdogSec=10``, the launcher sending ``READY=1`` and pinging from its supervision loop
(:mod:`rgbt.graph.sdnotify`), so a hung launcher is killed and started again, and its node processes
die with it (:mod:`rgbt.graph.parent_death`); the new one waits (exit 2, restarted) until the old
graph's last process has released the profile's lock. Stopping sends SIGINT to the launcher only
(``KillMode=mixed``): it stops the groups in order and the recorder closes its bag; whatever is
left after ``TimeoutStopSec`` (the longest ordered stop of the profile's groups, plus a margin) is
killed. ``LimitNICE=-20`` / ``LimitRTPRIO=99`` let the profile's priorities apply (``rgbt doctor``);
a ``--user`` unit cannot raise them and leaves them out. The environment: loopback-only ROS
discovery and ``ROS_HOME`` in the service's state folder (a system service may have no ``$HOME``);
the profile's own ``env:`` is applied to the node processes by ``rgbt up`` itself.

``launch/rgbt-flight.service`` is :func:`unit_text`'s template for the flight profile (placeholders
``@RGBT@`` and ``@REPO@``), for a machine where ``rgbt service install`` cannot run.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
from pathlib import Path

from rgbt.errors import MissingCapability
from rgbt.graph.instance_lock import instance_name
from rgbt.graph.launcher import stop_time_s
from rgbt.graph.profile import node_specs, processes, profile_path
from rgbt.paths import LAUNCH_DIR, REPO_ROOT
from rgbt.ros_env import DEFAULT_DISCOVERY_RANGE

SYSTEM_UNIT_DIR = Path("/etc/systemd/system")
#: placeholders of the template under launch/
RGBT_PLACEHOLDER, REPO_PLACEHOLDER = "@RGBT@", "@REPO@"
TEMPLATE = LAUNCH_DIR / "rgbt-flight.service"
#: what the stop may take beyond the groups' ordered stop (s): the launcher's own exit, slow disks
STOP_MARGIN_S = 30


def unit_name(profile: str | Path) -> str:
    return f"rgbt-{instance_name(profile)}.service"


def unit_dir(user: bool = False) -> Path:
    """``/etc/systemd/system``, or ``$XDG_CONFIG_HOME/systemd/user`` (default ``~/.config``) for ``user``."""
    if not user:
        return SYSTEM_UNIT_DIR
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "systemd" / "user"


def systemd_running() -> bool:
    """Whether systemd is this machine's init (``/run/systemd/system`` exists)."""
    return Path("/run/systemd/system").is_dir()


def rgbt_executable() -> str:
    """The ``rgbt`` command of this installation (``<venv>/bin/rgbt`` beside this interpreter)."""
    beside = Path(sys.executable).parent / "rgbt"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("rgbt")
    if found:
        return str(Path(found).absolute())
    raise MissingCapability("the `rgbt` command", hint=f"install rgbt in {Path(sys.executable).parent.parent} "
                                                       "(pip install -e .) so the unit can run it")


def profile_argument(profile: str | Path) -> str:
    """What the unit passes to ``rgbt up``: the name of a profile in ``launch/``, else its absolute path."""
    path = Path(profile_path(profile)).resolve()
    return path.stem if path.parent == LAUNCH_DIR.resolve() else str(path)


def stop_timeout_s(profile: str | Path) -> int:
    """``TimeoutStopSec``: the longest ordered stop of the profile's groups plus :data:`STOP_MARGIN_S`."""
    return math.ceil(stop_time_s(len(processes(node_specs(profile))))) + STOP_MARGIN_S


def _escape(text: str) -> str:
    """``%`` specifiers and ``$`` variables kept literal in a unit file's value."""
    return text.replace("%", "%%").replace("$", "$$")


def _exec_arg(arg: str) -> str:
    """One ``ExecStart=`` word (double-quoted when it holds spaces or quotes)."""
    arg = _escape(arg)
    if any(c.isspace() or c in "\"'\\;" for c in arg):
        return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return arg


def unit_text(profile: str | Path = "flight", executable: str | None = None, workdir: str | Path | None = None,
              user: bool = False, template: bool = False) -> str:
    """The unit file of ``profile``: ``executable`` (default :func:`rgbt_executable`) ``up PROFILE``
    in ``workdir`` (default the checkout); ``template``: the placeholders instead of both and a
    header saying how to fill them in."""
    name, arg = unit_name(profile), profile_argument(profile)
    if template:
        executable, workdir = RGBT_PLACEHOLDER, REPO_PLACEHOLDER
    executable = executable or rgbt_executable()
    workdir = str(workdir or REPO_ROOT)
    lines = [f"# {name}: `rgbt up {arg}` at boot, started again whenever it stops.",
             f"# Written by `rgbt service install --profile {arg}{' --user' if user else ''}`; "
             f"`rgbt service uninstall --profile {arg}` removes it."]
    if template:
        lines += ["# Template: replace @RGBT@ with the rgbt command of the installation (<venv>/bin/rgbt) and",
                  "# @REPO@ with the checkout, copy it to /etc/systemd/system/, then",
                  f"# `systemctl daemon-reload && systemctl enable --now {name}`."]
    lines += ["[Unit]",
              f"Description=rgbt graph of profile {arg} (rgbt up {arg})",
              "After=local-fs.target",
              "# never give up restarting: a new launcher waits (exit 2) for the old graph to release its lock",
              "StartLimitIntervalSec=0",
              "",
              "[Service]",
              "# READY=1 once every process group started; WATCHDOG=1 from the supervision loop (every 1 s)",
              "Type=notify",
              "NotifyAccess=main",
              "WatchdogSec=10",
              f"ExecStart={_exec_arg(executable)} up {_exec_arg(arg)}",
              f"WorkingDirectory={_escape(workdir)}",
              f"Environment=ROS_AUTOMATIC_DISCOVERY_RANGE={DEFAULT_DISCOVERY_RANGE}",
              "Environment=ROS_HOME=%S/rgbt/ros",
              "StateDirectory=rgbt",
              "Restart=always",
              "RestartSec=2",
              "# SIGINT to rgbt up only: it stops the groups in order and the recorder closes its bag;",
              "# what is left after TimeoutStopSec (the groups' longest ordered stop + 30 s) is killed",
              "KillMode=mixed",
              "KillSignal=SIGINT",
              f"TimeoutStopSec={stop_timeout_s(profile)}"]
    if user:
        lines += [
            "# LimitNICE / LimitRTPRIO: a user's service manager cannot raise them (rgbt doctor says what is missing)"
        ]
    else:
        lines += ["# the profile's priorities: nice down to -20, real time up to 99 (rgbt doctor)",
                  "LimitNICE=-20",
                  "LimitRTPRIO=99"]
    lines += ["",
              "[Install]",
              f"WantedBy={'default.target' if user else 'multi-user.target'}"]
    return "\n".join(lines) + "\n"

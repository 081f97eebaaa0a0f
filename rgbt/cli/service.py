"""``rgbt service install|status|uninstall|template [--profile flight] [--user] [--dry-run]``: fly a
profile at boot under systemd (the unit: :mod:`rgbt.graph.service_unit`).

``install`` writes ``rgbt-<profile>.service`` (``/etc/systemd/system``, or the user's
``~/.config/systemd/user`` with ``--user``; ``--unit-dir`` elsewhere, e.g. an image being built) and,
when systemd runs this machine, ``systemctl daemon-reload`` + ``enable`` (start it with ``systemctl
start``); elsewhere it says what to run. ``--dry-run`` prints the unit (stdout) and what would be
done (stderr). ``status``: the unit file, systemd's view of it, and whether the profile's graph
runs (its lock). ``uninstall``: ``disable --now`` (the graph stops cleanly) and the file removed.
``template``: the unit with placeholders, as shipped in ``launch/rgbt-flight.service``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("service", help="run a profile at boot under systemd (install, status, uninstall)",
                       description=__doc__.split("\n\n")[1].replace("``", "`"))
    verbs = p.add_subparsers(dest="action", metavar="ACTION")
    for action, text in (("install", "write the unit and enable it (systemctl daemon-reload + enable)"),
                         ("status", "the unit file, systemd's state of it, and whether the profile's graph runs"),
                         ("uninstall", "disable and stop the unit, remove its file"),
                         ("template", "print the unit with @RGBT@ / @REPO@ placeholders (launch/rgbt-flight.service)")):
        a = verbs.add_parser(action, help=text, description=text)
        a.add_argument("--profile", default="flight", help="profile name in launch/ or a YAML path (default: flight)")
        a.add_argument("--user", action="store_true",
                       help="a user unit (~/.config/systemd/user, systemctl --user) instead of a system-wide one")
        if action in ("install", "status", "uninstall"):
            a.add_argument("--unit-dir", default=None,
                           help="the folder of the unit file (default: /etc/systemd/system, or the user's with "
                                "--user); systemctl is not run for another folder")
        if action in ("install", "uninstall"):
            a.add_argument("--dry-run", action="store_true", help="print what would be written and run; change nothing")
        a.set_defaults(func=globals()[f"_{action}"])


def _where(args: argparse.Namespace) -> tuple[Path, bool]:
    """The unit file's path, and whether to run systemctl for it."""
    from rgbt.graph.service_unit import systemd_running, unit_dir, unit_name

    folder = Path(args.unit_dir) if args.unit_dir else unit_dir(args.user)
    return folder / unit_name(args.profile), args.unit_dir is None and systemd_running()


def _systemctl(args: argparse.Namespace, *words: str, dry_run: bool = False, check: bool = True) -> int:
    cmd = ["systemctl", *(["--user"] if args.user else []), *words]
    print(f"rgbt service: {'would run' if dry_run else 'running'}: {' '.join(cmd)}", file=sys.stderr)
    if dry_run:
        return 0
    proc = subprocess.run(cmd, check=False)
    if check and proc.returncode:
        print(f"rgbt service: {' '.join(cmd)} failed (exit {proc.returncode})", file=sys.stderr)
    return proc.returncode


def _install(args: argparse.Namespace) -> int:
    from rgbt.errors import RgbtError
    from rgbt.graph.profile import node_specs
    from rgbt.graph.service_unit import unit_text

    node_specs(args.profile)  # a broken profile fails here (exit 2), not at boot
    path, systemd = _where(args)
    text = unit_text(args.profile, user=args.user)
    if args.dry_run:
        print(f"rgbt service: would write {path}:", file=sys.stderr)
        sys.stdout.write(text)
    else:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        except PermissionError:
            raise RgbtError(f"{path}: permission denied: install a system unit as root, or use --user") from None
        print(f"rgbt service: wrote {path}", file=sys.stderr)
    if not systemd:
        sys_ctl = "systemctl --user" if args.user else "systemctl"
        print(f"rgbt service: {_no_systemctl(args)}: where the unit is to run, run "
              f"`{sys_ctl} daemon-reload && {sys_ctl} enable --now {path.name}`", file=sys.stderr)
        return 0
    code = _systemctl(args, "daemon-reload", dry_run=args.dry_run) or _systemctl(args, "enable", path.name,
                                                                                 dry_run=args.dry_run)
    if not code:
        print(f"rgbt service: enabled {path.name} (starts at boot); start it now: "
              f"systemctl {'--user ' if args.user else ''}start {path.name}", file=sys.stderr)
    return 1 if code else 0


def _status(args: argparse.Namespace) -> int:
    from rgbt.graph.instance_lock import instance_name, lock_state

    path, systemd = _where(args)
    print(f"unit: {path} ({'installed' if path.exists() else 'not installed'})")
    print(f"graph of profile {instance_name(args.profile)!r}: {lock_state(instance_name(args.profile))}")
    if systemd:
        _systemctl(args, "show", path.name, "--property=LoadState,UnitFileState,ActiveState,SubState,MainPID,"
                   "NRestarts,StatusText", check=False)
    else:
        print(f"systemd: {_no_systemctl(args)}")
    return 0


def _no_systemctl(args: argparse.Namespace) -> str:
    """Why systemctl is not run."""
    return "not asked (the unit is in --unit-dir)" if args.unit_dir else "not running this machine"


def _uninstall(args: argparse.Namespace) -> int:
    path, systemd = _where(args)
    if systemd:
        _systemctl(args, "disable", "--now", path.name, dry_run=args.dry_run, check=False)
    if not path.exists():
        print(f"rgbt service: {path} is not installed", file=sys.stderr)
    elif args.dry_run:
        print(f"rgbt service: would remove {path}", file=sys.stderr)
    else:
        path.unlink()
        print(f"rgbt service: removed {path}", file=sys.stderr)
    if systemd:
        return 1 if _systemctl(args, "daemon-reload", dry_run=args.dry_run) else 0
    return 0


def _template(args: argparse.Namespace) -> int:
    from rgbt.graph.service_unit import unit_text

    sys.stdout.write(unit_text(args.profile, user=args.user, template=True))
    return 0

"""``rgbt doctor [--profile flight|bench-sim|replay] [--json]``: what to check before a flight.

One table (platform, Python, installed layers, ROS, inference backends, devices, clocks, disk in
minutes of recording), each line ok / warn / fail with a fix hint. Exit 2 when any line fails.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="check this machine for a profile (devices, ROS, inference, disk) before flight",
                       description="Check what a profile needs on this machine: platform, Python, installed "
                                   "layers, ROS 2 stack, inference backends (a real model load), serial devices "
                                   "and cameras, clocks, free disk in minutes of recording. Exit 2 on any fail.")
    p.add_argument("--profile", default="flight", help="flight (default), bench-sim, replay or a profile YAML")
    p.add_argument("--bag-dir", default=None, help="where bags go (default: the profile's recorder.out_dir)")
    p.add_argument("--json", action="store_true", help="print the checks as JSON")
    p.set_defaults(func=run)


def print_checks(profile: str, checks: list, file: TextIO | None = None) -> None:
    """The doctor table (rich) on stdout, or plain lines on ``file``."""
    if file is not None:
        for c in checks:
            print(f"{c.status:4}  {c.item}: {c.value}" + (f"  -> {c.hint}" if c.hint and c.status != "ok" else ""),
                  file=file)
        return
    from rgbt.output import print_table

    print_table(f"rgbt doctor --profile {profile}", ["item", "status", "value", "fix"],
                [(c.item, c.status, c.value, c.hint if c.status != "ok" else "") for c in checks])


def gate(profile: str, verb: str, bag_dir: str | None = None) -> int:
    """Run the doctor before ``verb``; on a fail print the table to stderr and return 2 (else 0)."""
    from rgbt.doctor import exit_code, run_checks

    checks = run_checks(profile, bag_dir=bag_dir)
    code = exit_code(checks)
    if code:
        from rgbt.errors import RgbtError
        from rgbt.graph.profile import load_profile

        try:
            about = f" ({load_profile(profile)[1].description})"
        except RgbtError:
            about = ""
        print(f"rgbt {verb}: `rgbt doctor --profile {profile}`{about} found problems; nothing was started:",
              file=sys.stderr)
        print_checks(profile, [c for c in checks if c.status != "ok"], file=sys.stderr)
    return code


def run(args: argparse.Namespace) -> int:
    from rgbt.doctor import exit_code, report, run_checks
    from rgbt.output import print_json

    checks = run_checks(args.profile, bag_dir=args.bag_dir)
    if args.json:
        print_json(report(args.profile, checks))
    else:
        print_checks(args.profile, checks)
    return exit_code(checks)

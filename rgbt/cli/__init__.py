"""The ``rgbt`` command: one verb per module in this package.

Each verb module defines ``register(subparsers)`` which adds its parser and sets
``func`` (called with the parsed arguments, returns an exit code).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from rgbt import __version__
from rgbt.errors import RgbtError

# verb -> module (kept in the order ``rgbt --help`` lists them)
VERBS: dict[str, str] = {
    "demo": "rgbt.cli.demo",
    "up": "rgbt.cli.up",
    "record": "rgbt.cli.record",
    "replay": "rgbt.cli.replay",
    "simulate": "rgbt.cli.simulate",
    "image": "rgbt.cli.image",
    "calib": "rgbt.cli.calib",
    "seg": "rgbt.cli.seg",
    "engine": "rgbt.cli.engine",
    "sensors": "rgbt.cli.sensors",
    "bag": "rgbt.cli.bag",
    "vio": "rgbt.cli.vio",
    "bench": "rgbt.cli.bench",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rgbt",
        description="Onboard runtime for aerial RGB-thermal sensor stacks.",
    )
    parser.add_argument("--version", action="version", version=f"rgbt {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    for verb, module_name in VERBS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue  # verb not built yet in this checkout
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0 if args.verb is None else 2
    try:
        return int(args.func(args) or 0)
    except RgbtError as exc:
        print(f"rgbt {args.verb}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"rgbt {args.verb}: interrupted", file=sys.stderr)
        return 130

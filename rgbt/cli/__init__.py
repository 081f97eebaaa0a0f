"""The ``rgbt`` command: one verb per module in this package.

Each verb module defines ``register(subparsers)`` which adds its parser and sets
``func`` (called with the parsed arguments, returns an exit code).

Exit codes, the same for every verb:

- 0 success;
- 2 bad input or configuration (one line naming the file, key or offset and what was expected),
  and a verb or command group called without its subcommand;
- 3 a missing optional capability (names the extra, device or package to install);
- 1 anything else (an internal error: one line, the traceback only under ``--debug``);
- 130 interrupted (Ctrl-C).

A verb module that fails to import is a broken install and an error, never a silently absent
verb. The one exception is a missing *third-party* package (an optional extra not installed):
the verb is still listed and exits 3 naming the package.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Callable
from types import ModuleType

from rgbt import __version__
from rgbt.errors import MissingCapability, RgbtError

# verb -> module (kept in the order ``rgbt --help`` lists them)
VERBS: dict[str, str] = {
    "demo": "rgbt.cli.demo",
    "up": "rgbt.cli.up",
    "service": "rgbt.cli.service",
    "doctor": "rgbt.cli.doctor",
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
    "campaign": "rgbt.cli.campaign",
}

EXIT_OK, EXIT_INTERNAL, EXIT_BAD_INPUT, EXIT_MISSING, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def import_optional(module_name: str) -> ModuleType | MissingCapability:
    """Import a verb (or benchmark) module.

    Returns the module, or a :class:`MissingCapability` when a third-party package it needs is
    not installed. Any other import failure (the project's own code is broken or absent) raises.
    """
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").split(".")[0]
        if not missing or missing == "rgbt" or missing == module_name.split(".")[0]:
            raise
        from rgbt.extras import missing_module

        return missing_module(missing, needed_by=module_name)


def unavailable(capability: MissingCapability) -> Callable[[argparse.Namespace], int]:
    """A verb function that reports ``capability`` as missing (exit 3)."""
    def run(args: argparse.Namespace) -> int:  # noqa: ARG001
        raise capability
    return run


def require_subcommand(parser: argparse.ArgumentParser) -> None:
    """Make ``parser`` (a command group) print its usage and exit 2 when called without a subcommand."""
    def run(args: argparse.Namespace) -> int:  # noqa: ARG001
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: a subcommand is required (see {parser.prog} --help)", file=sys.stderr)
        return EXIT_BAD_INPUT
    parser.set_defaults(func=run)


def _has_subcommands(parser: argparse.ArgumentParser) -> bool:
    return any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rgbt",
        description="Onboard runtime for aerial RGB-thermal sensor stacks.",
        epilog="exit codes: 0 ok, 2 bad input or configuration, 3 missing optional capability, "
               "1 internal error (--debug shows the traceback), 130 interrupted",
    )
    parser.add_argument("--version", action="version", version=f"rgbt {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the Python traceback of an error")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    for verb, module_name in VERBS.items():
        module = import_optional(module_name)
        if isinstance(module, MissingCapability):
            p = sub.add_parser(verb, help=f"(unavailable: {module.what})")
            p.set_defaults(func=unavailable(module))
            continue
        module.register(sub)
        verb_parser = sub.choices[verb]
        if _has_subcommands(verb_parser):
            require_subcommand(verb_parser)
    return parser


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_usage(sys.stderr)
        print("rgbt: error: a verb is required (see rgbt --help)", file=sys.stderr)
        return EXIT_BAD_INPUT
    prefix = f"rgbt {args.verb}"
    try:
        return _exit_now_if_stuck(int(args.func(args) or 0))
    except KeyboardInterrupt:
        print(f"{prefix}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, never a traceback
        code, line = _classify(exc)
        if code == EXIT_INTERNAL and not args.debug:
            line += " (run with --debug for the traceback)"
        print(f"{prefix}: {line}", file=sys.stderr)
        if args.debug:
            traceback.print_exception(type(exc), exc, exc.__traceback__)
        return code


def _exit_now_if_stuck(code: int) -> int:
    """``code``, or the process ended here with it (output flushed) when a verb's middleware could not
    shut down (``rgbt.ros.spin.middleware_stuck``): the interpreter's teardown would hang on it."""
    spin = sys.modules.get("rgbt.ros.spin")
    if spin is not None and spin.middleware_stuck():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _classify(exc: Exception) -> tuple[int, str]:
    """The exit code and the one line for an exception that ended a verb."""
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "rgbt").split(".")[0] != "rgbt":
        from rgbt.extras import missing_module

        exc = missing_module(exc.name or "")  # a lazily imported optional package (exit 3, naming the extra)
    if isinstance(exc, MissingCapability):
        return EXIT_MISSING, f"unavailable: {_one_line(exc)}"
    if isinstance(exc, RgbtError):
        return EXIT_BAD_INPUT, f"error: {_one_line(exc)}"
    if isinstance(exc, OSError):
        # A file the user named cannot be read or written (missing folder, permissions, full disk).
        where = exc.filename if exc.filename is not None else "I/O"
        return EXIT_BAD_INPUT, f"error: {where}: {exc.strerror or _one_line(exc)}"
    return EXIT_INTERNAL, f"internal error: {type(exc).__name__}: {_one_line(exc)}"

"""``rgbt bench NAME``: performance harnesses; numbers go to BENCHMARKS.md.

Each benchmark lives in ``rgbt.bench.NAME`` (``rgbt.campaign.bench`` for ``campaign``: it drives
the campaign runner, which sits above the benches) and defines ``add_arguments(parser)``, its typed
options (a frozen dataclass), ``options_from_args(args)`` that builds them from the parsed command
line, and ``run(options) -> dict``. The result always carries a ``machine`` description.
"""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Callable
from types import ModuleType

from rgbt.cli import import_optional, unavailable
from rgbt.errors import MissingCapability
from rgbt.fileio import to_json
from rgbt.output import print_json
from rgbt.progress import ProgressBars

BENCHES: dict[str, str] = {
    "preprocess": "thermal percentile, normalize+CLAHE, RGB-T rectification",
    "sim": "simulator real-time factor and MCAP write rate",
    "seg": "segmentation backends and stage: FPS and latency tiers",
    "sync": "trigger-grid restamping error, drops, mis-associations",
    "graph": "ROS 2 sensor graph at full rate: drops and hop latency",
    "campaign": "a small VIO campaign with 1 and 2 local workers: speed-up, per-job cost",
    "faults": "fault matrix: kill -9, source loss, CPU starvation, clock step, full disk vs the recording",
}
# Benchmarks that live outside rgbt.bench (name -> module).
_MODULES: dict[str, str] = {"campaign": "rgbt.campaign.bench"}


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("bench", help="performance benchmarks (numbers for BENCHMARKS.md)")
    bench_sub = parser.add_subparsers(dest="bench", metavar="NAME")
    for name, help_text in BENCHES.items():
        module = import_optional(_MODULES.get(name, f"rgbt.bench.{name}"))
        if isinstance(module, MissingCapability):
            p = bench_sub.add_parser(name, help=f"{help_text} (unavailable: {module.what})")
            p.set_defaults(func=unavailable(module))
            continue
        p = bench_sub.add_parser(name, help=help_text)
        p.add_argument("--json", action="store_true", help="print the result as JSON")
        p.add_argument("--out", help="also write the JSON result to this file")
        module.add_arguments(p)
        p.set_defaults(func=_runner(module))


def _runner(module: ModuleType) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        from rgbt.bench.machine import describe_machine

        options = module.options_from_args(args)
        if "progress" in inspect.signature(module.run).parameters:  # a bench that reports its progress
            with ProgressBars() as bars:
                result = module.run(options, progress=bars)
        else:
            result = module.run(options)
        result.setdefault("machine", describe_machine())
        if args.out:
            with open(args.out, "w") as fh:
                fh.write(to_json(result) + "\n")
        if args.json:
            print_json(result)
        else:
            module.print_result(result) if hasattr(module, "print_result") else print_json(result)
        return 0

    return run

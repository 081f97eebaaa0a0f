"""``rgbt record --profile bench-sim --duration S --out DIR``: bring a profile up and record it.

The profile's recorder node writes MCAP bags under ``--out`` (starting at once unless
``--start arm``); at the end the bags and their manifests are listed (``--json`` for machines).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("record", help="start a profile's graph and record its topics to MCAP")
    p.add_argument("--profile", default="flight", help="profile name in launch/ or a YAML path (default: flight)")
    p.add_argument("--duration", type=float, default=None, help="stop after S seconds (default: until SIGINT)")
    p.add_argument("--out", required=True, help="directory for the bags")
    p.add_argument("--start", choices=["always", "arm", "manual"], default="always",
                   help="when the recorder starts (default: always; arm = on the autopilot's arm)")
    p.add_argument("--set", action="append", default=[], metavar="NODE.PARAM=VALUE", help="override a parameter")
    p.add_argument("--strict", action="store_true",
                   help="stop the whole graph when any process fails (default: restart it with back-off)")
    p.add_argument("--json", action="store_true", help="print the bags' manifests as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rgbt.errors import ConfigError
    from rgbt.graph.instance_lock import InstanceLock, instance_name
    from rgbt.graph.launcher import run_graph
    from rgbt.graph.profile import node_specs, parse_set, profile_env
    from rgbt.graph.recording import MANIFEST
    from rgbt.graph.supervisor import SupervisorOptions
    from rgbt.output import print_json

    overrides = parse_set(args.set)
    probe = node_specs(args.profile, overrides)
    recorders = [s.name for s in probe if s.executable == "recorder"]
    if not recorders:
        raise ConfigError(args.profile, "nodes", [s.name for s in probe], "a profile with a recorder node")
    out = Path(args.out)
    for name in recorders:
        overrides.setdefault(name, {}).update({"out_dir": str(out.resolve()), "start": args.start})
    specs = node_specs(args.profile, overrides)
    before = set(out.glob("*/" + MANIFEST)) if out.exists() else set()
    with InstanceLock.acquire(instance_name(args.profile)) as lock:  # one graph per profile, as `rgbt up`
        code = run_graph(specs, args.duration, profile_env(args.profile), log=lambda m: print(m, file=sys.stderr),
                         supervision=SupervisorOptions(strict=args.strict), lock=lock)
    manifests = [json.loads(p.read_text()) for p in sorted(set(out.glob("*/" + MANIFEST)) - before)]
    if args.json:
        print_json({"bags": manifests, "exit_code": code})
    else:
        from rgbt.output import print_table

        for m in manifests:
            print_table(f"{m['bag']} ({m['stop_reason']}, {m['bytes'] / 1e6:.1f} MB)",
                        ["topic", "count", "rate_hz", "lost", "drops"],
                        [[t, v["count"], v["rate_hz"], v["lost"], v["drops"]] for t, v in m["topics"].items()])
    return code

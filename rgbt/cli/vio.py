"""``rgbt vio``: trajectory error (ate), estimator config export, DBoW2 vocabulary, bag evaluation."""

from __future__ import annotations

import argparse
from pathlib import Path

from rgbt.cli.output import print_json


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("vio", help="VIO: configs, vocabulary, estimator runs and ATE / RPE evaluation")
    vio_sub = parser.add_subparsers(dest="vio_cmd", metavar="CMD")

    p = vio_sub.add_parser("ate", help="absolute trajectory error of an estimate against a reference")
    p.add_argument("--ref", required=True, help="reference (ground truth) trajectory file")
    p.add_argument("--est", required=True, help="estimated trajectory file")
    p.add_argument("--format", default="tum", choices=["tum", "kitti", "euroc"], help="format of both files")
    p.add_argument("--ref-format", default=None, choices=["tum", "kitti", "euroc"], help="override for --ref")
    p.add_argument("--align", default="se3", choices=["se3", "sim3", "posyaw", "none"],
                   help="alignment fitted on all associated pairs (posyaw: 4-DoF yaw about z + translation)")
    p.add_argument("--max-diff", type=float, default=0.01, help="association tolerance in seconds (evo default)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_ate)

    def _help(args: argparse.Namespace) -> int:
        parser.print_help()
        return 2

    parser.set_defaults(func=_help)


def _cmd_ate(args: argparse.Namespace) -> int:
    from rgbt.eval import ate, load_trajectory

    ref = load_trajectory(args.ref, args.ref_format or args.format)
    est = load_trajectory(args.est, args.format)
    result = ate(ref, est, align=args.align, max_diff_s=args.max_diff)
    data = {k: getattr(result, k) for k in ("rmse", "mean", "median", "max", "n_pairs", "scale", "std", "min", "align")}
    if args.json:
        print_json(data)
    else:
        from rgbt.cli.output import print_table

        print_table(f"ATE ({args.align}) {Path(args.est).name} vs {Path(args.ref).name}", ["metric", "value"],
                    [(k, v) for k, v in data.items()])
    return 0

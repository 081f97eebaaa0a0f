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

    p = vio_sub.add_parser("export", help="write estimator configs (VINS-Fusion, OpenVINS, ORB-SLAM3) from the stack")
    p.add_argument("estimator", choices=["vins", "openvins", "orbslam3"])
    p.add_argument("--stack", default=None, help="stack YAML (default calib/stack.yaml)")
    p.add_argument("--camera", default="thermal", help="camera name in the stack (thermal, color, mono)")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--rate", type=float, default=20.0, help="feed frame rate in Hz the configs assume")
    p.add_argument("--topic", default=None, help="image topic of the mono8 feed")
    p.add_argument("--imu-noise", default="vio", choices=["vio", "datasheet"], help="IMU noise values to write")
    p.add_argument("--no-imu", action="store_true", help="ORB-SLAM3: monocular settings without the IMU block")
    p.add_argument("--json", action="store_true", help="print the written paths as JSON")
    p.set_defaults(func=_cmd_export)

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


def _cmd_export(args: argparse.Namespace) -> int:
    from rgbt.stack import load_stack
    from rgbt.vio.config import ExportOptions, export

    stack = load_stack(args.stack)
    opts = ExportOptions(camera=args.camera, image_topic=args.topic, rate_hz=args.rate, imu_noise=args.imu_noise)
    paths = export(stack, args.estimator, args.out, opts, inertial=not args.no_imu)
    if args.json:
        print_json({"estimator": args.estimator, "camera": args.camera, "files": [str(p) for p in paths]})
    else:
        for path in paths:
            print(path)
    return 0

"""``rgbt calib``: show, import, export and check the sensor-stack calibration."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from rgbt.output import print_json, print_table


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("calib", help="show, import, export and check the stack calibration",
                                   description="Calibration of the sensor stack (calib/stack.yaml by default).")
    sub = parser.add_subparsers(dest="calib_cmd", metavar="COMMAND")

    show = sub.add_parser("show", help="print the stack as tables")
    show.add_argument("--stack", type=Path, default=None, help="stack YAML (default: calib/stack.yaml)")
    show.add_argument("--json", action="store_true", help="print the whole stack as JSON")
    show.set_defaults(func=_show)

    imp = sub.add_parser("import-cart", help="build a stack YAML from CART's calibration files",
                         description="Read DIR/calibrations/{thermal,color,mono}.yaml, the Kalibr camchains and "
                                     "DIR/vins_configs/* (or all files directly in DIR); non-calibration fields "
                                     "(topics, rates, trigger) come from --base.")
    imp.add_argument("dir", type=Path, help="CART data folder")
    imp.add_argument("--out", type=Path, required=True, help="stack YAML to write")
    imp.add_argument("--base", type=Path, default=None, help="stack giving the non-calibration fields "
                                                              "(default: calib/stack.yaml)")
    imp.set_defaults(func=_import_cart)

    imk = sub.add_parser("import-kalibr", help="build a stack YAML from a Kalibr imu-camera chain",
                         description="Cameras from a Kalibr camchain-imucam file (T_imu_cam = inverse T_cam_imu, "
                                     "td = timeshift_cam_imu); IMU noise from --imu; the rest from --base.")
    imk.add_argument("chain", type=Path, help="Kalibr camchain-imucam YAML")
    imk.add_argument("--imu", type=Path, default=None, help="Kalibr imu.yaml (noise densities, rate, topic)")
    imk.add_argument("--names", default=None, help="comma-separated camera names (default cam0,cam1,...)")
    imk.add_argument("--rate", type=float, default=20.0, help="camera frame rate, Hz (not in Kalibr files)")
    imk.add_argument("--out", type=Path, required=True, help="stack YAML to write")
    imk.add_argument(
        "--base", type=Path, default=None, help="stack giving the other fields (default: calib/stack.yaml)"
    )
    imk.set_defaults(func=_import_kalibr)

    exp = sub.add_parser("export", help="write camera_info or Kalibr files from the stack")
    exp.add_argument("format", choices=["camera-info", "kalibr"])
    exp.add_argument("--stack", type=Path, default=None, help="stack YAML (default: calib/stack.yaml)")
    exp.add_argument("--out", type=Path, required=True, help="output folder")
    exp.add_argument("--opencv-header", action="store_true",
                     help="kalibr: start files with %%YAML:1.0 (needed by OpenVINS' cv::FileStorage)")
    exp.add_argument("--vio", action="store_true",
                     help="kalibr: use the VIO calibrations and IMU noise (what CART gave VINS-Fusion)")
    exp.set_defaults(func=_export)

    chk = sub.add_parser("check", help="validate the stack and report cross-source inconsistencies")
    chk.add_argument("--stack", type=Path, default=None, help="stack YAML (default: calib/stack.yaml)")
    chk.add_argument("--json", action="store_true")
    chk.add_argument("--strict", action="store_true", help="exit 1 when there are warnings")
    chk.set_defaults(func=_check)


def _fmt(values: list[float], digits: int = 4) -> str:
    return "[" + ", ".join(f"{v:.{digits}g}" for v in values) + "]"


def _show(args: argparse.Namespace) -> int:
    from rgbt.stack import load_stack

    stack = load_stack(args.stack)
    if args.json:
        print_json(stack.model_dump(mode="json"))
        return 0
    title = f"stack {stack.name!r}" + (" (SYNTHETIC)" if stack.synthetic else "")
    print_table(f"{title}: cameras", ["camera", "model", "topic", "size", "Hz", "encoding"],
                [[name, cam.model, cam.topic, f"{cam.width}x{cam.height}", f"{cam.rate_hz:g}", cam.encoding]
                 for name, cam in stack.cameras.items()])
    rows = []
    for name, cam in stack.cameras.items():
        i = cam.intrinsics
        T = cam.T_imu_cam_matrix()
        dist = f"{cam.distortion.model} {_fmt(cam.distortion.coeffs, 3)}"
        rows.append([name, _fmt([i.fx, i.fy, i.cx, i.cy], 6), dist,
                     _fmt((T[:3, 3] * 100).tolist(), 3), f"{cam.td_s * 1e3:.2f}"])
    print_table(f"{title}: camera calibration", ["camera", "fx fy cx cy (px)", "distortion", "t_imu_cam (cm)",
                                                 "td (ms)"], rows)
    n = stack.imu.noise
    print_table(f"{title}: IMU", ["imu", "topic", "Hz", "acc_n", "gyr_n", "acc_w", "gyr_w", "g"],
                [[stack.imu.model, stack.imu.topic, f"{stack.imu.rate_hz:g}", f"{n.acc_n:.3g}", f"{n.gyr_n:.3g}",
                  f"{n.acc_w:.3g}", f"{n.gyr_w:.3g}", f"{n.g_norm:g}"]])
    rows = []
    for key, p in stack.pairs.items():
        T = p.T_cam1_cam0_matrix()
        rows.append([key, f"{p.cam0} -> {p.cam1}", f"{p.width}x{p.height}", _fmt(list(p.cam1_offset), 4),
                     _fmt((T[:3, 3] * 100).tolist(), 3), f"{np.linalg.norm(T[:3, 3]) * 100:.2f}"])
    if rows:
        print_table(f"{title}: camchain pairs", ["pair", "cam0 -> cam1", "canvas", "cam1 offset (px)",
                                                 "t_cam1_cam0 (cm)", "baseline (cm)"], rows)
    print_table(f"{title}: other sensors", ["sensor", "topic", "Hz"],
                [["gnss " + stack.gnss.model, stack.gnss.topic, f"{stack.gnss.rate_hz:g}"],
                 ["autopilot pose", stack.autopilot.pose_topic, f"{stack.autopilot.pose_rate_hz:g}"],
                 ["trigger", ", ".join(stack.trigger.cameras) + (" + IMU SyncIn" if stack.trigger.imu_syncin else ""),
                  f"{stack.trigger.rate_hz:g}"]])
    return 0


def _import_cart(args: argparse.Namespace) -> int:
    from rgbt.calib.build import stack_from_cart
    from rgbt.stack import dump_stack, load_stack

    base = load_stack(args.base) if args.base else None
    stack = stack_from_cart(args.dir, base=base)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    dump_stack(stack, args.out)
    print(f"wrote {args.out} (stack {stack.name!r}: cameras {', '.join(stack.cameras)}; "
          f"pairs {', '.join(stack.pairs)})")
    return 0


def _import_kalibr(args: argparse.Namespace) -> int:
    from rgbt.calib.build import stack_from_kalibr
    from rgbt.stack import dump_stack, load_stack

    base = load_stack(args.base) if args.base else None
    names = [n.strip() for n in args.names.split(",")] if args.names else None
    stack = stack_from_kalibr(args.chain, args.imu, base=base, names=names, rate_hz=args.rate)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    dump_stack(stack, args.out)
    print(f"wrote {args.out} (cameras {', '.join(stack.cameras)}; pairs {', '.join(stack.pairs)})")
    return 0


def _export(args: argparse.Namespace) -> int:
    from rgbt.calib.export import export_camera_info, export_kalibr
    from rgbt.stack import load_stack

    stack = load_stack(args.stack)
    if args.format == "camera-info":
        paths = export_camera_info(stack, args.out)
    else:
        paths = export_kalibr(stack, args.out, opencv_header=args.opencv_header, vio=args.vio)
    for path in paths:
        print(f"wrote {path}")
    return 0


def _check(args: argparse.Namespace) -> int:
    from rgbt.calib.check import check_stack
    from rgbt.stack import load_stack

    stack = load_stack(args.stack)  # raises ConfigError (exit 2) on any malformed field
    findings = check_stack(stack)
    warnings = [f for f in findings if f.level == "warning"]
    if args.json:
        print_json({"stack": str(args.stack or "calib/stack.yaml"), "valid": True,
                    "warnings": len(warnings), "findings": [f.as_dict() for f in findings]})
    else:
        print_table(f"stack {stack.name!r}: valid; {len(warnings)} warning(s)", ["level", "check", "subject", "result"],
                    [[f.level.upper() if f.level == "warning" else f.level, f.check, f.subject, f.message]
                     for f in findings])
    return 1 if (args.strict and warnings) else 0

"""``rgbt demo``: the whole mission in one command on the simulated stack, a real one, or a bag.

    rgbt demo [--duration S] [--out DIR] [--json] [--trajectory TUM] [--no-vio] [--engine ONNX]
              [--profile NAME] [--replay PATH] [--seed N]
"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo", help="fly the simulated stack (segmentation live, recorder armed), replay into ORB-SLAM3, report",
        description="Start the virtual sensor stack and the onboard graph (as `rgbt up bench-sim`), arm the "
                    "simulated autopilot so the recorder starts, segment thermal live for the flight, disarm, "
                    "replay the bag into ORB-SLAM3 and score it against the simulator's ground truth. Writes "
                    "report.md, summary.json and plots under bags/<run>/. All sensor data is SYNTHETIC.")
    p.add_argument("--duration", type=float, default=60.0, help="armed flight time in seconds (default 60)")
    p.add_argument("--out", default=None, help="run folder (default bags/demo-<UTC timestamp>)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    p.add_argument("--trajectory", default=None,
                   help="TUM trajectory or parametric path (circle, lawnmower, hover); default: a real CART "
                        "ground-truth trajectory from the shared data (parametric when absent)")
    p.add_argument("--no-vio", dest="vio", action="store_false", help="skip the ORB-SLAM3 evaluation")
    p.add_argument("--engine", default=None,
                   help="segmentation ONNX (default engines/sim_thermal_seg.onnx, else engines/fastscnn_thermal.onnx)")
    p.add_argument("--profile", default="bench-sim",
                   help="bring-up profile: bench-sim (simulated, default) or flight (real CART hardware)")
    p.add_argument("--replay", default=None, metavar="PATH",
                   help="evaluate an existing bag (ROS 1 .bag, ROS 2 folder or .mcap) instead of flying")
    p.add_argument("--seed", type=int, default=0, help="simulator seed (default 0)")
    p.add_argument("--runs", type=int, default=1, help="ORB-SLAM3 runs (default 1)")
    p.add_argument("--cameras", default="thermal",
                   help="simulated cameras, comma-separated (default thermal; thermal,color also runs RGB-T "
                        "fusion live and reports its FPS and mIoU beside thermal-only; thermal,color,mono is the "
                        "full stack and needs more than 2 cores to keep real time)")
    p.add_argument("--altitude", type=float, default=15.0,
                   help="height of a TUM trajectory's lowest point above the simulated ground (m, default 15)")
    p.add_argument("--eval-frames", type=int, default=150,
                   help="segmented frames scored for mIoU, evenly spread over the flight (default 150)")
    p.add_argument("--no-realtime", dest="realtime", action="store_false",
                   help="publish as fast as the simulator renders instead of at the real rate")
    p.add_argument("--prerender", action=argparse.BooleanOptionalAction, default=None,
                   help="render the simulated flight before it starts and play it at the real rate "
                        "(default: when --cameras has more than thermal; needs the frames' size on disk "
                        "in the run folder, ~90 MB per simulated second with colour, removed after)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rgbt.demo.options import DemoOptions
    from rgbt.demo.run import run_demo
    from rgbt.output import print_json
    from rgbt.progress import ProgressBars

    options = DemoOptions(duration_s=args.duration, out=args.out, trajectory=args.trajectory, vio=args.vio,
                          engine=args.engine, profile=args.profile, replay=args.replay, seed=args.seed,
                          runs=args.runs, cameras=[c.strip() for c in args.cameras.split(",") if c.strip()],
                          realtime=args.realtime, altitude_m=args.altitude, max_eval_frames=args.eval_frames,
                          prerender=args.prerender)
    if not args.replay:  # what the demo's profile needs, first (exit 2 with the table)
        from rgbt.cli.doctor import gate

        code = gate(args.profile, "demo", bag_dir=args.out)
        if code:
            return code
    with ProgressBars() as bars:
        summary = run_demo(options, progress=bars)
    if args.json:
        print_json(compact(summary))
    else:
        print_summary(summary)
    return 0


def compact(summary: dict) -> dict:
    """The ``--json`` document: ``health``, ``segmentation`` (fps, p99_ms, miou, ...), ``vio``
    (ate_rmse, tracked_fraction, ...), ``report`` (Markdown path), plus the bag, plots and run info."""
    h = summary["health"]
    health = {k: v for k, v in h.items() if k != "topics"}
    health["rates_hz"] = {name: t["rate_hz"] for name, t in h["topics"].items()}
    health["counts"] = {name: t["count"] for name, t in h["topics"].items()}
    seg = {k: v for k, v in summary["segmentation"].items() if k != "per_class"}
    seg["per_class"] = summary["segmentation"].get("per_class")
    out = {"synthetic": summary["synthetic"], "health": health, "segmentation": seg, "vio": summary["vio"],
           "report": summary["report"], "bag": summary["bag"], "plots": summary["plots"], "run": summary["run"]}
    if summary.get("fusion"):  # RGB-T fusion flew (--cameras thermal,color): beside thermal-only
        out["fusion"] = {k: v for k, v in summary["fusion"].items() if k != "per_class"}
    return out


def print_summary(summary: dict) -> None:
    from rgbt.output import print_table

    seg, vio, h = summary["segmentation"], summary["vio"], summary["health"]
    rows = [
        ("data", "SYNTHETIC (simulated stack)" if summary["synthetic"] else "recorded / hardware"),
        ("recording", f"{h['duration_s']:.1f} s, lost {h['lost_total']}, gaps {h['drops_total']}"),
        ("segmentation FPS", seg.get("fps")),
        ("segmentation latency p50 / p99 (ms)", f"{_f(seg.get('p50_ms'))} / {_f(seg.get('p99_ms'))}"),
        ("mIoU (all)", seg.get("miou")),
    ]
    fusion = summary.get("fusion")
    if fusion:  # RGB-T fusion flew (--cameras thermal,color): its numbers beside thermal-only
        rows += [("RGB-T fusion FPS", fusion.get("fps")),
                 ("RGB-T fusion latency p50 / p99 (ms)", f"{_f(fusion.get('p50_ms'))} / {_f(fusion.get('p99_ms'))}"),
                 ("RGB-T fusion mIoU (all)", fusion.get("miou"))]
    rows += [
        ("VIO ATE RMSE (m)", vio.get("ate_rmse") if not vio.get("skipped") else f"skipped: {vio['skipped']}"),
        ("VIO tracked fraction", vio.get("tracked_fraction")),
        ("report", summary["report"]),
    ]
    print_table("rgbt demo", ["item", "value"], [(k, "-" if v is None else v) for k, v in rows])


def _f(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"

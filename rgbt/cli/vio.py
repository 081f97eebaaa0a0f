"""``rgbt vio``: trajectory error (ate), estimator config export, DBoW2 vocabulary, bag evaluation."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rgbt.errors import EvaluationError
from rgbt.output import print_json
from rgbt.progress import ProgressBars

if TYPE_CHECKING:
    from rgbt.vio.sequence import Sequence


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
    p.add_argument("--times", default=None, metavar="FILE",
                   help="KITTI: times.txt with one stamp in seconds per pose of --est (and of --ref unless "
                        "--ref-times is given)")
    p.add_argument("--ref-times", default=None, metavar="FILE", help="KITTI: times.txt for --ref")
    p.add_argument("--kitti-rate", type=float, default=10.0, metavar="HZ",
                   help="KITTI without --times: stamps are index / HZ (default 10)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_ate)

    p = vio_sub.add_parser("export", help="write estimator configs (VINS-Fusion, OpenVINS, ORB-SLAM3) from the stack")
    p.add_argument("estimator", choices=["vins", "openvins", "orbslam3"])
    p.add_argument("--stack", default=None, help="stack YAML (default calib/stack.yaml)")
    p.add_argument("--camera", default="thermal", help="camera name in the stack (thermal, color, mono)")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--rate", type=float, default=None,
                   help="feed frame rate in Hz the configs assume (default: the VIO bridge's for the camera: "
                        "20 Hz thermal, 15 Hz colour / mono)")
    p.add_argument("--topic", default=None, help="image topic of the mono8 feed (default: the VIO bridge's)")
    p.add_argument("--imu-topic", default=None, help="IMU topic (default: the VIO bridge's reliable relay)")
    p.add_argument("--imu-noise", default="vio", choices=["vio", "datasheet"], help="IMU noise values to write")
    p.add_argument("--no-imu", action="store_true", help="ORB-SLAM3: monocular settings without the IMU block")
    p.add_argument("--json", action="store_true", help="print the written paths as JSON")
    p.set_defaults(func=_cmd_export)

    p = vio_sub.add_parser("vocab", help="build the DBoW2 ORB vocabulary ORB-SLAM3 loads (cached, not committed)")
    p.add_argument("--k", type=int, default=10, help="branching factor")
    p.add_argument("--L", type=int, default=6, help="depth (ORB-SLAM3 needs L >= 5: it groups features 4 levels up)")
    p.add_argument("--frames", type=int, default=300, help="synthetic training frames")
    p.add_argument("--features", type=int, default=1000, help="ORB features per frame")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--force", action="store_true", help="rebuild even if cached")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_vocab)

    p = vio_sub.add_parser("eval", help="run an estimator N times on a sequence and score it (ATE, RPE, tracking)")
    _add_sequence_args(p)
    p.add_argument("--estimator", default="orbslam3", type=_estimators, metavar="NAME[,NAME]",
                   help="orbslam3, vins, openvins, comma-separated; one that cannot run here (not installed, "
                        "no wheel) is a table cell saying so, not an error")
    p.add_argument("--runs", type=int, default=3, help="runs (mean / std / median over them)")
    p.add_argument("--normalization", default=None,
                   choices=["percentile", "fixed", "temporal", "temporal_clahe"],
                   help="16-bit thermal -> mono8 mode (default temporal); 8-bit frames go to the estimator "
                        "unnormalized, and naming a mode for them is an error")
    p.add_argument("--inertial", action="store_true", help="monocular-inertial (default: monocular)")
    p.add_argument("--align", default=None, choices=["se3", "sim3", "posyaw"],
                   help="headline ATE alignment (default sim3 monocular, se3 inertial)")
    p.add_argument("--out", default=None, help="write result.json, table.md and plots here")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_eval)

    p = vio_sub.add_parser("ablation", help="thermal normalization ablation with ORB-SLAM3 (tracked fraction, ATE)")
    _add_sequence_args(p)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--modes", default="percentile,fixed,temporal,temporal_clahe",
                   help="comma-separated normalization modes")
    p.add_argument("--inertial", action="store_true")
    p.add_argument("--out", default=None, help="write ablation.json and ablation.md here")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_ablation)

    p = vio_sub.add_parser("estimators", help="which estimators are installed here, with their exact command lines")
    p.add_argument("--config-dir", default="vio_configs", help="where the exported configs would be")
    p.add_argument("--camera", default="thermal")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_estimators)


def _cmd_ate(args: argparse.Namespace) -> int:
    from rgbt.eval import ate, load_trajectory

    ref = load_trajectory(args.ref, args.ref_format or args.format, kitti_times=args.ref_times or args.times,
                          kitti_rate_hz=args.kitti_rate)
    est = load_trajectory(args.est, args.format, kitti_times=args.times, kitti_rate_hz=args.kitti_rate)
    result = ate(ref, est, align=args.align, max_diff_s=args.max_diff)
    data = {k: getattr(result, k) for k in ("rmse", "mean", "median", "max", "n_pairs", "scale", "std", "min", "align")}
    if args.json:
        print_json(data)
    else:
        from rgbt.output import print_table

        print_table(f"ATE ({args.align}) {Path(args.est).name} vs {Path(args.ref).name}", ["metric", "value"],
                    [(k, v) for k, v in data.items()])
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from rgbt.stack import load_stack
    from rgbt.vio.config import ExportOptions, export

    stack = load_stack(args.stack)
    opts = ExportOptions(camera=args.camera, image_topic=args.topic, imu_topic=args.imu_topic, rate_hz=args.rate,
                         imu_noise=args.imu_noise)
    paths = export(stack, args.estimator, args.out, opts, inertial=not args.no_imu)
    if args.json:
        print_json({"estimator": args.estimator, "camera": args.camera, "files": [str(p) for p in paths]})
    else:
        for path in paths:
            print(path)
    return 0


def _add_sequence_args(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--bag", action="append",
                     help="any bag rgbt reads (ROS 1 .bag, ROS 2 sqlite3 / MCAP; rgbt simulate output, recordings, "
                          "CART's bags), repeatable")
    src.add_argument("--dataset", action="append", metavar="DIR",
                     help="dataset folder: EuRoC / TUM-VI (mav0/), KITTI odometry (image_0/, times.txt, calib.txt), "
                          "TUM RGB-D (rgb.txt, groundtruth.txt) or CART (NAME.bag + ground_truth/); repeatable")
    src.add_argument("--synthetic", type=float, metavar="SECONDS",
                     help="the built-in SYNTHETIC loop sequence of this length (bring-up, tests)")
    src.add_argument("--trajectory", action="append", metavar="TUM",
                     help="SYNTHETIC thermal rendered along a real trajectory (e.g. CART ground truth), repeatable")
    p.add_argument("--format", dest="dataset_format", default=None, choices=["euroc", "tumvi", "kitti", "tum", "cart"],
                   help="--dataset: layout (default: detected from the folder); --bag X.bag --format cart: CART's "
                        "ground_truth/ folder and SEQUENCES.md clip beside the bag")
    p.add_argument("--ground-truth", default=None, metavar="FILE",
                   help="ground truth instead of the bag's / dataset's own (TUM or CART's TUM for --bag; the "
                        "dataset's format for --dataset)")
    p.add_argument("--camera-topic", default=None, metavar="TOPIC",
                   help="--bag: image topic to feed (default: the stack camera's, or its name in CART's bags)")
    p.add_argument("--imu-topic", default=None, metavar="TOPIC", help="--bag: IMU topic (default: the stack's)")
    p.add_argument("--calib", default=None, metavar="FILE",
                   help="camera calibration instead of the stack's / dataset's: Kalibr camchain, ASL sensor.yaml, "
                        "KITTI calib.txt or a VINS-Fusion config (pinhole + radtan)")
    p.add_argument("--calib-camera", type=int, default=0, metavar="N", help="--calib: camera index in the file")
    p.add_argument("--ground-truth-topic", default=None, metavar="TOPIC",
                   help="--bag: ground truth from this topic of the bag (PoseStamped, Odometry, TransformStamped, "
                        "NavSatFix -> local ENU)")
    p.add_argument("--gt-offset", type=_offset, default=0.0, metavar="S|auto",
                   help="seconds added to the ground-truth stamps to put them on the camera clock; auto: "
                        "estimated from run 0 (grid search of the ATE over ±1 s) and reported")
    p.add_argument("--start", type=float, default=None,
                   help="start offset in s (--bag: from the bag's first message, like rosbag play -s; --dataset: "
                        "from the first frame; CART: default its SEQUENCES.md bag_start)")
    p.add_argument("--duration", type=float, default=None,
                   help="--trajectory: duration in s (default 45); --bag / --dataset: -1 = to the end (default; "
                        "CART: its SEQUENCES.md bag_durr)")
    p.add_argument("--altitude", type=float, default=35.0, help="--trajectory: metres above the trajectory's heights")
    p.add_argument("--stack", default=None, help="stack YAML (default calib/stack.yaml)")
    p.add_argument("--camera", default="thermal", help="camera of the stack to feed")
    p.add_argument("--rate", type=float, default=20.0, help="feed rate in Hz")
    p.add_argument("--seed", type=int, default=0, help="seed of the synthetic sequence")
    p.add_argument("--ffc-at", default="", help="synthetic: FFC freeze times in s, comma-separated")
    p.add_argument("--vocab", default=None, help="DBoW2 vocabulary (default: the cached one, built if missing)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True, help="progress bars on stderr")
    p.add_argument("--pace", type=float, default=1.0,
                   help="feed speed relative to real time (1: like a live camera; 0: as fast as possible)")


def _sequences(args: argparse.Namespace) -> list:
    seqs = _load_sequences(args)
    if getattr(args, "calib", None):
        from rgbt.vio.calibration import apply_calibration

        seqs = [apply_calibration(s, args.calib, args.calib_camera) for s in seqs]
    return seqs


def _estimators(text: str) -> list[str]:
    from rgbt.vio.eval import ESTIMATORS

    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in ESTIMATORS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"{text!r}: expected names from {', '.join(ESTIMATORS)}, comma-separated")
    return names


def _offset(text: str) -> float | str:
    if text == "auto":
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected seconds (a number) or auto") from None


def _load_sequences(args: argparse.Namespace) -> list:
    from rgbt.vio.datasets import clip_sequence
    from rgbt.vio.ground_truth import shift_ground_truth
    from rgbt.vio.sequence import bag_sequence, synthetic_sequence

    start = getattr(args, "start", None)
    if args.synthetic is not None:
        ffc = tuple(float(x) for x in args.ffc_at.split(",") if x.strip())
        seqs = [synthetic_sequence(args.synthetic, rate_hz=args.rate, seed=args.seed, ffc_at_s=ffc)]
    elif args.trajectory:
        from rgbt.vio.sequence import cart_trajectory_sequence

        duration = 45.0 if args.duration is None else args.duration
        seqs = [cart_trajectory_sequence(t, start_s=start or 0.0, duration_s=duration, altitude_m=args.altitude,
                                         rate_hz=args.rate, seed=args.seed) for t in args.trajectory]
    else:
        bag_options = {"stack_path": args.stack, "camera": args.camera, "camera_topic": args.camera_topic,
                       "imu_topic": args.imu_topic}
        if args.dataset:
            from rgbt.vio.datasets import dataset_sequence

            seqs = [dataset_sequence(d, args.dataset_format, ground_truth=args.ground_truth, start_s=start,
                                     duration_s=args.duration, calib=args.calib, bag_options=bag_options)
                    for d in args.dataset]
        elif args.dataset_format == "cart":
            from rgbt.vio.cart import cart_sequence

            seqs = [cart_sequence(b, ground_truth=args.ground_truth, start_s=start, duration_s=args.duration,
                                  **bag_options) for b in args.bag]
        else:
            if args.dataset_format is not None:
                raise EvaluationError(f"--format {args.dataset_format} with --bag: expected --dataset DIR (only "
                                      "--format cart applies to a bag)")
            seqs = [clip_sequence(bag_sequence(b, ground_truth=args.ground_truth,
                                               ground_truth_topic=args.ground_truth_topic, **bag_options),
                                  start or 0.0, -1.0 if args.duration is None else args.duration)
                    for b in args.bag]
    if isinstance(args.gt_offset, float) and args.gt_offset:
        for seq in seqs:
            seq.ground_truth = shift_ground_truth(seq.ground_truth, args.gt_offset)
            seq.meta.update(gt_offset_s=args.gt_offset, gt_offset_method="given (--gt-offset)")
    return seqs


def _vocab_path(args: argparse.Namespace) -> str:
    from rgbt.vio.vocab import ensure_vocabulary

    if args.vocab:
        return args.vocab
    with ProgressBars(enabled=args.progress) as bars:
        return str(ensure_vocabulary(progress=bars))


def _cmd_vocab(args: argparse.Namespace) -> int:
    from rgbt.vio.vocab import VocabOptions, build_report

    opts = VocabOptions(k=args.k, L=args.L, frames=args.frames, features=args.features, seed=args.seed)
    with ProgressBars(enabled=not args.json) as bars:
        report = build_report(opts, force=args.force, progress=bars)
    if args.json:
        print_json(report)
    else:
        print(f"{report['path']}  (k={report['k']} L={report['L']}, {report['words']} words, "
              f"{report['nodes']} nodes, {report['seconds']:.1f} s; trained on synthetic frames)")
    return 0


def _write_outputs(out_dir: str, data: dict, table: str, plots: list | None = None) -> None:
    from rgbt.fileio import to_json

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "result.json").write_text(to_json(data) + "\n")
    (out / "table.md").write_text(table + "\n")


def _cmd_eval(args: argparse.Namespace) -> int:
    """One sequence: today's result JSON. Several (``--bag``/``--dataset``/``--trajectory`` repeated):
    each evaluated in turn, one Table-6 layout over all (Markdown + CSV + JSON)."""
    from rgbt.eval.tracking import RunFrame
    from rgbt.vio.eval import EvalOptions, evaluate_sequence
    from rgbt.vio.ground_truth import shift_ground_truth
    from rgbt.vio.report import csv_rows, markdown_table, plot_run

    seqs = _sequences(args)
    vocab = _vocab_path(args) if "orbslam3" in args.estimator else None
    cells = [(seq, name) for seq in seqs for name in args.estimator]
    results = []
    for seq, name in cells:
        opts = EvalOptions(estimator=name, inertial=args.inertial, runs=args.runs, rate_hz=args.rate,
                           normalization=args.normalization, primary_align=args.align, pace=args.pace,
                           vocab=vocab if name == "orbslam3" else None, gt_offset_auto=args.gt_offset == "auto")
        out_dir = None if not args.out else (Path(args.out) if len(cells) == 1 else
                                             Path(args.out) / (seq.name if len(args.estimator) == 1
                                                               else f"{seq.name}-{name}"))
        with ProgressBars(enabled=args.progress) as bars:
            result = evaluate_sequence(seq, opts, progress=bars, log_dir=out_dir)
        data = result.to_dict()
        data["modality"] = seq.camera.name if seq.camera.name in ("thermal", "color", "mono") else args.camera
        data["command"] = _cell_command(args, seq, name)
        results.append(data)
        if out_dir is not None:
            _write_outputs(str(out_dir), data, markdown_table([data]))
            gt = seq.ground_truth if seq.ground_truth.position_only else seq.ground_truth_camera()
            gt = shift_ground_truth(gt, data["ground_truth"].get("offset_estimate", {}).get("offset_s", 0.0))
            for k, frames in enumerate(result.frames_per_run):
                rf = [RunFrame(f.t_ns, f.tracked, f.pose, f.map, ffc=f.ffc_truth or f.state == "SKIPPED_FROZEN")
                      for f in frames]
                plot_run(rf, gt, out_dir / f"run{k}", align=opts.align,
                         title=f"{seq.name} {opts.estimator} run {k} ({'synthetic' if seq.synthetic else 'real'})")
    table = markdown_table(results)
    summary = results[0] if len(results) == 1 else {"sequences": results, "table_md": table}
    if args.out and len(results) > 1:
        _write_outputs(args.out, summary, table)
        (Path(args.out) / "table.csv").write_text(csv_rows(results))
    elif args.out:
        (Path(args.out) / "table.csv").write_text(csv_rows(results))
    if args.json:
        print_json(summary)
    else:
        print(table)
    return 0


def _cell_command(args: argparse.Namespace, seq: Sequence, estimator: str) -> str:
    """The ``rgbt vio eval`` command that reproduces one cell of the table."""
    import shlex

    src = seq.meta.get("dataset") or seq.meta.get("bag")
    if src:
        parts = ["--dataset" if Path(src).is_dir() and seq.meta.get("dataset") else "--bag", src]
        parts += ["--format", seq.meta["format"]] if seq.meta.get("format") else []
    elif args.synthetic is not None:
        parts = ["--synthetic", f"{args.synthetic:g}", "--seed", str(args.seed)]
    else:
        parts = ["--trajectory", str(seq.meta.get("trajectory", seq.name))]
    for flag, value in (("--ground-truth", args.ground_truth), ("--ground-truth-topic", args.ground_truth_topic),
                        ("--camera-topic", args.camera_topic), ("--imu-topic", args.imu_topic),
                        ("--calib", args.calib), ("--stack", args.stack), ("--start", args.start),
                        ("--duration", args.duration), ("--normalization", args.normalization),
                        ("--align", args.align)):
        if value is not None:
            parts += [flag, str(value)]
    if args.gt_offset:
        parts += ["--gt-offset", str(args.gt_offset)]
    if args.inertial:
        parts.append("--inertial")
    parts += ["--camera", args.camera, "--estimator", estimator, "--runs", str(args.runs), "--rate",
              f"{args.rate:g}", "--pace", f"{args.pace:g}"]
    return "rgbt vio eval " + " ".join(shlex.quote(str(p)) for p in parts)


def _cmd_ablation(args: argparse.Namespace) -> int:
    from rgbt.vio.eval import EvalOptions, evaluate_sequence

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    vocab = _vocab_path(args)
    rows, results = [], []
    for seq in _sequences(args):
        for mode in modes:
            opts = EvalOptions(inertial=args.inertial, runs=args.runs, rate_hz=args.rate, normalization=mode,
                               vocab=vocab, pace=args.pace)
            with ProgressBars(enabled=args.progress) as bars:
                data = evaluate_sequence(seq, opts, progress=bars).to_dict()
            data.pop("runs_frames", None)
            data["modality"] = f"thermal/{mode}"
            results.append(data)
            rows.append({"sequence": seq.name, "synthetic": seq.synthetic, "normalization": mode,
                         "tracked_fraction": data["tracked_fraction_stats"], "ate_rmse": data["ate_rmse"],
                         "ate_full_rmse": data["ate_full_rmse"], "resets": data["resets"], "align": data["align"],
                         "skipped_frozen": data["meta"].get("skipped_frozen"), "runs": args.runs})
    table = ablation_table(rows)
    out = {"ablation": rows, "table": table, "results": results}
    if args.out:
        _write_outputs(args.out, out, table)
    if args.json:
        print_json(out)
    else:
        print(table)
    return 0


def ablation_table(rows: list[dict]) -> str:
    lines = ["| Sequence | Normalization | Tracked % (mean ± std) | ATE tracked (m) | ATE full (m) | Resets |",
             "|---|---|---|---|---|---|"]

    def ms(d: dict, scale: float = 1.0, fmt: str = "{:.3f}") -> str:
        if d.get("mean") is None:
            return "failed"
        return f"{fmt.format(scale * d['mean'])} ± {fmt.format(scale * d['std'])}"

    for r in rows:
        name = r["sequence"] + (" (synthetic)" if r["synthetic"] else "")
        lines.append(f"| {name} | {r['normalization']} | {ms(r['tracked_fraction'], 100, '{:.1f}')} | "
                     f"{ms(r['ate_rmse'])} | {ms(r['ate_full_rmse'])} | {ms(r['resets'], 1, '{:.1f}')} |")
    if rows:
        lines += ["", f"ORB-SLAM3, {rows[0]['align']} alignment per map segment, {rows[0]['runs']} runs per cell; "
                  "full = untracked frames hold the last estimate."]
    return "\n".join(lines)


def _cmd_estimators(args: argparse.Namespace) -> int:
    from rgbt.vio.runners import SPECS, capture_command, command_line, detect

    rows: list[dict[str, Any]] = []
    for name in SPECS:
        info = detect(name)
        rows.append({"estimator": name, "installed": info.installed, "reason": info.reason,
                     "command": command_line(name, args.config_dir, args.camera, info.executable),
                     "odometry_topics": list(SPECS[name].odometry_topics),
                     "capture": capture_command(name, f"{name}_odometry.tum", python="python")})
    rows.append({"estimator": "orbslam3", "installed": True, "reason": "in-process via pyorbslam3",
                 "command": ["rgbt", "vio", "eval", "--estimator", "orbslam3"], "odometry_topics": []})
    if args.json:
        print_json(rows)
    else:
        from rgbt.output import print_table

        print_table(
            "VIO estimators",
            ["estimator", "installed", "command / reason"],
            [
                (
                    r["estimator"],
                    r["installed"],
                    " ".join(r["command"]) + ("" if r["installed"] else f"  [{r['reason']}]"),
                )
                for r in rows
            ],
        )
    return 0

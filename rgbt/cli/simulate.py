"""``rgbt simulate``: a simulated CART stack run written as a rosbag2 MCAP bag (synthetic data).

    rgbt simulate --trajectory TUM_FILE --duration S --seed N --out DIR [--night] [--start S]
    rgbt simulate --dataset --trajectory A --trajectory B --day-and-night --out ROOT

The bag directory also holds ``ground_truth_imu.tum`` (world <- IMU, TUM) and ``labels/`` (every
``--labels-every``-th thermal frame with masks, CART layout). ``--dataset`` writes a CART-layout
segmentation dataset instead (no bag).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from rgbt.sim import SimOptions

from rgbt.errors import ConfigError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="simulate the sensor stack; write an MCAP bag (synthetic)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trajectory", action="append", required=True,
                   help="TUM file (CART ground truth) or circle | lawnmower | hover (repeat with --dataset)")
    p.add_argument("--duration", type=float, default=None,
                   help="seconds to simulate (default: the whole trajectory after --start; 60 for parametric)")
    p.add_argument("--start", type=float, default=0.0, help="offset into the trajectory (s)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--world-seed", type=int, default=None, help="seed of the world layout (default: --seed)")
    p.add_argument("--out", required=True, help="output directory (must not exist or be empty)")
    tod = p.add_mutually_exclusive_group()
    tod.add_argument("--night", action="store_true", help="night: dark colour, thermal inversion")
    tod.add_argument("--day-and-night", action="store_true", help="--dataset: each trajectory by day and night")
    p.add_argument("--stack", default=None, help="stack YAML (default calib/stack.yaml)")
    p.add_argument("--altitude", type=float, default=None,
                   help="TUM: ground this far below the lowest point (default 1 m); parametric: height (20 m)")
    p.add_argument("--pitch", type=float, default=30.0, help="camera head pitch down (deg, 20-45 typical)")
    p.add_argument("--cameras", default="thermal,color,mono", help="comma-separated cameras to render")
    p.add_argument("--no-noise", action="store_true", help="no sensor noise (IMU, images, GNSS)")
    p.add_argument("--drop-prob", type=float, default=0.002, help="probability a frame is lost")
    p.add_argument("--jitter-ms", type=float, default=3.0, help="host arrival jitter sigma (ms)")
    p.add_argument("--ffc-period", type=float, default=30.0, help="thermal FFC period (s, 0 = none)")
    p.add_argument("--labels-every", type=int, default=10,
                   help="bag mode: write every n-th thermal frame to DIR/labels (0 = none); dataset: stride")
    p.add_argument("--label-topic-every", type=int, default=1,
                   help="label topics carry every n-th frame (0 = no label topics)")
    p.add_argument("--compression", choices=["none", "zstd"], default="none")
    p.add_argument("--dataset", action="store_true", help="write a CART-layout dataset instead of a bag")
    p.add_argument("--format", dest="out_format", choices=["bag", "euroc", "kitti", "tum", "cart-ros1"],
                   default="bag",
                   help="bag: MCAP + ground_truth_imu.tum (default); euroc / kitti / tum (TUM RGB-D): that dataset "
                        "layout of the first camera in DIR, ground truth in its own convention; cart-ros1: CART's "
                        "layout, DIR/NAME.bag (ROS 1, CART topic names) + ground_truth/NAME.txt (positions only) + "
                        "SEQUENCES.md. The MCAP bag it was made from is kept in DIR/bag")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def _options(args: argparse.Namespace, trajectory: str, night: bool) -> SimOptions:
    from pydantic import ValidationError

    from rgbt.sim import SimOptions
    from rgbt.sim.options import PARAMETRIC_PATHS
    from rgbt.sim.trajectory import load_tum

    duration = args.duration
    if duration is None:
        if trajectory in PARAMETRIC_PATHS:
            duration = 60.0
        else:
            t, _ = load_tum(trajectory)
            duration = float(t[-1] - t[0]) - args.start
    try:
        return SimOptions(
            stack_path=args.stack, trajectory=trajectory, duration_s=duration, start_s=args.start, seed=args.seed,
            world_seed=args.world_seed,
            night=night, altitude_m=args.altitude, camera_pitch_deg=args.pitch,
            cameras=[c.strip() for c in args.cameras.split(",") if c.strip()], noise=not args.no_noise,
            drop_prob=args.drop_prob, host_jitter_ms=args.jitter_ms, ffc_period_s=args.ffc_period)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError("<command line>", ".".join(map(str, err["loc"])), err.get("input"), err["msg"]) from None


def _progress() -> Progress:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:.1f}/{task.total:.1f} s"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=False,
    )


def run(args: argparse.Namespace) -> int:
    from rgbt.output import print_json, print_table
    from rgbt.sim import SimStack

    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError("<command line>", "--out", str(out), "a new or empty directory")
    t0 = time.perf_counter()
    if args.dataset:
        from rgbt.sim.dataset import write_cart_dataset

        nights = [False, True] if args.day_and_night else [args.night]
        runs = [_options(args, tr, n) for tr in args.trajectory for n in nights]
        stride = max(1, args.labels_every)
        with _progress() as bar:
            tasks: dict[str, TaskID] = {}

            def cb(name: str, t: float) -> None:
                key = name
                if key not in tasks:
                    tasks[key] = bar.add_task(name, total=runs[len(tasks)].duration_s)
                bar.update(tasks[key], completed=t)

            write_cart_dataset(out, runs, stride, progress=cb)
        summary = {"path": str(out), "runs": len(runs), "stride": stride, "synthetic": True,
                   "splits": {k: len((out / f"{k}.txt").read_text().splitlines()) for k in ("train", "val", "test")},
                   "wall_s": round(time.perf_counter() - t0, 2)}
        if args.json:
            print_json(summary)
        else:
            print_table("rgbt simulate --dataset (synthetic)", ["split", "frames"], list(summary["splits"].items()))
        return 0

    if len(args.trajectory) != 1:
        raise ConfigError("<command line>", "--trajectory", args.trajectory, "exactly one trajectory (or --dataset)")
    from rgbt.sim.record import write_sim_bag

    bag_dir = out / "bag" if args.out_format != "bag" else out
    options = _options(args, args.trajectory[0], args.night)
    if not args.json:
        import sys

        print("synthetic run, options:\n  " + options.describe().replace("\n", "\n  "), file=sys.stderr)
    sim = SimStack(options)
    with _progress() as bar:
        task = bar.add_task(f"simulate {sim.trajectory.name}", total=options.duration_s)
        summary = write_sim_bag(sim, bag_dir, label_stride=args.label_topic_every, compression=args.compression,
                                labels_every=args.labels_every,
                                progress=lambda t: bar.update(task, completed=t))
    if args.out_format != "bag":
        summary["dataset"] = _export_dataset(args.out_format, bag_dir, out, options.cameras[0], args.stack)
    summary["wall_s"] = round(time.perf_counter() - t0, 2)
    summary["realtime_factor"] = round(options.duration_s / summary["wall_s"], 3)
    if args.json:
        print_json(summary)
    else:
        rows = [(topic, n) for topic, n in summary["counts"].items()]
        print_table(f"rgbt simulate -> {out} (synthetic)", ["topic", "messages"], rows)
        print(f"{summary['bytes'] / 1e6:.1f} MB in {summary['wall_s']:.1f} s "
              f"({summary['realtime_factor']:.2f}x real time); dropped {summary['dropped']}, "
              f"FFC frames {summary['ffc_frames']}")
    return 0


def _export_dataset(fmt: str, bag_dir: Path, out: Path, camera: str, stack: str | None) -> dict:
    """Write the simulated bag's ``camera`` sequence in the ``fmt`` dataset layout under ``out``
    (``cart-ros1``: the whole bag, every camera)."""
    from rgbt.vio.datasets import write_asl, write_kitti, write_tum_rgbd
    from rgbt.vio.sequence import bag_sequence

    if fmt == "cart-ros1":
        from rgbt.vio.cart import write_cart_ros1

        return {"format": fmt, "path": str(out), "synthetic": True, **write_cart_ros1(bag_dir, out)}
    seq = bag_sequence(bag_dir, stack_path=stack, camera=camera)
    {"euroc": write_asl, "kitti": write_kitti, "tum": write_tum_rgbd}[fmt](seq, out)
    return {"format": fmt, "camera": camera, "path": str(out), "synthetic": True}

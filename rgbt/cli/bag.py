"""``rgbt bag``: inspect, convert, clip and recover bags (ROS 1 ``.bag``, ROS 2 sqlite3 / MCAP)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rgbt.errors import BagError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("bag", help="inspect, convert, clip and recover bags",
                                   description="Bag tools: ROS 1 .bag and ROS 2 (sqlite3 / MCAP) bags.")
    sub = parser.add_subparsers(dest="bag_cmd", metavar="CMD")

    p = sub.add_parser("info", help="topics, types, counts, rates and gaps of a bag")
    p.add_argument("path", help="ROS 1 .bag, ROS 2 bag directory, or .mcap / .db3 file")
    p.add_argument("--json", action="store_true", help="print JSON (machine-readable)")
    p.add_argument("--no-scan", action="store_true",
                   help="do not read message times (faster; rates from counts, no gaps)")
    p.set_defaults(func=_info)

    for name, helptext in (("convert", "convert a bag (ROS 1 or ROS 2) to a rosbag2 MCAP bag directory "
                                       "or (--to ros1) a ROS 1 .bag"),
                           ("clip", "copy a time window of a bag into a rosbag2 MCAP bag directory "
                                    "or (--to ros1) a ROS 1 .bag")):
        p = sub.add_parser(name, help=helptext, description=helptext)
        p.add_argument("input", help="ROS 1 .bag, ROS 2 bag directory, or .mcap / .db3 file")
        p.add_argument("output", help="output bag directory, or .bag file with --to ros1 (must not exist)")
        p.add_argument("--to", choices=("ros2", "ros1"), default="ros2",
                       help="output format: ros2 = rosbag2 MCAP directory (default); ros1 = one ROS 1 .bag")
        p.add_argument("--cart-names", action="store_true",
                       help="rename rgbt stack topics to the names CART's released ROS 1 bags use "
                            "(/eo/color/image_raw -> /eo/color/image_color, /eo/mono/image_raw -> "
                            "/eo/mono/image_mono; see rgbt.bag.renames.CART_ROS1_NAMES)")
        p.add_argument("--start", type=float, default=0.0, metavar="S",
                       help="start offset from the first message, s (like rosbag play -s)")
        p.add_argument("--duration", type=float, default=-1.0, metavar="S",
                       help="duration, s; -1 = to the end (like rosbag play -u; CART's bag_durr)")
        p.add_argument("--cart-renames", action="store_true",
                       help="apply CART's topic renamer: /flir_boson/image -> /boson/thermal/image_raw, "
                            "/camera/image_raw -> /eo/color/image_raw, ... (and drop the topic it deleted)")
        p.add_argument("--rename", action="append", metavar="/OLD:=/NEW", help="rename a topic (repeatable)")
        p.add_argument("--topic", action="append", metavar="NAME", help="keep only this topic (repeatable)")
        p.add_argument("--drop-topic", action="append", metavar="NAME", help="leave this topic out (repeatable)")
        p.add_argument("--compression", choices=("none", "zstd", "lz4", "bz2"), default="none",
                       help="chunk compression: zstd for MCAP, lz4 / bz2 for ROS 1")
        p.add_argument("--split-size-mb", type=float, help="start a new file every N MB")
        p.add_argument("--split-duration", type=float, metavar="S", help="start a new file every S seconds")
        p.add_argument("--json", action="store_true", help="print the summary as JSON")
        p.set_defaults(func=_convert)

    p = sub.add_parser("reindex", help="salvage a truncated or unindexed ROS 1 bag (.bag.active) into a new .bag")
    p.add_argument("input", help="damaged ROS 1 bag")
    p.add_argument("output", help="new ROS 1 .bag (must not exist)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_reindex)

    p = sub.add_parser("write-rate", help="measure MCAP write throughput for the full raw CART stack")
    p.add_argument("--duration", type=float, default=2.0, metavar="S", help="stack time to write per run, s")
    p.add_argument("--repeats", type=int, default=3, help="timed runs (median reported)")
    p.add_argument("--compression", choices=("none", "zstd"), default="none")
    p.add_argument("--raw", action="store_true", help="write pre-serialized CDR (recorder path) instead of "
                                                      "building + serializing each message (simulator path)")
    p.add_argument("--dir", help="directory for the temporary bag (default: system temp)")
    p.add_argument("--no-tune-allocator", action="store_true",
                   help="leave glibc's malloc defaults (see rgbt.memory.tune_allocator)")
    p.add_argument("--no-direct-io", action="store_true",
                   help="write through the page cache instead of O_DIRECT (see rgbt.bag.writer._DirectFile)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_write_rate)

    p = sub.add_parser("extract", help="bags -> images per camera, topic tables, frames.csv (+ samples, pairs)",
                       description="Extract images (lossless, native depth, named by stamp), every other topic as "
                                   "a table, and a frame index (trigger slot, FFC, sync residual, GNSS, autopilot "
                                   "pose, moving flag) from one flight's bags. Rerunning into the same --out skips "
                                   "images already written with the same content.")
    p.add_argument("bags", nargs="+", metavar="BAG", help="ROS 1 .bag, ROS 2 bag directory, or .mcap / .db3 file")
    p.add_argument(
        "--out", required=True, metavar="DIR", help="output directory (new, empty, or an earlier extraction)"
    )
    p.add_argument("--stack", metavar="YAML", help="stack YAML (topics, trigger rate, pair calibration)")
    p.add_argument("--thermal8", choices=("cart", "vio", "linear"),
                   help="also write normalized 8-bit thermal: cart (1-99 %% + CLAHE), vio (temporally smoothed), "
                        "linear (1-99 %%)")
    p.add_argument("--color-format", choices=("png", "jpg"), default="png", help="colour files (png: lossless)")
    p.add_argument("--tables", choices=("csv", "parquet"), default="csv",
                   help="non-image topics as CSV (default) or Parquet (needs the 'parquet' extra)")
    p.add_argument("--no-cart-renames", action="store_true", help="keep CART's older topic names as they are")
    p.add_argument("--gnss-topic", metavar="NAME", help="NavSatFix topic for positions (default: the stack's)")
    p.add_argument("--sample", choices=("cart",),
                   help="also write sampled thermal frames (+ colour) in the CART dataset layout: "
                        "cart = every 3 s moving, 20 s still (> 0.5 m GNSS travel in 2 s)")
    p.add_argument("--every", type=float, metavar="S", help="sample one frame every S seconds instead")
    p.add_argument("--place", default="Flight", help="PLACE of the dataset items (default Flight)")
    p.add_argument("--traj", help="TRAJ of the dataset items (default: the first bag's name)")
    p.add_argument("--pairs", action="store_true", help="write time-matched colour/thermal pairs (pairs/pairs.csv)")
    p.add_argument("--rectify", action="store_true", help="rectify the pairs onto the pair canvas (with --pairs)")
    p.add_argument("--camchain", metavar="YAML", help="Kalibr camchain for --rectify (cam0 colour, cam1 thermal)")
    p.add_argument("--pair", default="color_thermal", help="stack pair for --rectify (default color_thermal)")
    p.add_argument("--pair-tolerance-ms", type=float, metavar="MS",
                   help="largest colour/thermal stamp difference of a pair (default: half a trigger period)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=_extract)

    p = sub.add_parser("video", help="side-by-side preview video (colour | thermal | mono) and a contact sheet",
                       description="Render colour | colormapped thermal (optionally with a segmentation overlay) "
                                   "| mono side by side at a chosen rate, stamps and FFC/sync state burned in; "
                                   "also a contact sheet PNG of sampled frames.")
    p.add_argument("bag", metavar="BAG", help="ROS 1 .bag, ROS 2 bag directory, or .mcap / .db3 file")
    p.add_argument("--out", required=True, metavar="FILE.mp4", help="output video (.mp4 or .avi)")
    p.add_argument("--rate", type=float, default=10.0, metavar="HZ", help="video frame rate (default 10)")
    p.add_argument("--scale", type=float, default=0.5, help="scale of each panel (default 0.5)")
    p.add_argument("--cmap", default="ironbow", help="thermal colormap (default ironbow)")
    p.add_argument("--model", metavar="ONNX", help="segmentation model: overlay its classes on the thermal panel")
    p.add_argument("--stack", metavar="YAML", help="stack YAML (camera topics)")
    p.add_argument("--sheet", metavar="PNG", help="contact sheet path (default: next to the video)")
    p.add_argument("--sheet-every", type=float, default=3.0, metavar="S", help="contact sheet: one frame every S s")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=_video)

    p = sub.add_parser("recover", help="finish an interrupted MCAP recording (killed writer) in place")
    p.add_argument("path", help="rosbag2 MCAP bag directory")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_recover)


def _info(args: argparse.Namespace) -> int:
    from rich.progress import Progress, SpinnerColumn, TextColumn

    from rgbt.bag.info import bag_info
    from rgbt.output import print_json

    with Progress(SpinnerColumn(), TextColumn("scanning message times: {task.completed} messages"),
                  transient=True, console=_stderr_console()) as bar:
        task = bar.add_task("scan", total=None)
        info = bag_info(args.path, scan=not args.no_scan, progress=lambda n: bar.update(task, completed=n))
    if args.json:
        print_json(info)
        return 0
    rows = [(name, t["type"] + ("" if t["known"] else "  (unknown type)"), t["count"], t["rate_hz"],
             "-" if t["max_gap_s"] is None else f"{t['max_gap_s']:.3f} s @ {t['max_gap_at_s']:.1f} s")
            for name, t in info["topics"].items()]
    title = (f"{info['path']}  [{info['format']} / {info['storage']}]  {info['message_count']} messages, "
             f"{info['duration_s']:.3f} s" + ("  SYNTHETIC" if info["synthetic"] else ""))
    _print_wide_table(title, ["topic", "type", "count", "rate Hz", "largest gap"], rows)
    if info["custom_data"]:
        print("custom_data: " + ", ".join(f"{k}={v}" for k, v in sorted(info["custom_data"].items())))
    if info["unknown_types"]:
        print("unknown types (listed, not deserialized): " + ", ".join(info["unknown_types"]))
    if info["unfinished_files"]:
        print(f"unfinished files (interrupted recording): {', '.join(info['unfinished_files'])}; "
              f"run `rgbt bag recover {info['path']}`")
    return 0


def _convert(args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from rgbt.bag.convert import ConvertOptions, convert_bag, ensure_new
    from rgbt.bag.renames import CART_DROP_TOPICS, CART_RENAMES, CART_ROS1_NAMES, parse_renames
    from rgbt.output import print_json

    renames = dict(CART_RENAMES) if args.cart_renames else {}
    if args.cart_names:
        renames.update(CART_ROS1_NAMES)
    renames.update(parse_renames(args.rename))
    drops = list(args.drop_topic or []) + (sorted(CART_DROP_TOPICS) if args.cart_renames else [])
    if args.split_size_mb is not None and args.split_size_mb <= 0:
        raise BagError(f"--split-size-mb {args.split_size_mb}: expected > 0")
    opts = ConvertOptions(renames=renames, topics=args.topic, drop_topics=drops,
                          start_s=args.start, duration_s=args.duration, to=args.to, compression=args.compression,
                          split_size_bytes=int(args.split_size_mb * 1e6) if args.split_size_mb else None,
                          split_duration_ns=int(args.split_duration * 1e9) if args.split_duration else None)
    ensure_new(args.output)
    with Progress(TextColumn(f"{args.bag_cmd}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  transient=True, console=_stderr_console()) as bar:
        task = bar.add_task("messages", total=None)
        result = convert_bag(args.input, args.output, opts,
                             progress=lambda done, total: bar.update(task, completed=done, total=total))
    if args.json:
        print_json(result)
    else:
        print(f"wrote {result['messages']} messages to {result['dst']}")
        for topic, n in result["topics"].items():
            print(f"  {topic}: {n}")
        if result["skipped_topics"]:
            print("skipped (unknown type): " + ", ".join(result["skipped_topics"]))
    return 0


def _write_rate(args: argparse.Namespace) -> int:
    from rgbt.bag.writer import measure_write_rate
    from rgbt.output import print_json

    res = measure_write_rate(args.duration, args.dir, compression=args.compression, serialize=not args.raw,
                             repeats=args.repeats, tune_allocator=not args.no_tune_allocator,
                             direct_io=not args.no_direct_io)
    res["path"] = "raw CDR (recorder)" if args.raw else "build + serialize (simulator)"
    res["compression"] = args.compression
    if args.json:
        print_json(res)
    else:
        print(
            f"MCAP write ({res['path']}, {args.compression}, allocator tuned: {res['allocator_tuned']}): "
            f"{res['mb_s']:.0f} MB/s = {res['ratio']:.2f} x the "
            f"full stack's raw rate ({res['data_rate_mb_s']:.1f} MB/s); runs "
            + ", ".join(f"{x:.0f}" for x in res["runs_mb_s"])
            + f"; read back {res['read_mb_s']:.0f} MB/s; "
            f"O_DIRECT {res['direct_io']}, CPU {res['cpu_ms_per_mb']:.2f} ms per MB written"
        )
    return 0


def _reindex(args: argparse.Namespace) -> int:
    from rgbt.bag.ros1scan import reindex_ros1
    from rgbt.output import print_json

    result = reindex_ros1(args.input, args.output)
    if result["messages"] == 0:
        from pathlib import Path


        Path(args.output).unlink(missing_ok=True)  # an empty salvage is no bag
        raise BagError(f"{args.input}: no whole message to salvage ({result['bytes_dropped']} bytes dropped"
                       + (f": {result['problem']})" if result["problem"] else ")"))
    if args.json:
        print_json(result)
    else:
        print(f"{args.output}: {result['messages']} messages on {result['connections']} connections from "
              f"{result['chunks']} whole chunks; {result['bytes_dropped']} bytes dropped"
              + (f" ({result['problem']})" if result["problem"] else ""))
    return 0


def _recover(args: argparse.Namespace) -> int:
    from rgbt.bag.recover import recover_bag
    from rgbt.output import print_json

    result = recover_bag(args.path)
    if args.json:
        print_json(result)
    else:
        print(f"{args.path}: {result['message_count']} messages; recovered {result['recovered'] or 'nothing'}"
              + (f"; removed empty {result['removed']}" if result["removed"] else "")
              + f"; {result['bytes_lost']} bytes of incomplete data dropped")
    return 0


def _progress_bar(label: str) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), transient=True,
                    console=_stderr_console())


def _extract(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rgbt.bag.extract import ExtractOptions, check_new_or_extraction, extract_bags
    from rgbt.output import print_json

    if args.sample and args.every is not None:
        raise BagError("give either --sample cart or --every S, not both")
    if args.every is not None and not args.every > 0:
        raise BagError(f"--every {args.every}: expected a period > 0 seconds")
    if args.rectify and not args.pairs:
        raise BagError("--rectify works on pairs: add --pairs")
    if args.pair_tolerance_ms is not None and not args.pair_tolerance_ms >= 0:
        raise BagError(f"--pair-tolerance-ms {args.pair_tolerance_ms}: expected >= 0")
    for bag in args.bags:
        if not Path(bag).exists():
            raise BagError(f"{bag}: no such file or directory (expected a ROS 1 .bag, a ROS 2 bag directory, "
                           "or a .mcap / .db3 file)")
    check_new_or_extraction(args.out)
    opts = ExtractOptions(stack_path=args.stack, thermal8=args.thermal8, color_format=args.color_format,
                          tables=args.tables, cart_renames=not args.no_cart_renames, gnss_topic=args.gnss_topic)
    rectifier = None
    if args.rectify:  # before the long part: a bad calibration fails at once
        from rgbt.bag.extract import stack_for
        from rgbt.bag.pairs import rectifier_for

        rectifier = rectifier_for(stack_for(args.stack), args.pair, args.camchain)
    with _progress_bar("extract") as bar:
        task = bar.add_task("messages", total=None)
        result = extract_bags(args.bags, args.out, opts,
                              progress=lambda done, total: bar.update(task, completed=done, total=total))
    summary = result.summary
    if args.sample or args.every is not None:
        from rgbt.bag.annotate import write_sampled_dataset

        with _progress_bar("sample") as bar:
            task = bar.add_task("frames", total=None)
            summary["dataset"] = write_sampled_dataset(
                result.out, result.rows, result.stack, method="cart" if args.sample else "every", every_s=args.every,
                place=args.place, traj=args.traj or Path(args.bags[0]).name.split(".")[0],
                progress=lambda done, total: bar.update(task, completed=done, total=total))
        summary["dataset"].pop("picked")
    if args.pairs:
        from rgbt.bag.pairs import write_pairs

        tol = (int(args.pair_tolerance_ms * 1e6) if args.pair_tolerance_ms is not None
               else summary["slot_tolerance_ns"])
        with _progress_bar("pairs") as bar:
            task = bar.add_task("pairs", total=None)
            summary["pairs"] = write_pairs(result.out, result.rows, tol, rectifier,
                                           progress=lambda done, total: bar.update(task, completed=done, total=total))
    if args.json:
        print_json(summary)
        return 0
    print(
        f"{args.out}: {summary['frames_total']} frames ("
        + ", ".join(f"{c} {n}" for c, n in summary["frames"].items())
        + f"), {len(summary['tables'])} tables; {summary['written']} written, {summary['skipped_unchanged']} "
        f"unchanged; {summary['frames_per_s']} frames/s, {summary['mb_per_s']} MB/s"
    )
    if summary["bad_messages"]:
        print("bad messages (skipped): " + ", ".join(f"{t} {n}" for t, n in summary["bad_messages"].items()))
    for s in summary["salvaged"]:
        print(
            f"salvaged {s['bag']}: damaged end, kept the first {s['kept_bytes']} of {s['size']} bytes ({s['problem']})"
        )
    for s in summary["stopped"]:
        print(f"stopped {s['bag']} after {s['after_messages']} messages (last log time {s['last_log_ns']} ns): "
              f"{s['reason']}")
    if "dataset" in summary:
        d = summary["dataset"]
        print(f"dataset: {d['items']} items of {d['sequence']} in {d['root']} ({d['rule']})")
    if "pairs" in summary:
        p = summary["pairs"]
        print(f"pairs: {p['pairs']} of {p['colour_frames']} colour frames within {p['tolerance_ns'] / 1e6:.3f} ms"
              + (" (rectified)" if p["rectified"] else ""))
    return 0


def _video(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rgbt.bag.video import VideoOptions, write_video
    from rgbt.output import print_json

    if Path(args.out).suffix.lower() not in (".mp4", ".avi"):
        raise BagError(f"{args.out}: expected a .mp4 or .avi output")
    if not args.rate > 0:
        raise BagError(f"--rate {args.rate}: expected > 0 Hz")
    if not 0 < args.scale <= 4:
        raise BagError(f"--scale {args.scale}: expected 0 < scale <= 4")
    opts = VideoOptions(rate_hz=args.rate, scale=args.scale, cmap=args.cmap, model=args.model, stack_path=args.stack,
                        sheet_every_s=args.sheet_every)
    with _progress_bar("video") as bar:
        task = bar.add_task("frames", total=None)
        result = write_video(args.bag, args.out, opts, sheet=args.sheet,
                             progress=lambda done, total: bar.update(task, completed=done, total=total))
    if args.json:
        print_json(result)
    else:
        print(
            f"{result['video']}: {result['frames']} frames at {args.rate:g} Hz, {result['size'][0]}x{result['size'][1]}"
            f"; contact sheet {result['sheet']} ({result['sheet_frames']} frames)"
        )
    return 0


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(file=sys.stderr)


def _print_wide_table(title: str, columns: list[str], rows: list[tuple[Any, ...]]) -> None:
    """A rich table that keeps full topic and type names when stdout is not a terminal."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for col in columns:
        table.add_column(col, no_wrap=True)
    for row in rows:
        table.add_row(*[f"{v:.3f}" if isinstance(v, float) else str(v) for v in row])
    Console(width=None if sys.stdout.isatty() else 200).print(table)

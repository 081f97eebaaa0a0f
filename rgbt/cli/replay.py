"""``rgbt replay PATH [--rate R]``: play a ROS 1 or ROS 2 bag onto its topics with ``/clock``."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("replay", help="play a ROS 1 / ROS 2 bag onto ROS 2 topics with /clock")
    p.add_argument("path", help="a ROS 1 .bag, a ROS 2 bag directory or an .mcap file")
    p.add_argument("--rate", type=float, default=1.0, help="time scale (2 = twice as fast; 0 = as fast as "
                   "subscribers keep up)")
    p.add_argument("--start", type=float, default=0.0, help="skip the first S seconds of the bag")
    p.add_argument("--duration", type=float, default=0.0, help="play only D seconds (0: to the end)")
    p.add_argument("--topics", nargs="*", default=[], help="only these topics (default: all)")
    p.add_argument("--rename", action="append", default=[], metavar="OLD:=NEW", help="rename a topic (repeatable)")
    p.add_argument("--no-clock", action="store_true", help="do not publish /clock")
    p.add_argument("--loop", action="store_true", help="play again from the start when done")
    p.add_argument("--qos", choices=["reliable", "sensor_data"], default="reliable", help="publisher QoS")
    p.add_argument("--wait-for", nargs="*", default=[], metavar="TOPIC",
                   help="start once each of these (output) topics has a subscriber (up to 30 s)")
    p.add_argument("--delay", type=float, default=1.0, help="then wait this many seconds before playing")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rgbt.errors import BagError
    from rgbt.graph.options import ReplayOptions

    if not Path(args.path).exists():
        raise BagError(f"{args.path}: no such bag")
    from rgbt.bag.reader import open_bag

    with open_bag(args.path):  # a bag that cannot be read fails here, before any ROS process starts
        pass
    options = ReplayOptions(path=str(Path(args.path).resolve()), rate=args.rate, start_s=args.start,
                            duration_s=args.duration, topics=args.topics, renames=args.rename,
                            clock=not args.no_clock, loop=args.loop, output_qos=args.qos,
                            start_delay_s=args.delay, wait_for=args.wait_for,
                            exit_when_done=True)
    from rgbt.graph.launcher import clean_shm, shm_files
    from rgbt.ros_env import apply_ros_defaults

    apply_ros_defaults()
    shm_before = shm_files()
    from rclpy.parameter import Parameter

    from rgbt.graph.options import flatten
    from rgbt.ros.spin import node_class, run_nodes

    params = [Parameter(k, value=v) for k, v in flatten(options.model_dump()).items()
              if not (isinstance(v, list) and not v)]
    cls = node_class("replay")
    try:
        return run_nodes([lambda: cls("replay", parameter_overrides=params)], ["rgbt"])
    finally:
        clean_shm(shm_before)

"""``rgbt up PROFILE [--duration S]``: start a profile's ROS 2 graph (no ``ros2 launch`` needed).

One graph per profile (a lock, :mod:`rgbt.graph.instance_lock`: a second ``rgbt up`` of it exits 2
naming the PID that holds it); the graph dies with the launcher, a terminal hang-up (SIGHUP) leaves
the flight going with its output in a log file, and under systemd (``rgbt service``) the launcher
reports ready / watchdog / status (:mod:`rgbt.graph.launcher`).
"""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "up", help="start a ROS 2 graph from a profile in launch/ (bench-sim, flight, replay)",
        description="Start a profile's ROS 2 graph: one process per process group, supervised (a failed "
                    "group is restarted with back-off) until SIGINT / SIGTERM or --duration.",
        epilog="One graph per profile: a second `rgbt up` of the same profile exits 2 naming the PID "
               "holding its lock (/run/lock/rgbt/NAME.lock when writable, else $XDG_RUNTIME_DIR/rgbt, else "
               "a temp folder; RGBT_LOCK_DIR overrides). Every node process dies with the launcher (a kill -9 "
               "of it ends the graph, the recorder closing its bag). SIGHUP (a dropped SSH session) does not "
               "stop the flight: the output goes on in up.log in the work folder printed at start. Under "
               "systemd (`rgbt service install`) it sends READY=1, WATCHDOG=1 and STATUS= to $NOTIFY_SOCKET.")
    p.add_argument("profile", help="profile name (launch/NAME.yaml) or path to a profile YAML")
    p.add_argument("--duration", type=float, default=None, help="stop after S seconds (default: until SIGINT)")
    p.add_argument("--set", action="append", default=[], metavar="NODE.PARAM=VALUE",
                   help="override a node parameter (repeatable), e.g. recorder.out_dir=/tmp/bags")
    p.add_argument("--strict", action="store_true",
                   help="stop the whole graph when any process fails (default: restart it with back-off)")
    p.add_argument("--single-process", action="store_true", help="run every node in one process")
    p.add_argument("--isolate-drivers", action=argparse.BooleanOptionalAction, default=None,
                   help="each device driver in its own process, the IMU's with the trigger sync (default: the "
                        "profile's isolate_drivers)")
    p.add_argument("--print", action="store_true", help="print the nodes and parameters and exit")
    p.add_argument("--skip-doctor", action="store_true",
                   help="start the flight profile without `rgbt doctor --profile flight` first")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from rgbt.graph.instance_lock import InstanceLock, instance_name
    from rgbt.graph.launcher import run_graph
    from rgbt.graph.profile import isolate_drivers, node_specs, parse_set, profile_env, profile_isolates_drivers
    from rgbt.graph.supervisor import SupervisorOptions
    from rgbt.output import print_json

    specs = node_specs(args.profile, parse_set(args.set))
    if args.isolate_drivers or (args.isolate_drivers is None and profile_isolates_drivers(args.profile)):
        specs = isolate_drivers(specs)
    if args.single_process:
        specs = [replace(s, process="all") for s in specs]
    if args.print:
        print_json([s.__dict__ for s in specs])
        return 0
    # before the doctor: a running graph holds the devices the doctor would probe
    with InstanceLock.acquire(instance_name(args.profile)) as lock:
        if _is_flight(args.profile) and not args.skip_doctor:
            from rgbt.cli.doctor import gate

            code = gate(args.profile, "up")
            if code:
                return code
        else:
            from rgbt.ros_env import check_single_rclpy

            check_single_rclpy()  # two rclpy stacks: refuse before starting processes (exit 2)
        return run_graph(specs, args.duration, profile_env(args.profile), log=lambda m: print(m, file=sys.stderr),
                         supervision=SupervisorOptions(strict=args.strict), lock=lock)


def _is_flight(profile: str) -> bool:
    """``flight`` or a path to ``launch/flight.yaml`` (the hardware profile the doctor gates)."""
    from pathlib import Path

    from rgbt.graph.profile import profile_path

    return Path(profile_path(profile)).stem == "flight"

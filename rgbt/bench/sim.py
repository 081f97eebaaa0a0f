"""``rgbt bench sim``: simulator real-time factor and MCAP write rate of the full raw stack.

* ``realtime_factor``: simulated seconds per wall second generating every stream of the full stack
  (thermal 640x512 @60 Hz, colour + mono 960x600 @30 Hz, IMU 200 Hz, GNSS 5 Hz, pose 20 Hz, state,
  trigger) with thermal and colour labels, world build excluded (reported as ``world_build_s``).
* ``mcap_write_mb_s``: rate of writing the full raw stack (simulated frames, pre-serialized) to a
  rosbag2 MCAP bag with ``rgbt.bag.writer.BagWriter``; ``raw_data_rate_mb_s`` the stack's raw data
  rate and ``mcap_vs_data_rate`` their ratio (budget >= 1.5); ``mcap_write_serialize_*``: the bag
  area's ``measure_write_rate(serialize=True)`` (build + serialize + write each message).
* ``end_to_end_realtime_factor``: ``rgbt simulate`` work (generate + serialize + write) for the
  same clip.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rgbt.output import print_table


@dataclass(frozen=True)
class SimBenchOptions:
    """What ``rgbt bench sim`` measures."""

    duration_s: float = 5.0  #: simulated seconds per measurement
    trajectory: str = "circle"  #: a TUM file or circle | lawnmower | hover
    seed: int = 0
    tmp_dir: str | None = None  #: folder for the temporary bag (None: the system's temporary folder)
    skip_bag: bool = False  #: only measure generation


def options_from_args(args: argparse.Namespace) -> SimBenchOptions:
    """The options of the command line :func:`add_arguments` defines."""
    return SimBenchOptions(duration_s=args.duration, trajectory=args.trajectory, seed=args.seed, tmp_dir=args.tmp,
                           skip_bag=args.skip_bag)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--duration", type=float, default=5.0, help="simulated seconds per measurement")
    parser.add_argument("--trajectory", default="circle", help="TUM file or circle | lawnmower | hover")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tmp", default=None, help="folder for the temporary bag (default: system temp)")
    parser.add_argument("--skip-bag", action="store_true", help="only measure generation")


def run(bench: SimBenchOptions) -> dict:
    from rgbt.memory import tune_allocator
    from rgbt.sim import SimOptions, SimStack
    from rgbt.sim.messages import MessageFactory, typestore
    from rgbt.sim.record import open_writer, write_sim_bag
    from rgbt.sim.simstack import SimSample

    tune_allocator()  # as `rgbt simulate` runs (its BagWriter applies it): glibc keeps big buffers
    options = SimOptions(trajectory=bench.trajectory, duration_s=bench.duration_s, seed=bench.seed)
    sim = SimStack(options)
    t0 = time.perf_counter()
    _ = sim.world
    world_s = time.perf_counter() - t0
    for name in options.cameras:  # per-camera ray precomputation (once per run)
        sim.renderer(name)
    setup_s = time.perf_counter() - t0

    counts: dict[str, int] = {}
    raw_bytes = 0
    kept: dict[str, SimSample] = {}
    t0, c0 = time.perf_counter(), time.process_time()
    for s in sim.samples():
        counts[s.kind] = counts.get(s.kind, 0) + 1
        if s.kind in options.cameras:
            raw_bytes += s.data.nbytes
            if s.kind in ("thermal", "color"):  # the label maps the bag carries
                _ = s.label
            kept.setdefault(s.kind, s)
    gen_s = time.perf_counter() - t0
    gen_cpu_s = time.process_time() - c0
    result = {
        "synthetic": True,
        "duration_s": options.duration_s,
        "trajectory": bench.trajectory,
        "realtime_factor": round(options.duration_s / gen_s, 3),
        "generation_wall_s": round(gen_s, 3),
        "generation_cpu_s": round(gen_cpu_s, 3),
        "world_build_s": round(world_s, 3),
        "setup_s": round(setup_s, 3),
        "samples": counts,
        "raw_data_rate_mb_s": round(raw_bytes / options.duration_s / 1e6, 2),
        "budget": {"realtime_factor": ">= 2", "mcap_vs_data_rate": ">= 1.5"},
    }
    if bench.skip_bag:
        return result

    # MCAP write rate of the full raw stack: one second of pre-serialized messages written
    # repeatedly (serialization is timed separately: it is part of rgbt simulate, not of a recorder)
    store = typestore()
    factory = MessageFactory(store, sim.stack)
    stack = sim.stack
    raws = []
    serialize_ms = {}
    for cam, s in kept.items():
        spec = stack.camera(cam)
        msg = factory.image(s.data, s.t_ns, spec.frame_id, spec.encoding)
        raw = bytes(store.serialize_cdr(msg, "sensor_msgs/msg/Image"))
        t0 = time.perf_counter()
        for _ in range(10):
            store.serialize_cdr(factory.image(s.data, s.t_ns, spec.frame_id, spec.encoding), "sensor_msgs/msg/Image")
        serialize_ms[cam] = round((time.perf_counter() - t0) * 1e2, 3)
        raws.append((spec.topic, raw, int(round(spec.rate_hz))))
    tmp = Path(tempfile.mkdtemp(prefix="rgbt-bench-sim-", dir=bench.tmp_dir))
    try:
        writer = open_writer(tmp / "write", compression="none", custom_data={"rgbt.synthetic": "true"}, store=store)
        for topic, _, _ in raws:
            writer.add_topic(topic, "sensor_msgs/msg/Image")
        written = 0
        t0 = time.perf_counter()
        t_ns = 0
        for _second in range(int(max(1, round(options.duration_s)))):
            for topic, raw, rate in raws:
                for _ in range(rate):
                    t_ns += 1000
                    writer.write(topic, t_ns, raw)
                    written += len(raw)
        writer.close()
        write_s = time.perf_counter() - t0
        seconds = int(max(1, round(options.duration_s)))
        result["mcap_write_mb_s"] = round(written / write_s / 1e6, 1)
        result["mcap_vs_data_rate"] = round(result["mcap_write_mb_s"] / (written / seconds / 1e6), 2)
        result["serialize_image_ms"] = serialize_ms

        sim2 = SimStack(options)
        t0 = time.perf_counter()
        summary = write_sim_bag(sim2, tmp / "simulate", label_stride=1)
        e2e = time.perf_counter() - t0
        result["end_to_end_realtime_factor"] = round(options.duration_s / e2e, 3)
        result["end_to_end_bag_mb"] = round(summary["bytes"] / 1e6, 1)
        result["writer"] = "rgbt.bag.writer.BagWriter"
        # the bag area's reference measurement of the simulator path (random pixels, build +
        # serialize + write each message, median of 3 runs)
        from rgbt.bag.writer import measure_write_rate

        ref = measure_write_rate(duration_s=min(2.0, options.duration_s), out_dir=bench.tmp_dir, serialize=True)
        result["mcap_write_serialize_mb_s"] = round(ref["mb_s"], 1)
        result["mcap_write_serialize_ratio"] = round(ref["ratio"], 2)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return result


def print_result(result: dict) -> None:
    keys = ["realtime_factor", "generation_cpu_s", "world_build_s", "raw_data_rate_mb_s", "mcap_write_mb_s",
            "mcap_vs_data_rate", "mcap_write_serialize_mb_s", "mcap_write_serialize_ratio",
            "end_to_end_realtime_factor", "writer"]
    print_table("rgbt bench sim (synthetic)", ["metric", "value"],
                [(k, result[k]) for k in keys if k in result])

"""A simulated 20 s Duck sequence written as MCAP and read back bit-exact (at full rate, all streams)."""

from __future__ import annotations

import json
import shutil
import zlib
from collections import Counter, defaultdict
from pathlib import Path

import cv2
import numpy as np
import pytest
from rosbags.highlevel import AnyReader

from rgbt.sim import SimOptions, SimStack
from rgbt.sim.messages import typestore
from rgbt.topics import GT_TOPIC, IMU_SYNC_TOPIC, LABEL_TOPICS, TRIGGER_TOPIC
from rgbt.sim.record import write_sim_bag

pytestmark = pytest.mark.slow  # the acceptance run: 20 s of the full stack at full rate

DURATION_S = 20.0
PREFIX_S = 8.0  # of the run regenerated for the bit-exact check


def _digest(buf) -> tuple[int, int]:  # noqa: ANN001
    mv = memoryview(buf).cast("B")
    return zlib.crc32(mv), mv.nbytes


def _options(duck_tum: Path) -> SimOptions:
    return SimOptions(trajectory=str(duck_tum), duration_s=DURATION_S, start_s=2.0, seed=11, world_seed=0,
                      ffc_first_s=6.0, drop_prob=0.003)


@pytest.fixture(scope="module")
def duck_bag(duck_tum: Path, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("duckbag")
    sim = SimStack(_options(duck_tum))
    summary = write_sim_bag(sim, root / "bag", labels_every=60)
    records = defaultdict(list)  # topic -> [(log_ns, stamp_ns, digest / message fields)]
    meta = {}
    with AnyReader([root / "bag"], default_typestore=typestore()) as reader:
        meta["custom_data"] = _custom_data(root / "bag")
        for conn, t_log, raw in reader.messages():
            msg = reader.deserialize(raw, conn.msgtype)
            stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
            if conn.msgtype == "sensor_msgs/msg/Image":
                records[conn.topic].append((t_log, stamp, msg.encoding, msg.height, msg.width, _digest(msg.data)))
            elif conn.topic in (TRIGGER_TOPIC, IMU_SYNC_TOPIC):
                ref = msg.time_ref.sec * 10**9 + msg.time_ref.nanosec
                records[conn.topic].append((t_log, stamp, ref, int(msg.source)))
            else:
                records[conn.topic].append((t_log, stamp))
    yield sim, summary, records, meta, root / "bag"
    shutil.rmtree(root, ignore_errors=True)  # ~3 GB


def _custom_data(bag: Path) -> dict:
    import yaml

    info = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    return info.get("custom_data") or {}


def test_bag_metadata_and_counts(duck_bag) -> None:
    sim, summary, records, meta, path = duck_bag
    from rgbt.bag.reader import open_bag  # contract C2's reader agrees with rosbags' own

    with open_bag(path) as bag:
        assert bag.synthetic
        assert {name: info.count for name, info in bag.topics.items()} == \
               {k: len(v) for k, v in records.items()}
    cd = meta["custom_data"]
    assert cd["rgbt.synthetic"] == "true"
    assert json.loads(cd["rgbt.sim.options"])["seed"] == 11
    stack = sim.stack
    n_thermal = int(DURATION_S * 60)
    assert len(records[stack.camera("thermal").topic]) == n_thermal - summary["dropped"]["thermal"]
    assert len(records[stack.camera("color").topic]) == n_thermal // 2 - summary["dropped"]["color"]
    assert len(records[stack.imu.topic]) == int(DURATION_S * 200)
    assert len(records[GT_TOPIC]) == int(DURATION_S * 200)
    assert len(records[TRIGGER_TOPIC]) == n_thermal
    assert len(records[stack.gnss.topic]) == int(DURATION_S * 5)
    assert len(records[stack.autopilot.pose_topic]) == int(DURATION_S * 20)
    assert {k: len(v) for k, v in records.items()} == {k: v for k, v in summary["counts"].items() if v}
    assert summary["ffc_frames"] >= 29  # one FFC at 6 s (0.5 s frozen)


def test_bag_images_bit_exact_with_regenerated_run(duck_bag, duck_tum: Path) -> None:
    sim, summary, records, _, _ = duck_bag
    bag = {}
    for cam in ("thermal", "color", "mono"):
        topic = sim.stack.camera(cam).topic
        bag[cam] = {stamp: d for _, stamp, _, _, _, d in records[topic]}
        assert len(bag[cam]) == len(records[topic])  # one message per stamp
    for cam, topic in LABEL_TOPICS.items():
        bag[cam + "_label"] = {stamp: d for _, stamp, _, _, _, d in records[topic]}
    again = SimStack(_options(duck_tum))  # a fresh run with the same seed
    # its first 8 s (past the FFC at 6 s): samples come in true-time order, each stream from its own
    # seeded generator, so a prefix of the same run is bit-exact or not like the whole (2.5x faster)
    cutoff_ns = min(bag["thermal"]) + PREFIX_S * 10**9
    for kind in list(bag):
        bag[kind] = {t: d for t, d in bag[kind].items() if t < cutoff_ns}
    compared = Counter()
    for s in again.samples(["thermal", "color", "mono"]):
        if s.t_ns >= cutoff_ns:
            break
        if s.dropped:
            assert s.t_ns not in bag[s.kind]
            continue
        assert bag[s.kind][s.t_ns] == _digest(np.ascontiguousarray(s.data)), (s.kind, s.seq)
        if s.kind + "_label" in bag:
            assert bag[s.kind + "_label"][s.t_ns] == _digest(s.label)
        compared[s.kind] += 1
    assert compared["thermal"] == len(bag["thermal"]) and compared["color"] == len(bag["color"])
    assert compared["mono"] == len(bag["mono"]) and compared["thermal"] >= 0.95 * PREFIX_S * 60


def test_bag_stamps_and_trigger_counts(duck_bag) -> None:
    sim, _, records, _, _ = duck_bag
    trig = records[TRIGGER_TOPIC]
    count_of = {ref: count for _, _, ref, count in trig}
    assert sorted(count_of.values()) == list(range(1, len(trig) + 1))
    assert all(stamp > ref for _, stamp, ref, _ in trig)  # header = host arrival, time_ref = pulse
    for cam, div in (("thermal", 1), ("color", 2), ("mono", 2)):
        topic = sim.stack.camera(cam).topic
        for t_log, stamp, enc, h, w, _ in records[topic]:
            assert t_log > stamp  # log time = host arrival after the trigger
            count = count_of[stamp]  # every frame stamp is a trigger pulse time
            assert (count - 1) % div == 0
        assert enc == sim.stack.camera(cam).encoding and (w, h) == (sim.stack.camera(cam).width,
                                                                   sim.stack.camera(cam).height)
    imu = records[sim.stack.imu.topic]
    assert all(t_log > stamp for t_log, stamp in imu)
    # the VN-100 SyncIn count of every IMU sample names the last pulse before it
    sync = records[IMU_SYNC_TOPIC]
    assert [stamp for _, stamp, _, _ in sync] == [stamp for _, stamp in imu]
    for _, stamp, last_pulse, count in sync:
        assert count_of[last_pulse] == count and 0 <= stamp - last_pulse < 1e9 / 60


def test_ground_truth_and_labels_folder(duck_bag) -> None:
    sim, summary, records, _, bag = duck_bag
    lines = [ln for ln in (bag / "ground_truth_imu.tum").read_text().splitlines() if not ln.startswith("#")]
    gt_t, gt_T = sim.ground_truth()
    assert len(lines) == len(gt_t) == int(DURATION_S * 200)
    first = np.array(lines[0].split(), dtype=float)
    assert abs(first[0] - gt_t[0] * 1e-9) < 1e-6
    assert np.allclose(first[1:4], gt_T[0, :3, 3], atol=1e-9)
    ids = (bag / "labels" / "test.txt").read_text().split()
    assert len(ids) == summary["labels"]["frames"] >= 15  # every 60th of 1200 frames minus drops
    labels = {stamp: d for _, stamp, _, _, _, d in records[LABEL_TOPICS["thermal"]]}
    stamps = sim.frame_times("thermal")
    for line in ids:
        place_traj, fid = line.rsplit("/", 1)
        seq_dir = bag / "labels" / place_traj
        mask = cv2.imread(str(seq_dir / "masks" / f"{fid}.png"), cv2.IMREAD_UNCHANGED)
        thermal = cv2.imread(str(seq_dir / "thermal16" / f"{fid}.png"), cv2.IMREAD_UNCHANGED)
        assert mask.dtype == np.uint8 and thermal.dtype == np.uint16 and thermal.shape == (512, 640)
        assert _digest(mask) == labels[int(stamps[int(fid)])]  # same labels as the bag's topic
        assert (seq_dir / "rgb" / f"{fid}.png").is_file() or int(fid) % 2

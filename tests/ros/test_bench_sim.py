"""Acceptance: ``rgbt up bench-sim`` - the virtual stack at full rate through sync -> preprocess ->
rectify -> fusion, segmentation -> recorder, as real processes on loopback. The bag must hold every
frame and IMU sample the sources published (counts compared with the virtual stack's manifest),
bit-exact images (CRC32 of every published frame) and restamped header times; the RGB-T fusion
node (live in bench-sim, whose virtual stack streams the colour camera) publishes fused class maps."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

from rgbt.paths import REPO_ROOT

pytestmark = [pytest.mark.ros, pytest.mark.slow]

# the cores this graph wraps, imported here so a broken one fails this test instead of a node
import rgbt.bag.writer  # noqa: E402,F401
import rgbt.image.normalize  # noqa: E402,F401
import rgbt.seg.stage  # noqa: E402,F401
import rgbt.sim  # noqa: E402,F401
import rgbt.sync  # noqa: E402,F401

SIM_S = 4.0  # simulated seconds, generated before playing (preload) and then played at the real rate
WORLD_PX = 1024  # a small simulated world raster: quicker to build
MIN_FIT_S = 1.5  # IMU clock fit window before the restamper locks (default 4 s: shortened to keep the bag small)


def stamp_ns(msg) -> int:  # type: ignore[no-untyped-def]
    return int(msg.header.stamp.sec) * 1_000_000_000 + int(msg.header.stamp.nanosec)


def test_bench_sim_records_everything_bit_exact(ros_env: dict, tmp_path: Path, read_bag) -> None:
    out, manifest_path = tmp_path / "bags", tmp_path / "sources.json"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    up = subprocess.Popen(
        [sys.executable, "-m", "rgbt", "up", "bench-sim", "--duration", "150",
         "--set", f"recorder.out_dir={out}", "--set", f"virtual_stack.manifest_path={manifest_path}",
         "--set", f"virtual_stack.sim.duration_s={SIM_S}", "--set", f"virtual_stack.preload_s={SIM_S}",
         "--set", f"virtual_stack.sim.world_size_px={WORLD_PX}",
         "--set", f"trigger_sync.restamper.min_fit_s={MIN_FIT_S}"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (manifest_path.exists() and json.loads(manifest_path.read_text()).get("done")):
            assert up.poll() is None and time.monotonic() < deadline, "virtual stack never finished"
            time.sleep(0.5)
        time.sleep(1.5)  # the last samples through sync, pipeline and recorder
        up.send_signal(signal.SIGINT)  # a user's Ctrl-C: ordered shutdown, bag closed
        log, _ = up.communicate(timeout=60)
    finally:
        if up.poll() is None:
            up.kill()
    assert up.returncode == 0, log
    sources = json.loads(manifest_path.read_text())
    assert sources.get("done"), "the virtual stack did not publish all its samples in time"
    assert sources["synthetic"] is True
    bags = sorted(out.iterdir())
    assert len(bags) == 1, bags
    recorded = read_bag(bags[0])
    rec_manifest = json.loads((bags[0] / "rgbt_manifest.json").read_text())
    assert rec_manifest["stop_reason"] == "shutdown" and rec_manifest["synthetic"] is True

    # every frame / IMU sample the sources published is in the bag: restamped on its stack topic, or
    # host-stamped on the trigger sync's before-lock topic (never mixed into the stack topic)
    from rgbt.topics import unlocked_topic
    from rgbt.stack import load_stack

    stack = load_stack()
    before_lock = {cam.topic: unlocked_topic(name) for name, cam in stack.cameras.items()}
    before_lock[stack.imu.topic] = unlocked_topic("imu")
    for topic, count in sources["stack_topics"].items():
        assert count > 0, topic
        got = len(recorded.get(topic, [])) + len(recorded.get(before_lock[topic], []))
        why = {t: rec_manifest["topics"].get(t) for t in (topic, before_lock[topic])}
        assert got == count, (topic, len(recorded.get(topic, [])), len(recorded.get(before_lock[topic], [])), count,
                              why, rec_manifest.get("sync"), log[-3000:])
    # the other source topics too (GNSS, autopilot pose, trigger)
    for topic in ("/gps/fix", "/uav1/mavros/local_position/pose", "/rgbt/trigger"):
        assert len(recorded[topic]) == sources["topics"][topic], topic

    for topic, frames in sources["frames"].items():
        got = [zlib.crc32(bytes(msg.data)) for _, msg, _ in recorded[topic]]
        early = [zlib.crc32(bytes(msg.data)) for _, msg, _ in recorded.get(before_lock[topic], [])]
        assert sorted(got + early) == sorted(frames["crc32"]), f"{topic}: images differ from what was published"
        # restamped: header stamps are trigger times (the sources' true times), not host arrival
        truth = dict(zip(frames["crc32"], frames["t_true_ns"]))
        stamps = np.array([stamp_ns(msg) for _, msg, _ in recorded[topic]], dtype=np.int64)
        true = np.array([truth[c] for c in got], dtype=np.int64)
        log_times = np.array([t for t, _, _ in recorded[topic]], dtype=np.int64)
        assert np.all(stamps < log_times), topic  # a trigger happens before the frame arrives
        err_ms = np.abs(stamps - true) / 1e6
        print(f"{topic}: restamp error median {np.median(err_ms):.3f} ms")
        assert np.median(err_ms) < 0.1, (topic, np.median(err_ms))  # the one-sided fit: microseconds

    # the pipeline ran alongside: segmentation masks carry the restamped thermal times
    thermal = {stamp_ns(m) for _, m, _ in recorded["/boson/thermal/image_raw"]}
    seg = recorded.get("/rgbt/seg/class_ids", [])
    assert seg and {stamp_ns(m) for _, m, _ in seg} <= thermal
    assert all(m.encoding == "mono8" and m.height == 512 and m.width == 640 for _, m, _ in seg)
    rect = recorded.get("/rgbt/rectified/thermal", [])
    assert rect and {stamp_ns(m) for _, m, _ in rect} <= thermal
    # RGB-T fusion live (the colour camera streams): fused class maps on the rectified colour canvas,
    # stamped with the triggers of recorded colour frames, CART ids of the fusion model's table
    color = {stamp_ns(m) for _, m, _ in recorded["/eo/color/image_raw"]}
    fused = recorded.get("/rgbt/fusion/class_ids", [])
    assert fused and {stamp_ns(m) for _, m, _ in fused} <= color & thermal
    assert all(m.encoding == "mono8" and (m.height, m.width) == (600, 960) for _, m, _ in fused)
    assert max(int(np.asarray(m.data).max()) for _, m, _ in fused) <= 11

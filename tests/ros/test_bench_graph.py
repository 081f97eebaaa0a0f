"""``rgbt bench graph --json``: the command-line contract of issue 18 on a short run (real processes,
loopback, a private DDS domain). Shape and bookkeeping only: no speed is asserted here (speed
targets are in BENCHMARKS.md). Synthetic data (the simulated stack)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rgbt.paths import REPO_ROOT

pytestmark = [pytest.mark.ros, pytest.mark.slow]


def test_bench_graph_json_contract(ros_env: dict) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("ROS_DOMAIN_ID", None)  # the bench picks its own private domain
    proc = subprocess.run([sys.executable, "-m", "rgbt", "bench", "graph", "--duration", "2", "--no-segmentation",
                           "--load", "1", "--json"], env=env, cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["load"] == 1 and "segmentation" not in result["nodes"] and "fusion" in result["nodes"]
    assert set(result["exit_codes"].values()) <= {0}
    topics = result["topics"]
    for name in ("/rgbt/raw/thermal/image", "/boson/thermal/image_raw", "/eo/color/image_raw", "/imu/imu"):
        assert name in topics, sorted(topics)
    for name, t in topics.items():
        assert {"published", "received", "dropped", "p50_ms", "p99_ms"} <= set(t), name
        if t["received"]:  # a topic that carried messages has numbers, never null
            for key in ("published", "received", "dropped", "p50_ms", "p99_ms"):
                assert isinstance(t[key], (int, float)), (name, key, t)
            assert t["dropped"] == max(0, t["published"] - t["received"]) or name.startswith("/rgbt/raw/")
    assert "segmentation_hz" in result
    rec = result["recorder"]
    assert isinstance(rec["received"], int) and isinstance(rec["dropped"], int)
    stack = [t for n, t in topics.items() if n in ("/boson/thermal/image_raw", "/eo/color/image_raw",
                                                   "/eo/mono/image_raw", "/imu/imu")]
    assert rec["received"] >= sum(t["received"] for t in stack) > 0
    # bench-sim runs the virtual stack and the trigger sync in one process: the driver topics go in-process
    assert {topics[n]["transport"] for n in topics if n.startswith("/rgbt/raw/")} == {"in-process"}
    # host arrival -> recorder for each restamped stream, matched to the virtual stack's send records; the
    # latency since the trigger adds the simulated sensor-to-host transport (thermal 12 ms mean) to it
    for t in stack:
        assert 0 < t["host_p50_ms"] < t["p50_ms"], t
    assert result["sensor_topic_p99_ms"] == max(t["host_p99_ms"] for t in stack)
    assert result["sensor_topic_trigger_p99_ms"] == max(t["p99_ms"] for t in stack)
    # processing latency of the recorded pipeline outputs (rectified pairs, fusion: the colour camera's period)
    proc = result["processing"]
    assert "/rgbt/rectified/thermal" in proc, proc
    for v in proc.values():
        assert v["frame_period_ms"] == pytest.approx(1e3 / 30, abs=0.01)
        assert v["p99_frame_periods"] == pytest.approx(v["p99_ms"] / v["frame_period_ms"], abs=0.01)
    # where the latency goes: every processing node reports its stages and stale drops
    for node in ("thermal_preprocess", "rectify", "fusion"):
        b = result["breakdown"][node]
        assert b["processed"] + b["dropped_stale"] + b["dropped_late"] <= b["submitted"] and b["submitted"] > 0, (node, b)
        assert "arrival" in b, (node, b)
    # rectify's outputs are recorded: it serializes and publishes; the preprocess outputs have no
    # subscriber in bench-sim, so it normalizes and builds none of them (lazy outputs)
    assert {"wait", "work", "serialize", "publish"} <= set(result["breakdown"]["rectify"])
    assert {"wait", "work"} <= set(result["breakdown"]["thermal_preprocess"])
    assert not {"serialize", "publish"} & set(result["breakdown"]["thermal_preprocess"])
    cpu = result["cpu"]
    assert set(cpu["processes"]) == set(result["processes"]) | {"load-0"}  # the busy loop's share too
    assert cpu["processes"]["load-0"]["nodes"] == ["busy loop (--load)"]
    cores = cpu["machine"]["cores"]
    assert cores == os.cpu_count()
    # CPU in % of one core: no group uses more than every core of the machine (+5 for the sampling
    # jitter of a 2 s window); the wait is summed over threads (no such bound), never negative
    assert all(0 <= v["cpu_pct"] <= 100 * cores + 5 and v["cpu_wait_pct"] >= 0
               for v in cpu["processes"].values()), cpu["processes"]
    assert cpu["processes"]["load-0"]["cpu_pct"] > 0, cpu["processes"]["load-0"]  # the busy loop did run

"""Acceptance of supervision under ``kill -9`` (``rgbt bench faults --quick --json``): bench-sim
flights as real rclpy + Fast DDS processes on loopback, the segmentation, pipeline (preprocess +
rectify) and sources groups each killed mid-recording. The recorder must lose nothing on the streams
whose publisher stayed up, the killed group must come back (its nodes on ``/diagnostics`` again) and
the bag's manifest must list the restart. Recovery times are reported, not asserted (BENCHMARKS.md)."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest

pytestmark = [pytest.mark.ros, pytest.mark.slow]

KILLED = {"kill_segmentation": "segmentation", "kill_pipeline": "pipeline", "kill_sources": "sources"}


def test_quick_fault_matrix_kill_9_loses_nothing(ros_env: dict, tmp_path: Path, rgbt_cli, read_bag) -> None:
    keep = tmp_path / "flights"
    keep.mkdir()
    proc = rgbt_cli("bench", "faults", "--quick", "--json", "--keep", str(keep), timeout=600)
    result = json.loads(proc.stdout)
    assert set(result["faults"]) == set(KILLED) and result["machine"]["cpu"]
    assert "kill_pipeline" in proc.stderr  # progress on stderr
    for name, group in KILLED.items():
        row = result["faults"][name]
        assert isinstance(row["lost"], int) and isinstance(row["bag_complete"], bool), row
        assert row["recovered_s"] is None or isinstance(row["recovered_s"], float)
        assert row["lost"] == 0, (name, row)
        assert row["bag_complete"] and row["stamps_monotonic"], (name, row)
        assert [(r["group"], r["exit_code"]) for r in row["restarts"]] == [(group, -9)], (name, row["restarts"])
        assert row["manifest_restarts"] == 1, (name, row)
        assert row["back_s"] is not None, (name, row)  # the group's nodes publish diagnostics again

    # independently of the bench's own reading: the shared flight's bag (rosbags) against the sources
    (flight,) = [p for p in keep.iterdir() if p.name.startswith("rgbt_faults_kill_pipeline")]
    (bag,) = sorted((flight / "bags").iterdir())
    manifest = json.loads((bag / "rgbt_manifest.json").read_text())
    assert sorted(r["group"] for r in manifest["restarts"]) == ["pipeline", "segmentation"]
    assert manifest["supervisor"]["restarts"]["pipeline"] == 1
    sources = json.loads((flight / "sources.json").read_text())
    recorded = read_bag(bag)
    for topic, frames in sources["frames"].items():
        assert [zlib.crc32(bytes(m.data)) for _, m, _ in recorded[topic]] == frames["crc32"], topic
    assert len(recorded["/imu/imu"]) == sources["stack_topics"]["/imu/imu"]
    # after the kill the pipeline and segmentation outputs flow again
    restarts = {r["group"]: r["restart_wall_ns"] for r in manifest["restarts"]}
    assert any(t > restarts["pipeline"] for t, _, _ in recorded["/rgbt/thermal/image_mono8"])
    assert any(t > restarts["segmentation"] for t, _, _ in recorded["/rgbt/seg/class_ids"])

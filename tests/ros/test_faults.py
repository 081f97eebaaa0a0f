"""Acceptance of supervision under ``kill -9`` (``rgbt bench faults --quick --json``): bench-sim
flights as real rclpy + Fast DDS processes on loopback, the segmentation, pipeline (preprocess +
rectify) and sources groups each killed mid-recording. The recorder must lose nothing on the streams
whose publisher stayed up, the killed group must come back (its nodes on ``/diagnostics`` again) and
the bag's manifest must list the restart. A +5 s step of the drivers' wall clock in the same flight
is detected and held: nothing lost, stamps monotonic. Recovery times are reported, not asserted
(BENCHMARKS.md)."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest

from rgbt.ros.options import unlocked_topic
from rgbt.stack import load_stack

KILLED = {"kill_segmentation": "segmentation", "kill_pipeline": "pipeline", "kill_sources": "sources"}
CLOCK_STEP = "clock_step_+5s"


@pytest.mark.ros
@pytest.mark.slow
@pytest.mark.timeout(600)  # three bench-sim flights; ~150 s on a loaded 2-core machine
def test_quick_fault_matrix_kill_9_loses_nothing(ros_env: dict, tmp_path: Path, rgbt_cli, read_bag) -> None:
    keep = tmp_path / "flights"
    keep.mkdir()
    proc = rgbt_cli("bench", "faults", "--quick", "--json", "--keep", str(keep), timeout=600)
    result = json.loads(proc.stdout)
    assert set(result["faults"]) == set(KILLED) | {CLOCK_STEP} and result["machine"]["cpu"]
    # a +5 s step of the drivers' wall clock: detected once, held (stamps stay continuous), nothing lost
    step = result["faults"][CLOCK_STEP]
    assert step["clock_steps"] == 1 and step["lost"] == 0, (
        f"steps {step['clock_steps']} (last {step['clock_last_step_ns'] / 1e9:+.3f} s), lost {step['lost']}")
    assert step["bag_complete"] and step["stamps_monotonic"], step
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
    assert "playing the pre-rendered run" in (flight / "graph.log").read_text()  # rendered ahead, not live
    assert sorted(r["group"] for r in manifest["restarts"]) == ["pipeline", "segmentation"]
    assert manifest["supervisor"]["restarts"]["pipeline"] == 1
    sources = json.loads((flight / "sources.json").read_text())
    recorded = read_bag(bag)
    stack = load_stack()
    # what the sync published before it locked is on its own (recorded) topic, host-stamped
    before_lock = {cam.topic: unlocked_topic(name) for name, cam in stack.cameras.items()}
    before_lock[stack.imu.topic] = unlocked_topic("imu")
    for topic, frames in sources["frames"].items():
        msgs = sorted(recorded.get(before_lock[topic], []) + recorded[topic], key=lambda r: r[0])
        assert [zlib.crc32(bytes(m.data)) for _, m, _ in msgs] == frames["crc32"], topic
    imu = stack.imu.topic
    assert len(recorded[imu]) + len(recorded.get(before_lock[imu], [])) == sources["stack_topics"][imu]
    # after the kill the pipeline and segmentation outputs flow again
    restarts = {r["group"]: r["restart_wall_ns"] for r in manifest["restarts"]}
    assert any(t > restarts["pipeline"] for t, _, _ in recorded["/rgbt/thermal/image_mono8"])
    assert any(t > restarts["segmentation"] for t, _, _ in recorded["/rgbt/seg/class_ids"])


def _stream(log_s: list[float], crc: list[int] | None = None) -> dict:
    log = [int(t * 1e9) for t in log_s]
    return {"log": log, "stamp": list(log), "crc": crc or []}


def test_judging_rules_on_made_up_streams() -> None:
    """recovered_s / lost / completeness on hand-made streams (what the bench concludes from a bag)."""
    from rgbt.bench.faults import _complete, lost, recovered_s

    steady = _stream([i * 0.1 for i in range(100)])  # 10 Hz for 10 s, never interrupted
    cut = _stream([i * 0.1 for i in range(50)] + [7.0 + i * 0.1 for i in range(20)])  # down 4.9 s -> 7.0 s
    t_event = int(5.0e9)
    total, down = recovered_s({"a": steady, "b": cut}, t_event)
    assert total == 2.0 and down == {"b": 2.0}
    assert recovered_s({"a": steady, "c": _stream([i * 0.1 for i in range(50)])}, t_event) == (None, {"c": None})

    crcs = list(range(10))
    sent_ns = [int(i * 0.5e9) for i in range(10)]  # frame i sent at i * 0.5 s
    published = {"frames": {"/cam": {"crc32": crcs, "t_pub_ns": sent_ns}}}
    late = {"/cam": {"log": [t + int(1.5e9) for t in sent_ns], "crc": crcs}}  # all there, 1.5 s late
    assert lost(late, published, (0, 2**63)) == (0, {"/cam": {"lost": 0, "sent_s": []}}) and _complete(late, published, int(2.2e9), False)
    gap = {"/cam": {"log": [t for i, t in enumerate(sent_ns) if i != 3], "crc": [c for c in crcs if c != 3]}}
    assert lost(gap, published, (0, 2**63)) == (1, {"/cam": {"lost": 1, "sent_s": [1.5]}})
    assert lost(gap, published, (int(2e9), 2**63))[0] == 0
    assert not _complete(gap, published, int(4e9), False)
    stopped = {"/cam": {"log": sent_ns[:4], "crc": crcs[:4]}}  # the recorder gone at 1.6 s
    assert _complete(stopped, published, int(1.6e9), terminal=True)
    assert not _complete(stopped, published, int(3.1e9), terminal=True)  # frame 4 went out 1.1 s before


def test_unknown_fault_is_a_clear_error(rgbt_cli) -> None:  # type: ignore[no-untyped-def]
    proc = rgbt_cli("bench", "faults", "--fault", "kill_everything", check=False)
    assert proc.returncode == 2 and "kill_everything" in proc.stderr and "kill_segmentation" in proc.stderr

"""Acceptance of fault survival (``rgbt bench faults --quick --json``): bench-sim flights as real rclpy +
Fast DDS processes on loopback. In one flight the segmentation and pipeline groups are killed, the
recorder is killed (the flight goes on in a new bag), segmentation is stopped (``kill -STOP``: found
hung and restarted) and the drivers' wall clock steps +5 s; in another the sources are killed. Every
row is judged against the simulator's schedule: the graph loses nothing where the publisher stayed
up (only what the starved sources never published, which they count), and what was lost (the
sources' outage, the recorder's take-over) equal to what the bags' manifests report. Recovery times are reported, not asserted (BENCHMARKS.md)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rgbt.stack import load_stack

KILLED = {"kill_segmentation": "segmentation", "kill_pipeline": "pipeline", "kill_sources": "sources",
          "kill_recorder": "recorder"}
CLOCK_STEP = "clock_step_+5s"
HANG = "hang_segmentation"


@pytest.mark.ros
@pytest.mark.slow
@pytest.mark.timeout(900)  # two bench-sim flights; ~4 min on a loaded 2-core machine
def test_quick_fault_matrix(ros_env: dict, tmp_path: Path, rgbt_cli) -> None:
    keep = tmp_path / "flights"
    keep.mkdir()
    proc = rgbt_cli("bench", "faults", "--quick", "--json", "--keep", str(keep), timeout=900)
    result = json.loads(proc.stdout)
    assert set(result["faults"]) == set(KILLED) | {CLOCK_STEP, HANG} and result["machine"]["cpu"]
    assert "kill_pipeline" in proc.stderr  # progress on stderr
    for name, row in result["faults"].items():
        assert isinstance(row["lost"], int), (name, row)
        # nothing silent. A restarted trigger sync restamps onto a refitted grid: the recorder's count
        # of the sources' outage (from the stamps' step) is then an estimate, seen off by up to 10 of
        # 175 in a full-suite run (a known gap, BENCHMARKS.md fault matrix)
        slack = 2 * len(row["streams"]) + row["lost"] // 10 if name == "kill_sources" else 0
        assert abs(row["lost"] - row["lost_reported"]) <= slack, (name, row["lost"], row["lost_reported"], row)
        assert row["bag_complete"] and row["stamps_monotonic"], (name, row)
        assert row["unfinished_bags"] == [], (name, row)  # the restarted recorder recovered the killed one's
    # the graph loses nothing else: what is missing was never published (the sources process starved
    # longer than the simulated device buffers hold, on a saturated 2-core host: the virtual stack's
    # late_dropped) or fell between the killed recorder's bag and its successor's (the take-over's
    # count); the windows of the flight's faults overlap, so the bound is the flight's
    (flight,) = [p for p in keep.iterdir() if p.name.startswith("rgbt_faults_kill_pipeline")]
    manifests = [json.loads((b / "rgbt_manifest.json").read_text()) for b in (flight / "bags").iterdir()]
    takeover_lost = {t: n for m in manifests for t, n in ((m.get("takeover") or {}).get("lost") or {}).items()}
    for name in ("kill_segmentation", "kill_pipeline", HANG, CLOCK_STEP, "kill_recorder"):
        row = result["faults"][name]
        late = row["source_skipped"]["late_dropped"]
        for topic, stream in row["streams"].items():
            kind = "imu" if topic == "/imu/imu" else "thermal"
            assert stream["lost"] <= late.get(kind, 0) + takeover_lost.get(topic, 0), \
                (name, topic, stream, late, takeover_lost)
    # a +5 s step of the drivers' wall clock: detected once, held (stamps stay continuous). A sources
    # process restarted after the step (found hung on a saturated host) starts on the stepped clock and
    # writes the counters anew: it has no step to see
    step = result["faults"][CLOCK_STEP]
    sources_restarted = any("restarted process group 'sources'" in e for e in step["events"])
    assert step["clock_steps"] == 1 or (sources_restarted and step["clock_steps"] == 0), step["events"]
    for name, group in KILLED.items():
        row = result["faults"][name]
        # the group's restarts in the flight (segmentation is also hung later in it): this kill's among them
        assert {(r["group"], r["exit_code"], r["reason"]) for r in row["restarts"]} >= {(group, -9, "SIGKILL")}, \
            (name, row["restarts"])
        assert all(r["group"] == group for r in row["restarts"]), (name, row["restarts"])
        assert row["back_s"] is not None, (name, row)  # the group's nodes publish diagnostics again
    hang = result["faults"][HANG]
    (restart,) = [r for r in hang["restarts"] if r["reason"].startswith("hung")]
    assert restart["group"] == "segmentation" and restart["exit_code"] == -9 and hang["back_s"] is not None
    rec = result["faults"]["kill_recorder"]
    assert rec["bags"] == 2, rec
    # The take-over itself loses at most 1 s of a judged stream (its 2 s of durable history cover the
    # rest). A longer gap in the bags (lost_s > 1 s) is the sources' stall on a saturated host: samples
    # never published, counted in late_dropped and bounded per stream above (BENCHMARKS.md: lost_s
    # per host in the kill_recorder paragraph).
    stack = load_stack()
    rate_hz = {stack.imu.topic: stack.imu.rate_hz, stack.cameras["thermal"].topic: stack.cameras["thermal"].rate_hz}
    for topic in rec["streams"]:
        assert takeover_lost.get(topic, 0) <= rate_hz[topic] * 1.0, (topic, takeover_lost)
    assert rec["lost_s"] <= 1.0 or sum(rec["source_skipped"]["late_dropped"].values()) > 0, rec
    # the second bag says which bag it continues, and its manifest lists the restarts of its time
    bags = sorted((flight / "bags").iterdir(), key=lambda b: json.loads((b / "rgbt_manifest.json").read_text())["start_wall_ns"])
    manifests = [json.loads((b / "rgbt_manifest.json").read_text()) for b in bags]
    assert manifests[1]["continues"] == bags[0].name and manifests[0]["flight_id"] == manifests[1]["flight_id"]
    assert "playing the pre-rendered run" in (flight / "graph.log").read_text()  # rendered ahead, not live
    # the restarts while a bag was open are in its manifest (the recorder's own falls between its bags:
    # the second one says what it continues)
    groups = [r["group"] for m in manifests for r in m["restarts"]]
    assert {"pipeline", "segmentation"} <= set(groups) and "sources" not in groups, groups


def _stream(log_s: list[float], crc: list[int] | None = None) -> dict:
    log = [int(t * 1e9) for t in log_s]
    return {"log": log, "stamp": list(log), "crc": crc or []}


def test_recovered_s_on_made_up_streams() -> None:
    from rgbt.bench.faults import recovered_s

    steady = _stream([i * 0.1 for i in range(100)])  # 10 Hz for 10 s, never interrupted
    cut = _stream([i * 0.1 for i in range(50)] + [7.0 + i * 0.1 for i in range(20)])  # down 4.9 s -> 7.0 s
    t_event = int(5.0e9)
    total, down, pauses = recovered_s({"a": steady, "b": cut}, t_event)
    assert total == 2.0 and down == {"b": 2.0} and pauses == {}
    assert recovered_s({"a": steady, "c": _stream([i * 0.1 for i in range(50)])}, t_event) == (None, {"c": None}, {})
    # back for a moment (0.5 s), then gone again: down until the second return
    flicker = _stream([i * 0.1 for i in range(50)] + [6.0 + i * 0.1 for i in range(5)]
                      + [8.0 + i * 0.1 for i in range(20)])
    assert recovered_s({"d": flicker}, t_event)[:2] == (3.0, {"d": 3.0})
    # back at once and steady for 2 s, then a 0.8 s pause: a later pause, not the fault's outage
    later = _stream([i * 0.1 for i in range(80)] + [8.7 + i * 0.1 for i in range(10)])
    assert recovered_s({"e": later}, t_event) == (0.0, {}, {"e": 0.8})


def _schedule(n: int = 10, period_ns: int = 100_000_000, imu: bool = False):  # type: ignore[no-untyped-def]
    from rgbt.bench.schedule import Stream

    stamps = np.arange(n, dtype=np.int64) * period_ns + 10**12
    return Stream("imu" if imu else "thermal", "/t", "/t/unlocked", period_ns, stamps + 12_000_000, stamps,
                  [] if imu else [100 + i for i in range(n)])


def test_frames_are_matched_in_order_and_repeats_are_counted() -> None:
    from rgbt.bench.schedule import Recorded, longest_gap_s, match, missing_in

    s = _schedule()
    s.crc[4] = s.crc[5] = s.crc[6] = 104  # a flat-field correction: three identical frozen frames
    got = Recorded(crc=[100, 101, 104, 104, 107, 108, 108, 109])  # 2, 3 and one frozen frame lost; 108 twice
    m = match(s, got)
    assert m.found.tolist() == [1, 1, 0, 0, 1, 1, 0, 1, 1, 1] and m.duplicates == 1
    gone = missing_in(s, m, (0, 2**62))
    assert gone.tolist() == [2, 3, 6] and longest_gap_s(s, gone) == 0.2
    assert missing_in(s, m, (int(s.due_ns[4]), 2**62)).tolist() == [6]


def test_imu_samples_are_matched_by_stamp_locked_or_before_lock() -> None:
    from rgbt.bench.schedule import Recorded, match

    s = _schedule(imu=True, period_ns=5_000_000)
    # samples 0-2 before lock (host stamped: when they were due), 3-9 restamped (trigger grid, 0.4 ms off);
    # 5 missing, 7 twice
    stamps = [int(s.due_ns[i]) for i in range(3)] + [int(s.stamp_ns[i]) + 400_000 for i in (3, 4, 6, 7, 7, 8, 9)]
    m = match(s, Recorded(stamp_ns=stamps, locked=[False] * 3 + [True] * 7))
    assert (~m.found).nonzero()[0].tolist() == [5] and m.duplicates == 1


def test_reported_losses_are_counted_in_the_window_by_stamp() -> None:
    from rgbt.bench.schedule import reported

    s = _schedule()
    t = s.stamp_ns
    manifests = [{"topics": {"/t": {"loss_ranges": [[int(t[2]), int(t[3]), 2, "gap"]]}}},
                 {"topics": {"/t": {"loss_ranges": [[int(t[6]), int(t[6]), 1, "gap"]]}, "/other": {}}}]
    assert reported(manifests, s, (0, 2**62)) == 3
    assert reported(manifests, s, (int(s.due_ns[3]), 2**62)) == 2  # stamp 2 is before the window
    assert reported(manifests, s, (int(s.due_ns[7]), 2**62)) == 0


@pytest.mark.slow
def test_unknown_fault_is_a_clear_error(rgbt_cli) -> None:  # type: ignore[no-untyped-def]
    proc = rgbt_cli("bench", "faults", "--fault", "kill_everything", check=False)
    assert proc.returncode == 2 and "kill_everything" in proc.stderr and "kill_segmentation" in proc.stderr

"""Liveness beyond exit codes (``rgbt.graph.liveness``): the judge's rules on hand-made heartbeats, and
on real node processes under the supervisor: a stopped process (``kill -STOP``) is found hung, killed
and restarted; a process whose job is done ends for good."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rgbt.graph.launcher import Graph
from rgbt.graph.liveness import DEAF_MIN_SENT, HeartbeatWriter, LivenessJudge, LivenessOptions, heartbeat_path
from rgbt.graph.supervisor import Supervisor, SupervisorOptions

S = 1_000_000_000


def _beat(directory: Path, pid: int, mono_ns: int, nodes: dict | None = None, finished: bool = False) -> None:
    heartbeat_path(directory, pid).write_text(json.dumps(
        {"pid": pid, "mono_ns": mono_ns, "loops": 1, "finished": finished, "nodes": nodes or {}}))


def test_no_heartbeat_only_after_the_start_timeout(tmp_path: Path) -> None:
    judge = LivenessJudge(tmp_path, run_delay=lambda pid: None, options=LivenessOptions(start_timeout_s=10))
    judge.watch("seg", 101, now_ns=0)
    assert judge.check(now_ns=9 * S) == {}
    assert "no heartbeat 10 s after it started" in judge.check(now_ns=11 * S)["seg"]
    _beat(tmp_path, 101, mono_ns=11 * S)
    assert judge.check(now_ns=11 * S) == {}


def test_a_stale_heartbeat_is_a_hang_and_an_old_process_beat_does_not_count(tmp_path: Path) -> None:
    from rgbt.graph.liveness import STARTUP_GRACE_S

    judge = LivenessJudge(tmp_path, run_delay=lambda pid: None, options=LivenessOptions(hang_timeout_s=2))
    judge.watch("seg", 7, now_ns=100 * S)
    _beat(tmp_path, 7, mono_ns=50 * S)  # written before this process became the group's: ignored
    assert judge.check(now_ns=101 * S) == {}
    _beat(tmp_path, 7, mono_ns=101 * S)
    assert judge.check(now_ns=105 * S) == {}  # in its first seconds: the longer bound
    assert judge.check(now_ns=107.5 * S)["seg"].startswith("hung: no heartbeat for 6.5 s")
    t = int((100 + STARTUP_GRACE_S) * S)
    _beat(tmp_path, 7, mono_ns=t)
    assert judge.check(now_ns=t + int(1.9 * S)) == {}
    assert judge.check(now_ns=t + int(2.5 * S))["seg"].startswith("hung: no heartbeat for 2.5 s")


def test_a_stall_several_groups_share_is_waited_out_longer(tmp_path: Path) -> None:
    from rgbt.graph.liveness import COMMON_STALL_FACTOR

    judge = LivenessJudge(tmp_path, run_delay=lambda pid: None, options=LivenessOptions(hang_timeout_s=2))
    for group, pid in (("sources", 7), ("seg", 8), ("pipeline", 9)):
        judge.watch(group, pid, now_ns=100 * S)
        _beat(tmp_path, pid, mono_ns=101 * S)
    # every publisher waits on the middleware at once: not a hang of one of them (yet)
    assert judge.check(now_ns=104 * S) == {}
    late = 101 + 2 * COMMON_STALL_FACTOR + 0.5
    assert set(judge.check(now_ns=int(late * S))) == {"sources", "seg", "pipeline"}
    # one group alone stops beating: hung after the plain timeout
    for pid in (7, 9):
        _beat(tmp_path, pid, mono_ns=int(late * S))
    assert set(judge.check(now_ns=int(late * S))) == {"seg"}


def test_a_starved_process_is_not_hung_a_stopped_one_is(tmp_path: Path) -> None:
    t0 = 100 * S
    for pid, wait_per_s in ((7, S // 2), (8, 0)):  # 7 waits on the run queue half the time; 8 is stopped
        waits = {pid: 0}
        judge = LivenessJudge(tmp_path, run_delay=waits.get, options=LivenessOptions(hang_timeout_s=2))
        judge.watch("g", pid, now_ns=t0 - 20 * S)  # past the start-up grace
        _beat(tmp_path, pid, mono_ns=t0)
        verdicts = []
        for step in range(1, 8):
            waits[pid] += wait_per_s
            verdicts.append(bool(judge.check(now_ns=t0 + step * S)))
        # stopped: hung after the 2 s bound; starved: only after 3x that
        assert verdicts == ([False] * 6 + [True] if wait_per_s else [False, False, True, True, True, True, True])


def test_a_worker_is_stuck_only_when_new_work_waits_longer_than_its_bound(tmp_path: Path) -> None:
    judge = LivenessJudge(tmp_path, run_delay=lambda pid: None, options=LivenessOptions(hang_timeout_s=100))
    judge.watch("seg", 7, now_ns=0)

    def at(t_s: float, inputs: int, done: int) -> dict[str, str]:
        _beat(tmp_path, 7, int(t_s * S), {"segmentation": {"progress": {"pipeline": [inputs, done, 3.0]}}})
        return judge.check(now_ns=int(t_s * S))

    assert at(1, 10, 10) == {}
    assert at(20, 10, 10) == {}  # idle (no input) for long: not stuck
    assert at(21, 11, 10) == {}  # new work arrives; the bound counts from here
    assert at(23.5, 15, 10) == {}
    assert at(24.5, 16, 16) == {}  # it finished some: fine again
    assert at(25, 17, 16) == {}
    why = at(28.2, 40, 16)["seg"]
    assert why.startswith("stuck worker: segmentation pipeline took 24 new item(s) and finished none for 3.2 s")


def test_deaf_when_others_publish_a_topic_it_subscribes_and_nothing_arrives(tmp_path: Path) -> None:
    judge = LivenessJudge(tmp_path, run_delay=lambda pid: None, options=LivenessOptions(hang_timeout_s=100, deaf_timeout_s=5))
    judge.watch("sources", 1, now_ns=0)
    judge.watch("seg", 2, now_ns=0)
    judge.watch("rec", 3, now_ns=0)
    topic = "/boson/thermal/image_raw"

    def at(t_s: float, sent: int, seg_got: int, rec_got: int) -> dict[str, str]:
        now = int(t_s * S)
        _beat(tmp_path, 1, now, {"sync": {"sent": {topic: sent}, "received": {"/rgbt/raw/thermal/image": sent}}})
        _beat(tmp_path, 2, now, {"segmentation": {"received": {topic: seg_got}, "matched": {topic: 1}}})
        _beat(tmp_path, 3, now, {"recorder": {"received": {topic: rec_got}}})
        return judge.check(now_ns=now)

    assert at(1, 60, 60, 60) == {}
    assert at(2, 120, 60, 120) == {}  # seg hears nothing from here
    assert at(6.9, 400, 60, 400) == {}
    why = at(7.5, 440, 60, 440)
    assert list(why) == ["seg"] and why["seg"].startswith(f"deaf: segmentation received nothing on {topic} for 5.5 s")
    assert why["seg"].endswith("(1 publisher(s) matched)")  # the middleware matched it: the data path, not discovery
    # its own process's messages never count (in-process topics), nor do topics nobody else publishes
    assert "sources" not in why
    judge.watch("seg", 22, now_ns=int(8 * S))  # restarted: judged afresh
    _beat(tmp_path, 22, int(8 * S), {"segmentation": {"received": {topic: 0}}})
    assert judge.check(now_ns=int(8 * S)) == {}


def test_a_deaf_process_whose_heartbeat_stopped_too_is_said_to_be_blocked(tmp_path: Path) -> None:
    """Deaf with a stale heartbeat: its executor is blocked (a flood of events, a lock), not only deaf."""
    judge = LivenessJudge(tmp_path, run_delay=lambda pid: None, options=LivenessOptions(hang_timeout_s=100, deaf_timeout_s=5))
    judge.watch("sources", 1, now_ns=0)
    judge.watch("rec", 3, now_ns=0)
    topic = "/imu/imu"
    _beat(tmp_path, 3, int(1 * S), {"recorder": {"received": {topic: 200}, "matched": {topic: 1}}})  # then silent
    why: dict[str, str] = {}
    for t_s in [1 + k / 2 for k in range(14)]:  # checked every 0.5 s up to 7.5 s
        _beat(tmp_path, 1, int(t_s * S), {"sync": {"sent": {topic: int(200 * t_s)}}})
        why = judge.check(now_ns=int(t_s * S))
    assert why["rec"].startswith(f"deaf: recorder received nothing on {topic}")
    assert why["rec"].endswith("(1 publisher(s) matched; its last heartbeat 6.5 s old)")


def test_deaf_needs_real_traffic(tmp_path: Path) -> None:
    judge = LivenessJudge(tmp_path, run_delay=lambda pid: None, options=LivenessOptions(hang_timeout_s=100, deaf_timeout_s=1))
    judge.watch("a", 1, now_ns=0)
    judge.watch("b", 2, now_ns=0)
    for t in range(1, 10):  # the other side sends fewer than DEAF_MIN_SENT in all: not judged
        _beat(tmp_path, 1, t * S, {"n": {"sent": {"/x": min(t, DEAF_MIN_SENT - 1)}}})
        _beat(tmp_path, 2, t * S, {"m": {"received": {"/x": 0}}})
        assert judge.check(now_ns=t * S) == {}


def test_heartbeat_writer_writes_at_most_every_period(tmp_path: Path) -> None:
    writer = HeartbeatWriter(tmp_path, pid=5, period_s=60)
    assert writer.beat(lambda: {"n": {}}) and not writer.beat(lambda: {"n": {}})
    assert writer.beat(lambda: {}, finished=True, force=True)
    data = json.loads(heartbeat_path(tmp_path, 5).read_text())
    assert data["finished"] is True and data["loops"] == 3
    assert not HeartbeatWriter(None).beat(lambda: {})  # no folder: nothing written


def _spin_graph(tmp_path: Path, duration: float | None = None) -> Graph:
    from rgbt.paths import REPO_ROOT
    from rgbt.graph.supervisor import HEARTBEAT_ENV

    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               **{HEARTBEAT_ENV: str(tmp_path)})
    cmd = [sys.executable, "-m", "rgbt.ros.spin", "--node", "health:health"]
    if duration:
        cmd += ["--duration", str(duration)]
    cmd += ["--ros-args", "-p", "period_s:=0.2", "-p", f"disk_path:={tmp_path}"]
    graph = Graph(workdir=tmp_path, commands={"health": cmd},
                  popen_kw={"env": env, "stdout": subprocess.DEVNULL, "stderr": open(tmp_path / "nodes.log", "w")})
    graph.start_group("health")
    return graph


def _poll(sup: Supervisor, seconds: float, until) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not until():
        assert sup.poll() is None
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.ros
def test_a_stopped_process_is_found_hung_killed_and_restarted(ros_env: dict, tmp_path: Path) -> None:
    graph = _spin_graph(tmp_path)
    options = SupervisorOptions(warm_spares=False, backoff_initial_s=0.05,
                                liveness=LivenessOptions(hang_timeout_s=1.5, start_timeout_s=60))
    log: list[str] = []
    sup = Supervisor(graph, options, log=log.append, heartbeat_dir=tmp_path)
    try:
        first = graph.procs["health"].pid
        _poll(sup, 60, until=lambda: heartbeat_path(tmp_path, first).exists())
        assert heartbeat_path(tmp_path, first).exists(), (tmp_path / "nodes.log").read_text()
        _poll(sup, 3, until=lambda: False)  # beating: nothing happens
        assert sup.history == []
        beat = json.loads(heartbeat_path(tmp_path, first).read_text())
        assert beat["nodes"]["health"]["sent"]["/diagnostics"] > 0 and beat["finished"] is False
        t_stop = time.monotonic()
        os.kill(first, signal.SIGSTOP)
        _poll(sup, 30, until=lambda: bool(sup.history))
        (restart,) = sup.history
        assert restart.reason.startswith("hung: no heartbeat") and restart.exit_code == -signal.SIGKILL
        assert time.monotonic() - t_stop >= 1.5
        assert graph.procs["health"].pid != first and graph.procs["health"].poll() is None
        assert any("killing it" in line for line in log)
        new = graph.procs["health"].pid
        _poll(sup, 60, until=lambda: heartbeat_path(tmp_path, new).exists())  # the new one beats
        assert heartbeat_path(tmp_path, new).exists()
    finally:
        graph.stop(grace_s=10, settle_s=0)


@pytest.mark.slow
@pytest.mark.ros
def test_a_process_whose_duration_passed_ends_for_good(ros_env: dict, tmp_path: Path) -> None:
    graph = _spin_graph(tmp_path, duration=2.0)
    sup = Supervisor(graph, SupervisorOptions(warm_spares=False), log=lambda m: None, heartbeat_dir=tmp_path)
    try:
        _poll(sup, 60, until=lambda: graph.procs["health"].poll() is not None)
        _poll(sup, 1, until=lambda: False)
        assert graph.procs["health"].returncode == 0 and sup.history == [] and not sup.pending()
        assert json.loads(heartbeat_path(tmp_path, graph.procs["health"].pid).read_text())["finished"] is True
    finally:
        graph.stop(grace_s=10, settle_s=0)


def test_a_burst_that_ended_is_no_deafness(tmp_path: Path) -> None:
    """A before-lock topic: published for a moment (maybe before the subscription matched), then
    never again. Seen as a false alarm in a fault flight before the rule asked for ongoing traffic."""
    judge = LivenessJudge(tmp_path, run_delay=lambda pid: None, options=LivenessOptions(hang_timeout_s=100, deaf_timeout_s=5))
    judge.watch("sources", 1, now_ns=0)
    judge.watch("rec", 2, now_ns=0)
    for tenth in range(1, 120):
        t = tenth * S // 10
        _beat(tmp_path, 1, t, {"sync": {"sent": {"/rgbt/raw/imu/unlocked": min(tenth, 5) * 8}}})
        _beat(tmp_path, 2, t, {"recorder": {"received": {"/rgbt/raw/imu/unlocked": 0}}})
        assert judge.check(now_ns=t) == {}, tenth


@pytest.mark.slow
def test_traffic_that_just_began_is_no_deafness(tmp_path: Path) -> None:
    """A subscriber that has heard nothing yet because the stream only now starts (the trigger sync
    locks late) is not deaf: the count starts when the traffic does, not when the topic was first seen."""
    judge = LivenessJudge(tmp_path, run_delay=lambda pid: None, options=LivenessOptions(hang_timeout_s=100, deaf_timeout_s=5))
    judge.watch("sources", 1, now_ns=0)
    judge.watch("pipeline", 2, now_ns=0)
    for tenth in range(1, 160):
        t = tenth * S // 10
        sent = max(0, tenth - 100) * 6  # nothing for 10 s, then 60 Hz
        _beat(tmp_path, 1, t, {"sync": {"sent": {"/boson/thermal/image_raw": sent}}})
        _beat(tmp_path, 2, t, {"preprocess": {"received": {"/boson/thermal/image_raw": 0}}})
        why = judge.check(now_ns=t)
        if tenth <= 150:  # 5 s of traffic not yet passed
            assert why == {}, tenth
    assert why["pipeline"].startswith("deaf: preprocess received nothing on /boson/thermal/image_raw for 5.")


def test_a_mailbox_reports_what_its_worker_took_not_what_the_rate_limit_dropped() -> None:
    import threading

    from rgbt.ros.mailbox import LatestMailbox

    release = threading.Event()
    box = LatestMailbox(lambda item: release.wait(5), max_rate_hz=10.0, late_after_periods=0)
    try:
        base = 10**18
        box.submit("a", base)  # taken at once: the worker blocks in it
        deadline = time.monotonic() + 5
        while box.taken < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        box.submit("b", base + 33_000_000)  # before the 10 Hz rate allows: dropped on arrival
        assert (box.handed, box.taken) == (1, 1)
        box.submit("c", base + 100_000_000)  # waits in the slot behind the blocked worker
        box.submit("d", base + 200_000_000)  # replaces it
        assert (box.handed, box.taken) == (3, 1)
    finally:
        release.set()
        box.close()

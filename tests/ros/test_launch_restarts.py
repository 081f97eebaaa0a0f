"""Counting ``ros2 launch``'s respawns (:class:`LaunchRestarts`) from made-up process starts and
exits: the status file has ``rgbt up``'s format, its counts and groups left down, and the recorder's
readers (``supervisor_section``, ``supervisor_values``) read it unchanged. No launch, no rclpy."""

from __future__ import annotations

import json
import types
from dataclasses import fields
from pathlib import Path

import pytest

from rgbt.graph.launch_restarts import LaunchRestarts
from rgbt.graph.recording import supervisor_section, supervisor_values
from rgbt.graph.supervisor import Restart, Supervisor, read_status

GROUPS = ["sources", "pipeline", "recorder"]


def _restarts(tmp_path: Path, max_retries: int | None = 2, strict: bool = False) -> LaunchRestarts:
    return LaunchRestarts(GROUPS, tmp_path / "supervisor.json", 0.25, max_retries, {"recorder"}, strict)


def _crash(lr: LaunchRestarts, group: str, pid: int, code: int = -9, t_ns: int = 1_000) -> tuple[str | None, str | None]:
    """One exit of ``group`` (at ``t_ns``) and, where launch respawns it, the new process ``pid``."""
    respawned = lr.respawns_left(group)
    exit_msg = lr.exited(group, code, wall_ns=t_ns)
    return exit_msg, lr.started(group, pid, wall_ns=t_ns + 300_000_000) if respawned else None


def test_status_file_has_the_supervisors_format(tmp_path: Path) -> None:
    """Same keys as :meth:`Supervisor.status` writes, every :class:`Restart` field per restart."""
    lr = _restarts(tmp_path)
    for g in GROUPS:
        assert lr.started(g, 100) is None  # first starts
    lr.exited("pipeline", -9, wall_ns=5_000)
    lr.started("pipeline", 101, wall_ns=6_000)
    status = json.loads((tmp_path / "supervisor.json").read_text())
    graph = types.SimpleNamespace(procs={g: None for g in GROUPS})
    reference = Supervisor(graph, log=lambda m: None).status()
    assert set(status) == set(reference) and status["spares"] == {}
    assert set(status["options"]) == set(reference["options"]) | {"by"}
    assert status["options"]["window_s"] is None and status["options"]["max_restarts"] == 2
    assert status["restarts"] == [{"group": "pipeline", "attempt": 1, "exit_code": -9, "exit_wall_ns": 5_000,
                                   "restart_wall_ns": 6_000, "delay_s": 0.25, "pid": 101, "warm": False,
                                   "reason": "SIGKILL"}]
    assert set(status["restarts"][0]) == {f.name for f in fields(Restart)}
    assert status["counts"] == {"sources": 0, "pipeline": 1, "recorder": 0} and status["gave_up"] == []


def test_written_before_any_restart(tmp_path: Path) -> None:
    _restarts(tmp_path)
    status = read_status(tmp_path / "supervisor.json")
    assert status is not None and status["counts"] == dict.fromkeys(GROUPS, 0) and status["restarts"] == []
    assert supervisor_values(status) == {"supervisor.restarts.sources": "0", "supervisor.restarts.pipeline": "0",
                                         "supervisor.restarts.recorder": "0", "supervisor.restarts": "0",
                                         "supervisor.gave_up": ""}


def test_left_down_after_max_retries(tmp_path: Path) -> None:
    lr = _restarts(tmp_path, max_retries=2)
    for g in GROUPS:
        lr.started(g, 100)
    messages = [_crash(lr, "pipeline", 101 + i, code=3, t_ns=10_000 * (i + 1)) for i in range(3)]
    assert "respawning in 0.25 s" in messages[0][0] and "restart 1" in messages[0][1]
    assert "restart 2" in messages[1][1]
    assert "left down" in messages[2][0] and "2 respawns" in messages[2][0] and messages[2][1] is None
    assert lr.counts()["pipeline"] == 2 and lr.gave_up() == ["pipeline"]
    status = read_status(tmp_path / "supervisor.json")
    assert [(r["attempt"], r["pid"], r["exit_code"]) for r in status["restarts"]] == [(1, 101, 3), (2, 102, 3)]
    assert status["gave_up"] == ["pipeline"]
    assert supervisor_values(status)["supervisor.gave_up"] == "pipeline"
    assert supervisor_values(status)["supervisor.restarts"] == "2"


def test_clean_exit_with_no_respawn_left_is_not_a_failure(tmp_path: Path) -> None:
    """launch respawns a clean exit too (counted); with none left a clean exit is finished, not given up."""
    lr = _restarts(tmp_path, max_retries=1)
    exit_msg, start_msg = _crash(lr, "sources", 101, code=0)
    assert "exited (0)" in exit_msg and "restart 1" in start_msg
    assert "finished" in lr.exited("sources", 0) and lr.gave_up() == [] and lr.counts()["sources"] == 1


def test_unlimited_respawns_never_give_up(tmp_path: Path) -> None:
    """A ``launch`` without ``respawn_max_retries`` respawns forever (``max_restarts`` None)."""
    lr = _restarts(tmp_path, max_retries=None)
    for i in range(20):
        _crash(lr, "pipeline", 200 + i, t_ns=i)
    assert lr.counts()["pipeline"] == 20 and lr.gave_up() == []
    assert read_status(tmp_path / "supervisor.json")["options"]["max_restarts"] is None


def test_strict_respawns_nothing_and_a_failure_is_left_down(tmp_path: Path) -> None:
    lr = _restarts(tmp_path, max_retries=5, strict=True)
    assert not lr.respawns_left("pipeline")
    assert "left down" in lr.exited("pipeline", -11) and lr.gave_up() == ["pipeline"]
    assert lr.counts() == dict.fromkeys(GROUPS, 0)
    assert read_status(tmp_path / "supervisor.json")["options"]["strict"] is True


def test_recorder_exit_and_shutdown_exits_are_not_counted(tmp_path: Path) -> None:
    lr = _restarts(tmp_path)
    assert lr.exited("recorder", -9) is None and not lr.respawns_left("recorder")
    assert lr.exited("pipeline", -2, shutting_down=True) is None
    assert lr.started("pipeline", 300) is None  # no pending exit: not a restart
    assert lr.counts() == dict.fromkeys(GROUPS, 0) and lr.gave_up() == []


def test_recorder_readers_take_the_restarts_of_their_bag(tmp_path: Path) -> None:
    lr = _restarts(tmp_path, max_retries=5)
    _crash(lr, "pipeline", 101, t_ns=1_000)
    _crash(lr, "sources", 102, t_ns=5_000)
    status = read_status(tmp_path / "supervisor.json")
    section = supervisor_section(status, 2_000, 9_000)  # a bag open from 2 us to 9 us
    assert [r["group"] for r in section["restarts"]] == ["sources"]
    assert section["supervisor"]["restarts"] == {"sources": 1, "pipeline": 1, "recorder": 0}
    assert section["supervisor"]["options"]["by"] == "ros2 launch" and section["supervisor"]["gave_up"] == []
    assert supervisor_values(status)["supervisor.restarts"] == "2"


def test_bad_input_is_named(tmp_path: Path) -> None:
    lr = _restarts(tmp_path)
    with pytest.raises(ValueError, match="unknown process group 'nope'"):
        lr.exited("nope", 1)
    with pytest.raises(ValueError, match="recorder groups"):
        LaunchRestarts(GROUPS, None, 0.25, 2, {"rec"})
    with pytest.raises(ValueError, match="max_retries"):
        LaunchRestarts(GROUPS, None, 0.25, -1)

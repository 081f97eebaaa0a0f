"""The supervisor's restart policy on real child processes (no rclpy): back-off, limit, a slow retry
of a group left down, exit 0 left down only with its job done, the recorder restarted like any group,
``strict``, the status file the recorder reads."""

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
from rgbt.graph.recording import supervisor_section, supervisor_values
from rgbt.graph.supervisor import Supervisor, SupervisorOptions, read_status

FAIL = [sys.executable, "-c", "import sys; sys.exit(3)"]
# exits 0 after writing a last heartbeat that says its job is done (as rgbt.ros.spin does), into argv[1]
DONE = [sys.executable, "-c", "import json, os, sys, time\n"
        "open(os.path.join(sys.argv[1], f'hb_{os.getpid()}.json'), 'w').write(json.dumps("
        "{'pid': os.getpid(), 'mono_ns': time.monotonic_ns(), 'finished': True, 'nodes': {}}))"]
QUIT = [sys.executable, "-c", "import time; time.sleep(0.3)"]  # exits 0 with no word of a finished job
# sleeps; as a warm spare (``--standby --ready-file F``) it says it is ready after ``argv[1]`` s and waits for
# its start line, ending at the end of its input without starting, as rgbt.ros.spin does
READY = ("import os, sys, time\nif '--ready-file' in sys.argv:\n    time.sleep(float(sys.argv[1]))\n"
         "    open(sys.argv[sys.argv.index('--ready-file') + 1], 'w').write(str(os.getpid()))\n"
         "if '--standby' in sys.argv and not sys.stdin.readline():\n    sys.exit(0)\n")
SLEEP = [sys.executable, "-c", READY + "time.sleep(60)", "0"]
FAST = SupervisorOptions(backoff_initial_s=0.05, backoff_factor=2.0, backoff_max_s=0.15, max_restarts=3, window_s=60)


def _graph(tmp_path: Path, **commands: list[str]) -> Graph:
    commands = {g: c + [str(tmp_path)] if c is DONE else c for g, c in commands.items()}
    graph = Graph(workdir=tmp_path, commands=dict(commands))
    for group in commands:
        graph.start_group(group)
    return graph


def _run(sup: Supervisor, seconds: float, until=lambda: False) -> str | None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not until():
        reason = sup.poll()
        if reason:
            return reason
        time.sleep(0.01)
    return None


@pytest.fixture
def stop_after():
    graphs: list[Graph] = []
    yield graphs.append
    for g in graphs:
        g.stop(grace_s=5, settle_s=0)


def test_failing_group_restarts_with_backoff_then_is_left_down(tmp_path: Path, stop_after) -> None:
    graph = _graph(tmp_path, crashy=FAIL, done=DONE, recorder=SLEEP)
    stop_after(graph)
    sup = Supervisor(graph, FAST, {"recorder"}, log=lambda m: None, status_path=graph.status_path,
                     heartbeat_dir=tmp_path)
    assert _run(sup, 20.0, until=lambda: bool(sup.gave_up())) is None  # neither the crashes nor the clean exit end the flight
    restarts = [r for r in sup.history if r.group == "crashy"]
    assert [r.attempt for r in restarts] == [1, 2, 3]
    assert [r.delay_s for r in restarts] == [0.05, 0.1, 0.15]  # x2 each time, capped at backoff_max_s
    assert all(r.exit_code == 3 and r.reason == "3" for r in restarts)
    assert len({r.pid for r in restarts}) == 3
    assert sup.gave_up() == ["crashy"] and sup.pending()  # left down, a slow retry due
    assert sup.counts() == {"crashy": 3, "done": 0, "recorder": 0}  # an exit 0 with its job done: left down
    status = read_status(graph.status_path)
    assert status["counts"]["crashy"] == 3 and status["gave_up"] == ["crashy"]
    assert graph.procs["recorder"].poll() is None  # never touched


def test_a_group_left_down_is_retried_slowly(tmp_path: Path, stop_after) -> None:
    graph = _graph(tmp_path, crashy=FAIL, recorder=SLEEP)
    stop_after(graph)
    options = FAST.model_copy(update={"max_restarts": 1, "retry_after_s": 1.0})
    log: list[str] = []
    sup = Supervisor(graph, options, {"recorder"}, log=log.append, status_path=graph.status_path)
    assert _run(sup, 10.0, until=lambda: bool(sup.gave_up())) is None
    t_down = time.monotonic()
    assert _run(sup, 10.0, until=lambda: len(sup.history) == 2) is None  # the slow retry
    assert time.monotonic() - t_down >= 0.9 and sup.gave_up() == []
    assert _run(sup, 10.0, until=lambda: bool(sup.gave_up())) is None  # it failed again: down at once
    assert len(sup.history) == 2 and "its slow retry failed" in log[-1] and "trying again in 1 s" in log[-1]


def test_an_exit_0_without_its_job_done_is_a_failure(tmp_path: Path, stop_after) -> None:
    graph = _graph(tmp_path, quitter=QUIT, recorder=SLEEP)
    stop_after(graph)
    sup = Supervisor(graph, FAST, {"recorder"}, log=lambda m: None, heartbeat_dir=tmp_path)
    assert _run(sup, 10.0, until=lambda: bool(sup.history)) is None
    (restart,) = sup.history
    assert restart.group == "quitter" and restart.exit_code == 0 and "without finishing its job" in restart.reason


def test_kill_9_restarts_the_group_and_the_status_reaches_the_manifest(tmp_path: Path, stop_after) -> None:
    graph = _graph(tmp_path, pipeline=SLEEP, recorder=SLEEP)
    stop_after(graph)
    sup = Supervisor(graph, FAST, {"recorder"}, log=lambda m: None, status_path=graph.status_path)
    old = graph.procs["pipeline"].pid
    t0 = time.time_ns()
    os.kill(old, signal.SIGKILL)
    assert _run(sup, 10.0, until=lambda: bool(sup.history)) is None
    assert graph.procs["pipeline"].pid != old and graph.procs["pipeline"].poll() is None
    (restart,) = sup.history
    assert restart.exit_code == -signal.SIGKILL and restart.restart_wall_ns >= restart.exit_wall_ns >= t0
    status = json.loads(graph.status_path.read_text())
    section = supervisor_section(status, t0, time.time_ns())
    assert [r["group"] for r in section["restarts"]] == ["pipeline"]
    assert section["supervisor"]["restarts"] == {"pipeline": 1, "recorder": 0}
    assert supervisor_section(status, t0 - 10**9, t0)["restarts"] == []  # a bag closed before the restart
    assert supervisor_values(status)["supervisor.restarts.pipeline"] == "1"


def test_the_recorder_is_restarted_like_any_group(tmp_path: Path, stop_after) -> None:
    graph = _graph(tmp_path, pipeline=SLEEP, recorder=SLEEP)
    stop_after(graph)
    sup = Supervisor(graph, FAST, {"recorder"}, log=lambda m: None)
    old = graph.procs["recorder"].pid
    graph.procs["recorder"].kill()
    assert _run(sup, 5.0, until=lambda: bool(sup.history)) is None  # the flight goes on
    (restart,) = sup.history
    assert restart.group == "recorder" and restart.reason == "SIGKILL" and graph.procs["recorder"].pid != old
    assert graph.procs["pipeline"].poll() is None


def test_strict_stops_on_the_first_failure(tmp_path: Path, stop_after) -> None:
    graph = _graph(tmp_path, crashy=FAIL, recorder=SLEEP)
    stop_after(graph)
    sup = Supervisor(graph, FAST.model_copy(update={"strict": True}), {"recorder"}, log=lambda m: None)
    reason = _run(sup, 5.0)
    assert reason and "crashy" in reason and "strict" in reason and sup.history == []


def test_options_are_described_and_validated() -> None:
    o = SupervisorOptions()
    assert "restart" in o.describe() and "strict" in SupervisorOptions(strict=True).describe()
    assert [o.delay_s(n) for n in range(6)] == [0.25, 0.5, 1.0, 2.0, 4.0, 5.0]
    with pytest.raises(ValueError):
        SupervisorOptions(backoff_factor=0.5)


@pytest.mark.slow
@pytest.mark.ros
def test_warm_spare_takes_over_a_killed_group(ros_env: dict, tmp_path: Path, stop_after) -> None:
    """A real node process (``python -m rgbt.ros.spin --node health:health``): after
    ``spare_delay_s`` the supervisor keeps an imported ``--standby`` spare of it; ``kill -9`` of the
    group hands the group to that spare (``warm``), which starts its node; a new spare follows; on
    stop a spare that never started exits 0. A waiting spare's DDS participant already exists (its
    hidden placeholder node is in the graph); once the spare's node runs, the placeholder is gone."""
    from rgbt.ros.spin import BackgroundNode

    watcher = BackgroundNode("spare_watcher")
    watcher.start()
    try:
        _warm_spare_takes_over(tmp_path, stop_after, watcher)
    finally:
        watcher.close()


def _warm_spare_takes_over(tmp_path: Path, stop_after, watcher) -> None:  # type: ignore[no-untyped-def]
    from rgbt.paths import REPO_ROOT
    from rgbt.ros.spin import STANDBY_NODE

    def names() -> list[str]:
        return [n for n, _ in watcher.node.get_node_names_and_namespaces()]

    def wait_names(cond) -> list[str]:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + 20
        while not cond(names()) and time.monotonic() < deadline:
            time.sleep(0.1)
        return names()

    err = open(tmp_path / "nodes.log", "w")
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    spin = [sys.executable, "-m", "rgbt.ros.spin", "--node", "health:health", "--ros-args",
            "-p", "period_s:=0.2", "-p", f"disk_path:={tmp_path}"]
    graph = Graph(workdir=tmp_path, commands={"health": spin, "recorder": SLEEP},
                  popen_kw={"env": env, "stdout": subprocess.DEVNULL, "stderr": err})
    for group in graph.commands:
        graph.start_group(group)
    stop_after(graph)
    # no spare starts spare_hold_after_failure_s after a failure (the dead participant's lease)
    options = FAST.model_copy(update={"spare_delay_s": 0.5, "spare_hold_after_failure_s": 6.0})
    sup = Supervisor(graph, options, {"recorder"}, log=lambda m: None, status_path=graph.status_path)
    assert _run(sup, 10.0, until=lambda: "health" in graph.spares) is None
    spare = graph.spares["health"]
    time.sleep(3.0)  # the spare imports meanwhile; it must not start a node before it is told to
    assert spare.poll() is None and (tmp_path / "nodes.log").read_text().count("HealthOptions") == 1
    assert wait_names(lambda n: STANDBY_NODE in n and "health" in n).count("health") == 1  # spare's participant up
    deadline = time.monotonic() + 20
    while not graph.spare_ready("health") and time.monotonic() < deadline:  # its ready file names its PID
        time.sleep(0.1)
    assert sup.status()["spares"]["health"] == "ready"
    os.kill(graph.procs["health"].pid, signal.SIGKILL)
    assert _run(sup, 10.0, until=lambda: bool(sup.history)) is None
    restarted_at = time.monotonic()
    (restart,) = sup.history
    assert restart.warm and restart.pid == spare.pid and graph.procs["health"] is spare
    deadline = time.monotonic() + 30
    while (tmp_path / "nodes.log").read_text().count("HealthOptions") < 2:  # the spare's node started
        assert time.monotonic() < deadline and spare.poll() is None, (tmp_path / "nodes.log").read_text()
        time.sleep(0.1)
    # the node runs in the spare's participant, its placeholder gone (no next spare yet: sup not polled)
    assert STANDBY_NODE not in wait_names(lambda n: STANDBY_NODE not in n and "health" in n)
    assert sup.status()["spares"]["health"] == "none"  # used; the next one is due later
    assert _run(sup, 10.0, until=lambda: "health" in graph.spares) is None  # the next spare
    assert time.monotonic() - restarted_at >= options.spare_hold_after_failure_s - 0.1  # not before the lease ran out
    assert wait_names(lambda n: STANDBY_NODE in n).count(STANDBY_NODE) == 1
    new_spare = graph.spares["health"]
    assert new_spare is not spare and json.loads(graph.status_path.read_text())["restarts"][0]["warm"] is True
    graph.stop(grace_s=10, settle_s=0)
    assert new_spare.returncode == 0 and not graph.spares  # the recorder's spare (a sleeper) too


@pytest.mark.slow
def test_a_group_left_down_has_its_spare_ended(tmp_path: Path, stop_after) -> None:
    """A group that keeps failing: its first restart takes the warm spare; once it is left down the
    next spare is ended too (it would only hold memory), and no further one is started."""
    # a spare (``--standby``) waits to be activated like a real one (READY), then fails the same way: it
    # can never die before the process it stands in for (a race on a loaded machine otherwise)
    crash_later = [sys.executable, "-c", READY + "time.sleep(1.5); sys.exit(3)", "0"]
    graph = _graph(tmp_path, crashy=crash_later, recorder=SLEEP)
    stop_after(graph)
    options = FAST.model_copy(update={"max_restarts": 1, "spare_delay_s": 0.1, "spare_hold_after_failure_s": 0.1})
    sup = Supervisor(graph, options, {"recorder"}, log=lambda m: None, status_path=graph.status_path)
    assert _run(sup, 20.0, until=lambda: bool(sup.gave_up())) is None
    (restart,) = sup.history
    assert restart.warm and sup.gave_up() == ["crashy"]
    assert "crashy" not in graph.spares and sup.spare_due["crashy"] is None
    assert _run(sup, 0.5) is None and "crashy" not in graph.spares  # none started afterwards


def test_spares_start_one_at_a_time_the_recorders_first(tmp_path: Path, stop_after) -> None:
    """Warm spares import in turn, the recorder's first (four at once beside the graph took 6-8 s on a
    loaded 2-core host): the next starts once the last wrote its ready file, or ``spare_start_max_s``
    after it started if it never does."""
    never = [sys.executable, "-c", READY + "time.sleep(60)", "1000"]
    slow = [sys.executable, "-c", READY + "time.sleep(60)", "1.0"]
    graph = _graph(tmp_path, first=slow, second=slow, recorder=never)
    stop_after(graph)
    log: list[str] = []
    options = FAST.model_copy(update={"spare_delay_s": 0.1, "spare_start_max_s": 1.5})
    sup = Supervisor(graph, options, {"recorder"}, log=log.append, status_path=graph.status_path)
    assert _run(sup, 1.0) is None
    assert list(graph.spares) == ["recorder"]  # the recorder's first; it never says ready
    t0 = time.monotonic()
    assert _run(sup, 10.0, until=lambda: "first" in graph.spares) is None
    assert time.monotonic() - t0 >= 0.3  # only once spare_start_max_s (1.5 s) passed
    assert _run(sup, 0.5) is None and "second" not in graph.spares  # "first" is still importing (1 s)
    assert _run(sup, 10.0, until=lambda: "second" in graph.spares) is None
    assert graph.spare_ready("first") and not graph.spare_ready("recorder")
    assert [m.split("'")[1] for m in log if "warm spare" in m] == ["recorder", "first", "second"]


def test_spares_first_puts_the_named_groups_spares_next_after_the_recorders(tmp_path: Path, stop_after) -> None:
    """``spares_first`` (what the fault bench gives the groups it will kill or hang) starts those
    groups' spares next after the recorder's, in its order, then the rest."""
    quick = [sys.executable, "-c", READY + "time.sleep(60)", "0"]
    graph = _graph(tmp_path, first=quick, second=quick, recorder=quick)
    stop_after(graph)
    log: list[str] = []
    options = FAST.model_copy(update={"spare_delay_s": 0.1, "spares_first": ["second", "recorder"]})
    sup = Supervisor(graph, options, {"recorder"}, log=log.append, status_path=graph.status_path)
    assert "first: recorder, second)" in options.describe()
    assert _run(sup, 15.0, until=lambda: {"recorder", "first", "second"} <= set(graph.spares)) is None
    assert [m.split("'")[1] for m in log if "warm spare" in m] == ["recorder", "second", "first"]


def test_a_failure_ends_the_spares_still_starting_and_starts_them_again_after_the_hold(tmp_path: Path,
                                                                                       stop_after) -> None:
    """A spare still importing when another group fails would create its DDS participant within the
    dead one's lease (and could take its shared-memory port): it is ended at once, and a new one is
    started once ``spare_hold_after_failure_s`` has passed. A spare past its imports is kept."""
    never = [sys.executable, "-c", READY + "time.sleep(60)", "1000"]  # its spare never gets past its imports
    crash = [sys.executable, "-c", READY + "time.sleep(1.5); sys.exit(3)", "0"]
    graph = _graph(tmp_path, slow=never, crashy=crash, recorder=SLEEP)
    stop_after(graph)
    log: list[str] = []
    options = FAST.model_copy(update={"spare_delay_s": 0.1, "spare_start_max_s": 0.3, "spare_hold_after_failure_s": 1.0})
    sup = Supervisor(graph, options, {"recorder"}, log=log.append, status_path=graph.status_path)
    assert _run(sup, 10.0, until=lambda: {"recorder", "slow", "crashy"} <= set(graph.spares)) is None
    first_slow, recorder_spare = graph.spares["slow"], graph.spares["recorder"]
    assert _run(sup, 10.0, until=lambda: bool(sup.history)) is None  # crashy failed (exit 3)
    assert first_slow.poll() is not None and graph.spares.get("recorder") is recorder_spare  # ended / kept
    assert any("ended the warm spare of process group 'slow'" in m for m in log), log
    t0 = time.monotonic()
    assert _run(sup, 10.0, until=lambda: "slow" in graph.spares) is None
    assert time.monotonic() - t0 >= 0.8 and graph.spares["slow"] is not first_slow  # after the hold (1 s)


@pytest.mark.ros
def test_a_warm_spare_is_ready_once_it_has_discovered_the_graphs_nodes(ros_env: dict, tmp_path: Path) -> None:
    """A spare's readiness (``rgbt.ros.spin.GraphDiscovery``): the nodes named in the graph's params
    file, seen by a real second participant once they are discovered; a node that never comes holds
    it back until the bound, and is named."""
    import yaml

    from rgbt.ros.spin import BackgroundNode, GraphDiscovery, graph_node_names

    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"present": {"ros__parameters": {}}, "absent": {"ros__parameters": {}},
                                      "/**": {"ros__parameters": {}}}))
    assert graph_node_names(["--ros-args", "--params-file", str(params)]) == {"present", "absent"}
    assert graph_node_names(["--ros-args", "-p", "x:=1"]) == set()
    present, spare = BackgroundNode("present"), BackgroundNode("spare_probe")
    present.start()
    try:
        found = GraphDiscovery(spare.node, {"present"}, settle_s=0.2, max_s=30.0)
        deadline = time.monotonic() + 30
        while not found.done():
            assert time.monotonic() < deadline, found.describe()
            time.sleep(0.05)
        assert "graph discovered" in found.describe()
        waiting = GraphDiscovery(spare.node, {"present", "absent"}, settle_s=0.2, max_s=1.0)
        assert not waiting.done()
        time.sleep(1.1)
        assert waiting.done() and "not discovered: absent" in waiting.describe()
    finally:
        present.close()
        spare.close()

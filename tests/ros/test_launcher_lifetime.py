"""The launcher is no single point of failure, end to end with a real ``rgbt up`` of a small profile
(health monitor + recorder, real rclpy + Fast DDS processes): a ``kill -9`` of the launcher ends its
whole graph (warm spare included) with the bag closed; a second ``rgbt up`` of the profile is refused
while the first runs; a hang-up of its terminal (a real pseudo-terminal closed) leaves the flight
supervised with the output in the log; systemd's notifications arrive in order on a real socket; a
warm spare in standby ends cleanly on SIGTERM."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from helpers import (checkout_env, children_of, process_alive, run_rgbt, start_up, wait_for_line, wait_gone,
                     write_small_profile)
from rgbt.graph.parent_death import LAUNCHER_PID_ENV

pytestmark = pytest.mark.ros

GROUPS = r"rgbt up: 2 process\(es\): health\[(\d+)\], recorder\[(\d+)\]"


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item)


def _wait_ready(path: Path, pid: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    """Until the warm spare ``pid`` wrote its ready file ``path`` (``proc`` must keep running)."""
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text().strip() == str(pid)):
        assert proc.poll() is None and time.monotonic() < deadline, f"spare {pid} not ready"
        time.sleep(0.05)


def _kill_all(pids: list[int]) -> None:
    for pid in pids:
        if process_alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
def test_kill_9_of_the_launcher_ends_its_graph(ros_env: dict, tmp_path: Path) -> None:
    log = tmp_path / "up.log"
    up = start_up(write_small_profile(tmp_path), log)
    graph: list[int] = []
    try:
        groups = [int(p) for p in wait_for_line(log, GROUPS, up).groups()]
        work = Path(wait_for_line(log, r"work folder (\S+)", up).group(1))
        spare = int(wait_for_line(log, r"started a warm spare of process group 'health' \[(\d+)\]", up).group(1))
        wait_for_line(log, r"recording to", up)
        _wait_ready(work / "spare_health.ready", spare, up)  # the spare in standby, waiting on its stdin
        graph = children_of(up.pid)
        assert set(groups) | {spare} <= set(graph), (groups, spare, graph)
        assert all(_environ(pid)[LAUNCHER_PID_ENV] == str(up.pid) for pid in graph)
        os.kill(up.pid, signal.SIGKILL)
        up.wait()
        gone_s = wait_gone(graph, timeout=30)
        print(f"the graph's {len(graph)} processes were gone {gone_s:.2f} s after the launcher's kill -9")
    finally:
        if up.poll() is None:
            up.kill()
        _kill_all(graph)
    (bag,) = (tmp_path / "bags").iterdir()
    manifest = json.loads((bag / "rgbt_manifest.json").read_text())  # SIGTERM: the recorder closed its bag
    assert manifest.get("state", "closed") == "closed", manifest


@pytest.mark.slow
def test_a_second_up_of_the_profile_is_refused_while_the_first_runs(ros_env: dict, tmp_path: Path) -> None:
    profile, log = write_small_profile(tmp_path), tmp_path / "up.log"
    first = start_up(profile, log)
    try:
        wait_for_line(log, GROUPS, first)
        second = run_rgbt("up", profile, "--duration", "5", check=False, timeout=120)
        assert second.returncode == 2, second.stderr
        assert re.search(rf"rgbt up: error: the graph of profile 'small-[0-9a-f]{{8}}' is already running: "
                         rf"lock \S+ is held by PID {first.pid}", second.stderr), second.stderr
        assert "process(es)" not in second.stderr  # nothing started
        first.send_signal(signal.SIGHUP)  # its output is a file, no terminal: it stays where it is
        wait_for_line(log, r"rgbt up: SIGHUP: ignored \(the output is no terminal\); the flight goes on", first)
        first.send_signal(signal.SIGINT)
        assert first.wait(timeout=60) == 0, log.read_text()
    finally:
        if first.poll() is None:
            first.kill()
    again = run_rgbt("up", profile, "--duration", "2", check=False, timeout=120)  # the lock is free again
    assert again.returncode == 0 and re.search(GROUPS, again.stderr), again.stderr


class _Terminal:
    """``rgbt up`` on a real pseudo-terminal (its controlling terminal: ``pty.fork``); a thread reads
    what it writes until :meth:`hang_up` closes the terminal's master side."""

    def __init__(self, *args: str) -> None:
        env = checkout_env()
        self.pid, self.master = pty.fork()
        if self.pid == 0:  # the child: become rgbt up
            try:
                os.execve(sys.executable, [sys.executable, "-m", "rgbt", *args], env)
            finally:
                os._exit(127)
        self.text = ""
        self.code: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stop.is_set():
            if select.select([self.master], [], [], 0.1)[0]:
                try:
                    self.text += os.read(self.master, 65536).decode(errors="replace")
                except OSError:
                    return

    def wait_for(self, pattern: str, timeout: float = 90) -> re.Match:
        deadline = time.monotonic() + timeout
        while not (m := re.search(pattern, self.text)):
            assert self.poll() is None and time.monotonic() < deadline, f"{pattern!r} not in:\n{self.text}"
            time.sleep(0.1)
        return m

    def hang_up(self) -> None:
        self._stop.set()
        self._thread.join()
        os.close(self.master)  # the kernel hangs the terminal up: SIGHUP to its session leader, rgbt up

    def poll(self) -> int | None:
        if self.code is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.code = os.waitstatus_to_exitcode(status)
        return self.code

    def wait(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            assert time.monotonic() < deadline, "rgbt up did not end"
            time.sleep(0.1)
        return self.code  # type: ignore[return-value]


@pytest.mark.slow
def test_a_hang_up_leaves_the_flight_supervised_with_its_output_in_the_log(ros_env: dict, tmp_path: Path) -> None:
    term = _Terminal("up", str(write_small_profile(tmp_path)), "--duration", "120")
    try:
        health = int(term.wait_for(GROUPS).group(1))
        log = Path(term.wait_for(r"on a hang-up the output goes on in (\S+)\)").group(1))
        term.wait_for(r"recording to")
        term.hang_up()
        wait_for_line(log, r"rgbt up: SIGHUP: the terminal hung up; the flight goes on, its output continues in "
                           + re.escape(str(log)), timeout=30)
        assert term.poll() is None and process_alive(health)
        os.kill(health, signal.SIGKILL)  # still supervised: restarted, and both say so in the log
        wait_for_line(log, r"restarted process group 'health'", timeout=60)
        wait_for_line(log, r"\[health\]: HealthOptions", timeout=60)  # the new process's own output
        assert term.poll() is None
        os.kill(term.pid, signal.SIGINT)
        assert term.wait(timeout=60) == 0, log.read_text()
    finally:
        if term.poll() is None:
            os.kill(term.pid, signal.SIGKILL)
            term.wait(timeout=30)
    assert "rgbt up: restarts {'health': 1}" in log.read_text()


@pytest.mark.slow
def test_sd_notify_ready_watchdog_status_stopping_in_order(ros_env: dict, tmp_path: Path) -> None:
    """A real AF_UNIX datagram socket (abstract name) as ``$NOTIFY_SOCKET``, the senders' PIDs from
    the kernel (SO_PASSCRED): only the launcher notifies (``NotifyAccess=main``)."""
    name = f"rgbt-test-{uuid.uuid4().hex}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    sock.bind("\0" + name)
    sock.settimeout(0.2)
    got: list[tuple[int, str]] = []  # (sender PID, datagram)

    def receive_until(done, timeout: float = 60) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, got
            try:
                data, ancillary, _, _ = sock.recvmsg(4096, socket.CMSG_SPACE(struct.calcsize("3i")))
            except socket.timeout:
                continue
            creds = [struct.unpack("3i", d)[0] for lvl, typ, d in ancillary if typ == socket.SCM_CREDENTIALS]
            got.append((creds[0] if creds else -1, data.decode()))

    log = tmp_path / "up.log"
    up = start_up(write_small_profile(tmp_path), log, env={"NOTIFY_SOCKET": "@" + name, "WATCHDOG_USEC": "1000000"})
    try:
        receive_until(lambda: any(m.startswith("READY=1") for _, m in got))
        health = int(wait_for_line(log, GROUPS, up).group(1))
        receive_until(lambda: sum(m == "WATCHDOG=1" for _, m in got) >= 3)
        env = _environ(health)
        assert "NOTIFY_SOCKET" not in env and "WATCHDOG_USEC" not in env and env[LAUNCHER_PID_ENV] == str(up.pid)
        wait_for_line(log, r"\[health\]: HealthOptions", up)  # killed during its imports, it never prints one
        os.kill(health, signal.SIGKILL)
        receive_until(lambda: any("restarts: health 1" in m for _, m in got))
        deadline = time.monotonic() + 60  # the restarted process past its imports (stopped during them: exit 1)
        while log.read_text().count("[health]: HealthOptions") < 2:
            assert time.monotonic() < deadline and up.poll() is None, log.read_text()
            time.sleep(0.1)
        up.send_signal(signal.SIGINT)
        receive_until(lambda: any(m.startswith("STOPPING=1") for _, m in got))
        assert up.wait(timeout=60) == 0, log.read_text()
        receive_until(lambda: True)  # the last datagram queued, if any
    finally:
        if up.poll() is None:
            up.kill()
        sock.close()
    texts = [m for _, m in got]
    assert {pid for pid, _ in got} == {up.pid}, got
    assert texts[0].startswith("READY=1\nSTATUS=2/2 process groups running; restarts: none"), texts
    stopping = next(i for i, m in enumerate(texts) if m.startswith("STOPPING=1"))
    assert texts[stopping:] == [texts[stopping]] and "stopping: SIGINT" in texts[stopping], texts  # the last one
    restart = next(i for i, m in enumerate(texts) if "restarts: health 1" in m)
    assert 0 < restart < stopping and all(m == "WATCHDOG=1" or m.startswith("STATUS=") for m in texts[1:stopping])


def test_a_recorders_warm_spare_reserves_its_take_overs_heap_and_spool_while_it_waits(ros_env: dict,
                                                                                       tmp_path: Path) -> None:
    """What the recorder would reserve when it starts (its options from the graph's params file, the
    ``/**`` section first), touched in standby, before a take-over needs it: its heap, and its crash
    spool allocated (removed when the spare ends without taking over)."""
    import yaml

    from rgbt.bag.spool import HEADER_BYTES
    from rgbt.graph.options import RecorderOptions
    from rgbt.graph.recording import recorder_layout, spool_capacity, spool_path
    from rgbt.ros.spin import node_parameters
    from rgbt.stack import load_stack

    shm = tmp_path / "shm"
    shm.mkdir()
    mine = {"buffer_s": 0.5, "dds_window_s": 0.25, "out_dir": str(tmp_path / "bags"), "spool_dir": str(shm)}
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"/**": {"ros__parameters": {"buffer_s": 9.0}},
                                      "recorder": {"ros__parameters": mine},
                                      "health": {"ros__parameters": {"buffer_s": 7.0}}}))
    ros_args = ["--ros-args", "--params-file", str(params)]
    assert node_parameters(ros_args, "recorder") == mine
    assert node_parameters(ros_args, "vio") == {"buffer_s": 9.0}
    layout = recorder_layout(RecorderOptions(**mine), load_stack())
    want_mb = layout.heap_bytes / 1e6
    assert 0 < layout.heap_bytes < layout.plan.budget_bytes * 5 // 4  # the writer queue's share is the spool's
    log = tmp_path / "spare.log"
    with log.open("w") as err:
        spare = subprocess.Popen([sys.executable, "-m", "rgbt.ros.spin", "--node", "recorder:recorder", "--standby",
                                  *ros_args], stdin=subprocess.PIPE, stderr=err, env=checkout_env())
    try:
        got = float(wait_for_line(log, r"heap reserved in standby: (\d+) MB", spare).group(1))
        assert abs(got - want_mb) <= 8.5, (got, want_mb)  # touched in 8 MB chunks
        spool = spool_path(str(shm), spare.pid)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (spool.exists() and spool.stat().st_blocks * 512 >= spool.stat().st_size):
            time.sleep(0.1)
        assert spool.stat().st_size == HEADER_BYTES + spool_capacity(layout.plan.writer_bytes)
        assert spool.stat().st_blocks * 512 >= spool.stat().st_size  # allocated, not sparse
        spare.stdin.close()  # end of input: it ends without starting its nodes
        assert spare.wait(timeout=30) == 0
    finally:
        if spare.poll() is None:
            spare.kill()
    assert not (tmp_path / "bags").exists()  # never started: no bag
    assert list(shm.iterdir()) == []  # its spool removed


@pytest.mark.slow
def test_a_warm_spare_in_standby_ends_cleanly_on_sigterm(ros_env: dict, tmp_path: Path) -> None:
    ready = tmp_path / "spare.ready"
    spare = subprocess.Popen([sys.executable, "-m", "rgbt.ros.spin", "--node", "health:health", "--standby",
                              "--ready-file", str(ready)], stdin=subprocess.PIPE, env=checkout_env())
    try:
        _wait_ready(ready, spare.pid, spare)
        spare.send_signal(signal.SIGTERM)  # its stdin stays open: the signal alone must end it
        assert spare.wait(timeout=30) == 0  # handled (the default action would be -SIGTERM)
    finally:
        if spare.poll() is None:
            spare.kill()
        spare.stdin.close()

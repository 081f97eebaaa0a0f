"""The launcher's guards, each on the real thing without ROS: the parent-death signal (real processes,
a real ``kill -9``), the per-profile lock (real ``flock`` between processes, a lock kept by an
inherited descriptor), ``sd_notify`` (a real AF_UNIX datagram socket, path and abstract), the output
relay moving to a log file when the output fails."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from helpers import checkout_env, process_alive, wait_gone
from rgbt.paths import LAUNCH_DIR
from rgbt.graph import instance_lock
from rgbt.graph.instance_lock import InstanceLock, InstanceLocked, instance_name, lock_dir
from rgbt.graph.parent_death import LAUNCHER_PID_ENV, die_with_launcher
from rgbt.graph.sdnotify import Notifier, notify_address, watchdog_period_s

ENV = checkout_env()


def _middle(child_code: str, tmp_path: Path) -> tuple[subprocess.Popen, int]:
    """A 'launcher' process that starts one child running ``child_code`` (with the launcher's PID in
    ``RGBT_LAUNCHER_PID``) and then sleeps; returns it and the child's PID once the child is ready."""
    ready = tmp_path / f"ready_{uuid.uuid4().hex}"
    launcher = textwrap.dedent(f"""
        import os, subprocess, sys, time
        env = dict(os.environ, {LAUNCHER_PID_ENV}=str(os.getpid()))
        subprocess.Popen([sys.executable, "-c", {child_code!r}, {str(ready)!r}], env=env, start_new_session=True)
        time.sleep(120)
    """)
    proc = subprocess.Popen([sys.executable, "-c", launcher], env=ENV)
    deadline = time.monotonic() + 30
    while not (ready.exists() and ready.read_text()):
        assert proc.poll() is None and time.monotonic() < deadline, "the child did not start"
        time.sleep(0.02)
    return proc, int(ready.read_text())


CHILD = textwrap.dedent("""
    import signal, sys, time
    from rgbt.graph.parent_death import die_with_launcher
    gone = die_with_launcher()
    if gone:
        sys.exit(3)
    def on_term(signum, frame):
        from rgbt.graph.parent_death import launcher_gone
        open(sys.argv[1] + ".term", "w").write("SIGTERM: " + str(launcher_gone()))
        sys.exit(0)
    signal.signal(signal.SIGTERM, on_term)
    open(sys.argv[1], "w").write(str(__import__("os").getpid()))
    time.sleep(120)
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")
def test_a_child_gets_sigterm_when_its_launcher_is_killed(tmp_path: Path) -> None:
    launcher, child = _middle(CHILD, tmp_path)
    try:
        os.kill(launcher.pid, signal.SIGKILL)
        launcher.wait()
        wait_gone([child])
        (term,) = tmp_path.glob("ready_*.term")  # its handler ran: a clean exit, not a kill; it knows why
        assert term.read_text().startswith(f"SIGTERM: the launcher (PID {launcher.pid}) is gone"), term.read_text()
    finally:
        if process_alive(child):
            os.kill(child, signal.SIGKILL)


def test_a_launcher_gone_before_the_child_checked_is_seen() -> None:
    # the named launcher (PID 1) is not the child's parent (this test): as if it died before the
    # child's prctl, the child exits at once
    child = subprocess.run([sys.executable, "-c", "from rgbt.graph.parent_death import die_with_launcher; "
                            "print(die_with_launcher())"], env={**ENV, LAUNCHER_PID_ENV: "1"},
                           capture_output=True, text=True, timeout=60)
    assert child.stdout.strip() == f"the launcher (PID 1) is gone (parent now PID {os.getpid()})"
    assert subprocess.run([sys.executable, "-c", CHILD, "/nonexistent"], env={**ENV, LAUNCHER_PID_ENV: "1"},
                          timeout=60).returncode == 3
    assert die_with_launcher({}) is None  # started by hand: left alone (and nothing set on this process)


def test_instance_names_and_lock_dir_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert instance_name("flight") == instance_name(LAUNCH_DIR / "flight.yaml") == "flight"
    other = tmp_path / "flight.yaml"
    other.write_text((LAUNCH_DIR / "flight.yaml").read_text())
    name = instance_name(other)
    assert name.startswith("flight-") and len(name) == len("flight-") + 8 and name != "flight"
    assert lock_dir({"RGBT_LOCK_DIR": str(tmp_path / "x")}) == tmp_path / "x" and (tmp_path / "x").is_dir()
    # no /run/lock to write in: the user's runtime folder, then a temp folder
    monkeypatch.setattr(instance_lock, "SYSTEM_LOCK_DIR", tmp_path / "no_such_dir")
    assert lock_dir({"XDG_RUNTIME_DIR": str(tmp_path)}) == tmp_path / "rgbt"
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    fallback = lock_dir({})
    assert fallback.parent == tmp_path and fallback.name == f"rgbt-locks-{os.getuid()}" and fallback.is_dir()


def test_a_second_holder_is_refused_naming_the_pid(tmp_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from rgbt.graph.instance_lock import InstanceLock
        lock = InstanceLock.acquire("demo", {str(tmp_path)!r})
        print("locked", flush=True)
        time.sleep(120)
    """)], env=ENV, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(InstanceLocked, match=rf"'demo' is already running: lock .*demo.lock is held by PID {holder.pid}"):
            InstanceLock.acquire("demo", tmp_path)
    finally:
        holder.kill()
        holder.wait()
    with InstanceLock.acquire("demo", tmp_path) as lock:  # free once its holder is gone
        assert (tmp_path / "demo.lock").read_text().strip() == str(os.getpid()) and lock.fd >= 0
    assert lock.fd == -1


def test_the_lock_is_held_by_what_is_left_of_a_killed_launchers_graph(tmp_path: Path) -> None:
    """The children inherit the lock: a launcher killed with ``kill -9`` keeps the profile locked
    until its last child is gone, and the refusal names the children."""
    launcher = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import subprocess, sys, time
        from rgbt.graph.instance_lock import InstanceLock
        lock = InstanceLock.acquire("demo", {str(tmp_path)!r})
        child = subprocess.Popen(["sleep", "120"], pass_fds=(lock.fd,))
        print(child.pid, flush=True)
        time.sleep(120)
    """)], env=ENV, stdout=subprocess.PIPE, text=True)
    child = int(launcher.stdout.readline())
    try:
        os.kill(launcher.pid, signal.SIGKILL)
        launcher.wait()
        with pytest.raises(InstanceLocked, match=rf"held by PID\(s\) {child} \(left from rgbt PID {launcher.pid}, which is gone\)"):
            InstanceLock.acquire("demo", tmp_path)
    finally:
        os.kill(child, signal.SIGKILL)
    wait_gone([child])
    InstanceLock.acquire("demo", tmp_path).release()


def _receiver(address: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(address)
    sock.settimeout(5)
    return sock


def test_sd_notify_to_a_path_and_an_abstract_socket(tmp_path: Path) -> None:
    path = str(tmp_path / "notify.sock")
    abstract = f"rgbt-test-{uuid.uuid4().hex}"
    for value, address in ((path, path), ("@" + abstract, "\0" + abstract)):
        with _receiver(address) as sock:
            notifier = Notifier({"NOTIFY_SOCKET": value, "WATCHDOG_USEC": "4000000"})
            assert notifier.ping_period_s == 1.0  # half of 4 s, at most 1 s
            assert notifier.ready("2/2 up") and notifier.ping() and not notifier.ping()  # the second is not due
            assert notifier.status("a\nb") and notifier.stopping()
            got = [sock.recv(4096).decode() for _ in range(4)]
            notifier.close()
        assert got == ["READY=1\nSTATUS=2/2 up", "WATCHDOG=1", "STATUS=a b", "STOPPING=1"]
    assert notify_address({}) is None and not Notifier({}).ready()  # not under systemd: nothing
    assert watchdog_period_s({"WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "1"}) is None  # asked of another process
    assert watchdog_period_s({"WATCHDOG_USEC": "1000000"}) == 0.5
    assert not Notifier({"NOTIFY_SOCKET": str(tmp_path / "nobody")}).ready()  # nobody listens: no error


@pytest.mark.slow
def test_the_relay_moves_to_the_log_when_the_output_fails(tmp_path: Path) -> None:
    """A child writing through the relay while the launcher's stderr is a pipe whose reader went
    away (as a hung-up terminal: writes fail): its output and the launcher's own go on in the log."""
    script = textwrap.dedent(f"""
        import subprocess, sys, time
        from pathlib import Path
        from rgbt.graph.console import Console
        console = Console()
        say = console.guard(lambda m: print(m, file=sys.stderr, flush=True))
        child = subprocess.Popen([sys.executable, "-c",
                                  "import sys, time\\nfor i in range(40):\\n    print('child', i, file=sys.stderr, flush=True); time.sleep(0.05)"],
                                 stdout=console.child_stdout, stderr=console.child_stderr)
        console.start(Path({str(tmp_path / 'up.log')!r}))
        say("launcher: before")
        sys.stdin.readline()  # the test closed the stderr pipe's reader
        for i in range(3):
            say(f"launcher: after {{i}}")
        child.wait()
        console.close()
        say("launcher: done")
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], env=ENV, stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stderr.readline() in (b"launcher: before\n", b"child 0\n")
    proc.stderr.close()  # the output is gone
    proc.stdin.write(b"go\n")
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0
    log = (tmp_path / "up.log").read_text()
    assert "launcher: after 2" in log and "launcher: done" in log and "child 39" in log, log

"""Living with the middleware's own faults: a background node (a bench's probe) whose Fast DDS threads
deadlocked is left behind with a word, not waited for forever."""

from __future__ import annotations

import time

import pytest


@pytest.mark.ros
def test_a_background_node_whose_middleware_hangs_is_left_and_said(ros_env: dict, monkeypatch: pytest.MonkeyPatch,
                                                                    capfd: pytest.CaptureFixture) -> None:
    """Fast DDS can deadlock its own threads (a lease check against a participant's removal,
    eProsima/Fast-DDS issue 6502); a probe's close must not hang the verb that owns it."""
    import threading

    from rgbt.ros import spin

    bg = spin.BackgroundNode("rgbt_test_stuck", handle_signals=False)
    bg.start()
    release, executor = threading.Event(), bg.executor

    class Deadlocked:  # a teardown that waits on the middleware's deadlocked threads
        def shutdown(self) -> None:
            release.wait(30)
            executor.shutdown()

    bg.executor = Deadlocked()  # type: ignore[assignment]
    monkeypatch.setattr(spin, "_STUCK", [])
    assert not spin.middleware_stuck()
    assert bg.close(timeout_s=0.5) is False
    assert spin.middleware_stuck() and "did not shut down in 0.5 s" in capfd.readouterr().err
    release.set()  # the test's own clean-up: the teardown goes on
    deadline = time.monotonic() + 10
    while bg.context.ok() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not bg.context.ok()


@pytest.mark.ros
def test_a_publisher_lets_go_of_a_killed_process_within_its_short_participant_lease(ros_env: dict) -> None:
    """Node processes announce a 2 s lease (``NodeOptions.participant_lease_s``): a publisher
    forgets a ``kill -9``-ed subscriber process's reader within it, not after Fast DDS's 20 s (while
    a killed reader stayed matched, the stack reached every other process seconds late)."""
    import os
    import signal
    import subprocess
    import sys

    from std_msgs.msg import String

    from rgbt.paths import REPO_ROOT
    from rgbt.ros import spin

    code = """
import time
from rgbt.ros_env import use_participant_lease
print(use_participant_lease(2.0), flush=True)
import rclpy
from rclpy.node import Node
from std_msgs.msg import String
rclpy.init()
node = Node("rgbt_test_lease_reader")
node.create_subscription(String, "/rgbt_test/lease", lambda _msg: None, 10)
print("ready", flush=True)
time.sleep(120)
"""
    child = subprocess.Popen([sys.executable, "-c", code], cwd=REPO_ROOT, env=os.environ.copy(),
                             stdout=subprocess.PIPE, text=True)
    bg = spin.BackgroundNode("rgbt_test_lease_writer", handle_signals=False)
    pub = bg.node.create_publisher(String, "/rgbt_test/lease", 10)
    bg.start()
    try:
        assert child.stdout is not None
        assert "participant lease 2 s" in child.stdout.readline()
        deadline = time.monotonic() + 30
        while pub.get_subscription_count() < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pub.get_subscription_count() == 1, "the reader process was never matched"
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        t0 = time.monotonic()
        while pub.get_subscription_count() > 0 and time.monotonic() - t0 < 15:
            time.sleep(0.05)
        let_go_s = time.monotonic() - t0
        assert pub.get_subscription_count() == 0 and let_go_s < 6.0, f"still matched {let_go_s:.1f} s after the kill"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        bg.close()


@pytest.mark.ros
def test_a_node_process_whose_middleware_hangs_at_exit_is_left_and_said(ros_env: dict, monkeypatch: pytest.MonkeyPatch,
                                                                        capfd: pytest.CaptureFixture) -> None:
    """The same deadlock on a node process's way out (its bags are closed by then): the teardown is
    left after its timeout and said, and the process ends with ``os._exit`` (``spin.exit_code``)
    instead of hanging; a teardown that fails raises on the caller's thread."""
    import threading

    from rgbt.ros import spin

    release = threading.Event()

    class Deadlocked:  # an executor whose shutdown waits on the middleware's deadlocked threads
        def shutdown(self) -> None:
            release.wait(30)

    class Broken:
        def shutdown(self) -> None:
            raise RuntimeError("executor broke")

    monkeypatch.setattr(spin, "_STUCK", [])
    with pytest.raises(RuntimeError, match="executor broke"):
        spin.end_middleware(Broken(), [], timeout_s=5.0)  # type: ignore[arg-type]
    assert not spin.middleware_stuck()
    t0 = time.monotonic()
    spin.end_middleware(Deadlocked(), [], timeout_s=0.3)  # type: ignore[arg-type]
    assert time.monotonic() - t0 < 5.0
    assert spin.middleware_stuck() and "did not shut down in 0.3 s" in capfd.readouterr().err
    release.set()

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

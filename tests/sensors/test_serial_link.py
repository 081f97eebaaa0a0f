"""SerialLink: exponential backoff while the device is absent, then a clean reconnect."""

from __future__ import annotations

import time

from rgbt.sensors.serial_link import SerialLink


def test_backoff_doubles_up_to_the_cap_then_connects(pty_device, tmp_path):
    pty_device.unplug()
    link = SerialLink(str(pty_device.path), backoff_s=(0.01, 0.04))
    calls = []
    link.on_connect = lambda: calls.append(time.monotonic())
    waits = []
    for _ in range(4):
        time.sleep(max(0.0, link._next_try - time.monotonic()))  # noqa: SLF001 - follow the schedule
        assert not link.poll()
        waits.append(link._backoff)  # noqa: SLF001
        assert not link.poll()  # before the next try is due: no attempt, no change
        assert link._backoff == waits[-1]  # noqa: SLF001
    assert waits == [0.02, 0.04, 0.04, 0.04] and not calls and "ttyDEV" in link.last_error
    pty_device.plug()
    deadline = time.monotonic() + 2
    while not link.poll() and time.monotonic() < deadline:
        time.sleep(0.005)
    assert link.connected and len(calls) == 1 and link.connects == 1
    pty_device.write(b"hello")
    assert link.read(64, timeout=1.0) == b"hello"
    pty_device.unplug()
    assert link.read(64, timeout=0.5) == b"" and not link.connected and link.disconnects == 1
    link.close()

"""The reopen policy and the device state machine (rgbt.sensors.reconnect) with a fake clock and a
fake device: what a driver loop does when a device is unplugged, missing at start, or sends a bad frame."""

from __future__ import annotations

import errno

import pytest

from rgbt.errors import DecodeError
from rgbt.sensors.reconnect import (DeviceError, DeviceLink, DeviceRunner, ReadFailed, ReconnectPolicy, classify)

PERIOD_NS = 16_666_667  # one read of a 60 Hz camera


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000_000

    def __call__(self) -> int:
        return self.now

    def advance_s(self, seconds: float) -> None:
        self.now += int(round(seconds * 1e9))


class FakeCamera:
    """A camera on a fake clock: ``gone`` (start, end) ns intervals during which it is unplugged (open
    fails with ENODEV, a read of an open handle fails with EIO), ``bad`` read numbers that give a
    frame that cannot be decoded. Every read takes one frame period."""

    def __init__(self, clock: Clock, gone: list[tuple[int, int]] = (), bad: set[int] = frozenset()) -> None:
        self.clock, self.gone_intervals, self.bad = clock, list(gone), set(bad)
        self.open_handles = 0
        self.opens: list[int] = []  # times of open attempts
        self.frames: list[int] = []  # times of frames delivered
        self.reads = 0

    def gone(self) -> bool:
        return any(a <= self.clock.now < b for a, b in self.gone_intervals)

    def open(self) -> "FakeCamera":
        self.opens.append(self.clock.now)
        assert self.open_handles == 0, "opened again before the previous handle was closed"
        if self.gone():
            raise DeviceError("no such device")
        self.open_handles += 1
        return self

    def close(self) -> None:
        self.open_handles -= 1

    def read(self) -> None:
        self.clock.now += PERIOD_NS
        self.reads += 1
        if self.gone():
            raise OSError(errno.EIO, "Input/output error")
        if self.reads in self.bad:
            raise DecodeError("frame of 1000 bytes: expected 655360")
        self.frames.append(self.clock.now)


def run_for(runner: DeviceRunner, clock: Clock, seconds: float) -> list[float]:
    """Drive ``runner`` as a driver thread would for ``seconds`` of fake time; the waits it asked for."""
    end = clock.now + int(seconds * 1e9)
    waits = []
    while clock.now < end:
        wait = runner.step()
        if wait > 0:
            waits.append(wait)
            clock.advance_s(wait)  # the thread sleeps on its stop event: no CPU, no reads
    return waits


def make(camera: FakeCamera, clock: Clock, **policy) -> tuple[DeviceLink, DeviceRunner, list[str]]:
    lines: list[str] = []
    link = DeviceLink("thermal", ReconnectPolicy(**policy), clock=clock, log=lines.append, info=lines.append)
    runner = DeviceRunner(link, camera.open, camera.read)
    return link, runner, lines


def test_unplug_mid_stream_closes_and_reopens_with_backoff_then_frames_flow_again() -> None:
    clock = Clock()
    unplug, replug = clock.now + 2_000_000_000, clock.now + 5_000_000_000
    cam = FakeCamera(clock, gone=[(unplug, replug)])
    link, runner, lines = make(cam, clock)
    waits = run_for(runner, clock, 8.0)
    assert link.state == "open" and link.unplugs == 1 and link.reopens == 1 and cam.open_handles == 1
    # open attempts while gone: 0.1 s after the loss, then 0.2, 0.4, 0.8 and at most 1 s apart
    lost_at = min(t for t in cam.opens if t > unplug) - 100_000_000
    gaps = [round((b - a) / 1e9, 3) for a, b in zip([lost_at] + cam.opens[1:], cam.opens[1:])]
    assert gaps[:5] == [0.1, 0.2, 0.4, 0.8, 1.0] and all(g == 1.0 for g in gaps[4:])
    assert all(w <= 1.0 for w in waits)
    # no frame while gone; the first one after the replug within the longest back-off plus one read
    assert not [t for t in cam.frames if unplug <= t < replug]
    first_back = min(t for t in cam.frames if t >= replug)
    assert first_back - replug <= 1_000_000_000 + PERIOD_NS
    # gone time: from the failed read to the reopen
    assert link.gone_total_s() == pytest.approx((cam.opens[-1] - lost_at) / 1e9)
    assert link.gone_s() == 0.0
    # one log line per state change, none per retry
    assert len(lines) == 3, lines
    assert "device open" in lines[0] and "device lost" in lines[1] and "Input/output error" in lines[1]
    assert "back" in lines[2] and "reopen 1" in lines[2]
    assert link.counters()["state"] == "open" and link.counters()["unplugs"] == 1


def test_a_bad_frame_costs_that_frame_only() -> None:
    clock = Clock()
    cam = FakeCamera(clock, bad={30})
    link, runner, lines = make(cam, clock)
    waits = run_for(runner, clock, 1.0)
    assert waits == []  # never waited: no sleep for a bad frame
    assert link.bad_frames == 1 and link.unplugs == 0 and link.reopens == 0 and len(cam.opens) == 1
    assert cam.reads - len(cam.frames) == 1  # one frame lost, the next one read at once
    assert any("bad frame" in line for line in lines)
    assert link.status() == (0, "ok")


def test_a_device_that_only_sends_garbage_is_reopened() -> None:
    clock = Clock()
    cam = FakeCamera(clock, bad=set(range(10, 1000)))
    link, runner, _ = make(cam, clock, max_failed_reads=5)
    waits = run_for(runner, clock, 0.5)
    assert link.unplugs >= 1 and len(cam.opens) >= 2 and waits  # reopened, with back-off between
    assert "5 failed reads in a row" in link.last_error and link.bad_frames >= 5


def test_reads_failing_for_longer_than_the_timeout_are_a_gone_device() -> None:
    clock = Clock()

    class Stalling(FakeCamera):
        def read(self) -> None:
            clock.advance_s(0.6)  # each read blocks, then returns no frame
            raise ReadFailed("no frame in 600 ms")

    link, runner, _ = make(Stalling(clock), clock, failed_read_timeout_s=1.0)
    runner.step()  # open
    runner.step()  # 0.6 s without a frame: one failed read, still open
    assert link.state == "open" and link.failed_reads == 1
    runner.step()  # 1.2 s: gone
    assert link.state == "lost" and link.unplugs == 1 and runner.device is None
    assert "none good for 1.20 s" in link.last_error


def test_missing_at_start_is_a_degraded_start_then_found() -> None:
    clock = Clock()
    start, appears = clock.now, clock.now + 3_000_000_000
    cam = FakeCamera(clock, gone=[(0, appears)])
    link, runner, lines = make(cam, clock)
    run_for(runner, clock, 1.0)
    assert link.state == "missing" and link.status()[0] == 2 and "missing" in link.status()[1]
    assert link.counters()["gone_s"] == pytest.approx((clock.now - start) / 1e9)
    assert [round((t - start) / 1e9, 3) for t in cam.opens] == [0.0, 0.1, 0.3, 0.7]  # then waits 0.8 s
    assert "missing at start" in lines[0] and len(lines) == 1  # retries are not logged
    run_for(runner, clock, 3.0)
    assert link.state == "open" and link.reopens == 1 and link.unplugs == 0 and cam.frames
    assert min(cam.frames) - appears <= 1_000_000_000 + PERIOD_NS
    assert "device back" in lines[1] and "missing at start" in lines[1]


def test_a_bug_in_the_read_is_reported_and_never_spins() -> None:
    clock = Clock()
    reported = []

    def read() -> None:
        clock.advance_s(0.001)
        raise TypeError("unsupported operand")

    link = DeviceLink("imu", ReconnectPolicy(), clock=clock)
    runner = DeviceRunner(link, lambda: object(), read, report=lambda where, exc: reported.append(where))
    waits = run_for(runner, clock, 3.0)
    assert reported and set(reported) == {"read_once"}
    assert link.unplugs >= 3 and sum(waits) > 2.5  # nearly all the time waiting, not reading
    assert len(reported) <= 5 * (link.unplugs + 1)


def test_lost_state_is_a_warning_with_the_time_gone() -> None:
    clock = Clock()
    link = DeviceLink("color", clock=clock)
    link.opened()
    assert link.read_failed(DeviceError("Spinnaker: camera removed"))
    clock.advance_s(2.5)
    level, message = link.status()
    assert level == 1 and "lost 2.5 s ago" in message and "camera removed" in message
    assert link.counters()["gone_s"] == 2.5 and link.counters()["gone_total_s"] == 2.5


@pytest.mark.parametrize("exc, kind", [
    (DeviceError("x"), "device"), (OSError(errno.ENODEV, "No such device"), "device"),
    (ReadFailed("timeout"), "failed_read"), (DecodeError("crc"), "bad_frame"), (KeyError("k"), "unexpected")])
def test_classification(exc: BaseException, kind: str) -> None:
    assert classify(exc) == kind


def test_serial_exceptions_are_device_errors() -> None:
    import serial

    assert classify(serial.SerialException("device reports readiness to read but returned no data")) == "device"


def test_policy_rejects_nonsense() -> None:
    assert ReconnectPolicy().delay_s(0) == 0.1 and ReconnectPolicy().delay_s(10) == 1.0
    with pytest.raises(ValueError, match="first_s > 0"):
        ReconnectPolicy(first_s=0)

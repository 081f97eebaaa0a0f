"""LatenessGate: the deadline of live processing (rgbt.lateness). Synthetic times, no sleeping."""

from __future__ import annotations

import pytest

from rgbt.lateness import LatenessGate

P = 16_666_667  # a 60 Hz stream (ns)
T0 = 1_800_000_000_000_000_000  # wall-clock ns
TRANSPORT = 5_000_000  # the stream's quickest delivery


def live(gate: LatenessGate, n: int, start: int = 0, jitter_ns: int = 2_000_000, offset_ns: int = 0) -> int:
    """Frames ``start``..``start+n-1`` arriving on time (transport + 0..2 jitter); returns the next index."""
    for i in range(start, start + n):
        gate.arrived(T0 + i * P + offset_ns, T0 + i * P + TRANSPORT + (i % 3) * jitter_ns // 2)
    return start + n


def test_on_time_frames_pass_and_a_late_start_is_dropped_and_counted() -> None:
    gate = LatenessGate(1.0)
    i = live(gate, 60)
    assert gate.stats() == {"late": 0, "clock_resets": 0, "realtime": 1, "late_after_periods": 1.0,
                            "baseline_ms": 5.0, "period_ms": 16.667}
    stamp = T0 + i * P
    gate.arrived(stamp, stamp + TRANSPORT)
    assert not gate.late(stamp, stamp + TRANSPORT + P - 1)  # within one period of the quickest arrival
    assert gate.late(stamp, stamp + TRANSPORT + P + 1)
    assert gate.stats()["late"] == 1


def test_the_period_comes_from_the_stamps() -> None:
    gate = LatenessGate(2.0)
    for i in range(40):  # a 10 Hz stream
        gate.arrived(T0 + i * 100_000_000, T0 + i * 100_000_000 + TRANSPORT)
    assert gate.period_ns() == 100_000_000
    stamp = T0 + 40 * 100_000_000
    assert not gate.late(stamp, stamp + TRANSPORT + 150_000_000)  # 1.5 periods
    assert gate.late(stamp, stamp + TRANSPORT + 250_000_000)


def test_nothing_is_late_before_a_baseline_exists() -> None:
    gate = LatenessGate(1.0)
    live(gate, 3)
    assert gate.baseline_ns() is None and not gate.late(T0, T0 + 10**9)


def test_a_wall_clock_step_restarts_the_baseline_instead_of_dropping_everything() -> None:
    """Drivers hold their offset across a step of the host clock, so every age moves by the step."""
    for step_s, resets in ((5, 1), (-5, 0)):  # ages 5 s older: restart; 5 s younger: the new minimum
        gate = LatenessGate(1.0)
        i = live(gate, 60)
        offset = -step_s * 10**9  # the node's clock stepped by step_s, the stamps did not
        i = live(gate, 3, start=i, offset_ns=offset)
        assert not gate.late(T0 + i * P + offset, T0 + i * P + TRANSPORT)  # right after the step: not judged
        i = live(gate, 130, start=i, offset_ns=offset)
        late = [gate.late(T0 + k * P + offset, T0 + k * P + TRANSPORT + 5_000_000) for k in range(i - 5, i)]
        stats = gate.stats()
        assert stats["clock_resets"] == resets and stats["realtime"] == 1 and not any(late), (step_s, stats)
        assert gate.late(T0 + i * P + offset, T0 + i * P + TRANSPORT + 2 * P)  # the gate works again


def test_a_stream_slower_or_faster_than_the_wall_clock_is_never_late() -> None:
    """A bag replayed at half rate or as fast as possible: its stamps do not track the wall clock."""
    for rate in (0.5, 3.0):
        gate = LatenessGate(1.0)
        for i in range(100):
            gate.arrived(T0 + i * P, T0 + int(i * P / rate) + TRANSPORT)
        assert gate.stats()["realtime"] == 0
        assert not gate.late(T0 + 100 * P, T0 + int(100 * P / rate) + 10 * P)
    counters = LatenessGate(1.0)  # stamps that are counters, not times
    for i in range(100):
        counters.arrived(i, T0 + i * P)
    assert not counters.late(100, T0 + 200 * P)


def test_off_and_bad_options() -> None:
    gate = LatenessGate(0.0)
    live(gate, 60)
    assert not gate.enabled and not gate.late(T0, T0 + 10**9)
    with pytest.raises(ValueError, match="late_after_periods"):
        LatenessGate(-1.0)


def test_late_arrivals_do_not_hide_themselves() -> None:
    """The frames to drop are the late ones: a run of them must not make the stream look not live."""
    gate = LatenessGate(1.0)
    i = live(gate, 100)
    for k in range(i, i + 10):  # ten frames in a row arrive 200 ms late (an executor stall upstream)
        gate.arrived(T0 + k * P, T0 + k * P + TRANSPORT + 200_000_000)
        assert gate.late(T0 + k * P, T0 + k * P + TRANSPORT + 200_000_000)
    assert gate.stats()["late"] == 10 and gate.stats()["realtime"] == 1


def test_a_sustained_slow_down_upstream_is_followed_not_blacked_out() -> None:
    """Upstream slows down for seconds (a loaded host: every frame arrives 120 ms late, not only a
    burst): the gate drops the first few, then its baseline follows and the frames pass again, long
    before the old quick arrivals leave the 120-frame window (the masks went dark for ~1 s then)."""
    gate = LatenessGate(2.0)
    i = live(gate, 120)
    verdicts = []
    for k in range(i, i + 60):  # one second of frames, each 120 ms later than before
        t = T0 + k * P
        gate.arrived(t, t + TRANSPORT + 120_000_000)
        verdicts.append(gate.late(t, t + TRANSPORT + 120_000_000))
    assert any(verdicts[:5]) and not any(verdicts[gate.baseline_frames:]), verdicts
    assert gate.stats()["late"] <= gate.baseline_frames


def test_a_mailbox_drops_a_late_item_unread_and_counts_it() -> None:
    """The wiring in rgbt.ros.mailbox: the gate judges the item when the worker would start on it."""
    import threading
    import time

    from rgbt.ros.mailbox import LatestMailbox

    handled: list[str] = []
    done = threading.Event()

    def handle(item: str) -> None:
        handled.append(item)
        done.set()

    box = LatestMailbox(handle, late_after_periods=1.0)
    try:
        deadline = time.monotonic() + 60
        while box.applied_priority == "?":  # the worker is up (its first import can take seconds)
            assert time.monotonic() < deadline
            time.sleep(0.01)
        now = time.time_ns()
        for k in range(60, 0, -1):  # a live 60 Hz history up to now, 5 ms transport
            box.gate.arrived(now - k * P - TRANSPORT, now - k * P)
        box.submit("late", time.time_ns() - TRANSPORT - 3 * P)  # reaches the node 3 periods late
        box.submit("fresh", time.time_ns() - TRANSPORT)  # may overtake "late" before the worker takes it
        assert done.wait(30)
        time.sleep(0.05)
        counts = box.stats()
        assert handled == ["fresh"], (handled, counts)
        assert counts["dropped_late"] + counts["dropped_stale"] == 1 and counts["processed"] == 1, counts
        assert counts["realtime"] == 1 and counts["late_after_periods"] == 1.0
    finally:
        box.close()

"""WallClockOffset with injected clocks: slews followed, steps counted and held (or followed)."""

from __future__ import annotations

import pytest

from rgbt.hostclock import WallClockOffset

S = 1_000_000_000


class Clocks:
    """A monotonic clock advanced by the test and a wall clock = monotonic + offset (steppable)."""

    def __init__(self) -> None:
        self.mono = 100 * S
        self.wall_offset = 1_700_000_000 * S

    def monotonic(self) -> int:
        return self.mono

    def wall(self) -> int:
        return self.mono + self.wall_offset


def _offset(clocks: Clocks, **kw) -> tuple[WallClockOffset, list[str]]:
    logs: list[str] = []
    return WallClockOffset(wall=clocks.wall, monotonic=clocks.monotonic, log=logs.append, **kw), logs


def test_a_step_is_held_counted_and_logged_and_stamps_stay_monotonic() -> None:
    c = Clocks()
    off, logs = _offset(c)
    stamps = []
    for i in range(40):  # 4 s at 10 Hz, the wall clock steps back 5 s at 2 s
        c.mono += S // 10
        if i == 20:
            c.wall_offset -= 5 * S
        stamps.append(off.to_wall(c.mono))
    assert all(b - a == S // 10 for a, b in zip(stamps, stamps[1:]))  # one timeline through the step
    assert off.steps == 1 and off.last_step_ns == -5 * S
    assert len(logs) == 1 and "-5.000 s" in logs[0]


def test_follow_adopts_the_step_once() -> None:
    c = Clocks()
    off, _ = _offset(c, on_step="follow")
    c.mono += 2 * S
    c.wall_offset += 3 * S
    assert off.to_wall(c.mono) == c.wall()
    c.mono += 2 * S
    assert off.to_wall(c.mono) == c.wall() and off.steps == 1


def test_slew_below_the_threshold_is_followed_not_counted() -> None:
    c = Clocks()
    off, logs = _offset(c, step_threshold_ms=20)
    for _ in range(10):
        c.mono += S
        c.wall_offset += 500_000  # 0.5 ms/s: NTP's largest slew
        assert off.to_wall(c.mono) == c.wall()
    assert off.steps == 0 and not logs


def test_checked_at_most_once_per_period() -> None:
    c = Clocks()
    off, _ = _offset(c, check_period_s=1.0)
    c.mono += S // 2
    c.wall_offset += 10 * S
    assert off.to_wall(c.mono) == c.mono + 1_700_000_000 * S and off.steps == 0  # not yet re-checked
    c.mono += S // 2
    off.to_wall(c.mono)
    assert off.steps == 1


def test_bad_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="on_step"):
        WallClockOffset(on_step="jump")  # type: ignore[arg-type]


def test_a_measurement_glitch_is_not_a_step_but_a_real_step_is() -> None:
    """A measurement whose wall readings were all late (the thread preempted between its reads) is
    re-measured at once and dropped; a real step is seen again and counted."""
    c = Clocks()
    glitch = [0]

    def wall() -> int:
        if glitch[0]:
            glitch[0] -= 1
            return c.wall() + 50_000_000  # one whole measurement (3 reads) 50 ms late
        return c.wall()

    logs: list[str] = []
    off = WallClockOffset(wall=wall, monotonic=c.monotonic, log=logs.append)
    c.mono += 2 * S
    glitch[0] = 3
    first = off.to_wall(c.mono)
    assert off.steps == 0 and first == c.wall() and not logs
    c.mono += 2 * S
    c.wall_offset += 5 * S
    off.to_wall(c.mono)
    assert off.steps == 1 and off.last_step_ns == 5 * S and len(logs) == 1

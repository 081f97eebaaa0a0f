"""rgbt.pacing.pace with an injected clock: items due at their time / speed, late ones at once."""

from __future__ import annotations

import pytest

from rgbt.pacing import Pacer, pace


def test_due_times_follow_item_times_at_speed_and_late_items_are_not_skipped() -> None:
    now = [1_000]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += int(s * 1e9)

    items = [(10_000_000, "a"), (30_000_000, "b"), (30_000_000, "c"), (50_000_000, "d")]
    out = []
    for item, due in pace(items, lambda it: it[0], speed=2.0, clock=lambda: now[0], sleep=sleep):
        out.append((item[1], due))
        if item[1] == "b":
            now[0] += 50_000_000  # the consumer stalls: "c" and "d" are late
    assert out == [("a", 1_000), ("b", 10_001_000), ("c", 10_001_000), ("d", 20_001_000)]
    assert slept == [pytest.approx(0.01)]  # only "b" had to wait


def test_speed_must_be_positive() -> None:
    with pytest.raises(ValueError, match="speed"):
        next(pace([1], int, speed=0))


def test_the_start_may_depend_on_the_first_item() -> None:
    """A shared timeline (a schedule anchor) puts the first item where it belongs, known only once it is."""
    now = [0]
    seen = []

    def start(first: int) -> int:
        seen.append(first)
        return 7_000 + first

    out = [due for _, due in pace([100, 300], int, clock=lambda: now[0], sleep=lambda s: None, start_ns=start)]
    assert seen == [100] and out == [7_100, 7_300]


def test_a_pacer_waits_where_its_caller_is_ready() -> None:
    """The ORB-SLAM3 feed paces only the frames it tracks (frozen ones are skipped before it waits)."""
    now = [5_000]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += int(round(s * 1e9))

    pacer = Pacer(0.5, clock=lambda: now[0], sleep=sleep)
    assert [pacer.wait(t) for t in (1_000, 2_000, 2_500)] == [5_000, 7_000, 8_000]
    assert slept == [pytest.approx(2e-6), pytest.approx(1e-6)]

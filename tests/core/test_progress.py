"""Progress reports (``rgbt.progress``): library code calls back, the bars drawn by the caller."""

from __future__ import annotations

from rgbt.progress import ProgressBars


def test_bars_follow_reports_and_a_finished_task_goes() -> None:
    with ProgressBars() as bars:
        bars("epochs", 0, 2)
        bars("epoch 1/2", 3, 10, "loss 0.5")
        bars("feed", 7, None)
        assert set(bars._tasks) == {"epochs", "epoch 1/2", "feed"}
        bars("epoch 1/2", 10, 10)
        assert set(bars._tasks) == {"epochs", "feed"}
    with ProgressBars(enabled=False) as quiet:
        quiet("epochs", 1, 2)  # draws nothing
        assert not quiet._tasks

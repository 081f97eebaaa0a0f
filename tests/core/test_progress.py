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


def test_bars_are_drawn_only_while_a_task_is_unfinished() -> None:
    with ProgressBars() as bars:
        assert bars._bar is None  # nothing drawn before the first report
        bars("done already", 3, 3)
        assert bars._bar is None
        bars("flight", 0, None, "starting")
        assert bars._bar is not None
        bars("flight", 1, 1)
        assert bars._bar is None and not bars._tasks  # the last task finished: the bars stop


def test_benches_report_through_the_callback() -> None:
    import inspect

    from rgbt.bench import preprocess, seg
    from rgbt.demo import run

    for fn in (preprocess.run, seg.run, run.run_demo):
        assert "progress" in inspect.signature(fn).parameters

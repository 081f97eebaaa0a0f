"""Progress reports: library code calls a :class:`Progress` callback; a program that owns a
terminal (the CLI verbs, the demo, the benchmarks) passes :class:`ProgressBars`, which draws them.

A report names its task (one bar each: ``"epoch 3/10"``), how much of it is done and its total
(None: unknown), and an optional note shown beside the name (``"loss 0.412"``). A task whose
``done`` reaches its ``total`` is finished (its bar goes).
"""

from __future__ import annotations

import os
from typing import Any, Protocol


class Progress(Protocol):
    def __call__(self, task: str, done: int, total: int | None, note: str = "") -> None: ...


def no_progress(task: str, done: int, total: int | None, note: str = "") -> None:
    """A :class:`Progress` that reports nothing (for ``progress or no_progress``)."""


class ProgressBars:
    """Draws :class:`Progress` reports as transient rich bars on a duplicate of file descriptor 2
    (so a native library that captures fds 1 and 2 into its log, ORB-SLAM3, does not take them).

    Use as a context manager; ``enabled=False`` draws nothing (``--json``). The bars are drawn only
    while a task is unfinished (they start at a task's first report and stop when the last one
    finishes), so the program's own status lines and prints in between are not disturbed."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._bar: Any = None
        self._stream: Any = None
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> ProgressBars:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()

    def _start(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
        from rich.progress import Progress as RichProgress

        self._stream = os.fdopen(os.dup(2), "w")
        self._bar = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeRemainingColumn(), console=Console(file=self._stream), transient=True)
        self._bar.start()

    def _stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._stream.close()
            self._bar = self._stream = None
        self._tasks.clear()

    def __call__(self, task: str, done: int, total: int | None, note: str = "") -> None:
        if not self.enabled:
            return
        finished = total is not None and done >= total
        if self._bar is None:
            if finished:
                return
            self._start()
        tid = self._tasks.get(task)
        if tid is None:
            tid = self._tasks[task] = self._bar.add_task(task, total=total)
        self._bar.update(tid, completed=done, total=total, description=f"{task} {note}" if note else task)
        if finished:
            self._bar.remove_task(tid)
            del self._tasks[task]
            if not self._tasks:
                self._stop()

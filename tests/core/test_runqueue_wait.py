"""``rgbt.bench.graph.runqueue_wait_s``: the CPU-wait column of ``rgbt bench graph`` reads the kernel's
schedstat. Two busy processes pinned to one CPU must each wait for it about half the time."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from rgbt.bench.graph import runqueue_wait_s


@pytest.mark.skipif(not os.path.exists(f"/proc/{os.getpid()}/task"), reason="Linux /proc only")
def test_two_busy_processes_on_one_cpu_each_wait_for_it() -> None:
    cpu = sorted(os.sched_getaffinity(0))[0]
    code = f"import os, time\nos.sched_setaffinity(0, {{{cpu}}})\nd = time.monotonic() + 5\nwhile time.monotonic() < d: pass\n"
    procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(2)]
    try:
        time.sleep(0.5)  # both started and pinned
        before = [runqueue_wait_s(p.pid) for p in procs]
        time.sleep(1.0)
        after = [runqueue_wait_s(p.pid) for p in procs]
    finally:
        for p in procs:
            p.kill()
            p.wait()
    waited = [b - a for a, b in zip(before, after)]  # type: ignore[operator]
    assert all(0.2 < w < 1.05 for w in waited), waited  # ~0.5 s each of the 1 s
    assert runqueue_wait_s(procs[0].pid) is None  # gone: no number

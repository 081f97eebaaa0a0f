"""Fuzz harness shared by every parser fuzz test (Hypothesis).

``check(parser, fn, data)`` runs one case: ``fn(data)`` may return anything or raise a project
error (``RgbtError``); any other exception is a crash, a case longer than ``CASE_SECONDS`` is a
hang, and a case whose Python allocations peak above ``CASE_MEGABYTES`` is a memory blow-up. Each
case is counted per parser; ``tests/fuzz/conftest.py`` prints the table parser × cases × crashes
× hangs at the end of the run.

Budget: ``RGBT_FUZZ_EXAMPLES`` Hypothesis examples per test (default 75 in the suite: the CI budget);
``RGBT_FUZZ_EXAMPLES=5000 python -m pytest -q tests/fuzz`` is the long run.
"""

from __future__ import annotations

import os
import signal
import tracemalloc
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable

from hypothesis import HealthCheck, settings

from rgbt.errors import RgbtError

EXAMPLES = int(os.environ.get("RGBT_FUZZ_EXAMPLES", "75"))
CASE_SECONDS = float(os.environ.get("RGBT_FUZZ_CASE_SECONDS", "5"))
CASE_MEGABYTES = float(os.environ.get("RGBT_FUZZ_CASE_MB", "512"))

# One settings object for every fuzz test: fixed budget, no wall-clock deadline (hangs are ours).
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


@dataclass
class Tally:
    cases: int = 0
    errors: int = 0  # project errors raised (expected on bad input)
    crashes: int = 0
    hangs: int = 0
    memory: int = 0


TALLY: dict[str, Tally] = defaultdict(Tally)


class Hang(Exception):
    """A case ran longer than CASE_SECONDS."""


def _alarm(signum: int, frame: Any) -> None:  # noqa: ARG001
    raise Hang()


def check(parser: str, fn: Callable[[Any], Any], data: Any) -> Any:
    """Run ``fn(data)`` as one fuzz case of ``parser``; raise AssertionError on a crash, hang or blow-up.

    Returns what ``fn`` returned, or None when it raised a project error.
    """
    tally = TALLY[parser]
    tally.cases += 1
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, CASE_SECONDS)
    tracemalloc.start()
    try:
        return fn(data)
    except RgbtError:
        tally.errors += 1
        return None
    except Hang:
        tally.hangs += 1
        raise AssertionError(f"{parser}: a case ran longer than {CASE_SECONDS} s") from None
    except Exception as exc:  # noqa: BLE001 - the point: anything else is a crash
        tally.crashes += 1
        raise AssertionError(f"{parser}: {type(exc).__name__} escaped: {exc}") from exc
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        if peak > CASE_MEGABYTES * 2**20:
            tally.memory += 1
            raise AssertionError(f"{parser}: a case allocated {peak / 2**20:.0f} MB (> {CASE_MEGABYTES})")


def table() -> str:
    """The Markdown table parser × cases run × project errors × crashes × hangs × memory blow-ups."""
    rows = ["| parser | cases | rejected (RgbtError) | crashes | hangs | memory |",
            "|---|---:|---:|---:|---:|---:|"]
    for name in sorted(TALLY):
        t = TALLY[name]
        rows.append(f"| {name} | {t.cases} | {t.errors} | {t.crashes} | {t.hangs} | {t.memory} |")
    return "\n".join(rows)

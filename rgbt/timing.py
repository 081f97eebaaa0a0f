"""Latency statistics used by every benchmark."""

from __future__ import annotations

import numpy as np


def summarize_ms(samples_ns: list[int] | np.ndarray) -> dict:
    """Median / p90 / p99 / mean / max in milliseconds from durations in nanoseconds."""
    a = np.asarray(samples_ns, dtype=np.float64) / 1e6
    if a.size == 0:
        return {"n": 0, "median_ms": None, "p90_ms": None, "p99_ms": None, "mean_ms": None, "max_ms": None}
    return {
        "n": int(a.size),
        "median_ms": float(np.median(a)),
        "p90_ms": float(np.percentile(a, 90)),
        "p99_ms": float(np.percentile(a, 99)),
        "mean_ms": float(a.mean()),
        "max_ms": float(a.max()),
    }

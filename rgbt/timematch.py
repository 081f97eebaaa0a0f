"""Nearest-stamp matching on sorted time arrays (no rclpy import): one implementation for the ATE
association, the GNSS track of an extraction, the colour / thermal pairing of extracted frames and
the graph bench's latency join."""

from __future__ import annotations

import numpy as np


def nearest_index(stamps: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Index into ``stamps`` (sorted ascending, at least one element) of the stamp nearest each
    ``query`` value (same unit); a tie goes to the earlier stamp."""
    stamps, query = np.asarray(stamps), np.asarray(query)
    if len(stamps) < 2:
        return np.zeros(query.shape, dtype=np.intp)
    i = np.clip(np.searchsorted(stamps, query), 1, len(stamps) - 1)
    return np.where(np.abs(query - stamps[i - 1]) <= np.abs(stamps[i] - query), i - 1, i)


def nearest_within(stamps: np.ndarray, t_ns: int, tolerance_ns: int) -> int | None:
    """Index of the stamp nearest ``t_ns`` (int ns) in ``stamps`` (sorted ascending), or None when
    ``stamps`` is empty or the nearest one is more than ``tolerance_ns`` away; a tie goes to the
    earlier stamp."""
    if not len(stamps):
        return None
    j = int(nearest_index(stamps, np.asarray(t_ns, dtype=np.int64)))
    return j if abs(int(stamps[j]) - int(t_ns)) <= tolerance_ns else None

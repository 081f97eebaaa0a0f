"""Frame sampling for annotation: CART's rule or a fixed period.

CART (Lee et al., "CART: Caltech Aerial RGB-Thermal Dataset in the Wild") annotated one frame every
3 s while the vehicle moved and one every 20 s while it was still, "moving" meaning more than
0.5 m travelled in the past 2 s according to GPS (see :meth:`rgbt.bag.frameindex.GnssTrack.moving`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

CART_MOVING_PERIOD_S = 3.0
CART_STILL_PERIOD_S = 20.0


def sample_cart(
    stamps_ns: Sequence[int],
    moving: Sequence[float] | np.ndarray,
    moving_period_s: float = CART_MOVING_PERIOD_S,
    still_period_s: float = CART_STILL_PERIOD_S,
) -> list[int]:
    """Indices of the frames to keep (``stamps_ns`` increasing; ``moving`` 1 / 0 / NaN per frame).

    The first frame is kept; after that a frame is kept when at least ``moving_period_s`` has passed
    since the last kept one and the vehicle is moving, or ``still_period_s`` has passed (still, or
    unknown: no GPS yet).
    """
    t = np.asarray(stamps_ns, dtype=np.int64)
    mv = np.asarray(moving, dtype=np.float64)
    fast, slow = int(round(moving_period_s * 1e9)), int(round(still_period_s * 1e9))
    keep: list[int] = []
    last = None
    for i, ti in enumerate(t):
        if last is None or ti - last >= (fast if mv[i] == 1.0 else slow):
            keep.append(i)
            last = int(ti)
    return keep


def sample_every(stamps_ns: Sequence[int], period_s: float) -> list[int]:
    """Indices of one frame every ``period_s`` seconds (the first, then the first at or after each period)."""
    return sample_cart(stamps_ns, np.ones(len(stamps_ns)), period_s, period_s)

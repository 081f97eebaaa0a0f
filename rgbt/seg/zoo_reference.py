"""The deterministic reference input and sample positions of the export parity check.

Shared by the exporter (``rgbt.seg.zoo.export``, needs torch) and the tests (no torch).
"""

from __future__ import annotations

import numpy as np

N_SAMPLES = 4096


def reference_input(shape: tuple[int, ...]) -> np.ndarray:
    """Deterministic float32 test pattern in [0, 1] (no RNG: identical on every numpy)."""
    n, c, h, w = shape
    i = np.arange(h, dtype=np.float64)[:, None]
    j = np.arange(w, dtype=np.float64)[None, :]
    planes = [0.5 + 0.25 * np.sin(0.037 * i * (k + 1) + 0.021 * j) + 0.25 * np.cos(0.013 * j * (k + 2) - 0.05 * i)
              for k in range(c)]
    return np.stack(planes)[None].astype(np.float32).reshape(shape)


def sample_index(size: int, n: int = N_SAMPLES) -> np.ndarray:
    """Fixed pseudo-random flat indices (a multiplicative hash sequence, no RNG)."""
    n = min(n, size)
    return (np.arange(n, dtype=np.int64) * 2654435761 % size).astype(np.int64)

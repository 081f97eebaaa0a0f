"""Training augmentations on raw 16-bit thermal counts (0.01 K per count for a T-linear Boson) + label.

They run before the runtime's normalization, so they model what the sensor and the scene do:
zoom/crop and flips (viewpoint), gain/offset and noise (radiometry, NETD), FFC-like banding
(column/row fixed-pattern offsets and a slow gradient that grow between flat-field corrections),
and thermal inversion (the day/night flip of which materials are warmer: counts mirrored in the
frame's range, as the CART paper suggests to simulate for day -> night robustness).
"""

from __future__ import annotations

import numpy as np

from rgbt.seg.train.options import AugmentOptions

MAX_COUNT = 65535.0


def augment(th: np.ndarray, mask: np.ndarray, opts: AugmentOptions, rng: np.random.Generator
            ) -> tuple[np.ndarray, np.ndarray]:
    """(uint16 HxW counts, uint8 HxW label) -> augmented copies (crop may shrink them)."""
    if opts.scale_crop:
        th, mask = random_crop(th, mask, rng)
    if opts.flip and rng.random() < 0.5:
        th, mask = th[:, ::-1], mask[:, ::-1]
    t = th.astype(np.float32)
    if opts.inversion and rng.random() < 0.5:
        t = invert(t)
    if opts.gain_noise:
        t = t * np.float32(np.exp(rng.uniform(np.log(0.8), np.log(1.25)))) + np.float32(rng.uniform(-500, 500))
    if opts.banding and rng.random() < 0.5:
        t = t + banding(t.shape, rng)
    if opts.gain_noise:
        t = t + rng.normal(0.0, rng.uniform(0.0, 15.0), t.shape).astype(np.float32)
    out = np.clip(np.rint(t), 0, MAX_COUNT).astype(np.uint16)
    return out, np.ascontiguousarray(mask)


def random_crop(th: np.ndarray, mask: np.ndarray, rng: np.random.Generator, max_zoom: float = 1.5
                ) -> tuple[np.ndarray, np.ndarray]:
    """A window of 1/zoom of the frame (zoom uniform in 1..max_zoom, same aspect) at a random place."""
    h, w = th.shape
    z = rng.uniform(1.0, max_zoom)
    ch, cw = max(int(round(h / z)), 8), max(int(round(w / z)), 8)
    y0, x0 = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
    return th[y0:y0 + ch, x0:x0 + cw], mask[y0:y0 + ch, x0:x0 + cw]


def invert(t: np.ndarray) -> np.ndarray:
    """Mirror counts in the frame's 1st-99th percentile range (hot <-> cold, same range)."""
    lo, hi = np.percentile(t, (1.0, 99.0))
    return np.float32(lo + hi) - t


def banding(shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    """Column and row offsets (sigma up to 20 / 8 counts) plus a linear gradient up to +-60 counts."""
    h, w = shape
    cols = rng.normal(0.0, rng.uniform(0.0, 20.0), w).astype(np.float32)
    rows = rng.normal(0.0, rng.uniform(0.0, 8.0), h).astype(np.float32)
    gy, gx = rng.uniform(-60.0, 60.0, 2)
    grad = (gy * np.linspace(-0.5, 0.5, h, dtype=np.float32)[:, None]
            + gx * np.linspace(-0.5, 0.5, w, dtype=np.float32)[None, :])
    return rows[:, None] + cols[None, :] + grad.astype(np.float32)

"""SYNTHETIC thermal frames for tests and benchmarks (not real data; say so wherever they land).

Boson-like 16-bit counts: a smooth scene (tilted ground gradient + warm / cold blobs) around
``base`` counts, a hot moving object, per-pixel fixed-pattern and temporal noise. Sequences can
contain frozen frames (a repeated frame, as during a Boson flat-field correction).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

SYNTHETIC_LABEL = "synthetic (rgbt.image.synthetic)"


@dataclass(frozen=True)
class SyntheticSceneOptions:
    """Scene of :func:`synthetic_frame`: sizes in pixels, levels in counts."""

    height: int = 512
    width: int = 640
    base: float = 22000.0
    gradient: float = 300.0
    blob_amplitude: float = 250.0
    n_blobs: int = 12
    noise: float = 4.0
    object_amplitude: float = 1500.0
    object_radius: int = 45
    seed: int = 0


class SyntheticThermal:
    """Deterministic SYNTHETIC thermal scene; ``frame(i, object_xy)`` renders frame ``i``."""

    def __init__(self, options: SyntheticSceneOptions | None = None) -> None:
        self.options = o = options or SyntheticSceneOptions()
        rng = np.random.default_rng(o.seed)
        yy, xx = np.mgrid[0:o.height, 0:o.width].astype(np.float32)
        scene = o.base + o.gradient * (yy / o.height - 0.5) + 0.3 * o.gradient * (xx / o.width - 0.5)
        blobs = np.zeros((o.height, o.width), np.float32)
        for _ in range(o.n_blobs):
            cy, cx = rng.uniform(0, o.height), rng.uniform(0, o.width)
            r = rng.uniform(0.04, 0.15) * min(o.height, o.width)
            blobs += rng.uniform(-1, 1) * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * r * r))
        self._scene = (scene + o.blob_amplitude * blobs).astype(np.float32)
        self._fpn = rng.normal(0.0, o.noise * 0.5, (o.height, o.width)).astype(np.float32)
        self._seed = o.seed

    def frame(self, index: int = 0, object_xy: tuple[float, float] | None = None) -> np.ndarray:
        """uint16 HxW counts; ``object_xy`` (x, y) places the hot object (None: no object)."""
        o = self.options
        img = self._scene + self._fpn
        if object_xy is not None:
            disk = np.zeros((o.height, o.width), np.float32)
            cv2.circle(disk, (int(round(object_xy[0])), int(round(object_xy[1]))), o.object_radius, 1.0, -1)
            img = img + o.object_amplitude * cv2.GaussianBlur(disk, (0, 0), 3)
        rng = np.random.default_rng((self._seed, index))
        img = img + rng.normal(0.0, o.noise, img.shape).astype(np.float32)
        return np.clip(np.rint(img), 0, 65535).astype(np.uint16)


def moving_object_sequence(n: int, options: SyntheticSceneOptions | None = None, rate_hz: float = 60.0,
                           frozen: tuple[int, ...] = ()) -> list[tuple[int, np.ndarray, bool]]:
    """SYNTHETIC sequence ``[(t_ns, frame, is_frozen)]``: a hot object crossing the view left to right.

    The object starts outside the image, enters, crosses and leaves. Indices in ``frozen``
    repeat the previous frame exactly (FFC-like) with a new time stamp.
    """
    scene = SyntheticThermal(options)
    o = scene.options
    r = o.object_radius
    out: list[tuple[int, np.ndarray, bool]] = []
    for i in range(n):
        t_ns = int(round(i * 1e9 / rate_hz))
        if i in frozen and out:
            out.append((t_ns, out[-1][1].copy(), True))
            continue
        x = -2 * r + (o.width + 4 * r) * i / max(n - 1, 1)
        out.append((t_ns, scene.frame(i, (x, o.height * 0.5)), False))
    return out

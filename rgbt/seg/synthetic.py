"""Procedural stand-in scenes (SYNTHETIC): aligned thermal + RGB + class ids, day or night.

Used for development, tests and the RGB-T fusion demonstration where pixel-aligned pairs are
needed. Not the simulator (``rgbt.sim``): a 2-D label field with per-class thermal and colour
statistics, built so that each modality has a blind spot: in daylight road and bare ground have
the same temperature (colour separates them) while trees and water look alike in colour
(temperature separates them); at night the colour camera sees almost nothing (1 % of the light, under the read noise).
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from rgbt.seg.dataset import write_item

# class id -> (day temperature, night temperature) in degC-like units; counts = 20000 + 80 * T
TEMPS = {2: (38, 8), 3: (42, 15), 4: (45, 21), 5: (38, 17), 6: (29, 4), 7: (24, 11), 8: (-15, -25),
         9: (17, 13), 10: (50, 25), 11: (34, 31)}
COLORS = {2: (185, 160, 125), 3: (125, 112, 100), 4: (170, 170, 176), 5: (82, 84, 90), 6: (120, 150, 60),
          7: (46, 84, 56), 8: (150, 190, 235), 9: (48, 82, 62), 10: (200, 40, 35), 11: (60, 60, 160)}
GROUND = (2, 3, 6, 7, 9)


def _field(rng: np.random.Generator, h: int, w: int, cell: int) -> np.ndarray:
    small = rng.standard_normal((max(h // cell, 2), max(w // cell, 2))).astype(np.float32)
    return cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC)


def scene(h: int, w: int, seed: int, night: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(thermal uint16 HxW counts, rgb uint8 HxWx3, labels uint8 HxW CART ids), pixel-aligned."""
    rng = np.random.default_rng(seed)
    cell = max(min(h, w) // 6, 4)
    fields = np.stack([_field(rng, h, w, cell) + rng.normal(0, 0.3) for _ in GROUND])
    labels = np.asarray(GROUND, np.uint8)[np.argmax(fields, 0)]
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    # a road band
    ang = rng.uniform(0, np.pi)
    d = (xx - rng.uniform(0.2, 0.8) * w) * np.cos(ang) + (yy - rng.uniform(0.2, 0.8) * h) * np.sin(ang)
    road = np.abs(d) < rng.uniform(0.04, 0.08) * min(h, w)
    labels[road] = 5
    # buildings
    for _ in range(rng.integers(0, 3)):
        y0, x0 = rng.integers(0, h - h // 8), rng.integers(0, w - w // 8)
        labels[y0:y0 + rng.integers(h // 16, h // 8), x0:x0 + rng.integers(w // 16, w // 8)] = 4
    # vehicles on the road, people anywhere
    ry, rx = np.nonzero(road)
    for _ in range(rng.integers(1, 4) if ry.size else 0):
        k = rng.integers(0, ry.size)
        s = max(h // 40, 2)
        labels[max(ry[k] - s, 0):ry[k] + s, max(rx[k] - 2 * s, 0):rx[k] + 2 * s] = 10
    for _ in range(rng.integers(1, 4)):
        cy, cx, r = rng.integers(0, h), rng.integers(0, w), max(h // 80, 2)
        cv2.circle(labels, (int(cx), int(cy)), int(r), 11, -1)
    # oblique views see sky above a tilted horizon
    if rng.random() < 0.5:
        horizon = rng.uniform(0.05, 0.25) * h + (xx - w / 2) * rng.uniform(-0.1, 0.1)
        labels[yy < horizon] = 8
    # thermal
    idx = 1 if night else 0
    temp = np.zeros((h, w), np.float32)
    for c, t in TEMPS.items():
        temp[labels == c] = t[idx]
    temp += 1.5 * _field(rng, h, w, max(cell // 4, 2)) + rng.normal(0, 0.4, (h, w)).astype(np.float32)
    temp += rng.uniform(-6, 6) + 3.0 * (yy / h - 0.5)
    thermal = np.clip(20000 + 80 * temp, 0, 65535).astype(np.uint16)
    # colour
    rgb = np.zeros((h, w, 3), np.float32)
    for c, col in COLORS.items():
        rgb[labels == c] = col
    rgb *= rng.uniform(0.75, 1.2)
    rgb += 10 * _field(rng, h, w, max(cell // 4, 2))[:, :, None] + rng.normal(0, 6, (h, w, 3)).astype(np.float32)
    if night:
        rgb = rgb * 0.01 + rng.normal(0, 2.0, (h, w, 3)).astype(np.float32) + 2.0
    return thermal, np.clip(rgb, 0, 255).astype(np.uint8), labels


def write_dataset(root: str | Path, n_per_condition: int, h: int, w: int, seed: int = 0,
                  conditions: tuple[str, ...] = ("day", "night"), test_fraction: float = 0.25) -> Path:
    """CART-layout dataset ``root/procedural_<cond>/seq0/...`` with aligned ``rgb``/``masks_rgb``,
    split files ``train.txt`` / ``test.txt`` (+ ``test_<cond>.txt``) and a SYNTHETIC.txt marker."""
    root = Path(root)
    train: list[str] = []
    test: list[str] = []
    for ci, cond in enumerate(conditions):
        cond_test: list[str] = []
        for i in range(n_per_condition):
            th, rgb, lab = scene(h, w, seed * 100003 + ci * 10007 + i, night=cond == "night")
            item = f"procedural_{cond}/seq0/{i:06d}"
            write_item(root, item, th, lab, rgb, lab)
            (cond_test if i >= n_per_condition * (1 - test_fraction) else train).append(item)
        test += cond_test
        (root / f"test_{cond}.txt").write_text("\n".join(cond_test) + "\n")
    (root / "train.txt").write_text("\n".join(train) + "\n")
    (root / "test.txt").write_text("\n".join(test) + "\n")
    (root / "SYNTHETIC.txt").write_text("Procedural stand-in scenes generated by rgbt.seg.synthetic: synthetic data.\n")
    return root

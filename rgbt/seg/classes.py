"""CART class table: ids, names, colours, and which classes the metrics ignore or call objects.

The table is shipped inside rgbt (and copied into every model sidecar) because the shared
CART data (``cart/class_color_mapping.csv``) may be absent at run time. A test checks that
this copy equals the CSV when the shared data is present.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rgbt.image.colormap import lut_rgb


@dataclass(frozen=True)
class SegClass:
    id: int
    name: str
    color: str  # "#RRGGBB"

    def rgb(self) -> tuple[int, int, int]:
        h = self.color.lstrip("#")
        return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


CART_CLASSES: tuple[SegClass, ...] = (
    SegClass(0, "Unknown", "#FF2400"),
    SegClass(1, "__background__", "#000000"),
    SegClass(2, "Bare ground", "#F2D8C4"),
    SegClass(3, "Rocky terrain", "#594636"),
    SegClass(4, "Developed structures", "#A6A6A6"),
    SegClass(5, "Road", "#52595A"),
    SegClass(6, "Shrubs", "#9BE600"),
    SegClass(7, "Trees", "#008A35"),
    SegClass(8, "Sky", "#00D8F5"),
    SegClass(9, "Water", "#0D7FFC"),
    SegClass(10, "Vehicles", "#FFF900"),
    SegClass(11, "Person", "#FE00AA"),
)

#: ids excluded from every metric (CART: "we typically ignore unknown and background").
IGNORE_IDS: tuple[int, ...] = (0, 1)
#: "object" (countable thing) classes for the stuff / object mIoU split; the rest are stuff.
#: The CART paper publishes no split we could find; we follow the COCO-stuff convention
#: (vehicles and people are things, buildings are stuff). Sidecars may override it.
OBJECT_IDS: tuple[int, ...] = (10, 11)


def palette_array(classes: tuple[SegClass, ...] | list[SegClass] = CART_CLASSES) -> np.ndarray:
    """256x3 uint8 RGB lookup table (ids beyond the table map to black)."""
    lut = np.zeros((256, 3), dtype=np.uint8)
    for c in classes:
        lut[c.id] = c.rgb()
    return lut


_DEFAULT_PALETTE = palette_array()


def colorize(class_ids: np.ndarray, lut: np.ndarray | None = None) -> np.ndarray:
    """Class-id map (uint8 HxW) -> RGB uint8 HxWx3 with the CART palette."""
    if class_ids.dtype != np.uint8:
        raise TypeError(f"class ids must be uint8, got {class_ids.dtype}")
    lut = _DEFAULT_PALETTE if lut is None else lut
    if class_ids.ndim == 2 and lut.shape == (256, 3) and lut.dtype == np.uint8:
        return lut_rgb(class_ids, lut)
    return lut[class_ids]


def overlay(base_rgb: np.ndarray, color: np.ndarray, alpha: float = 0.5) -> np.ndarray:
    """Blend a coloured mask onto an RGB (or grey HxW) uint8 image; returns uint8 HxWx3."""
    if base_rgb.ndim == 2:
        base_rgb = np.repeat(base_rgb[:, :, None], 3, axis=2)
    out = base_rgb.astype(np.float32) * (1.0 - alpha) + color.astype(np.float32) * alpha
    return np.clip(out + 0.5, 0, 255).astype(np.uint8)

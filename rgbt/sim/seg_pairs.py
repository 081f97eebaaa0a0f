"""Aligned RGB-T pairs from the simulator (SYNTHETIC): ``rgbt.sim`` runs -> CART layout at 960x600.

``thermal16`` = the thermal frame projected into the colour camera (calib's
``RgbtRectifier.thermal_to_color``, as CART did), ``rgb`` = the colour frame, ``masks`` = the
colour camera's labels. Used to train (``engines/train_fusion.py --sim``) and test the fusion models.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rgbt.image.rectify import RgbtRectifier
from rgbt.seg.dataset import list_items, load_rgb, load_thermal, write_item
from rgbt.sim import SimOptions
from rgbt.stack import load_stack


def write_sim_pairs(root: str | Path, options: Sequence[SimOptions], splits: Sequence[str], stride: int = 12) -> Path:
    """Simulate each run (one split name each: train/val/test) into ``root/raw`` and write aligned pairs
    to ``root/pairs`` (split files ``SPLIT.txt``, plus ``test_day.txt`` / ``test_night.txt``).
    ``stride``: every stride-th thermal frame. Returns ``root/pairs``."""
    from rgbt.sim.dataset import write_cart_dataset

    root = Path(root)
    raw = root / "raw"
    write_cart_dataset(raw, options, stride, splits=list(splits), with_rgb=True)
    rect = RgbtRectifier.from_stack(load_stack(options[0].stack_path), "color_thermal")
    out = root / "pairs"
    for split in sorted(set(splits)):
        items = []
        for item in list_items(raw, split):
            pair = load_rgb(raw, item)
            if pair is None:
                continue
            th, _ = load_thermal(raw, item)
            write_item(out, item, rect.thermal_to_color(th), pair[1], pair[0], pair[1])
            items.append(item)
        (out / f"{split}.txt").write_text("\n".join(items) + "\n")
        if split == "test":
            for tod in ("day", "night"):
                (out / f"test_{tod}.txt").write_text("\n".join(i for i in items if f"_{tod}_" in i) + "\n")
    (out / "SYNTHETIC.txt").write_text("rgbt.sim output: synthetic data.\n")
    return out

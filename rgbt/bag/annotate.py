"""Sampled frames of an extraction written as a CART-layout dataset (what ``rgbt seg eval`` reads).

``OUT/dataset/PLACE/TRAJ/thermal16/NNNNNN.png`` (+ ``rgb/``, and ``masks/`` / ``masks_rgb/`` when the
bag carries label images, as simulated bags do), ``train/val/test.txt`` in contiguous time blocks,
written through :func:`rgbt.seg.dataset.write_item` (the layout the simulator's ``--dataset`` uses).
``NNNNNN`` is the thermal frame number: ``(trigger slot - 1) / trigger divider`` when the slot is
known (the device counter, as the simulator numbers frames), else the frame's order in the bag.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from rgbt.bag.extract import read_image
from rgbt.bag.sampling import sample_cart, sample_every
from rgbt.seg.dataset import temporal_split, write_item, write_splits
from rgbt.timematch import nearest_within


def _by_camera(rows: list[dict], camera: str) -> list[dict]:
    return [r for r in rows if r["camera"] == camera]


def _moving(value: Any) -> float:
    return float(value) if value not in ("", None) else float("nan")


def write_sampled_dataset(out: Path, rows: list[dict], stack: Any, *, method: str = "cart",
                          every_s: float | None = None, camera: str = "thermal", place: str = "Flight",
                          traj: str = "flight", progress: Callable[[int, int], None] | None = None) -> dict:
    """Sample ``camera``'s frames (``method`` ``cart`` or ``every``) and write them under ``out/dataset``.

    Returns ``{"root", "sequence", "items", "picked": [stamps], "rule"}``; ``samples.csv`` lists the
    picked frames with their index row (stamp, GNSS, moving flag ...).
    """
    frames = _by_camera(rows, camera)
    stamps = [int(r["stamp_ns"]) for r in frames]
    if method == "cart":
        picked = sample_cart(stamps, [_moving(r["moving"]) for r in frames])
        rule = "CART: every 3 s moving, 20 s still (moving: > 0.5 m GNSS travel in the past 2 s)"
    else:
        if not every_s or every_s <= 0:
            raise ValueError(f"every_s: got {every_s!r}, expected > 0 seconds")
        picked = sample_every(stamps, every_s)
        rule = f"every {every_s:g} s"
    root = Path(out) / "dataset"
    seq = f"{_safe(place)}/{_safe(traj)}"
    divider = stack.cameras[camera].trigger_divider if camera in stack.cameras else 1
    colour = {name: np.asarray([int(r["stamp_ns"]) for r in _by_camera(rows, name)], dtype=np.int64)
              for name in ("color", f"labels_{camera}", "labels_color")}
    colour_rows = {name: _by_camera(rows, name) for name in colour}
    tol = int(0.5e9 / stack.trigger.rate_hz)
    items = []
    for n, i in enumerate(picked):
        r = frames[i]
        slot = r.get("trigger_slot", "")
        fid = f"{(int(slot) - 1) // divider:06d}" if slot not in ("", None) else f"{i:06d}"
        item = f"{seq}/{fid}"

        def match(name: str, stamp_ns: int) -> np.ndarray | None:
            j = nearest_within(colour[name], stamp_ns, tol)
            return None if j is None else read_image(Path(out) / colour_rows[name][j]["file"])

        stamp_ns = int(r["stamp_ns"])
        rgb = match("color", stamp_ns)
        mask_rgb = match("labels_color", stamp_ns) if rgb is not None else None
        write_item(root, item, read_image(Path(out) / r["file"]), match(f"labels_{camera}", stamp_ns), rgb, mask_rgb)
        items.append((item, r))
        if progress is not None:
            progress(n + 1, len(picked))
    write_splits(root, temporal_split([it for it, _ in items]))
    with (root / "samples.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["item", "stamp_ns", "file", "trigger_slot", "gnss_lat", "gnss_lon", "gnss_alt", "moving"])
        for item, r in items:
            writer.writerow([item, r["stamp_ns"], r["file"], r["trigger_slot"], r["gnss_lat"], r["gnss_lon"],
                             r["gnss_alt"], r["moving"]])
    return {"root": str(root), "sequence": seq, "items": len(items), "rule": rule,
            "picked": [int(frames[i]["stamp_ns"]) for i in picked]}


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "x"

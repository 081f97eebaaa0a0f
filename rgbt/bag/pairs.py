"""Time-matched thermal/colour pairs of an extraction, optionally rectified onto the pair canvas.

Each colour frame is paired with the thermal frame of the nearest stamp within ``tolerance_ns``
(default: half a trigger period, so only frames of the same trigger pulse pair up). Rectification
uses :class:`rgbt.image.rectify.RgbtRectifier` with the stack's pair (CART ``color_thermal``:
colour = cam0, thermal = cam1) or a Kalibr camchain (cam0 colour, cam1 thermal).

``OUT/pairs/pairs.csv`` lists ``stamp_color, stamp_thermal, dt_ns, color, thermal``; with
rectification the images are ``OUT/pairs/{color,thermal}/<stamp_color>.png`` (colour RGB, thermal
uint16, both on the 960x600 canvas) and ``OUT/pairs/rectification.json`` describes the cameras.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from rgbt.bag.extract import _write_image, read_image
from rgbt.calib.build import stack_from_kalibr
from rgbt.image.rectify import RgbtRectifier
from rgbt.timematch import nearest_within


def rectifier_for(stack: Any, pair: str = "color_thermal", camchain: str | Path | None = None) -> Any:
    """A :class:`RgbtRectifier` from the stack's ``pair`` or from a Kalibr camchain (cam0 colour, cam1 thermal)."""
    if camchain is not None:
        stack = stack_from_kalibr(camchain, base=stack, names=["color", "thermal"])
        pair = "color_thermal"
    return RgbtRectifier.from_stack(stack, pair)


def match_pairs(rows: list[dict], tolerance_ns: int, color: str = "color", thermal: str = "thermal"
                ) -> list[tuple[dict, dict]]:
    """(colour row, thermal row) for every colour frame with a thermal frame within ``tolerance_ns``."""
    th = sorted((r for r in rows if r["camera"] == thermal), key=lambda r: int(r["stamp_ns"]))
    th_t = np.asarray([int(r["stamp_ns"]) for r in th], dtype=np.int64)
    out = []
    for r in rows:
        if r["camera"] != color:
            continue
        j = nearest_within(th_t, int(r["stamp_ns"]), tolerance_ns)
        if j is not None:
            out.append((r, th[j]))
    return out


def write_pairs(out: Path, rows: list[dict], tolerance_ns: int, rectifier: Any = None,
                progress: Callable[[int, int], None] | None = None) -> dict:
    """Write ``OUT/pairs`` (see the module docstring); returns a summary."""
    out = Path(out)
    root = out / "pairs"
    root.mkdir(parents=True, exist_ok=True)
    pairs = match_pairs(rows, tolerance_ns)
    with (root / "pairs.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["stamp_color", "stamp_thermal", "dt_ns", "color", "thermal"])
        for n, (c, t) in enumerate(pairs):
            cs, ts = int(c["stamp_ns"]), int(t["stamp_ns"])
            cfile, tfile = c["file"], t["file"]
            if rectifier is not None:
                rc, rt = rectifier.rectify(read_image(out / cfile), read_image(out / tfile))
                cfile, tfile = f"pairs/color/{cs}.png", f"pairs/thermal/{cs}.png"
                _write_image(out / cfile, rc)
                _write_image(out / tfile, rt)
            writer.writerow([cs, ts, ts - cs, cfile, tfile])
            if progress is not None:
                progress(n + 1, len(pairs))
    summary = {"pairs": len(pairs), "tolerance_ns": int(tolerance_ns), "rectified": rectifier is not None,
               "colour_frames": sum(r["camera"] == "color" for r in rows)}
    if rectifier is not None:
        (root / "rectification.json").write_text(json.dumps({**rectifier.describe(), **summary}, indent=2))
    return summary

"""Temperature queries on radiometric thermal frames (no rclpy import): the thermal query node's logic.

Interface (``std_srvs`` cannot carry it, and custom ``.srv`` types need a ROS build): a request /
response pair of ``std_msgs/String`` topics carrying JSON.

Request: ``{"id": "any", "pixel": [x, y]}``, ``{"id": .., "region": [x0, y0, x1, y1]}`` (x1, y1
exclusive), ``{"id": .., "class_id": 5}`` (pixels of that class in the latest class-id mask), or
``region`` + ``class_id`` together. Response: ``{"id", "stamp_ns", "celsius": float}`` for a pixel,
``{"id", "stamp_ns", "stats": {mean, min, max, n, hottest, coldest}}`` for a set, or
``{"id", "error": "..."}``. Temperatures in degrees C via ``rgbt.image.radiometry``: Boson
T-linear (``{"mode": "tlinear", "gain": "high"}``) or Planck (``{"mode": "planck", "planck_r1": ..}``).
A non-radiometric camera (CART's ADK) has no ``radiometry``: every query answers an error.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import numpy as np

from rgbt.errors import ImageError, RgbtError


def converter(radiometry: dict[str, Any]) -> Callable[[np.ndarray], np.ndarray] | None:
    """counts (uint16 HxW) -> degrees C, from the node's ``radiometry`` options; None when empty."""
    if not radiometry:
        return None
    from rgbt.image import radiometry as rad

    opts = dict(radiometry)
    mode = opts.pop("mode", "tlinear")
    if mode == "tlinear":
        return lambda counts: rad.tlinear_to_celsius(counts, **opts)
    if mode == "planck":
        params = rad.RadiometricParams(**opts)
        return lambda counts: rad.counts_to_celsius(counts, params)
    raise RgbtError(f"radiometry.mode: got {mode!r}, expected 'tlinear' or 'planck'")


def answer(request_json: str, counts: np.ndarray | None, stamp_ns: int | None,
           to_celsius: Callable[[np.ndarray], np.ndarray] | None, class_ids: np.ndarray | None) -> dict:
    """The JSON-able response to one request (errors are answered, never raised)."""
    try:
        req = json.loads(request_json)
        if not isinstance(req, dict):
            raise ValueError("a JSON object")
    except ValueError as exc:
        return {"id": None, "error": f"request is not a JSON object: {exc}"}
    rid = req.get("id")
    try:
        if to_celsius is None:
            raise ImageError("the thermal camera is not radiometric (no radiometry configured)")
        if counts is None:
            raise ImageError("no thermal frame received yet")
        from rgbt.image.radiometry import region_stats, temperature_at

        temps = to_celsius(counts)
        if "pixel" in req:
            x, y = (int(v) for v in req["pixel"])
            return {"id": rid, "stamp_ns": stamp_ns, "celsius": temperature_at(temps, x, y)}
        region = tuple(int(v) for v in req["region"]) if "region" in req else None
        mask = None
        if "class_id" in req:
            if class_ids is None:
                raise ImageError("no class-id mask received yet")
            if class_ids.shape != temps.shape:
                raise ImageError(f"class-id mask {class_ids.shape} and thermal frame {temps.shape} differ")
            mask = class_ids == int(req["class_id"])
        if region is None and mask is None:
            raise ImageError("request needs 'pixel', 'region' or 'class_id'")
        return {"id": rid, "stamp_ns": stamp_ns, "stats": region_stats(temps, region, mask).to_dict()}
    except (RgbtError, KeyError, TypeError, ValueError) as exc:
        return {"id": rid, "error": f"{type(exc).__name__}: {exc}"}

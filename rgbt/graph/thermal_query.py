"""Temperature queries on radiometric thermal frames (no rclpy import): the thermal query node's logic.

Two interfaces answer through the same :func:`answer_request`:

* **Typed service** ``rgbt_interfaces/srv/ThermalQuery`` (``ros2_ws/src/rgbt_interfaces``; no
  standard ROS 2 service carries a pixel / region / class request and temperature statistics), on
  ``/rgbt/thermal_query`` by default, offered wherever that package is built and importable
  (``colcon build`` on a ROS 2 install, ``scripts/build_interfaces.sh`` on the PyPI wheels).
  :func:`typed_request_to_dict` and :func:`fill_response` map its request / response to and from
  the dicts below; they read the fields and ``MODE_*`` constants by name, so any object with the
  ``.srv``'s fields works (the tests use a stand-in built from the parsed ``.srv``).
* **JSON fallback**, always on: a request / response pair of ``std_msgs/String`` topics carrying
  JSON, for machines where the interface package is not built.

Request: ``{"id": "any", "pixel": [x, y]}``, ``{"id": .., "region": [x0, y0, x1, y1]}`` (x1, y1
exclusive), ``{"id": .., "class_id": 5}`` (pixels of that class in the latest class-id mask), or
``region`` + ``class_id`` together. Coordinates are pixels of the raw thermal image (x column from
the left, y row from the top). Response: ``{"id", "stamp_ns", "celsius": float}`` for a pixel,
``{"id", "stamp_ns", "stats": {mean, min, max, n, hottest, coldest}}`` for a set (hottest /
coldest are (x, y)), or ``{"id", "error": "..."}``; ``stamp_ns`` is the answering frame's header
stamp (ns). Temperatures in degrees C via ``rgbt.image.radiometry``: Boson T-linear
(``{"mode": "tlinear", "gain": "high"}``) or Planck (``{"mode": "planck", "planck_r1": ..}``).
A non-radiometric camera (CART's ADK) has no ``radiometry``: every query answers an error.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from rgbt.errors import ImageError, RgbtError
from rgbt.image import radiometry as rad
from rgbt.image.radiometry import region_stats, temperature_at

#: the typed request's ``mode`` constants (``srv/ThermalQuery.srv``), by name
MODE_NAMES = ("MODE_PIXEL", "MODE_REGION", "MODE_CLASS", "MODE_REGION_CLASS")


def converter(radiometry: dict[str, Any]) -> Callable[[np.ndarray], np.ndarray] | None:
    """counts (uint16 HxW) -> degrees C, from the node's ``radiometry`` options; None when empty."""
    if not radiometry:
        return None

    opts = dict(radiometry)
    mode = opts.pop("mode", "tlinear")
    if mode == "tlinear":
        return lambda counts: rad.tlinear_to_celsius(counts, **opts)
    if mode == "planck":
        params = rad.RadiometricParams(**opts)
        return lambda counts: rad.counts_to_celsius(counts, params)
    raise RgbtError(f"radiometry.mode: got {mode!r}, expected 'tlinear' or 'planck'")


def answer_request(req: dict, counts: np.ndarray | None, stamp_ns: int | None,
                   to_celsius: Callable[[np.ndarray], np.ndarray] | None, class_ids: np.ndarray | None) -> dict:
    """The response dict to one request dict (module docstring); errors are answered, never raised.

    ``counts``: the latest raw thermal frame (uint16 HxW) or None; ``stamp_ns``: its header stamp
    (ns); ``class_ids``: the latest class-id mask (HxW, same shape) or None.
    """
    rid = req.get("id")
    try:
        if to_celsius is None:
            raise ImageError("the thermal camera is not radiometric (no radiometry configured)")
        if counts is None:
            raise ImageError("no thermal frame received yet")

        temps = to_celsius(counts)
        if "pixel" in req:
            x, y = (int(v) for v in req["pixel"])
            return {"id": rid, "stamp_ns": stamp_ns, "celsius": temperature_at(temps, x, y)}
        region: tuple[int, int, int, int] | None = None
        if "region" in req:
            x0, y0, x1, y1 = (int(v) for v in req["region"])
            region = (x0, y0, x1, y1)
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


def answer(request_json: str, counts: np.ndarray | None, stamp_ns: int | None,
           to_celsius: Callable[[np.ndarray], np.ndarray] | None, class_ids: np.ndarray | None) -> dict:
    """The JSON-able response to one JSON request (the fallback topics); errors are answered, never raised."""
    try:
        req = json.loads(request_json)
        if not isinstance(req, dict):
            raise ValueError("a JSON object")
    except ValueError as exc:
        return {"id": None, "error": f"request is not a JSON object: {exc}"}
    return answer_request(req, counts, stamp_ns, to_celsius, class_ids)


def typed_request_to_dict(request: Any) -> dict:
    """A ``ThermalQuery.Request`` (or any object with its fields and ``MODE_*`` constants) as a
    request dict for :func:`answer_request`; ``ValueError`` naming the mode when it is unknown."""
    pixel, region, cls, region_cls = (int(getattr(request, name)) for name in MODE_NAMES)
    mode = int(request.mode)
    out: dict[str, Any] = {"id": str(request.id)}
    if mode == pixel:
        out["pixel"] = [int(request.x), int(request.y)]
    elif mode in (region, cls, region_cls):
        if mode in (region, region_cls):
            out["region"] = [int(request.x0), int(request.y0), int(request.x1), int(request.y1)]
        if mode in (cls, region_cls):
            out["class_id"] = int(request.class_id)
    else:
        known = ", ".join(f"{int(getattr(request, name))} ({name})" for name in MODE_NAMES)
        raise ValueError(f"request.mode: got {mode}, expected one of {known}")
    return out


def fill_response(response: Any, result: dict) -> Any:
    """Write a response dict of :func:`answer_request` into a ``ThermalQuery.Response`` (or any object
    with its fields) and return it. Fields a result does not carry get NaN (temperatures), 0 (``n``,
    ``stamp_ns``) or -1 (pixel coordinates), as the ``.srv`` documents."""
    response.id = "" if result.get("id") is None else str(result["id"])
    response.success = "error" not in result
    response.error = str(result.get("error", ""))
    response.stamp_ns = int(result.get("stamp_ns") or 0)
    response.celsius = float(result.get("celsius", math.nan))
    stats = result.get("stats")
    response.mean, response.min, response.max = (float(stats[k]) if stats else math.nan
                                                 for k in ("mean", "min", "max"))
    response.n = int(stats["n"]) if stats else 0
    response.hottest_x, response.hottest_y = (int(v) for v in stats["hottest"]) if stats else (-1, -1)
    response.coldest_x, response.coldest_y = (int(v) for v in stats["coldest"]) if stats else (-1, -1)
    return response


def answer_typed(request: Any, response: Any, counts: np.ndarray | None, stamp_ns: int | None,
                 to_celsius: Callable[[np.ndarray], np.ndarray] | None, class_ids: np.ndarray | None) -> Any:
    """The typed service's callback body: ``response`` filled with the answer to ``request``
    (errors, an unknown ``mode`` included, are answered with ``success = False``, never raised)."""
    try:
        req = typed_request_to_dict(request)
    except (TypeError, ValueError) as exc:
        return fill_response(response, {"id": getattr(request, "id", ""), "error": f"{type(exc).__name__}: {exc}"})
    return fill_response(response, answer_request(req, counts, stamp_ns, to_celsius, class_ids))

"""The trigger sync node's view of ``rgbt.sync.TriggerRestamper`` (C7): three calls, plain values.

Kept separate so the node stays wiring only and the mapping to the core API is in one place.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import asdict
from typing import Any

from rgbt import sync


class StampPairer:
    """Pairs a driver's frames with their counter messages (``frame_info`` / ``sync_info``) by host
    stamp, whichever comes first; keeps at most ``max_pending`` unpaired of each (oldest evicted)."""

    def __init__(self, max_pending: int = 400) -> None:  # 400: 2 s of IMU
        self.max_pending = max_pending
        self.frames: OrderedDict[int, Any] = OrderedDict()
        self.infos: OrderedDict[int, Any] = OrderedDict()

    def add_info(self, stamp_ns: int, info: Any) -> Any | None:
        """The frame waiting for this info, or None (the info is kept)."""
        frame = self.frames.pop(stamp_ns, None)
        if frame is None:
            self._put(self.infos, stamp_ns, info)
        return frame

    def add_frame(self, stamp_ns: int, frame: Any) -> tuple[Any | None, bool]:
        """(the info waiting for this frame or None, whether an unpaired frame had to be evicted)."""
        info = self.infos.pop(stamp_ns, None)
        if info is not None:
            return info, False
        return None, self._put(self.frames, stamp_ns, frame)

    def _put(self, d: OrderedDict, key: int, value: Any) -> bool:
        d[key] = value
        if len(d) > self.max_pending:
            d.popitem(last=False)
            return True
        return False


class Restamper:
    """``frame()`` / ``imu()`` return the restamped time in ns (or None before lock); ``status()`` a dict."""

    def __init__(self, core: Any) -> None:
        self.core = core

    def frame(self, camera: str, counter: int, t_host_ns: int, ffc: bool = False) -> tuple[int | None, dict]:
        res = self.core.add_frame(camera, counter, t_host_ns, ffc=ffc)
        t = getattr(res, "t_trigger_ns", None)
        return (None if t is None else int(t)), {"dropped_before": int(getattr(res, "dropped_before", 0) or 0),
                                                 "residual_ns": getattr(res, "residual_ns", None)}

    def imu(self, syncin_count: int, t_host_ns: int, t_since_sync_ns: int, t_sensor_ns: int) -> int | None:
        """Feed one IMU sample; its time on the host clock once the IMU clock fit is locked, else None."""
        self.core.add_imu(syncin_count, t_host_ns, t_since_sync_ns, t_sensor_ns)
        if not self.core.clock_locked:
            return None
        return int(self.core.clock.to_host(int(t_sensor_ns)))

    def status(self) -> dict:
        status = self.core.status()
        if hasattr(status, "model_dump"):
            status = status.model_dump()
        elif hasattr(status, "__dataclass_fields__"):
            status = asdict(status)
        return _flatten(dict(status))  # nested (per camera) values as dotted keys


def _flatten(d: dict) -> dict:
    out: dict = {}
    for key, value in d.items():
        if isinstance(value, dict):
            out.update({f"{key}.{k}": v for k, v in _flatten(value).items()})
        elif not isinstance(value, list):
            out[key] = value
    return out


def make_restamper(stack: Any, options: dict[str, Any], camera_latency_ms: dict[str, float] | None = None) -> Restamper:
    """A :class:`Restamper` over ``rgbt.sync.TriggerRestamper`` configured from the stack + ``options``
    (``RestamperOptions`` fields) + each camera's nominal host-arrival latency in ms."""
    opts = sync.RestamperOptions.from_stack(stack, **options)
    for name, ms in (camera_latency_ms or {}).items():
        opts.cameras[name].latency_ns = int(round(ms * 1e6))
    return Restamper(sync.TriggerRestamper(opts))

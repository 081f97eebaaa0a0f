"""The trigger sync node's view of ``rgbt.sync.TriggerRestamper`` (C7): three calls, plain values.

Kept separate so the node stays wiring only and the mapping to the core API is in one place.
"""

from __future__ import annotations

from typing import Any


class Restamper:
    """``frame()`` / ``imu()`` return the restamped time in ns (or None before lock); ``status()`` a dict."""

    def __init__(self, core: Any) -> None:
        self.core = core

    def frame(self, camera: str, counter: int, t_host_ns: int, ffc: bool = False) -> tuple[int | None, dict]:
        res = self.core.add_frame(camera, counter, t_host_ns, ffc=ffc)
        t = getattr(res, "t_trigger_ns", None)
        return (None if t is None else int(t)), {"dropped_before": int(getattr(res, "dropped_before", 0) or 0),
                                                 "residual_ns": getattr(res, "residual_ns", None)}

    def imu(self, syncin_count: int, t_host_ns: int, t_since_sync_ns: int) -> int | None:
        res = self.core.add_imu(syncin_count, t_host_ns, t_since_sync_ns)
        t = res if isinstance(res, int) else getattr(res, "t_trigger_ns", None)
        return None if t is None else int(t)

    def status(self) -> dict:
        status = self.core.status()
        if hasattr(status, "model_dump"):
            status = status.model_dump()
        elif hasattr(status, "__dataclass_fields__"):
            from dataclasses import asdict

            status = asdict(status)
        return {k: v for k, v in dict(status).items() if not isinstance(v, (list, dict))}


def make_restamper(stack: Any, options: dict[str, Any]) -> Restamper:
    """A :class:`Restamper` over ``rgbt.sync.TriggerRestamper`` configured from the stack + ``options``."""
    from rgbt import sync

    return Restamper(sync.TriggerRestamper(sync.SyncOptions.from_stack(stack, **options)))

"""The simulated CART sensor stack with exact ground truth (synthetic data, labelled as such).

``SimStack(SimOptions(...)).samples()`` yields thermal / colour / mono frames with class-id labels,
IMU, GNSS, autopilot pose / global position / armed state and trigger pulses in true-time order.
See ``docs/design/sim.md``.
"""

from typing import Any

__all__ = ["SimOptions", "SimStack", "SimSample", "ImuData", "GnssData", "PoseData", "StateData"]


def __getattr__(name: str) -> Any:
    """Load the simulator on first use, so light submodules (``rgbt.geo``: ENU <-> WGS84, used by
    ``rgbt bag extract``) import without the 'sim' extra (scipy)."""
    if name == "SimOptions":
        from rgbt.sim.options import SimOptions

        return SimOptions
    if name in __all__:
        from rgbt.sim import simstack

        return getattr(simstack, name)
    raise AttributeError(f"module 'rgbt.sim' has no attribute {name!r}")

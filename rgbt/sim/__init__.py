"""The simulated CART sensor stack with exact ground truth (synthetic data, labelled as such).

``SimStack(SimOptions(...)).samples()`` yields thermal / colour / mono frames with class-id labels,
IMU, GNSS, autopilot pose / global position / armed state and trigger pulses in true-time order.
See ``docs/design/sim.md``.
"""

from rgbt.sim.options import SimOptions
from rgbt.sim.simstack import GnssData, ImuData, PoseData, SimSample, SimStack, StateData

__all__ = ["SimOptions", "SimStack", "SimSample", "ImuData", "GnssData", "PoseData", "StateData"]

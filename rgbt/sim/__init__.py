"""The simulated CART sensor stack with exact ground truth (synthetic data, labelled as such).

``SimStack(SimOptions(...)).samples()`` yields thermal / colour / mono frames with class-id labels,
IMU, GNSS, autopilot pose / global position / armed state and trigger pulses in true-time order.

Conventions a consumer must know:

* **Frames.** World = ENU, ground plane ``z = 0``; vehicle = FLU (``T_world_body`` of the pose
  stream). The sensor head (IMU + cameras, rigid per the stack's ``T_imu_cam``) is pitched down by
  ``camera_pitch_deg`` (30 deg); ground truth (``ground_truth_imu.tum``, ``.ground_truth()``) is
  ``T_world_imu``.
* **Attitude from position-only trajectories.** A smoothing spline of the TUM positions; body z along
  the specific force ``a - g`` (coordinated flight), yaw along the horizontal velocity. The file's
  ground is put ``altitude_m`` below its lowest point.
* **Time.** True times in int ns on one clock. Trigger pulse k at ``t_start + round(k * 1e9 / 60)``,
  SyncIn count k + 1; frame n of a camera with ``trigger_divider`` d is pulse n * d, ``seq`` = n
  (dropped frames counted). IMU at ``t_start + 1 ms + j * 5 ms``. Frame content is rendered at
  ``stamp + td_s`` (``t_imu = t_cam + td``). Host stamps = true + latency (thermal 12 ms, colour /
  mono 8 ms, IMU 1 ms, GNSS 80 ms, autopilot 15-30 ms) + N(0, 3 ms) jitter, never before the event,
  increasing per stream.
* **Thermal.** Counts = 100 * T[K] (Boson T-linear, 0.01 K per count) with NETD, fixed-pattern noise,
  shading and a drift that resets at each FFC; during an FFC (``ffc_period_s``, ``ffc_duration_s``)
  the frame repeats with ``ffc=True`` while the counter keeps counting.
* **Day / night.** Per-class temperatures; at night water is warmer than land (thermal inversion)
  and colour goes through the low-light camera model.
* **Labels.** CART class ids; each pixel's label is the world cell its centre ray hits (sky where it
  hits no ground): exact by construction.
* **Determinism.** Every stream has its own seeded generator; the world depends only on
  ``world_seed`` (default ``seed``), so day and night of one seed are the same place.
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

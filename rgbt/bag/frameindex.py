"""The ``frames.csv`` index of an extraction: per image, its trigger slot, FFC state, sync residual,
GNSS position, autopilot pose and moving/still flag, all from what the bag itself holds.

Sources (a column stays empty where the bag lacks its source; nothing is invented):

* trigger slot and sync residual: the trigger topic (``sensor_msgs/TimeReference``, ``time_ref`` =
  pulse time, ``source`` = SyncIn count, as :mod:`rgbt.sim.messages` and the trigger sync write
  it). ``sync_residual_ns`` = frame stamp - the nearest pulse's time (0 for a frame restamped onto
  the trigger grid; a frame that kept its host stamp shows its offset); ``trigger_slot`` = that
  pulse's count when ``|residual| <= slot_tolerance_ns``.
* FFC state: driver-level ``.../frame_info`` (``source`` = ``COUNTER[;ffc]``) paired with the
  ``.../image`` of the same header stamp (how ``nodes/trigger_sync.py`` pairs them).
* GNSS: ``sensor_msgs/NavSatFix`` by header stamp; latitude/longitude/altitude interpolated linearly
  to the frame stamp (inside the fixes' span), the fix status and stamp offset of the nearest fix.
* autopilot pose (``geometry_msgs/PoseStamped``, ENU world <- body): position linear, orientation
  slerp (:func:`rgbt.eval.tracking.interpolate`), inside the poses' span.
* moving: more than ``moving_threshold_m`` between the GNSS positions (interpolated, local ENU) at
  the frame time and ``moving_window_s`` before it (CART: 0.5 m in 2 s); empty before that window.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rgbt.eval.tracking import interpolate
from rgbt.eval.trajectory import Trajectory
from rgbt.geo import lla_to_enu
from rgbt.timematch import nearest_index

COLUMNS = ["stamp_ns", "log_ns", "camera", "file", "trigger_slot", "sync_residual_ns", "ffc",
           "gnss_lat", "gnss_lon", "gnss_alt", "gnss_fix", "gnss_dt_ns",
           "pose_x", "pose_y", "pose_z", "pose_qw", "pose_qx", "pose_qy", "pose_qz", "moving"]


@dataclass
class FrameSources:
    """What the extraction pass collected besides the images (all times int ns)."""

    frames: list[tuple[int, int, str, str]] = field(default_factory=list)  # (stamp, log, camera, file)
    pulses: dict[int, int] = field(default_factory=dict)  # pulse time -> SyncIn count
    ffc: dict[str, dict[int, bool]] = field(default_factory=dict)  # image topic -> stamp -> frozen
    frame_topic: dict[str, str] = field(default_factory=dict)  # camera -> image topic
    gnss: list[tuple[int, float, float, float, int]] = field(default_factory=list)  # (stamp, lat, lon, alt, status)
    poses: list[tuple[int, float, float, float, float, float, float, float]] = field(default_factory=list)


def _sorted_unique(t: np.ndarray) -> np.ndarray:
    """Indices of ``t`` sorted, keeping the first of equal stamps (interpolation needs increasing time)."""
    order = np.argsort(t, kind="stable")
    keep = np.concatenate([[True], np.diff(t[order]) > 0]) if len(order) else np.zeros(0, bool)
    return order[keep]


class GnssTrack:
    """GNSS fixes (sorted by stamp) with linear interpolation in time and a local ENU frame (the first fix)."""

    def __init__(self, fixes: list[tuple[int, float, float, float, int]]) -> None:
        a = np.asarray(fixes, dtype=np.float64).reshape(-1, 5)
        t = np.asarray([f[0] for f in fixes], dtype=np.int64)
        idx = _sorted_unique(t)
        self.t, self.lla, self.status = t[idx], a[idx, 1:4], a[idx, 4].astype(int)
        self.origin = tuple(self.lla[0]) if len(self.t) else (0.0, 0.0, 0.0)
        self.enu = lla_to_enu(self.lla, self.origin) if len(self.t) else np.zeros((0, 3))

    def __len__(self) -> int:
        return len(self.t)

    def _interp(self, values: np.ndarray, t_ns: np.ndarray) -> np.ndarray:
        x = (self.t - self.t[0]).astype(np.float64)
        q = (np.asarray(t_ns, dtype=np.int64) - self.t[0]).astype(np.float64)
        out = np.column_stack([np.interp(q, x, values[:, i]) for i in range(values.shape[1])])
        out[(q < x[0]) | (q > x[-1])] = np.nan
        return out

    def lla_at(self, t_ns: np.ndarray) -> np.ndarray:
        """N x 3 (lat deg, lon deg, alt m) interpolated; NaN outside the fixes' span."""
        return self._interp(self.lla, t_ns)

    def enu_at(self, t_ns: np.ndarray) -> np.ndarray:
        return self._interp(self.enu, t_ns)

    def nearest(self, t_ns: np.ndarray) -> np.ndarray:
        """Index of the nearest fix of each time."""
        return nearest_index(self.t, np.asarray(t_ns, dtype=np.int64))

    def moving(self, t_ns: np.ndarray, threshold_m: float = 0.5, window_s: float = 2.0) -> np.ndarray:
        """1.0 moving, 0.0 still, NaN unknown (no GNSS at the time or ``window_s`` before)."""
        t_ns = np.asarray(t_ns, dtype=np.int64)
        now, before = self.enu_at(t_ns), self.enu_at(t_ns - int(round(window_s * 1e9)))
        dist = np.linalg.norm(now - before, axis=1)
        return np.where(np.isnan(dist), np.nan, (dist > threshold_m).astype(np.float64))


def build_index(src: FrameSources, *, slot_tolerance_ns: int, moving_threshold_m: float = 0.5,
                moving_window_s: float = 2.0) -> list[dict]:
    """One dict per frame (keys :data:`COLUMNS`; ``""`` where unknown), ordered by stamp then camera."""
    rows = sorted(src.frames, key=lambda r: (r[0], r[2]))
    t = np.asarray([r[0] for r in rows], dtype=np.int64)
    out = [{"stamp_ns": r[0], "log_ns": r[1], "camera": r[2], "file": r[3]} for r in rows]
    for row in out:
        for col in COLUMNS[4:]:
            row[col] = ""
    if not rows:
        return out
    if src.pulses:
        pt = np.asarray(sorted(src.pulses), dtype=np.int64)
        for row, k in zip(out, nearest_index(pt, t), strict=False):
            res = int(row["stamp_ns"] - pt[k])
            row["sync_residual_ns"] = res
            if abs(res) <= slot_tolerance_ns:
                row["trigger_slot"] = src.pulses[int(pt[k])]
    for row in out:
        flags = src.ffc.get(src.frame_topic.get(str(row["camera"]), ""), {})
        if row["stamp_ns"] in flags:
            row["ffc"] = int(flags[row["stamp_ns"]])
    if src.gnss:
        track = GnssTrack(src.gnss)
        lla = track.lla_at(t)
        near = track.nearest(t)
        moving = track.moving(t, moving_threshold_m, moving_window_s)
        for i, row in enumerate(out):
            if not np.isnan(lla[i, 0]):
                row["gnss_lat"], row["gnss_lon"], row["gnss_alt"] = (float(v) for v in lla[i])
            row["gnss_fix"] = int(track.status[near[i]])
            row["gnss_dt_ns"] = int(t[i] - track.t[near[i]])
            if not np.isnan(moving[i]):
                row["moving"] = int(moving[i])
    if len(src.poses) >= 2:
        p = np.asarray(src.poses, dtype=np.float64)
        pt = np.asarray([q[0] for q in src.poses], dtype=np.int64)
        idx = _sorted_unique(pt)
        traj = Trajectory(pt[idx], p[idx, 1:4], p[idx, 4:8], name="autopilot pose")
        inside = (t >= traj.t_ns[0]) & (t <= traj.t_ns[-1])
        if inside.any():
            uniq, back = np.unique(t[inside], return_inverse=True)  # cameras share stamps: interpolate once
            at = interpolate(traj, uniq)
            for k, i in zip(back, np.flatnonzero(inside).tolist(), strict=False):
                row = out[i]
                row["pose_x"], row["pose_y"], row["pose_z"] = (float(v) for v in at.positions[k])
                row["pose_qw"], row["pose_qx"], row["pose_qy"], row["pose_qz"] = (float(v) for v in at.quat_wxyz[k])
    return out

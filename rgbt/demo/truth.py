"""The simulator's truth for a live recording (synthetic data: exact by construction).

The virtual stack writes a manifest with its simulator options, the wall-clock origin of the
flight (``t0_wall_ns`` <-> ``t0_sim_ns``) and, for every published frame, the CRC32 of its pixels,
its frame index and its true trigger time. The sync node forwards pixels untouched, so a recorded
frame is found in the manifest by its CRC32. From that:

- ``ground_truth_imu.tum`` beside the bag: the simulator's ``T_world_imu`` at the IMU times, moved
  to the bag's clock (``t_bag = t_sim - t0_sim + t0_wall``) - the file ``rgbt vio eval`` reads;
- the restamping error of every recorded frame (header stamp minus true trigger time);
- label maps for chosen frames, rendered from the same world and camera pose (frames frozen by a
  flat-field correction get the label of the frame they repeat).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rgbt.errors import EvaluationError

if TYPE_CHECKING:
    from rgbt.sim import SimStack

GT_FILE = "ground_truth_imu.tum"


@dataclass
class SimTruth:
    """The rebuilt simulator and the clock offset ``t_bag - t_sim`` (ns)."""

    sim: SimStack
    offset_ns: int
    manifest: dict

    @classmethod
    def from_manifest(cls, path: str | Path) -> SimTruth:
        from rgbt.sim import SimOptions, SimStack

        manifest = json.loads(Path(path).read_text())
        try:
            sim = SimStack(SimOptions(**manifest["sim"]))
            offset = int(manifest["t0_wall_ns"]) - int(manifest["t0_sim_ns"])
        except KeyError as exc:
            raise EvaluationError(f"{path}: virtual stack manifest lacks {exc}: was the flight started?") from None
        return cls(sim, offset, manifest)

    def frame_index(self, topic: str, crcs: np.ndarray, stamps: np.ndarray) -> np.ndarray:
        """Simulator frame index of each recorded frame (by pixel CRC32); -1 when not found. Frames
        frozen by a flat-field correction repeat their pixels: among equal CRC32s the frame whose
        true trigger time is nearest the recorded stamp wins."""
        frames = self.manifest.get("frames", {}).get(topic)
        if not frames:
            raise EvaluationError(f"virtual stack manifest has no frames for {topic}")
        lookup: dict[int, list[tuple[int, int]]] = {}
        for c, n, t in zip(frames["crc32"], frames["seq"], frames["t_true_ns"], strict=False):
            lookup.setdefault(int(c), []).append((int(n), int(t)))
        out = np.full(len(crcs), -1, np.int64)
        for i, (c, stamp) in enumerate(zip(crcs, stamps, strict=False)):
            cands = lookup.get(int(c))
            if cands:
                out[i] = min(cands, key=lambda nt: abs(nt[1] - int(stamp)))[0]
        return out

    def true_stamp_ns(self, camera: str, seq: np.ndarray) -> np.ndarray:
        """True trigger time of frames ``seq`` in the bag's clock (ns)."""
        times = self.sim.frame_times(camera)
        return times[np.clip(seq, 0, len(times) - 1)] + self.offset_ns

    def clock(self, camera: str, seq: np.ndarray, stamps: np.ndarray) -> BagClock:
        """How simulated time maps onto the bag's stamps, from the recorded frames (see BagClock)."""
        ok = seq >= 0
        t_sim = self.sim.frame_times(camera)[seq[ok]]
        return BagClock.fit(t_sim, stamps[ok], self.offset_ns)

    def write_ground_truth(self, bag_dir: Path, clock: BagClock) -> Path:
        """``ground_truth_imu.tum`` (world <- IMU, seconds in the bag's clock) beside the bag."""
        from rgbt.sim.record import tum_lines

        t, T = self.sim.ground_truth()
        t_bag = clock.to_bag(t)
        keep = np.concatenate([[True], np.diff(t_bag) > 0])  # strictly increasing stamps
        path = Path(bag_dir) / GT_FILE
        path.write_text(tum_lines(t_bag[keep], T[keep]))
        return path


    def content_index(self, camera: str, seq: int) -> int:
        """The frame whose content frame ``seq`` shows: itself, or during a flat-field correction
        the last frame before the freeze (the Boson repeats it)."""
        o = self.sim.options
        times = self.sim.frame_times(camera)
        if camera != "thermal" or o.ffc_period_s <= 0 or o.ffc_duration_s <= 0:
            return seq
        first = self.sim.t_start_ns + int(round(o.ffc_first_s * 1e9))
        period, dur = int(round(o.ffc_period_s * 1e9)), int(round(o.ffc_duration_s * 1e9))
        t = int(times[seq])
        if t < first:
            return seq
        start = first + (t - first) // period * period
        if t >= start + dur:
            return seq
        before = int(np.searchsorted(times, start)) - 1
        return max(before, 0)

    def label(self, camera: str, seq: int) -> np.ndarray:
        """CART class-id map (uint8 HxW) of frame ``seq`` of ``camera``."""
        k = self.content_index(camera, seq)
        T = np.asarray(self.sim.T_world_camera(camera, int(self.sim.frame_times(camera)[k])))
        if T.ndim == 3:
            T = T[0]
        _, label = self.sim.renderer(camera).render(T)
        return label


@dataclass
class BagClock:
    """Simulated time -> bag stamp. When the machine kept real time the map is the planned constant
    offset (``warped`` False), so restamping errors stay visible as VIO and sync errors. When the
    simulator fell behind real time the virtual stack stamps frames when it publishes them, so the
    bag's clock runs slower than the simulated one; the map then follows the recorded frames
    (monotonic piecewise-linear through their true trigger times, ``warped`` True). Monocular VIO
    scores are unaffected by such a warp; IMU-based ones are not (the IMU samples are stretched too).
    ``realtime_factor``: simulated seconds per bag second over the recording."""

    offset_ns: int
    warped: bool
    realtime_factor: float
    lag_ms: float  # largest |stamp - (true time + offset)| over the recorded frames (ms)
    t_sim: np.ndarray
    t_bag: np.ndarray

    #: bag seconds per simulated second beyond which the bag's clock is taken to be warped
    WARP_THRESHOLD = 0.02

    @classmethod
    def fit(cls, t_sim: np.ndarray, t_bag: np.ndarray, offset_ns: int) -> BagClock:
        if len(t_sim) < 2:
            raise EvaluationError("fewer than two recorded frames matched the simulator's: cannot relate the clocks")
        order = np.argsort(t_sim)
        t_sim, t_bag = np.asarray(t_sim)[order].astype(np.int64), np.asarray(t_bag)[order].astype(np.int64)
        err = (t_bag - t_sim - offset_ns) / 1e6
        lag = float(np.max(np.abs(err)))
        span_bag = (t_bag[-1] - t_bag[0])
        rtf = float((t_sim[-1] - t_sim[0]) / span_bag) if span_bag > 0 else 1.0
        if abs(rtf - 1.0) <= cls.WARP_THRESHOLD:
            return cls(offset_ns, False, rtf, lag, t_sim, t_bag)
        return cls(offset_ns, True, rtf, lag, t_sim, np.maximum.accumulate(t_bag))

    def to_bag(self, t_sim_ns: np.ndarray) -> np.ndarray:
        t = np.asarray(t_sim_ns, dtype=np.int64)
        if not self.warped:
            return t + self.offset_ns
        x, y = self.t_sim.astype(np.float64), self.t_bag.astype(np.float64)
        out = np.interp(t.astype(np.float64), x, y)
        # outside the recorded span: continue at the end slopes' real-time rate (1 s per s)
        out = np.where(t < x[0], y[0] - (x[0] - t), out)
        out = np.where(t > x[-1], y[-1] + (t - x[-1]), out)
        return np.round(out).astype(np.int64)

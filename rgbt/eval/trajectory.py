"""Trajectories: load TUM / KITTI / EuRoC files into one type with integer-nanosecond stamps.

A :class:`Trajectory` holds ``T_world_x`` poses: ``positions`` (N x 3, metres, world frame) and
``quat_wxyz`` (N x 4, rotation world <- x). Stamps ``t_ns`` are int64 nanoseconds, strictly
increasing (checked on construction).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rgbt.errors import EvaluationError

FORMATS = ("tum", "kitti", "euroc")


@dataclass
class Trajectory:
    """Poses ``T_world_x`` with stamps in int64 ns; ``name`` says where they came from."""

    t_ns: np.ndarray
    positions: np.ndarray
    quat_wxyz: np.ndarray
    name: str = "trajectory"
    duplicates_dropped: int = 0

    def __post_init__(self) -> None:
        self.t_ns = np.asarray(self.t_ns, dtype=np.int64)
        self.positions = np.asarray(self.positions, dtype=np.float64).reshape(-1, 3)
        self.quat_wxyz = np.asarray(self.quat_wxyz, dtype=np.float64).reshape(-1, 4)
        n = len(self.t_ns)
        if n == 0:
            raise EvaluationError(f"{self.name}: empty trajectory (no poses)")
        if len(self.positions) != n or len(self.quat_wxyz) != n:
            raise EvaluationError(f"{self.name}: {n} stamps but {len(self.positions)} positions and "
                                  f"{len(self.quat_wxyz)} orientations")
        if not np.all(np.isfinite(self.positions)) or not np.all(np.isfinite(self.quat_wxyz)):
            bad = int(np.flatnonzero(~np.isfinite(np.c_[self.positions, self.quat_wxyz]).all(axis=1))[0])
            raise EvaluationError(f"{self.name}: pose {bad} is not finite: expected finite numbers")
        steps = np.diff(self.t_ns)
        if np.any(steps <= 0):
            i = int(np.flatnonzero(steps <= 0)[0])
            raise EvaluationError(
                f"{self.name}: timestamps not strictly increasing at pose {i + 1}: "
                f"{self.t_ns[i]} ns then {self.t_ns[i + 1]} ns (expected monotonic stamps)")
        norms = np.linalg.norm(self.quat_wxyz, axis=1)
        if np.any(norms < 1e-9):
            raise EvaluationError(f"{self.name}: zero-norm quaternion at pose {int(np.argmin(norms))}")
        self.quat_wxyz = self.quat_wxyz / norms[:, None]

    def __len__(self) -> int:
        return len(self.t_ns)

    @property
    def t_s(self) -> np.ndarray:
        return self.t_ns.astype(np.float64) / 1e9

    @property
    def duration_s(self) -> float:
        return float(self.t_ns[-1] - self.t_ns[0]) / 1e9

    def path_length(self) -> float:
        """Length of the position path in metres."""
        return float(np.linalg.norm(np.diff(self.positions, axis=0), axis=1).sum()) if len(self) > 1 else 0.0

    def matrices(self) -> np.ndarray:
        """N x 4 x 4 homogeneous poses ``T_world_x``."""
        from evo.core.transformations import quaternion_matrix

        out = np.stack([quaternion_matrix(q) for q in self.quat_wxyz])
        out[:, :3, 3] = self.positions
        return out

    @classmethod
    def from_matrices(cls, t_ns: np.ndarray, poses: np.ndarray, name: str = "trajectory") -> "Trajectory":
        from evo.core.transformations import quaternion_from_matrix

        poses = np.asarray(poses, dtype=np.float64)
        quats = np.stack([quaternion_from_matrix(p) for p in poses]) if len(poses) else np.zeros((0, 4))
        return cls(t_ns, poses[:, :3, 3] if len(poses) else np.zeros((0, 3)), quats, name=name)

    def to_evo(self):  # type: ignore[no-untyped-def]
        """An ``evo.core.trajectory.PoseTrajectory3D`` (stamps in seconds)."""
        from evo.core.trajectory import PoseTrajectory3D

        return PoseTrajectory3D(positions_xyz=self.positions.copy(), orientations_quat_wxyz=self.quat_wxyz.copy(),
                                timestamps=self.t_s)

    def slice(self, mask: np.ndarray) -> "Trajectory":
        return Trajectory(self.t_ns[mask], self.positions[mask], self.quat_wxyz[mask], name=self.name)

    def save_tum(self, path: str | Path) -> None:
        """Write TUM: ``t[s] tx ty tz qx qy qz qw`` (stamps printed exactly from int ns)."""
        with open(path, "w") as fh:
            for t, p, q in zip(self.t_ns, self.positions, self.quat_wxyz):
                fh.write(f"{_ns_to_seconds_str(int(t))} {p[0]:.9f} {p[1]:.9f} {p[2]:.9f} "
                         f"{q[1]:.9f} {q[2]:.9f} {q[3]:.9f} {q[0]:.9f}\n")


def _ns_to_seconds_str(t_ns: int) -> str:
    sign = "-" if t_ns < 0 else ""
    s, ns = divmod(abs(t_ns), 1_000_000_000)
    return f"{sign}{s}.{ns:09d}"


def seconds_str_to_ns(text: str) -> int:
    """``"1311868164.363181"`` -> 1311868164363181000 exactly (no float rounding)."""
    text = text.strip()
    if "e" in text.lower():
        return int(round(float(text) * 1e9))
    neg = text.startswith("-")
    whole, _, frac = text.lstrip("+-").partition(".")
    ns = int(whole or "0") * 1_000_000_000 + int((frac + "000000000")[:9] or "0")
    return -ns if neg else ns


def _rows(path: Path, sep: str | None) -> list[list[str]]:
    rows = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#") or line[0].isalpha():
            continue
        rows.append([c for c in (line.split(sep) if sep else line.split()) if c.strip() != ""])
    return rows


def load_trajectory(path: str | Path, fmt: str = "tum", *, kitti_times: str | Path | None = None,
                    kitti_rate_hz: float = 10.0) -> Trajectory:
    """Load a trajectory file.

    - ``tum``: ``t[s] tx ty tz qx qy qz qw`` per line (``#`` comments).
    - ``euroc``: EuRoC ground-truth CSV ``t[ns], px, py, pz, qw, qx, qy, qz, ...`` (commas), or the
      ORB-SLAM3 ``SaveTrajectoryEuRoC`` text ``t[ns] tx ty tz qx qy qz qw`` (spaces).
    - ``kitti``: 12 numbers per line (row-major 3x4 ``T_world_cam``); stamps from ``kitti_times``
      (one second value per line, KITTI ``times.txt``) or ``index / kitti_rate_hz``.
    """
    path = Path(path)
    if fmt not in FORMATS:
        raise EvaluationError(f"{path}: unknown trajectory format {fmt!r}: expected one of {FORMATS}")
    if not path.is_file():
        raise EvaluationError(f"{path}: trajectory file not found")
    name = str(path)
    try:
        if fmt == "tum":
            rows = _rows(path, None)
            _check_rows(path, rows, 8, "t tx ty tz qx qy qz qw")
            t_ns = [seconds_str_to_ns(r[0]) for r in rows]
            a = np.array([[float(c) for c in r[1:8]] for r in rows])
            return _build(t_ns, a[:, 0:3], a[:, [6, 3, 4, 5]], name)
        if fmt == "euroc":
            text = path.read_text()
            comma = "," in text.split("\n", 3)[-1] or ("," in text)
            rows = _rows(path, "," if comma else None)
            _check_rows(path, rows, 8, "t[ns] px py pz q... (EuRoC)")
            t_ns = [int(round(float(r[0]))) if ("." in r[0] or "e" in r[0].lower()) else int(r[0]) for r in rows]
            a = np.array([[float(c) for c in r[1:8]] for r in rows])
            quat = a[:, 3:7] if comma else a[:, [6, 3, 4, 5]]
            return _build(t_ns, a[:, 0:3], quat, name)
        rows = _rows(path, None)
        _check_rows(path, rows, 12, "12 numbers (3x4 row-major pose)")
        mats = np.zeros((len(rows), 4, 4))
        mats[:, :3, :] = np.array([[float(c) for c in r[:12]] for r in rows]).reshape(-1, 3, 4)
        mats[:, 3, 3] = 1.0
        if kitti_times is not None:
            times = [seconds_str_to_ns(r[0]) for r in _rows(Path(kitti_times), None)]
            if len(times) != len(rows):
                raise EvaluationError(f"{kitti_times}: {len(times)} stamps for {len(rows)} poses in {path}")
        else:
            times = [int(round(i * 1e9 / kitti_rate_hz)) for i in range(len(rows))]
        return Trajectory.from_matrices(np.array(times), mats, name=name)
    except ValueError as exc:
        raise EvaluationError(f"{path}: cannot parse as {fmt}: {exc}") from exc


def _build(t_ns: list[int], positions: np.ndarray, quat_wxyz: np.ndarray, name: str) -> Trajectory:
    """Drop poses repeating the previous stamp exactly (keep the first, as real ground truth files
    contain a few, e.g. TUM fr2/desk); decreasing stamps stay an error."""
    t = np.asarray(t_ns, dtype=np.int64)
    keep = np.ones(len(t), dtype=bool)
    keep[1:] = np.diff(t) != 0
    traj = Trajectory(t[keep], positions[keep], quat_wxyz[keep], name=name)
    traj.duplicates_dropped = int((~keep).sum())
    return traj


def _check_rows(path: Path, rows: list[list[str]], n: int, expected: str) -> None:
    if not rows:
        raise EvaluationError(f"{path}: empty trajectory file (no pose lines): expected {expected}")
    for i, r in enumerate(rows):
        if len(r) < n:
            raise EvaluationError(f"{path}: data line {i + 1} has {len(r)} columns: expected {expected}")

"""Trajectories: load TUM / KITTI / EuRoC files into one type with integer-nanosecond stamps.

A :class:`Trajectory` holds ``T_world_x`` poses: ``positions`` (N x 3, metres, world frame) and
``quat_wxyz`` (N x 4, rotation world <- x). Stamps ``t_ns`` are int64 nanoseconds, strictly
increasing (checked on construction).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rgbt.errors import EvaluationError

if TYPE_CHECKING:
    from evo.core.trajectory import PoseTrajectory3D

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
    def position_only(self) -> bool:
        """True when every orientation is the identity (positions-only ground truth, e.g. CART's
        RTK files): rotation errors cannot be scored against it."""
        return bool(np.all(np.abs(np.abs(self.quat_wxyz[:, 0]) - 1.0) < 1e-9))

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
    def from_matrices(cls, t_ns: np.ndarray, poses: np.ndarray, name: str = "trajectory") -> Trajectory:
        from evo.core.transformations import quaternion_from_matrix

        poses = np.asarray(poses, dtype=np.float64)
        quats = np.stack([quaternion_from_matrix(p) for p in poses]) if len(poses) else np.zeros((0, 4))
        return cls(t_ns, poses[:, :3, 3] if len(poses) else np.zeros((0, 3)), quats, name=name)

    def to_evo(self) -> PoseTrajectory3D:
        """An ``evo.core.trajectory.PoseTrajectory3D`` (stamps in seconds)."""
        from evo.core.trajectory import PoseTrajectory3D

        return PoseTrajectory3D(positions_xyz=self.positions.copy(), orientations_quat_wxyz=self.quat_wxyz.copy(),
                                timestamps=self.t_s)

    def slice(self, mask: np.ndarray) -> Trajectory:
        return Trajectory(self.t_ns[mask], self.positions[mask], self.quat_wxyz[mask], name=self.name)

    def save_tum(self, path: str | Path) -> None:
        """Write TUM: ``t[s] tx ty tz qx qy qz qw`` (stamps printed exactly from int ns)."""
        with open(path, "w") as fh:
            for t, p, q in zip(self.t_ns, self.positions, self.quat_wxyz, strict=False):
                fh.write(f"{ns_to_seconds_str(int(t))} {p[0]:.9f} {p[1]:.9f} {p[2]:.9f} "
                         f"{q[1]:.9f} {q[2]:.9f} {q[3]:.9f} {q[0]:.9f}\n")


def ns_to_seconds_str(t_ns: int) -> str:
    """Int ns -> ``"S.NNNNNNNNN"`` exactly (the inverse of :func:`seconds_str_to_ns`)."""
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


@dataclass
class Row:
    """One data line of a text table: its 1-based line number and its cells."""

    line: int  # 1-based line number in the file
    cells: list[str]


def read_text(path: Path) -> str:
    try:
        return path.read_text()
    except UnicodeDecodeError as exc:
        raise EvaluationError(f"{path}: byte {exc.start} is not text: expected a text trajectory file") from None
    except OSError as exc:
        raise EvaluationError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def data_rows(path: Path, sep: str | None, text: str | None = None) -> list[Row]:
    """Every data line of ``path``, split into cells, with its line number.

    Blank lines and ``#`` / ``%`` comments are skipped; so is one header line (the first
    non-comment line, when none of its cells is a number). Any other line is data: it is kept and
    checked by the caller, never dropped silently.
    """
    rows: list[Row] = []
    header_allowed = True
    for number, raw in enumerate((read_text(path) if text is None else text).splitlines(), start=1):
        line = raw.strip().lstrip("\ufeff")
        if not line or line[0] in "#%":
            continue
        cells = [c.strip() for c in (line.split(sep) if sep else line.split()) if c.strip() != ""]
        if header_allowed and cells and not any(_is_number(c) for c in cells):
            header_allowed = False
            continue
        header_allowed = False
        rows.append(Row(number, cells))
    return rows


def row_numbers(path: Path, row: Row, columns: slice, expected: str) -> list[float]:
    """The floats of ``row.cells[columns]``; an error naming the line when one is not a finite number."""
    values = []
    for cell in row.cells[columns]:
        try:
            value = float(cell)
        except ValueError:
            raise EvaluationError(f"{path}: line {row.line}: {cell!r} is not a number: expected {expected}") from None
        if not np.isfinite(value):
            raise EvaluationError(f"{path}: line {row.line}: {cell!r} is not finite: expected {expected}")
        values.append(value)
    return values


def row_stamp_ns(path: Path, row: Row, cell: str, unit: str) -> int:
    """A stamp cell in seconds (``unit="s"``) or integer nanoseconds (``unit="ns"``) -> int ns."""
    try:
        if unit == "ns" and "." not in cell and "e" not in cell.lower():
            t_ns = int(cell)
            if not -2**63 < t_ns < 2**63:
                raise ValueError(cell)
            return t_ns
        value = float(cell)
        if not np.isfinite(value):
            raise ValueError(cell)
        t_ns = int(round(value)) if unit == "ns" else seconds_str_to_ns(cell)
        if not -2**63 < t_ns < 2**63:
            raise ValueError(cell)
        return t_ns
    except (ValueError, OverflowError):
        raise EvaluationError(f"{path}: line {row.line}: stamp {cell!r} is not a finite number "
                              f"(expected {'seconds' if unit == 's' else 'integer nanoseconds'})") from None


def load_trajectory(path: str | Path, fmt: str = "tum", *, kitti_times: str | Path | None = None,
                    kitti_rate_hz: float = 10.0) -> Trajectory:
    """Load a trajectory file; every data line is a pose or the file is rejected (naming the line).

    - ``tum``: ``t[s] tx ty tz qx qy qz qw`` per line (``#`` comments).
    - ``euroc``: EuRoC ground-truth CSV ``t[ns], px, py, pz, qw, qx, qy, qz, ...`` (commas), or the
      ORB-SLAM3 ``SaveTrajectoryEuRoC`` text ``t[ns] tx ty tz qx qy qz qw`` (spaces).
    - ``kitti``: 12 numbers per line (row-major 3x4 ``T_world_cam``); stamps from ``kitti_times``
      (one second value per line, KITTI ``times.txt``) or, without it, ``index / kitti_rate_hz``.
    """
    path = Path(path)
    if fmt not in FORMATS:
        raise EvaluationError(f"{path}: unknown trajectory format {fmt!r}: expected one of {FORMATS}")
    if not path.is_file():
        raise EvaluationError(f"{path}: trajectory file not found" if not path.exists()
                              else f"{path}: not a file: expected a {fmt} trajectory file")
    name = str(path)
    if fmt == "tum":
        expected = "t[s] tx ty tz qx qy qz qw (TUM)"
        rows = data_rows(path, None)
        check_rows(path, rows, 8, expected)
        t_ns = [row_stamp_ns(path, r, r.cells[0], "s") for r in rows]
        a = np.array([row_numbers(path, r, slice(1, 8), expected) for r in rows])
        return _build(t_ns, a[:, 0:3], a[:, [6, 3, 4, 5]], name)
    if fmt == "euroc":
        text = read_text(path)
        comma = "," in text
        expected = "t[ns], px, py, pz, qw, qx, qy, qz (EuRoC)" if comma else "t[ns] tx ty tz qx qy qz qw"
        rows = data_rows(path, "," if comma else None, text)
        check_rows(path, rows, 8, expected)
        t_ns = [row_stamp_ns(path, r, r.cells[0], "ns") for r in rows]
        a = np.array([row_numbers(path, r, slice(1, 8), expected) for r in rows])
        quat = a[:, 3:7] if comma else a[:, [6, 3, 4, 5]]
        return _build(t_ns, a[:, 0:3], quat, name)
    expected = "12 numbers (3x4 row-major pose, KITTI)"
    rows = data_rows(path, None)
    check_rows(path, rows, 12, expected)
    mats = np.zeros((len(rows), 4, 4))
    mats[:, :3, :] = np.array([row_numbers(path, r, slice(0, 12), expected) for r in rows]).reshape(-1, 3, 4)
    mats[:, 3, 3] = 1.0
    if kitti_times is not None:
        times_path = Path(kitti_times)
        if not times_path.is_file():
            raise EvaluationError(f"{times_path}: KITTI times file not found (expected one stamp in s per line)")
        time_rows = data_rows(times_path, None)
        times = [row_stamp_ns(times_path, r, r.cells[0], "s") for r in time_rows]
        if len(times) != len(rows):
            raise EvaluationError(f"{times_path}: {len(times)} stamps for {len(rows)} poses in {path}: "
                                  "expected one stamp per pose")
    else:
        if not (np.isfinite(kitti_rate_hz) and kitti_rate_hz > 0):
            raise EvaluationError(f"KITTI rate {kitti_rate_hz!r} Hz: expected a positive frame rate")
        times = [int(round(i * 1e9 / kitti_rate_hz)) for i in range(len(rows))]
    return Trajectory.from_matrices(np.array(times), mats, name=name)


def _build(t_ns: list[int], positions: np.ndarray, quat_wxyz: np.ndarray, name: str) -> Trajectory:
    """Drop poses repeating the previous stamp exactly (keep the first, as real ground truth files
    contain a few, e.g. TUM fr2/desk); decreasing stamps stay an error."""
    t = np.asarray(t_ns, dtype=np.int64)
    keep = np.ones(len(t), dtype=bool)
    keep[1:] = np.diff(t) != 0
    traj = Trajectory(t[keep], positions[keep], quat_wxyz[keep], name=name)
    traj.duplicates_dropped = int((~keep).sum())
    return traj


def check_rows(path: Path, rows: list[Row], n: int, expected: str) -> None:
    if not rows:
        raise EvaluationError(f"{path}: empty (no data lines): expected {expected}")
    for r in rows:
        if len(r.cells) < n:
            raise EvaluationError(f"{path}: line {r.line} has {len(r.cells)} columns: expected {expected}")

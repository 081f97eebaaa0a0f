"""Absolute trajectory error (translation part), relative pose error per distance, final drift.

Association pairs each estimate pose with the reference pose nearest in time within
``max_diff_s`` (evo's ``associate_trajectories``, 0.01 s by default, as evo's CLI).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from rgbt.errors import EvaluationError
from rgbt.eval.align import align, apply_alignment
from rgbt.eval.align import align as _align
from rgbt.eval.trajectory import Trajectory
from rgbt.timematch import nearest_index


@dataclass
class AteResult:
    """ATE statistics in metres over ``n_pairs`` associated poses; ``scale`` of the alignment (1 unless sim3)."""

    rmse: float
    mean: float
    median: float
    max: float
    n_pairs: int
    scale: float
    align: str = "se3"
    std: float = 0.0
    min: float = 0.0
    rotation: list = field(default_factory=list)
    translation: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Association:
    """Associated pose pairs: ``ref`` and ``est`` have equal length; ``t_ns`` the estimate stamps."""

    ref: Trajectory
    est: Trajectory


def associate(ref: Trajectory, est: Trajectory, max_diff_s: float = 0.01) -> Association:
    """Pair poses by nearest stamp within ``max_diff_s`` (evo). Raises when nothing overlaps."""
    from evo.core import sync

    overlap = min(ref.t_ns[-1], est.t_ns[-1]) - max(ref.t_ns[0], est.t_ns[0])
    if overlap < -max_diff_s * 1e9:
        raise EvaluationError(
            f"no time overlap between {ref.name} [{ref.t_ns[0] / 1e9:.3f}, {ref.t_ns[-1] / 1e9:.3f}] s and "
            f"{est.name} [{est.t_ns[0] / 1e9:.3f}, {est.t_ns[-1] / 1e9:.3f}] s")
    try:
        r, e = sync.associate_trajectories(ref.to_evo(), est.to_evo(), max_diff=max_diff_s)
    except sync.SyncException as exc:
        raise EvaluationError(f"cannot associate {est.name} with {ref.name}: {exc}") from exc
    # evo keeps the reference stamps for both; recover int ns of the estimate by nearest match.
    idx_e = nearest_index(est.t_s, e.timestamps)
    idx_r = nearest_index(ref.t_s, r.timestamps)
    return Association(ref.slice(idx_r), est.slice(idx_e))


def _stats(err: np.ndarray) -> dict:
    return {"rmse": float(np.sqrt(np.mean(err ** 2))), "mean": float(err.mean()), "median": float(np.median(err)),
            "max": float(err.max()), "std": float(err.std()), "min": float(err.min())}


def ate(ref: Trajectory, est: Trajectory, align: str = "se3", max_diff_s: float = 0.01,
        min_pairs: int = 3) -> AteResult:
    """ATE (translation part, metres) of ``est`` against ``ref`` after ``align``.

    ``align`` in {"se3", "sim3", "posyaw", "none"}; the alignment is fitted on all associated pairs.
    """
    pairs = associate(ref, est, max_diff_s)
    return ate_associated(pairs.ref, pairs.est, align=align, min_pairs=min_pairs)


def ate_associated(ref: Trajectory, est: Trajectory, align: str = "se3", min_pairs: int = 3) -> AteResult:
    """ATE of already associated (equal length) trajectories."""
    if len(ref) != len(est):
        raise EvaluationError(f"associated trajectories differ in length: {len(ref)} vs {len(est)}")
    if len(ref) < min_pairs:
        raise EvaluationError(f"only {len(ref)} associated pose pairs between {est.name} and {ref.name}: "
                              f"expected >= {min_pairs}")
    rot, t, s = _align(ref.positions, est.positions, align)
    aligned = s * est.positions @ rot.T + t
    err = np.linalg.norm(ref.positions - aligned, axis=1)
    return AteResult(
        n_pairs=len(err),
        scale=float(s),
        align=align,
        rotation=rot.tolist(),
        translation=list(map(float, t)),
        **_stats(err),
    )


def position_errors(ref: Trajectory, est: Trajectory, align: str) -> tuple[np.ndarray, float]:
    """Per-pair position error (m) of associated trajectories after ``align``; also the scale."""
    rot, t, s = _align_dispatch(ref, est, align)
    return np.linalg.norm(ref.positions - (s * est.positions @ rot.T + t), axis=1), s


def _align_dispatch(ref: Trajectory, est: Trajectory, method: str) -> tuple[np.ndarray, np.ndarray, float]:
    return align(ref.positions, est.positions, method)


def rpe_per_distance(ref: Trajectory, est: Trajectory, delta_m: float, align: str = "sim3") -> dict:
    """RPE (translation part, metres) over segments of ``delta_m`` metres of travel (evo ``RPE``).

    Inputs are associated trajectories; the estimate is first aligned with ``align`` (only the
    scale matters for RPE: sim3 makes a monocular estimate metric).
    """
    from evo.core import filters, metrics
    from evo.core.units import Unit

    rot, t, s = _align_dispatch(ref, est, align)
    est_aligned = Trajectory.from_matrices(est.t_ns, apply_alignment(est.matrices(), rot, t, s), name=est.name)
    rpe = metrics.RPE(metrics.PoseRelation.translation_part, delta=delta_m, delta_unit=Unit.meters,
                      rel_delta_tol=0.1, all_pairs=False)
    try:
        rpe.process_data((ref.to_evo(), est_aligned.to_evo()))
    except (metrics.MetricsException, filters.FilterException) as exc:
        raise EvaluationError(f"RPE over {delta_m} m failed ({ref.path_length():.1f} m of path): {exc}") from exc
    err = np.asarray(rpe.error)
    if err.size == 0:
        raise EvaluationError(f"RPE over {delta_m} m: no segment of that length in {ref.name}")
    out = _stats(err)
    out.update(delta_m=float(delta_m), n_pairs=int(err.size))
    return out


def final_drift_percent(ref: Trajectory, est: Trajectory, align: str = "sim3") -> float:
    """Position error of the last associated pose after ``align`` (fitted on all pairs), in % of the
    reference path length over the same pairs."""
    err, _ = position_errors(ref, est, align)
    length = ref.path_length()
    if length <= 0:
        raise EvaluationError(f"{ref.name}: zero path length, final drift undefined")
    return float(100.0 * err[-1] / length)

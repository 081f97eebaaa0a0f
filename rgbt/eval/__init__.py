"""Trajectory evaluation: loading, association, alignment, ATE / RPE / drift (evo underneath)."""

from rgbt.eval.ate import AteResult, ate
from rgbt.eval.trajectory import Trajectory, load_trajectory

__all__ = ["AteResult", "Trajectory", "ate", "load_trajectory"]

"""Odometry of an external estimator -> a TUM file (no rclpy import: the node feeds it plain values).

VINS-Fusion (``/vins_estimator/odometry`` or ``/odometry``) and OpenVINS (``/ov_msckf/odomimu``)
publish ``nav_msgs/Odometry``; ``nodes/odometry_capture.py`` writes each pose here as one TUM line
``t x y z qx qy qz qw`` (seconds with 9 decimals, T_world_child), flushed per line so a killed run
keeps everything written so far. Stamps must strictly increase; others are dropped and counted.
``rgbt.eval.trajectory`` reads the file back (``rgbt vio ate --est FILE``).
"""

from __future__ import annotations

from pathlib import Path

from rgbt.vio.runners import SPECS


def odometry_topics() -> list[str]:
    """Every odometry topic the runners in ``rgbt.vio.runners`` know (VINS-Fusion, OpenVINS)."""
    return [t for spec in SPECS.values() for t in spec.odometry_topics]


class TumWriter:
    """Appends poses to a TUM file. ``add(t_ns, xyz, qxyzw) -> bool`` (False: stamp not increasing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(self.path, "w")
        self.last_ns: int | None = None
        self.counters = {"written": 0, "non_increasing": 0}

    def add(self, t_ns: int, xyz: tuple[float, float, float], qxyzw: tuple[float, float, float, float]) -> bool:
        t_ns = int(t_ns)
        if self.last_ns is not None and t_ns <= self.last_ns:
            self.counters["non_increasing"] += 1
            return False
        self.last_ns = t_ns
        sec, nsec = divmod(t_ns, 1_000_000_000)
        values = " ".join(repr(float(v)) for v in (*xyz, *qxyzw))
        self._f.write(f"{sec}.{nsec:09d} {values}\n")
        self._f.flush()
        self.counters["written"] += 1
        return True

    def close(self) -> None:
        if not self._f.closed:
            self._f.close()

"""Options of one ``rgbt demo`` run (printable, recorded in the report)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from rgbt.errors import ConfigError
from rgbt.paths import BAGS_DIR, ENGINES_DIR, data_dir
from rgbt.sim.options import PARAMETRIC_PATHS

#: CART ground-truth trajectories tried in this order for the default flight (longest-flown first
#: that covers the requested duration). Shared data, never copied into the repository.
CART_TRAJECTORIES = ("CastaicLake_2022-12-20-11-40-28", "NorthField-2022-07-26-11-05-36",
                     "NorthField-2022-07-26-10-39-11", "NorthField-2022-10-06-13-11-26",
                     "CastaicLake_2022-12-20-12-16-02", "Duck_2023-03-21-14-06-04")
#: parametric path used when the shared data is absent
FALLBACK_PATH = "lawnmower"
#: disarmed time before arming and after disarming in the simulated flight (s); the simulator's defaults
LEAD_IN_S = 1.0
LEAD_OUT_S = 1.0


@dataclass
class DemoOptions:
    """``duration_s``: armed flight time (s); ``out``: run folder (default ``bags/demo-<UTC>``);
    ``trajectory``: TUM file or parametric path name (default: a real CART trajectory);
    ``vio``: run the VIO evaluation; ``engine``: segmentation ONNX (default: the
    synthetic-trained demo model, else FastSCNN); ``profile``: bring-up profile (``bench-sim``
    simulated, ``flight`` hardware); ``replay``: evaluate this bag instead of flying; ``seed``:
    simulator seed; ``runs``: ORB-SLAM3 runs; ``cameras``: simulated cameras (thermal drives
    segmentation and VIO; colour + mono double the load); ``realtime``: publish at the real rate;
    ``altitude_m``: lowest point of a TUM trajectory above the simulated ground; ``max_eval_frames``:
    segmented frames scored for mIoU (evenly spread); ``prerender``: render the simulated flight
    before the graph starts and play it (``rgbt.sim.cache``), so the stack is published at the real
    rate however slow the renderer; None (default): when the flight simulates more than the thermal
    camera (on 2 cores the renderer keeps up with the thermal camera alone, not with colour too:
    measured 43.7 of 60 Hz, the stack 37 % behind the clock)."""

    duration_s: float = 60.0
    out: str | None = None
    trajectory: str | None = None
    vio: bool = True
    engine: str | None = None
    profile: str = "bench-sim"
    replay: str | None = None
    seed: int = 0
    runs: int = 1
    cameras: list[str] = field(default_factory=lambda: ["thermal"])
    realtime: bool = True
    altitude_m: float = 15.0
    max_eval_frames: int = 150
    prerender: bool | None = None
    notes: list[str] = field(default_factory=list)  # what was chosen for the user (fallbacks)

    def __post_init__(self) -> None:
        if self.duration_s <= 0:
            raise ConfigError("--duration", "duration", self.duration_s, "a positive number of seconds")
        if self.max_eval_frames < 1:
            raise ConfigError("--eval-frames", "max_eval_frames", self.max_eval_frames, "at least 1")
        if self.runs < 1:
            raise ConfigError("--runs", "runs", self.runs, "at least 1")
        bad = [c for c in self.cameras if c not in ("thermal", "color", "mono")]
        if bad or "thermal" not in self.cameras:
            raise ConfigError(
                "--cameras", "cameras", self.cameras, "a list containing thermal (of thermal, color, mono)"
            )

    def describe(self) -> str:
        return "\n".join(f"{k}: {v}" for k, v in asdict(self).items() if k != "notes")

    def run_dir(self) -> Path:
        if self.out:
            return Path(self.out)
        return BAGS_DIR / f"demo-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%SZ')}"

    def prerender_flight(self) -> bool:
        """Whether a simulated flight is rendered ahead (see ``prerender``)."""
        return self.prerender if self.prerender is not None else set(self.cameras) != {"thermal"}

    def sim_duration_s(self) -> float:
        """Simulated time: the armed flight plus the disarmed lead-in and lead-out."""
        return self.duration_s + LEAD_IN_S + LEAD_OUT_S


def resolve_engine(engine: str | None, notes: list[str]) -> Path:
    """The segmentation model: ``engine``, else ``engines/sim_thermal_seg.onnx`` (trained on the
    simulator's frames), else FastSCNN (random weights: mIoU at chance level, said in ``notes``)."""
    if engine:
        path = Path(engine)
        if not path.is_file():
            raise ConfigError("--engine", "engine", engine, "an existing ONNX file (sidecar NAME.json beside it)")
        return path.resolve()
    trained = ENGINES_DIR / "sim_thermal_seg.onnx"
    if trained.is_file():
        return trained
    fallback = ENGINES_DIR / "fastscnn_thermal.onnx"
    notes.append(f"{trained.name} is not in engines/ (build it with `python engines/train_sim.py`); using "
                 f"{fallback.name}, whose weights are random: its mIoU is chance level, its speed is real")
    return fallback


def resolve_trajectory(trajectory: str | None, sim_duration_s: float, notes: list[str]) -> str:
    """A TUM file or parametric path name for the simulator; by default the first CART ground-truth
    trajectory long enough for the flight, or the parametric ``lawnmower`` without the shared data."""
    if trajectory:
        if trajectory in PARAMETRIC_PATHS or Path(trajectory).is_file():
            return trajectory
        raise ConfigError("--trajectory", "trajectory", trajectory, f"a TUM file or one of {PARAMETRIC_PATHS}")
    gt_dir = data_dir() / "cart" / "ground_truth"
    for name in CART_TRAJECTORIES:
        path = gt_dir / f"{name}.txt"
        if path.is_file() and _tum_length_s(path) >= sim_duration_s:
            return str(path)
    if gt_dir.is_dir():
        notes.append(f"no CART trajectory in {gt_dir} covers {sim_duration_s:g} s; flying the parametric "
                     f"'{FALLBACK_PATH}' path instead")
    else:
        notes.append(f"shared data not found ({gt_dir}; set RGBT_DATA): flying the parametric "
                     f"'{FALLBACK_PATH}' path instead of a real CART trajectory")
    return FALLBACK_PATH


def _tum_rows(path: Path) -> np.ndarray:
    """``t[s] x y z`` rows of a TUM file (validated by the simulator's loader)."""
    from rgbt.sim.trajectory import load_tum

    t, xyz = load_tum(path)
    return np.c_[t, xyz]


def _tum_length_s(path: Path) -> float:
    rows = _tum_rows(path)
    return rows[-1][0] - rows[0][0] if len(rows) > 1 else 0.0


def flight_start_s(trajectory: str, sim_duration_s: float, moved_m: float = 5.0) -> float:
    """Where the flight starts in a TUM trajectory: when the vehicle is first ``moved_m`` from its
    starting point (CART recordings begin on the ground or hovering: a monocular tracker cannot
    initialise without motion), moved earlier if needed so the flight fits; 0 for parametric paths."""
    path = Path(trajectory)
    if not path.is_file():
        return 0.0
    rows = _tum_rows(path)
    t = rows[:, 0] - rows[0, 0]
    d = np.linalg.norm(rows[:, 1:4] - rows[0, 1:4], axis=1)
    moving = np.nonzero(d >= moved_m)[0]
    start = float(t[moving[0]]) if moving.size else 0.0
    return float(max(0.0, min(start, t[-1] - sim_duration_s - 0.5)))

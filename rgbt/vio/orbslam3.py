"""ORB-SLAM3 in-process through ``pyorbslam3``: monocular and monocular-inertial.

Every frame's tracking state, camera pose ``T_world_cam`` (in the estimator's current map) and
latency are recorded; a new map (after a loss / reset) starts a new segment, since poses of
different maps live in different world frames. ORB-SLAM3 writes its log to the process stdout;
while it runs, file descriptor 1 is redirected to a log file so ``--json`` output stays clean.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from rgbt.errors import EvaluationError
from rgbt.pacing import Pacer
from rgbt.vio.config import orbslam3_settings
from rgbt.vio.feed import FeedFrame, ImuWindow
from rgbt.vio.sequence import Sequence
from rgbt.vio.vocab import ensure_vocabulary

TRACKED_STATES = ("OK", "OK_KLT")


@dataclass
class OrbSlam3Options:
    """``inertial``: mono-inertial (IMU_MONOCULAR) else MONOCULAR; ``features``: ORB per frame;
    ``imu_noise``: (gyro n, accel n, gyro walk, accel walk) continuous-time densities given to the
    estimator — default the CART VINS-Fusion values (the stack's ``imu.vio_noise``): with the
    VN-100 datasheet densities ORB-SLAM3's inertial initialisation is overconfident and its scale
    collapses (measured: 2-10 map resets per 15-30 s vs none);
    ``vocab``: DBoW2 text vocabulary (``rgbt vio vocab``); ``fps``: nominal feed rate."""

    inertial: bool = False
    features: int = 1500
    imu_noise: tuple[float, float, float, float] = (0.01, 0.1, 1.0e-4, 1.0e-3)
    imu_rate_hz: float = 200.0
    fps: float = 20.0
    vocab: str | None = None
    log_path: str | None = None
    #: feed pacing: 1.0 = real time (frames no faster than their stamps, as ORB-SLAM3's examples do:
    #: its mapping threads must keep up), 0 = as fast as possible
    pace: float = 1.0

    def describe(self) -> str:
        return " ".join(f"{k}={v}" for k, v in asdict(self).items())


@dataclass
class FrameRecord:
    """One fed (or skipped) frame: ``t_ns`` camera stamp, ``state`` ORB-SLAM3 tracking state name
    (``SKIPPED_FROZEN`` for dropped FFC frames), ``pose`` ``T_world_cam`` 4x4 or None, ``map`` segment
    index, ``latency_ns`` of the track call, ``imu_ready`` (IMU initialised in this map)."""

    t_ns: int
    state: str
    pose: np.ndarray | None
    map: int
    latency_ns: int = 0
    imu_ready: bool = False
    ffc_truth: bool = False

    @property
    def tracked(self) -> bool:
        return self.state in TRACKED_STATES and self.pose is not None


@dataclass
class EstimatorRun:
    """All frames of one run plus counters; ``resets`` = maps started after the first one;
    ``map_changes`` = in-map frame changes (IMU initialisation, inertial refinement, global BA)."""

    estimator: str
    sensor: str
    frames: list[FrameRecord] = field(default_factory=list)
    resets: int = 0
    map_changes: int = 0
    wall_s: float = 0.0
    log_path: str | None = None
    stopped: str | None = None


@contextlib.contextmanager
def native_stdout_to(path: str | Path) -> Iterator[None]:
    """Redirect the process's fds 1 and 2 (C++ ``std::cout`` / ``std::cerr``) to ``path`` for the block."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "ab") as fh:
        os.dup2(fh.fileno(), 1)
        os.dup2(fh.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def write_settings(seq: Sequence, opts: OrbSlam3Options, path: str | Path) -> Path:
    """ORB-SLAM3 v1.0 settings for the sequence's camera (see :mod:`rgbt.vio.config`)."""
    c = seq.camera
    K = c.K
    text = orbslam3_settings(c.width, c.height, (K[0, 0], K[1, 1], K[0, 2], K[1, 2]), list(c.dist), c.T_imu_cam,
                             noise=opts.imu_noise, imu_rate_hz=opts.imu_rate_hz, fps=opts.fps,
                             features=opts.features, inertial=opts.inertial,
                             header=f"# rgbt ORB-SLAM3 run on {seq.name}; {opts.describe()}")
    path = Path(path)
    path.write_text(text)
    return path


def run_orbslam3(seq: Sequence, feed: Iterable[FeedFrame], opts: OrbSlam3Options,
                 on_frame: Callable[[FrameRecord], None] | None = None) -> EstimatorRun:
    """Run ORB-SLAM3 over ``feed`` (frames of ``seq``), with ``seq.imu`` when ``opts.inertial``."""
    import pyorbslam3


    vocab = opts.vocab or str(ensure_vocabulary())
    if not Path(vocab).is_file():
        raise EvaluationError(f"{vocab}: vocabulary not found (build it with `rgbt vio vocab`)")
    workdir = Path(tempfile.mkdtemp(prefix="rgbt_orbslam3_"))
    settings = write_settings(seq, opts, workdir / "settings.yaml")
    log_path = Path(opts.log_path) if opts.log_path else workdir / "orbslam3.log"
    sensor = pyorbslam3.Sensor.IMU_MONOCULAR if opts.inertial else pyorbslam3.Sensor.MONOCULAR
    run = EstimatorRun("orbslam3", "mono-inertial" if opts.inertial else "mono", log_path=str(log_path))
    window = ImuWindow(seq.imu, td_s=seq.camera.td_s) if opts.inertial else None
    td_ns = int(round(seq.camera.td_s * 1e9))
    t_start = time.perf_counter()
    t0_ns: int | None = None
    map_index, was_initialized, imu_was_ready = 0, False, False
    pacer = Pacer(opts.pace, clock=time.perf_counter_ns) if opts.pace > 0 else None
    with native_stdout_to(log_path):
        slam = pyorbslam3.Slam(vocab, str(settings), sensor)
        try:
            for frame in feed:
                if t0_ns is None:
                    t0_ns = frame.t_ns + td_ns - 1_000_000_000
                    if window is not None:  # no IMU older than one frame period before the first frame
                        window.take(frame.t_ns - int(1e9 / opts.fps), t0_ns)
                if frame.frozen:
                    rec = FrameRecord(frame.t_ns, "SKIPPED_FROZEN", None, map_index, ffc_truth=frame.ffc_truth)
                    run.frames.append(rec)
                    if on_frame:
                        on_frame(rec)
                    continue
                imu = window.take(frame.t_ns, t0_ns) if window is not None else None
                if imu is not None and len(imu) == 0 and run.frames:
                    run.stopped = f"no IMU samples before the frame at {frame.t_ns} ns (IMU ended or has a gap)"
                    break  # frames so far are kept
                t_s = (frame.t_ns + td_ns - t0_ns) / 1e9
                if pacer is not None:
                    pacer.wait(frame.t_ns)
                t_a = time.perf_counter_ns()
                result = slam.track_monocular(frame.image, t_s, imu=imu)
                latency = time.perf_counter_ns() - t_a
                state = result.state.name
                if state == "NOT_INITIALIZED" and was_initialized:
                    map_index += 1
                    run.resets += 1
                    was_initialized = False
                pose = np.array(result.pose_wc, dtype=np.float64) if result.pose_valid else None
                if state in TRACKED_STATES:
                    was_initialized = True
                imu_ready = bool(opts.inertial and slam.imu_initialized())
                # ORB-SLAM3 rescales and rotates the whole map at IMU initialisation and after its
                # inertial refinements / global BA: poses reported before and after such a change live
                # in different frames, so a new segment starts (scored with its own alignment).
                if was_initialized and ((imu_ready and not imu_was_ready) or slam.map_changed()):
                    map_index += 1
                    run.map_changes += 1
                imu_was_ready = imu_ready
                rec = FrameRecord(frame.t_ns, state, pose, map_index, latency, imu_ready=imu_ready,
                                  ffc_truth=frame.ffc_truth)
                run.frames.append(rec)
                if on_frame:
                    on_frame(rec)
        finally:
            slam.shutdown()
            if not opts.log_path:  # nothing asked to be kept: remove the settings and the log
                shutil.rmtree(workdir, ignore_errors=True)
                run.log_path = None
    run.wall_s = time.perf_counter() - t_start
    return run

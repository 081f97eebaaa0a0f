"""``rgbt vio eval``: run an estimator N times over a sequence and score every run (no hand-clipping).

``evaluate_sequence`` / ``evaluate_bag`` -> :class:`VioEvalResult` (JSON-able via ``to_dict``):
per-run metrics (:func:`rgbt.eval.tracking.score_run`), FPS and per-frame latency of the estimator,
and mean / std / median over runs.
"""

from __future__ import annotations

import multiprocessing as mp
import queue as queue_mod
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rgbt.errors import EvaluationError
from rgbt.eval.tracking import RunFrame, score_run
from rgbt.eval.trajectory import Trajectory
from rgbt.progress import Progress
from rgbt.timing import summarize_ms
from rgbt.vio.feed import NORMALIZATIONS, FeedFrame, prepare_feed
from rgbt.vio.ground_truth import estimate_time_offset, shift_ground_truth
from rgbt.vio.orbslam3 import OrbSlam3Options, run_orbslam3
from rgbt.vio.runners import detect
from rgbt.vio.sequence import Sequence, bag_sequence

if TYPE_CHECKING:
    from rgbt.vio.orbslam3 import EstimatorRun, FrameRecord, OrbSlam3Options

ESTIMATORS = ("orbslam3", "vins", "openvins")


@dataclass
class EvalOptions:
    """``estimator``; ``inertial`` (mono-inertial); ``runs``; ``rate_hz`` of the feed;
    ``normalization`` in :data:`rgbt.vio.feed.NORMALIZATIONS`; ``drop_frozen`` (None: per mode);
    ``primary_align``: alignment of the headline ``ate_rmse`` (None: sim3 for monocular, se3 with
    IMU); ``rpe_delta_m``; ``vocab`` path; ``features`` ORB per frame; ``pace``: 1 = feed in real
    time (default, like a live camera), 0 = as fast as possible; ``gt_offset_auto``: estimate the
    ground-truth clock offset from run 0 (:func:`rgbt.vio.ground_truth.estimate_time_offset`) and
    score every run with it.

    ``normalization`` ``None`` (default) goes by bit depth: 16-bit thermal through ``temporal``,
    8-bit frames to the estimator unnormalized. A mode named for an 8-bit stream is an error."""

    estimator: str = "orbslam3"
    inertial: bool = False
    runs: int = 3
    rate_hz: float = 20.0
    normalization: str | None = None
    drop_frozen: bool | None = None
    primary_align: str | None = None
    rpe_delta_m: float = 10.0
    vocab: str | None = None
    features: int = 1500
    pace: float = 1.0
    gt_offset_auto: bool = False

    def __post_init__(self) -> None:
        if self.estimator not in ESTIMATORS:
            raise EvaluationError(f"estimator {self.estimator!r}: expected one of {ESTIMATORS}")
        if self.normalization is not None and self.normalization not in NORMALIZATIONS:
            raise EvaluationError(f"normalization {self.normalization!r}: expected one of {NORMALIZATIONS}")
        if self.runs < 1:
            raise EvaluationError(f"runs {self.runs}: expected >= 1")

    @property
    def align(self) -> str:
        return self.primary_align or ("se3" if self.inertial else "sim3")


def _summary(values: list[float | None]) -> dict:
    v = np.array([x for x in values if x is not None], dtype=np.float64)
    if v.size == 0:
        return {"mean": None, "std": None, "median": None, "min": None, "max": None, "n": 0}
    return {"mean": float(v.mean()), "std": float(v.std()), "median": float(np.median(v)),
            "min": float(v.min()), "max": float(v.max()), "n": int(v.size)}


@dataclass
class VioEvalResult:
    """Everything one ``rgbt vio eval`` measured; ``to_dict()`` is the JSON."""

    sequence: str
    synthetic: bool
    options: dict
    runs: list[dict] = field(default_factory=list)
    frames_per_run: list[list[FrameRecord]] = field(default_factory=list, repr=False)
    meta: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        align = self.options["align"]

        ok = [r for r in self.runs if "metrics" in r]

        def pick(run: dict, key: str, method: str) -> float | None:
            m = run["metrics"][key].get(method)
            return None if m is None else m["rmse"]

        methods = sorted({m for r in ok for m in r["metrics"]["ate_tracked"]})
        out: dict[str, Any] = {
            "sequence": self.sequence,
            "synthetic": self.synthetic,
            "estimator": self.options["estimator"],
            "sensor": "mono-inertial" if self.options["inertial"] else "mono",
            "normalization": self.options["normalization"],
            "rate_hz": self.options["rate_hz"],
            "align": align,
            "input": self.meta.get("dataset") or self.meta.get("bag") or self.meta.get("trajectory") or self.sequence,
            "ground_truth": self.meta.get("ground_truth"),
            "status": self.meta.get("status", "ran"),
            "initialised": [bool("metrics" in r and r["metrics"].get("time_to_init_s") is not None)
                            for r in self.runs],
            "runs": self.runs,
            "failed_runs": len(self.runs) - len(ok),
            "ate_rmse": _summary([pick(r, "ate_tracked", align) for r in ok]),
            "ate_full_rmse": _summary([pick(r, "ate_full", align) for r in ok]),
            "ate_rmse_by_align": {m: _summary([pick(r, "ate_tracked", m) for r in ok]) for m in methods},
            "ate_full_rmse_by_align": {m: _summary([pick(r, "ate_full", m) for r in ok]) for m in methods},
            "tracked_fraction": _summary([r["metrics"]["tracked_fraction"] for r in ok])["mean"],
            "tracked_fraction_stats": _summary([r["metrics"]["tracked_fraction"] for r in ok]),
            "time_to_init_s": _summary([r["metrics"]["time_to_init_s"] for r in ok]),
            "resets": _summary([r["resets"] for r in ok]),
            "final_drift_percent": _summary([r["metrics"]["final_drift_percent"] for r in ok]),
            "fps": _summary([r["fps"] for r in ok])["mean"],
            "latency_ms": _summary([r["latency_ms"]["median_ms"] for r in ok]),
            "options": self.options,
            "meta": self.meta,
        }
        return out


def feed_normalization(seq: Sequence, requested: str | None) -> tuple[str, int]:
    """``(mode, bits)`` for ``seq``'s frames: 16-bit thermal goes through ``requested`` (default
    ``temporal``); 8-bit frames go to the estimator unnormalized, and a mode requested for them is an
    error naming the source (its normalization would do nothing: the data is already 8-bit)."""
    first = next(iter(seq.frames()), None)
    if first is None:
        raise EvaluationError(f"{seq.name}: no camera frames")
    bits = 8 * first[1].dtype.itemsize
    if bits == 16:
        return requested or "temporal", 16
    if requested is not None:
        source = seq.meta.get("camera_topic") or seq.meta.get("dataset") or seq.name
        where = f"{seq.meta.get('bag')}: topic {source}" if seq.meta.get("bag") else str(source)
        raise EvaluationError(f"{where}: frames are {bits}-bit ({first[1].dtype}) but --normalization {requested} "
                              "was asked for: normalization is for 16-bit thermal counts; expected no "
                              "--normalization (8-bit frames go to the estimator unnormalized) or a 16-bit stream")
    return "temporal", bits  # the mode is never applied to 8-bit frames (ThermalToMono8 passes them)


def build_feed(seq: Sequence, opts: EvalOptions, progress: Any = None) -> list[FeedFrame]:
    """The normalized, rate-selected feed of ``seq`` (kept in memory so every run sees the same)."""
    feed = []
    mode, _ = feed_normalization(seq, opts.normalization)
    for f in prepare_feed(seq.frames(), mode, opts.rate_hz, opts.drop_frozen):
        feed.append(f)
        if progress is not None:
            progress()
    if not feed:
        raise EvaluationError(f"{seq.name}: no camera frames")
    return feed


def _orbslam3_options(seq: Sequence, opts: EvalOptions, log_path: str | None) -> OrbSlam3Options:
    o = OrbSlam3Options(inertial=opts.inertial, features=opts.features, fps=opts.rate_hz, vocab=opts.vocab,
                        imu_rate_hz=_imu_rate(seq), pace=opts.pace, log_path=log_path)
    if seq.imu_noise is not None:
        o.imu_noise = seq.imu_noise
    return o


def _child_run(seq: Sequence, feed: list[FeedFrame], o: OrbSlam3Options, queue: Any) -> None:
    count = [0]

    def tick(rec: FrameRecord) -> None:
        count[0] += 1
        if count[0] % 10 == 0:
            queue.put(("progress", 10))

    try:
        queue.put(("done", run_orbslam3(seq, feed, o, on_frame=tick)))
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which keeps the other runs
        queue.put(("error", f"{type(exc).__name__}: {exc}"))


def _run_once(seq: Sequence, feed: list[FeedFrame], opts: EvalOptions, advance: Any = None,
              log_path: str | None = None) -> EstimatorRun:
    """One ORB-SLAM3 run in a forked child process: ORB-SLAM3 keeps static state across instances
    (map / frame id counters) and can crash; a child per run keeps runs independent and a crash
    costs only that run (reported with its exit code)."""
    o = _orbslam3_options(seq, opts, log_path)
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    proc = ctx.Process(target=_child_run, args=(seq, feed, o, q), daemon=True)
    proc.start()
    try:
        while True:
            try:
                kind, payload = q.get(timeout=1.0)
            except queue_mod.Empty:
                if not proc.is_alive():
                    raise EvaluationError(f"ORB-SLAM3 run ended without a result (exit code {proc.exitcode}"
                                          f"{', log ' + log_path if log_path else ''})") from None
                continue
            if kind == "progress":
                if advance:
                    for _ in range(payload):
                        advance()
            elif kind == "error":
                raise EvaluationError(f"ORB-SLAM3 run failed: {payload}")
            else:
                return payload
    finally:
        proc.join(timeout=10)
        if proc.is_alive():
            proc.kill()
            proc.join()


def _imu_rate(seq: Sequence) -> float:
    t = seq.imu.t_ns
    return float(1e9 / np.median(np.diff(t))) if len(t) > 1 else 200.0


def estimator_unavailable(name: str) -> str | None:
    """Why ``name`` cannot run here (not installed / not replayable yet), or ``None`` when it can."""
    if name == "orbslam3":
        return None

    info = detect(name)
    if not info.installed:
        return f"not installed: {info.reason}"
    return ("not replayable yet: installed, but replaying a sequence into it needs the ROS 2 VIO bridge, which "
            "`rgbt vio eval` does not start yet (`rgbt vio estimators` gives its command line)")


def evaluate_sequence(seq: Sequence, opts: EvalOptions, progress: Progress | None = None,
                      log_dir: str | Path | None = None) -> VioEvalResult:
    """Run ``opts.runs`` times and score each run; a run that fails keeps the others. With
    ``log_dir`` each run's ORB-SLAM3 log is kept as ``log_dir/run<k>/orbslam3.log``. ``progress`` is
    told of the frames fed and of each run's frames.

    An estimator that cannot run here (not installed, no wheel for the platform) gives a result
    with no runs and ``status`` saying why (a table cell, not an error). ``opts.gt_offset_auto``:
    the ground-truth clock offset is estimated from run 0's poses and every run scored with it."""
    if opts.inertial and len(seq.imu) < 2:
        raise EvaluationError(f"{seq.name}: --inertial needs IMU samples and this sequence has none "
                              f"({seq.meta.get('format', 'this layout')} has no IMU): expected a monocular run")
    mode, bits = feed_normalization(seq, opts.normalization)
    result = VioEvalResult(seq.name, seq.synthetic,
                           {**asdict(opts), "align": opts.align,
                            "normalization": mode if bits == 16 else f"none ({bits}-bit frames)"},
                           meta=dict(seq.meta))
    position_only = seq.ground_truth.position_only
    result.meta["ground_truth"] = {
        "source": str(seq.meta.get("ground_truth", seq.ground_truth.name)), "position_only": position_only,
        "poses": len(seq.ground_truth), "offset_s": float(seq.meta.get("gt_offset_s") or 0.0),
        "offset_method": seq.meta.get("gt_offset_method", "none given (0 s; --gt-offset S or auto)"),
        **({"note": "positions only (identity orientations): RPE rotation not scored; camera scored at the "
                    "IMU position (lever arm not applied)"} if position_only else {})}
    unavailable = estimator_unavailable(opts.estimator)
    if unavailable is not None:  # fail before any work, as a result: the other cells of the table still run
        result.meta["status"] = unavailable
        return result
    # Positions-only ground truth has no orientation to carry the IMU->camera lever arm: score the
    # camera against the body positions (the lever arm, centimetres, is left in the error; said so).
    gt_cam = seq.ground_truth if position_only else seq.ground_truth_camera()
    report = progress or (lambda task, done, total, note="": None)
    task, count = f"feed {seq.name} ({result.options['normalization']})", [0]

    def fed() -> None:
        count[0] += 1
        report(task, count[0], None)

    feed = build_feed(seq, opts, progress=fed)
    result.meta.update(feed_frames=len(feed), skipped_frozen=sum(f.frozen for f in feed),
                       ffc_truth_frames=sum(f.ffc_truth for f in feed))
    _require_overlap(seq.name, feed[0].t_ns, feed[-1].t_ns, gt_cam)
    done: list[tuple[int, Any, float]] = []  # (run, run output or error text, wall s)
    for k in range(opts.runs):
        run_task, tracked = f"{opts.estimator} run {k + 1}/{opts.runs}", [0]

        def advance(run_task: str = run_task, tracked: list[int] = tracked) -> None:
            tracked[0] += 1
            report(run_task, tracked[0], len(feed))

        t0 = time.perf_counter()
        log = None
        if log_dir is not None:
            (Path(log_dir) / f"run{k}").mkdir(parents=True, exist_ok=True)
            log = str(Path(log_dir) / f"run{k}" / "orbslam3.log")
        try:
            done.append((k, _run_once(seq, feed, opts, advance=advance, log_path=log), time.perf_counter() - t0))
        except EvaluationError as exc:  # keep the other runs: report this one as failed
            done.append((k, str(exc), time.perf_counter() - t0))
    if opts.gt_offset_auto:
        gt_cam = _apply_estimated_offset(result, done, gt_cam, opts.align)
    for k, run, wall in done:
        _score_into(result, k, run, wall, gt_cam, opts)
    return result


def _apply_estimated_offset(result: VioEvalResult, done: list, gt_cam: Trajectory, align: str) -> Trajectory:
    """Estimate the ground-truth clock offset from the first run with a tracked segment; record it in
    ``result.meta["ground_truth"]`` and return the shifted ground truth (unchanged if none can be)."""
    info = result.meta["ground_truth"]
    for k, run, _ in done:
        if isinstance(run, str):
            continue
        tracked = [f for f in run.frames if f.tracked and f.pose is not None]
        if not tracked:
            continue
        maps = [f.map for f in tracked]
        longest = max(set(maps), key=maps.count)
        seg = [f for f in tracked if f.map == longest]
        try:
            est = estimate_time_offset(np.array([f.t_ns for f in seg]), np.stack([f.pose[:3, 3] for f in seg]),
                                       gt_cam, align=align)
        except EvaluationError as exc:
            info.update(offset_method=f"estimation failed: {exc}")
            return gt_cam
        est["method"] = est["method"].replace("run 0", f"run {k}")
        total = info["offset_s"] + est["offset_s"]
        info.update(offset_s=total, offset_method=est["method"], offset_estimate=est)
        return shift_ground_truth(gt_cam, est["offset_s"])
    info.update(offset_method="estimation failed: no run tracked a pose")
    return gt_cam


def _score_into(result: VioEvalResult, k: int, run: Any, wall: float, gt_cam: Trajectory, opts: EvalOptions) -> None:
    """Score one finished run (or record its error) into ``result``."""
    if isinstance(run, str):
        result.runs.append({"run": k, "error": run, "wall_s": wall})
        result.frames_per_run.append([])
        return
    frames = [RunFrame(f.t_ns, f.tracked, f.pose, f.map) for f in run.frames]
    try:
        metrics = score_run(frames, gt_cam, rpe_delta_m=opts.rpe_delta_m)
    except EvaluationError as exc:
        result.runs.append({"run": k, "error": str(exc), "wall_s": wall})
        result.frames_per_run.append([])
        return
    lat = [f.latency_ns for f in run.frames if f.state != "SKIPPED_FROZEN"]
    fed = len(lat)
    result.runs.append({
        "run": k, "sensor": run.sensor, "metrics": metrics, "resets": run.resets,
        "map_changes": run.map_changes,
        "frames_fed": fed, "fps": float(fed / (sum(lat) / 1e9)) if sum(lat) else None,
        "latency_ms": summarize_ms(lat), "wall_s": wall,
        "imu_initialized_s": _first_imu_ready(run), "stopped": run.stopped, "log": run.log_path,
    })
    result.frames_per_run.append(run.frames)


def _require_overlap(name: str, first_ns: int, last_ns: int, gt: Trajectory) -> None:
    """An error naming both time ranges when the frames and the ground truth do not overlap."""
    if last_ns < gt.t_ns[0] or first_ns > gt.t_ns[-1]:
        raise EvaluationError(
            f"{name}: ground truth {gt.name} covers {gt.t_ns[0] / 1e9:.3f}..{gt.t_ns[-1] / 1e9:.3f} s but the camera "
            f"frames cover {first_ns / 1e9:.3f}..{last_ns / 1e9:.3f} s: expected overlapping clocks "
            "(give the offset between the two clocks, or the matching ground truth)")


def _first_imu_ready(run: EstimatorRun) -> float | None:
    if not run.frames:
        return None
    for f in run.frames:
        if f.imu_ready:
            return (f.t_ns - run.frames[0].t_ns) / 1e9
    return None


def evaluate_bag(bag_path: str | Path, estimator: str = "orbslam3", runs: int = 3, *, stack_path: str | None = None,
                 camera: str = "thermal", progress: Progress | None = None, **options: Any) -> VioEvalResult:
    """Contract C8: evaluate ``estimator`` on a (simulated) bag with ``ground_truth_imu.tum`` beside it."""
    seq = bag_sequence(bag_path, stack_path=stack_path, camera=camera)
    return evaluate_sequence(seq, EvalOptions(estimator=estimator, runs=runs, **options), progress=progress)

"""Sequences an estimator can be run on: camera frames + IMU + ground truth + calibration.

Two sources: a simulated bag written by ``rgbt simulate`` (contract C3: topics from the stack,
``ground_truth_imu.tum`` beside the bag) and the small SYNTHETIC plane scene of
:mod:`rgbt.vio.synthetic` (for bring-up and fast tests).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rgbt.bag.renames import CART_ROS1_NAMES
from rgbt.errors import EvaluationError
from rgbt.eval.trajectory import Trajectory, load_trajectory
from rgbt.stack import load_stack
from rgbt.stamps import stamp_to_ns
from rgbt.vio.feed import ImuData
from rgbt.vio.ground_truth import ground_truth_from_bag
from rgbt.vio.synthetic import Flight, PlaneScene, TrajectoryFlight, canopy_layer, forward_down_camera, ground_texture

if TYPE_CHECKING:
    from rgbt.vio.synthetic import Flight, TrajectoryFlight


@dataclass
class CameraModel:
    """What the estimator needs of the camera: pinhole ``K``, radtan ``dist`` (k1 k2 p1 p2), size,
    ``T_imu_cam`` (camera -> IMU body) and ``td_s`` (t_imu = t_cam + td)."""

    name: str
    width: int
    height: int
    K: np.ndarray
    dist: np.ndarray
    T_imu_cam: np.ndarray
    td_s: float = 0.0


@dataclass
class Sequence:
    """``frames()`` yields ``(t_ns, image, ffc_truth)`` in time order (image uint16 thermal or uint8);
    ``imu`` all IMU samples; ``ground_truth`` ``T_world_imu``; ``synthetic`` says whether the data
    is simulated."""

    name: str
    camera: CameraModel
    frames: Callable[[], Iterator[tuple[int, np.ndarray, bool]]]
    imu: ImuData
    ground_truth: Trajectory
    synthetic: bool = True
    stack_yaml: str | None = None
    meta: dict = field(default_factory=dict)
    #: (gyro n, accel n, gyro walk, accel walk) continuous-time, for the estimator; None: its defaults
    imu_noise: tuple[float, float, float, float] | None = None

    def ground_truth_camera(self) -> Trajectory:
        """Ground truth of the camera: ``T_world_cam = T_world_imu @ T_imu_cam``."""
        mats = self.ground_truth.matrices() @ self.camera.T_imu_cam
        return Trajectory.from_matrices(self.ground_truth.t_ns, mats, name=f"{self.ground_truth.name} (camera)")


def synthetic_sequence(duration_s: float = 20.0, rate_hz: float = 20.0, imu_rate_hz: float = 200.0,
                       seed: int = 0, width: int = 640, height: int = 512, fx: float = 513.0,
                       pitch_deg: float = 60.0, ffc_at_s: tuple[float, ...] = (), period_s: float = 60.0,
                       altitude_m: float = 40.0) -> Sequence:
    """A SYNTHETIC thermal sequence over the procedural plane (exact poses and IMU) along an analytic
    loop (see :class:`rgbt.vio.synthetic.Flight`).

    ``ffc_at_s``: times at which the frame freezes for 0.4 s (FFC), as the Boson does.
    """
    T_imu_cam = forward_down_camera(pitch_deg)
    flight = Flight(pitch_deg=pitch_deg, T_imu_cam=T_imu_cam, period_s=period_s, altitude_m=altitude_m,
                    phase_s=12.0 * period_s / 60.0)
    name = f"synthetic-loop-{duration_s:g}s-seed{seed}"
    return _render_sequence(name, flight, duration_s, rate_hz, imu_rate_hz, seed, width, height, fx, T_imu_cam,
                            ffc_at_s, metres_per_px=0.05)


def cart_trajectory_sequence(tum_path: str | Path, start_s: float = 0.0, duration_s: float = 45.0,
                             altitude_m: float = 35.0, rate_hz: float = 20.0, imu_rate_hz: float = 200.0,
                             seed: int = 0, pitch_deg: float = 60.0, ffc_every_s: float = 20.0,
                             drift_counts: float = 300.0) -> Sequence:
    """A SYNTHETIC thermal sequence flown along a real trajectory (CART RTK ground truth, TUM).

    The camera looks ``pitch_deg`` down along the heading, ``altitude_m`` above the trajectory's
    own heights. Thermal effects that matter to normalization: FFC every ``ffc_every_s`` (0.4 s
    frozen frame, then a small offset step) and a slow global drift of ``drift_counts`` (sensor
    self-heating, sun), so per-frame and fixed-range normalizations see realistic changes.
    """
    traj = load_trajectory(tum_path, "tum")
    T_imu_cam = forward_down_camera(pitch_deg)
    try:
        flight = TrajectoryFlight(traj.t_s, traj.positions, start_s, duration_s, altitude_m=altitude_m,
                                  pitch_deg=pitch_deg, T_imu_cam=T_imu_cam)
    except ValueError as exc:
        raise EvaluationError(f"{tum_path}: {exc}") from exc
    ffc = tuple(float(x) for x in np.arange(ffc_every_s / 2, duration_s, ffc_every_s)) if ffc_every_s > 0 else ()
    p = flight.position(np.linspace(0, duration_s, 200))
    span = float(np.max(np.ptp(p[:, :2], axis=0)))
    reach = altitude_m / np.tan(np.deg2rad(max(pitch_deg - 27.0, 10.0)))  # far edge of the view
    mpp = max(0.05, (span + 2 * reach + 20.0) / 4096)
    name = f"{Path(tum_path).stem}@{start_s:g}+{duration_s:g}s"
    seq = _render_sequence(name, flight, duration_s, rate_hz, imu_rate_hz, seed, 640, 512, 513.0, T_imu_cam, ffc,
                           metres_per_px=mpp, centre_xy=p[:, :2].mean(axis=0), drift_counts=drift_counts)
    seq.meta.update(trajectory=str(tum_path), start_s=start_s, altitude_m=altitude_m, path_m=float(
        np.linalg.norm(np.diff(p, axis=0), axis=1).sum()))
    return seq


def _render_sequence(name: str, flight: Flight | TrajectoryFlight, duration_s: float, rate_hz: float,
                     imu_rate_hz: float, seed: int, width: int, height: int, fx: float, T_imu_cam: np.ndarray,
                     ffc_at_s: tuple,
                     metres_per_px: float, centre_xy: np.ndarray | None = None, drift_counts: float = 0.0) -> Sequence:
    if centre_xy is not None:  # the texture is centred at the world origin: shift the flight instead
        shift = np.array([centre_xy[0], centre_xy[1], 0.0])
    else:
        shift = np.zeros(3)
    K = np.array([[fx, 0, width / 2 - 0.5], [0, fx, height / 2 - 0.5], [0, 0, 1.0]])
    cam = CameraModel("synthetic_thermal", width, height, K, np.zeros(4), T_imu_cam, 0.0)
    t0 = 1_700_000_000_000_000_000  # an epoch-like start, to exercise int-ns handling
    n_imu = int(duration_s * imu_rate_hz) + 1
    t_imu = t0 + np.round(np.arange(n_imu) * 1e9 / imu_rate_hz).astype(np.int64)
    gyro, acc = flight.imu((t_imu - t0) / 1e9)
    n_gt = int(duration_s * 100) + 1
    t_gt = t0 + np.arange(n_gt, dtype=np.int64) * 10_000_000
    gt = Trajectory.from_matrices(t_gt, np.stack([flight.T_world_imu((t - t0) / 1e9) for t in t_gt]),
                                  name="synthetic ground truth")
    scene_cache: dict = {}

    def frames() -> Iterator[tuple[int, np.ndarray, bool]]:
        if "scene" not in scene_cache:
            tex = ground_texture(4096, seed, thermal=True)
            layers = [(*canopy_layer(tex, seed), 6.0), (*canopy_layer(tex, seed + 1, cover=0.1), 14.0)]
            scene_cache["scene"] = PlaneScene(tex, metres_per_px, layers)
        scene = scene_cache["scene"]
        frozen: np.ndarray | None = None
        offset = 0.0
        for k in range(int(duration_s * rate_hz) + 1):
            t = t0 + int(round(k * 1e9 / rate_hz))
            ts = (t - t0) / 1e9
            in_ffc = any(a <= ts < a + 0.4 for a in ffc_at_s)
            if in_ffc and frozen is not None:
                yield t, frozen, True
                continue
            offset = 40.0 * sum(1 for a in ffc_at_s if ts >= a + 0.4)  # FFC re-references the offsets
            T = flight.T_world_cam(ts)
            T = T.copy()
            T[:3, 3] -= shift
            img = scene.render(K, T, width, height)
            if drift_counts or offset:
                img = np.clip(img.astype(np.float32) + offset + drift_counts * np.sin(2 * np.pi * ts / 40.0),
                              0, 65535).astype(np.uint16)
            frozen = img
            yield t, img, False

    return Sequence(name, cam, frames, ImuData(t_imu, gyro, acc), gt, synthetic=True,
                    meta={"synthetic": True, "rate_hz": rate_hz, "seed": seed, "ffc_at_s": list(ffc_at_s)})


def bag_sequence(bag_path: str | Path, stack_path: str | Path | None = None, camera: str = "thermal",
                 ground_truth: str | Path | None = None, td_s: float | None = None,
                 ground_truth_topic: str | None = None, gt_offset_s: float = 0.0, *,
                 camera_topic: str | None = None, imu_topic: str | None = None) -> Sequence:
    """A sequence from a bag (ROS 1 or ROS 2): ``rgbt simulate`` output, our recordings, or a foreign
    bag such as CART's ROS 1 bags.

    Frames: ``camera_topic``, else the stack camera's topic, else its name in CART's released bags
    (:data:`rgbt.bag.renames.CART_ROS1_NAMES`) (stamps: ``header.stamp``, the trigger time); IMU:
    ``imu_topic``, else the stack IMU topic (``header.stamp``); ground truth: ``ground_truth_imu.tum``
    beside the bag (TUM, world <- IMU) unless given (``ground_truth`` a TUM file, or
    ``ground_truth_topic`` a pose / odometry / NavSatFix topic of the bag itself, see
    :mod:`rgbt.vio.ground_truth`; ``gt_offset_s`` is added to the ground-truth stamps). ``td_s``
    defaults to the stack's (the simulator renders frame content at ``t_trigger + td_s``, like the
    real offset). Calibration: the camera's own intrinsics and distortion for simulated bags (what
    the simulator rendered with), the stack's ``vio`` override for real ones.

    Bit depth: a stack camera declared 16-bit (``mono16``, thermal counts) whose topic carries 8-bit
    frames is an error unless ``camera_topic`` names that topic explicitly (8-bit frames then go to
    the estimator unnormalized).
    """
    bag_path = Path(bag_path)
    if not bag_path.exists():
        raise EvaluationError(f"{bag_path}: bag not found")
    try:
        from rgbt.bag.reader import open_bag
    except ImportError as exc:
        raise EvaluationError(
            f"reading {bag_path} needs rgbt.bag (contract C2), missing in this checkout: {exc}"
        ) from exc
    stack = load_stack(stack_path)
    if camera not in stack.cameras:
        raise EvaluationError(f"camera {camera!r} not in the stack: expected one of {sorted(stack.cameras)}")
    spec = stack.cameras[camera]
    t, g, a = [], [], []
    with open_bag(bag_path) as reader:
        synthetic = reader.synthetic
        cam_topic = _pick_topic(bag_path, reader.topics, camera_topic, [spec.topic, CART_ROS1_NAMES.get(spec.topic)],
                                "--camera-topic", f"camera {camera!r}", "sensor_msgs/msg/Image")
        imu_name = _pick_topic(bag_path, reader.topics, imu_topic, [stack.imu.topic], "--imu-topic", "IMU",
                               "sensor_msgs/msg/Imu")
        if ground_truth_topic:
            gt = ground_truth_from_bag(bag_path, ground_truth_topic, offset_s=gt_offset_s)
            gt_source = f"{bag_path}:{ground_truth_topic}"
        else:
            gt_path = (
                Path(ground_truth)
                if ground_truth
                else (bag_path if bag_path.is_dir() else bag_path.parent) / "ground_truth_imu.tum"
            )
            if not gt_path.is_file():
                raise EvaluationError(f"{gt_path}: ground truth not found (rgbt simulate writes ground_truth_imu.tum "
                                      "beside the bag; or give --ground-truth FILE / --ground-truth-topic TOPIC)")
            gt = load_trajectory(gt_path, "tum")
            if gt_offset_s:
                gt = Trajectory(gt.t_ns + int(round(gt_offset_s * 1e9)), gt.positions, gt.quat_wxyz, name=gt.name)
            gt_source = str(gt_path)
        for rec in reader.messages(topics=[imu_name]):
            m = rec.msg
            t.append(stamp_to_ns(m.header.stamp))
            g.append((m.angular_velocity.x, m.angular_velocity.y, m.angular_velocity.z))
            a.append((m.linear_acceleration.x, m.linear_acceleration.y, m.linear_acceleration.z))
        first = next(reader.messages(topics=[cam_topic]), None)
        encoding = str(first.msg.encoding) if first is not None else None
        bag_start_ns = reader.start_ns
    if encoding is not None and camera_topic is None and spec.encoding == "mono16" and encoding != "mono16":
        raise EvaluationError(f"{bag_path}: topic {cam_topic} carries {encoding} frames but camera {camera!r} is "
                              f"declared mono16 (16-bit thermal counts, normalized for the estimator): expected "
                              f"mono16, or name the 8-bit stream with --camera-topic {cam_topic} to feed it "
                              "unnormalized")
    imu = ImuData(np.array(t, dtype=np.int64), np.array(g).reshape(-1, 3), np.array(a).reshape(-1, 3))
    require_increasing(f"{bag_path}:{imu_name}", imu.t_ns, "IMU header stamps")
    calib = spec if synthetic else spec.vio_calibration()
    if calib.distortion.model not in ("radtan", "none"):
        raise EvaluationError(f"camera {camera}: distortion model {calib.distortion.model!r}: expected radtan or none")
    dist = np.zeros(4)
    if calib.distortion.model == "radtan":
        dist = np.array((list(calib.distortion.coeffs) + [0.0] * 4)[:4])
    cam = CameraModel(camera, spec.width, spec.height, calib.intrinsics.K(), dist, spec.T_imu_cam_matrix(),
                      spec.td_s if td_s is None else td_s)

    def frames() -> Iterator[tuple[int, np.ndarray, bool]]:
        from rgbt.image.codec import image_to_numpy

        last = None
        with open_bag(bag_path) as r:
            for rec in r.messages(topics=[cam_topic]):
                m = rec.msg
                stamp = stamp_to_ns(m.header.stamp)
                if last is not None and stamp <= last:
                    raise EvaluationError(f"{bag_path}: topic {cam_topic}: header stamp {stamp} ns "
                                          f"{'repeats' if stamp == last else 'goes back from'} {last} ns: "
                                          "expected strictly increasing frame stamps")
                last = stamp
                yield stamp, image_to_numpy(m, rgb=True), False

    n = stack.imu.vio_noise_or_noise()  # tuned VIO values (datasheet ones make ORB-SLAM3's IMU init collapse)
    return Sequence(bag_path.name, cam, frames, imu, gt, synthetic=synthetic,
                    stack_yaml=str(stack_path) if stack_path else None,
                    imu_noise=(n.gyr_n, n.acc_n, n.gyr_w, n.acc_w),
                    meta={"bag": str(bag_path), "synthetic": synthetic, "camera_topic": cam_topic,
                          "imu_topic": imu_name, "encoding": encoding, "clip_origin_ns": bag_start_ns,
                          "ground_truth": gt_source, "gt_offset_s": gt_offset_s})


def _pick_topic(bag_path: Path, topics: dict, given: str | None, candidates: list[str | None], option: str,
                what: str, msgtype: str) -> str:
    """``given`` if the bag has it, else the first candidate it has; an error naming the bag, the
    topics it has of ``msgtype`` and the option to pass otherwise."""
    have = sorted(n for n, info in topics.items() if info.msgtype == msgtype)
    if given is not None:
        if given not in topics:
            raise EvaluationError(f"{bag_path}: no topic {given} ({option}): expected one of its {msgtype} topics "
                                  f"{have}")
        if topics[given].msgtype != msgtype:
            raise EvaluationError(f"{bag_path}: topic {given} ({option}) is {topics[given].msgtype}: expected "
                                  f"{msgtype}")
        return given
    for name in candidates:
        if name and name in topics:
            return name
    raise EvaluationError(f"{bag_path}: {what} topic {candidates[0]} missing (its {msgtype} topics: {have}): "
                          f"expected the stack's topic, or name one with {option}")


def require_increasing(source: str | Path, t_ns: np.ndarray, what: str) -> None:
    """An error naming ``source`` and the first offending index if ``t_ns`` repeats or goes back."""
    t_ns = np.asarray(t_ns)
    if len(t_ns) > 1:
        bad = np.flatnonzero(np.diff(t_ns) <= 0)
        if bad.size:
            i = int(bad[0])
            kind = "duplicate" if t_ns[i + 1] == t_ns[i] else "unsorted"
            raise EvaluationError(f"{source}: {kind} {what}: entry {i + 1} ({int(t_ns[i + 1])} ns) after "
                                  f"{int(t_ns[i])} ns: expected strictly increasing stamps")

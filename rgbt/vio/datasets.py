"""Standard VIO dataset folders as :class:`~rgbt.vio.sequence.Sequence` s, and writers for them.

Layouts read (detected from the folder, or named):

- ``euroc`` / ``tumvi`` (ASL layout): ``mav0/cam0/data.csv`` (``#timestamp [ns],filename``) with
  images in ``mav0/cam0/data/``, ``mav0/cam0/sensor.yaml`` (``T_BS`` = ``T_imu_cam``, intrinsics
  ``[fu, fv, cu, cv]``, ``radial-tangential`` distortion), ``mav0/imu0/data.csv`` (t ns, gyro
  rad/s, accel m/s^2), ground truth ``mav0/state_groundtruth_estimate0/data.csv`` (EuRoC) or
  ``mav0/mocap0/data.csv`` (TUM-VI): ``T_world_imu``, positions in metres, quaternion w x y z.
- ``kitti`` (odometry): ``image_0/NNNNNN.png``, ``times.txt`` (s), ``calib.txt`` (``P0: 3x4``),
  ground truth ``poses/XX.txt`` or ``poses.txt`` beside (``T_world_cam0`` 3x4 per line). KITTI has
  no IMU: the sequence's IMU is empty and the camera is its own body (``T_imu_cam = I``).
- ``tum`` (TUM RGB-D): ``rgb.txt`` (``timestamp filename`` per line, s), colour images converted to
  grayscale for the estimator (8-bit), ``groundtruth.txt`` (TUM: ``t tx ty tz qx qy qz qw``, the
  colour camera's optical centre in the world, ``T_world_cam``). The folder carries no calibration:
  ``sensor.yaml`` (ASL format, which rgbt's writer puts there) or ``--calib FILE``. Its accelerometer
  is no IMU (no gyroscope): monocular only, like KITTI.

Every reader checks what it needs and raises :class:`EvaluationError` naming the file and what was
expected. The writers exist so that a simulated sequence can be exported to each layout and read
back (round-trip tests; handing rgbt's simulator output to other tools).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import cv2
import numpy as np
import yaml

from rgbt.errors import EvaluationError
from rgbt.eval.tracking import interpolate
from rgbt.eval.trajectory import (
    Row,
    Trajectory,
    check_rows,
    data_rows,
    load_trajectory,
    ns_to_seconds_str,
    row_numbers,
    row_stamp_ns,
)
from rgbt.image.rectify import PinholeCamera, RemapTable
from rgbt.vio.feed import ImuData
from rgbt.vio.sequence import CameraModel, Sequence, require_increasing
from rgbt.yamlio import read_yaml

FORMATS = ("euroc", "tumvi", "kitti", "tum", "cart")
_GT_ASL = ("state_groundtruth_estimate0", "mocap0", "leica0", "vicon0")


def detect_format(root: str | Path) -> str:
    """The dataset layout of folder ``root`` (``euroc``, ``tumvi`` or ``kitti``)."""
    root = Path(root)
    if not root.is_dir():
        raise EvaluationError(f"{root}: dataset folder not found: expected a folder in one of the layouts {FORMATS}")
    mav = _mav0(root)
    if mav is not None:
        return "tumvi" if (mav / "mocap0").is_dir() and not (mav / "state_groundtruth_estimate0").is_dir() else "euroc"
    if (root / "image_0").is_dir() or (root / "times.txt").is_file():
        return "kitti"
    if (root / "rgb.txt").is_file():
        return "tum"
    if (root / "ground_truth").is_dir() and (any(root.glob("*.bag")) or any(root.glob("*/*.bag"))):
        return "cart"
    raise EvaluationError(f"{root}: no known dataset layout: expected mav0/cam0 (EuRoC, TUM-VI), image_0/ + "
                          "times.txt + calib.txt (KITTI), rgb.txt + groundtruth.txt (TUM RGB-D) or NAME.bag + "
                          "ground_truth/ (CART)")


def dataset_sequence(root: str | Path, fmt: str | None = None, *, ground_truth: str | Path | None = None,
                     start_s: float | None = None, duration_s: float | None = None, calib: str | Path | None = None,
                     bag_options: dict | None = None) -> Sequence:
    """The sequence in dataset folder ``root``, clipped to ``[start_s, start_s + duration_s)`` of its
    frames (``duration_s < 0``: to the end; CART: of the bag, default its ``SEQUENCES.md`` row).
    ``ground_truth`` overrides the folder's own file; ``calib`` is the calibration of a layout that
    carries none (TUM RGB-D); ``bag_options`` go to the bag reader of a CART folder (stack, camera,
    topics)."""
    fmt = fmt or detect_format(root)
    if fmt == "cart":
        from rgbt.vio.cart import cart_sequence

        return cart_sequence(root, ground_truth=ground_truth, start_s=start_s, duration_s=duration_s,
                             **(bag_options or {}))
    start_s = 0.0 if start_s is None else start_s
    duration_s = -1.0 if duration_s is None else duration_s
    if fmt in ("euroc", "tumvi"):
        seq = asl_sequence(root, ground_truth=ground_truth)
    elif fmt == "kitti":
        seq = kitti_sequence(root, ground_truth=ground_truth)
    elif fmt == "tum":
        seq = tum_rgbd_sequence(root, ground_truth=ground_truth, calib=calib)
    else:
        raise EvaluationError(f"{root}: unknown dataset format {fmt!r}: expected one of {FORMATS}")
    seq.meta["format"] = fmt
    return clip_sequence(seq, start_s, duration_s)


def clip_sequence(seq: Sequence, start_s: float, duration_s: float) -> Sequence:
    """``seq`` limited to frames in ``[t0 + start_s, t0 + start_s + duration_s)`` (t0: the bag's first
    message for bags, ``meta["clip_origin_ns"]``, like ``rosbag play -s``; else the first frame;
    ``duration_s < 0``: to the end); the IMU and ground truth keep a 1 s margin either side."""
    if start_s <= 0 and duration_s < 0:
        return seq
    if "clip_origin_ns" in seq.meta:
        t0 = int(seq.meta["clip_origin_ns"])
    else:
        first = next(iter(seq.frames()), None)
        if first is None:
            raise EvaluationError(f"{seq.name}: no frames to clip")
        t0 = first[0]
    lo = t0 + int(round(max(start_s, 0.0) * 1e9))
    hi = lo + int(round(duration_s * 1e9)) if duration_s >= 0 else np.iinfo(np.int64).max
    frames_all = seq.frames

    def frames() -> Iterator[tuple[int, np.ndarray, bool]]:
        for t, img, ffc in frames_all():
            if t >= hi:
                return
            if t >= lo:
                yield t, img, ffc

    margin = 1_000_000_000
    keep_imu = (seq.imu.t_ns >= lo - margin) & (seq.imu.t_ns < hi - margin + 2 * margin)
    gt = seq.ground_truth
    keep_gt = (gt.t_ns >= lo - margin) & (gt.t_ns <= min(hi, np.iinfo(np.int64).max - margin) + margin)
    if not keep_gt.any():
        raise EvaluationError(f"{seq.name}: ground truth ({gt.t_ns[0]}..{gt.t_ns[-1]} ns) does not overlap the "
                              f"clipped frames ({lo}.. ns)")
    seq.frames = frames
    seq.imu = ImuData(seq.imu.t_ns[keep_imu], seq.imu.gyro[keep_imu], seq.imu.accel[keep_imu])
    seq.ground_truth = gt.slice(keep_gt)
    seq.meta.update(start_s=start_s, duration_s=duration_s)
    return seq


# --- EuRoC / TUM-VI (ASL) ------------------------------------------------------------------------

def _mav0(root: Path) -> Path | None:
    for cand in (root / "mav0", root):
        if (cand / "cam0").is_dir():
            return cand
    return None


def _csv_rows(path: Path, min_cols: int, expected: str) -> list[Row]:
    """The data rows of an ASL CSV (comments and one header skipped; every other line kept)."""
    if not path.is_file():
        raise EvaluationError(f"{path}: not found: expected {expected}")
    rows = data_rows(path, ",")
    check_rows(path, rows, min_cols, expected)
    return rows


def read_asl_camera(sensor_yaml: str | Path, name: str = "cam0") -> CameraModel:
    """A camera from an ASL ``sensor.yaml`` (EuRoC / TUM-VI): pinhole + radial-tangential only."""
    path = Path(sensor_yaml)
    if not path.is_file():
        raise EvaluationError(f"{path}: camera calibration not found: expected the dataset's cam0/sensor.yaml")
    doc = read_yaml(path)
    if not isinstance(doc, dict):
        raise EvaluationError(f"{path}: expected a YAML mapping (ASL sensor.yaml)")
    try:
        T = np.asarray(doc["T_BS"]["data"], dtype=np.float64).reshape(4, 4)
        fu, fv, cu, cv = (float(x) for x in doc["intrinsics"])
        width, height = (int(x) for x in doc["resolution"])
        model = str(doc.get("distortion_model", "radial-tangential"))
        coeffs = np.asarray(doc.get("distortion_coefficients", [0, 0, 0, 0]), dtype=np.float64)
    except (KeyError, TypeError, ValueError) as exc:
        raise EvaluationError(f"{path}: {exc}: expected T_BS.data (16 numbers), intrinsics [fu, fv, cu, cv], "
                              "resolution [w, h], distortion_model, distortion_coefficients") from None
    if doc.get("camera_model", "pinhole") != "pinhole":
        raise EvaluationError(f"{path}: camera_model {doc.get('camera_model')!r}: expected pinhole")
    K = np.array([[fu, 0, cu], [0, fv, cv], [0, 0, 1.0]])
    return CameraModel(name, width, height, K, radtan_coeffs(path, model, coeffs), T, 0.0)


def radtan_coeffs(path: Path, model: str, coeffs: list[float] | np.ndarray) -> np.ndarray:
    """``k1 k2 p1 p2`` of a radial-tangential (or no) distortion; any other model is an error naming
    ``path`` (the estimator feed is pinhole + radtan)."""
    if model not in ("radial-tangential", "radtan", "plumb_bob", "none"):
        raise EvaluationError(f"{path}: distortion model {model!r}: expected radtan (radial-tangential) or none "
                              "(an equidistant camera, e.g. TUM-VI's, needs its images undistorted first)")
    dist = np.zeros(4)
    c = np.asarray(coeffs, dtype=np.float64).ravel()
    dist[: min(4, c.size)] = c[:4]
    return dist


def asl_sequence(root: str | Path, *, ground_truth: str | Path | None = None) -> Sequence:
    """EuRoC / TUM-VI folder ``root`` (holding ``mav0/``) as a sequence of ``cam0`` + ``imu0``."""
    root = Path(root)
    mav = _mav0(root)
    if mav is None:
        raise EvaluationError(f"{root}: no mav0/cam0 folder: expected the EuRoC / TUM-VI (ASL) layout")
    cam = read_asl_camera(mav / "cam0" / "sensor.yaml")
    cam_csv = mav / "cam0" / "data.csv"
    rows = _csv_rows(cam_csv, 2, "#timestamp [ns],filename")
    images = [(row_stamp_ns(cam_csv, r, r.cells[0], "ns"), mav / "cam0" / "data" / r.cells[1]) for r in rows]
    require_increasing(cam_csv, np.array([t for t, _ in images], dtype=np.int64), "frame stamps")
    imu_path = mav / "imu0" / "data.csv"
    imu_expected = "#timestamp [ns],w_x,w_y,w_z,a_x,a_y,a_z"
    imu_rows = _csv_rows(imu_path, 7, imu_expected)
    values = np.array([row_numbers(imu_path, r, slice(1, 7), imu_expected) for r in imu_rows])
    imu = ImuData(np.array([row_stamp_ns(imu_path, r, r.cells[0], "ns") for r in imu_rows]), values[:, 0:3],
                  values[:, 3:6])
    require_increasing(imu_path, imu.t_ns, "IMU stamps")
    gt_path = Path(ground_truth) if ground_truth else next(
        (mav / d / "data.csv" for d in _GT_ASL if (mav / d / "data.csv").is_file()), None)
    if gt_path is None:
        raise EvaluationError(f"{mav}: no ground truth: expected one of {', '.join(d + '/data.csv' for d in _GT_ASL)} "
                              "or --ground-truth FILE")
    gt = load_trajectory(gt_path, "euroc")

    def frames() -> Iterator[tuple[int, np.ndarray, bool]]:
        for t, path in images:
            img = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
            if img is None:
                raise EvaluationError(f"{path}: image missing or unreadable (listed in cam0/data.csv)")
            yield t, img, False

    return Sequence(root.name, cam, frames, imu, gt, synthetic=_synthetic_flag(root),
                    meta={"dataset": str(root), "frames": len(images), "ground_truth": str(gt_path)})


def write_asl(seq: Sequence, root: str | Path) -> Path:
    """Write ``seq`` in the EuRoC (ASL) layout under ``root``; returns ``root``.

    16-bit frames are written as 16-bit PNG (lossless); a ``SYNTHETIC`` marker file is written when
    the sequence is synthetic, so the data stays labelled wherever it lands.
    """
    root = Path(root)
    cam_dir = root / "mav0" / "cam0"
    (cam_dir / "data").mkdir(parents=True, exist_ok=True)
    with open(cam_dir / "data.csv", "w") as fh:
        fh.write("#timestamp [ns],filename\n")
        for t, img, _ in seq.frames():
            name = f"{t}.png"
            cv2.imwrite(str(cam_dir / "data" / name), img)
            fh.write(f"{t},{name}\n")
    _write_sensor_yaml(cam_dir / "sensor.yaml", seq, seq.camera.T_imu_cam)
    imu_dir = root / "mav0" / "imu0"
    imu_dir.mkdir(parents=True, exist_ok=True)
    with open(imu_dir / "data.csv", "w") as fh:
        fh.write("#timestamp [ns],w_RS_S_x [rad s^-1],w_RS_S_y [rad s^-1],w_RS_S_z [rad s^-1],"
                 "a_RS_S_x [m s^-2],a_RS_S_y [m s^-2],a_RS_S_z [m s^-2]\n")
        for t, g, a in zip(seq.imu.t_ns, seq.imu.gyro, seq.imu.accel, strict=False):
            fh.write(f"{int(t)}," + ",".join(repr(float(x)) for x in (*g, *a)) + "\n")
    gt_dir = root / "mav0" / "state_groundtruth_estimate0"
    gt_dir.mkdir(parents=True, exist_ok=True)
    gt = seq.ground_truth
    with open(gt_dir / "data.csv", "w") as fh:
        fh.write("#timestamp, p_RS_R_x [m], p_RS_R_y [m], p_RS_R_z [m], q_RS_w [], q_RS_x [], q_RS_y [], q_RS_z []\n")
        for t, p, q in zip(gt.t_ns, gt.positions, gt.quat_wxyz, strict=False):
            fh.write(f"{int(t)}," + ",".join(repr(float(x)) for x in (*p, *q)) + "\n")
    _mark_synthetic(root, seq)
    return root


def _write_sensor_yaml(path: Path, seq: Sequence, T_BS: np.ndarray) -> None:
    """The camera of ``seq`` as an ASL ``sensor.yaml`` (``T_BS`` = ``T_imu_cam``)."""
    c = seq.camera
    sensor = {"sensor_type": "camera", "comment": f"rgbt export of {seq.name}",
              "T_BS": {"cols": 4, "rows": 4, "data": [float(x) for x in np.asarray(T_BS).ravel()]},
              "rate_hz": float(seq.meta.get("rate_hz", 20.0)), "resolution": [int(c.width), int(c.height)],
              "camera_model": "pinhole",
              "intrinsics": [float(c.K[0, 0]), float(c.K[1, 1]), float(c.K[0, 2]), float(c.K[1, 2])],
              "distortion_model": "radial-tangential",
              "distortion_coefficients": [float(x) for x in c.dist[:4]]}
    path.write_text(yaml.safe_dump(sensor, sort_keys=False))


# --- KITTI odometry ----------------------------------------------------------------------------------

def _kitti_gt(root: Path) -> Path | None:
    for cand in (
        root / "poses.txt",
        root / "poses" / f"{root.name}.txt",
        root.parent.parent / "poses" / f"{root.name}.txt",
    ):
        if cand.is_file():
            return cand
    return None


def read_kitti_camera(calib_txt: str | Path, index: int = 0) -> CameraModel:
    """Camera ``index`` of a KITTI ``calib.txt`` (its ``P<index>:`` row). KITTI gives no image
    size (0 x 0 here: the frames give it) and no IMU (``T_imu_cam = I``)."""
    path = Path(calib_txt)
    if not path.is_file():
        raise EvaluationError(f"{path}: not found: expected KITTI calib.txt with a 'P{index}:' row of 12 numbers")
    key = f"P{index}:"
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith(key):
            try:
                P = np.array([float(x) for x in line.split()[1:13]]).reshape(3, 4)
            except ValueError:
                break
            return CameraModel(f"cam{index}", 0, 0, P[:, :3].copy(), np.zeros(4), np.eye(4), 0.0)
    raise EvaluationError(f"{path}: no valid {key!r} row: expected '{key}' followed by 12 numbers")


def kitti_sequence(root: str | Path, *, ground_truth: str | Path | None = None) -> Sequence:
    """KITTI odometry folder ``root`` (``image_0/``, ``times.txt``, ``calib.txt``) as a monocular
    sequence of camera 0; ground truth ``T_world_cam0`` is the body (``T_imu_cam = I``, no IMU)."""
    root = Path(root)
    cam = read_kitti_camera(root / "calib.txt")
    times_path = root / "times.txt"
    images = sorted((root / "image_0").glob("*.png"))
    if not images:
        raise EvaluationError(f"{root / 'image_0'}: no PNG frames: expected image_0/NNNNNN.png")
    gt_path = Path(ground_truth) if ground_truth else _kitti_gt(root)
    if gt_path is None:
        raise EvaluationError(f"{root}: no ground truth: expected poses.txt, poses/{root.name}.txt or --ground-truth")
    gt = load_trajectory(gt_path, "kitti", kitti_times=times_path)
    epoch = root / "rgbt_t0_ns.txt"  # written by write_kitti: KITTI stamps start at 0
    if epoch.is_file():
        rows = data_rows(epoch, None)
        check_rows(epoch, rows, 1, "the sequence's first stamp in integer ns")
        t0 = rows[0]
        gt = Trajectory(gt.t_ns + row_stamp_ns(epoch, t0, t0.cells[0], "ns"), gt.positions, gt.quat_wxyz,
                        name=gt.name)
    if len(gt) != len(images):
        raise EvaluationError(f"{gt_path}: {len(gt)} poses for {len(images)} frames in {root / 'image_0'}")
    first = cv2.imread(str(images[0]), cv2.IMREAD_UNCHANGED)
    if first is None:
        raise EvaluationError(f"{images[0]}: unreadable image")
    cam.height, cam.width = first.shape[:2]

    def frames() -> Iterator[tuple[int, np.ndarray, bool]]:
        for t, path in zip(gt.t_ns, images, strict=False):
            img = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
            if img is None:
                raise EvaluationError(f"{path}: image missing or unreadable")
            yield int(t), img, False

    return Sequence(root.name, cam, frames, _no_imu(), gt, synthetic=_synthetic_flag(root),
                    meta={"dataset": str(root), "frames": len(images), "ground_truth": str(gt_path),
                          "imu": False})


def _no_imu() -> ImuData:
    return ImuData(np.zeros(0, dtype=np.int64), np.zeros((0, 3)), np.zeros((0, 3)))


def write_kitti(seq: Sequence, root: str | Path) -> Path:
    """Write ``seq`` as a KITTI odometry folder (camera 0 only; ground truth of the camera).

    KITTI's images are rectified and ``calib.txt`` has no distortion: frames of a camera with
    radtan distortion are undistorted here (same ``K``, bilinear, :class:`rgbt.image.rectify.RemapTable`).
    """
    root = Path(root)
    (root / "image_0").mkdir(parents=True, exist_ok=True)
    stamps = []
    undistort = _undistorter(seq.camera)
    for k, (t, img, _) in enumerate(seq.frames()):
        cv2.imwrite(str(root / "image_0" / f"{k:06d}.png"), undistort(img))
        stamps.append(int(t))
    t0 = stamps[0]
    (root / "times.txt").write_text("".join(f"{ns_to_seconds_str(t - t0)}\n" for t in stamps))
    P0 = np.c_[seq.camera.K, np.zeros(3)]
    (root / "calib.txt").write_text("P0: " + " ".join(repr(float(x)) for x in P0.ravel()) + "\n")

    gt_cam = seq.ground_truth_camera()
    # Frames a few ms outside the ground truth's span (its first sample after the first frame) hold the end pose.
    held, which = np.unique(np.clip(np.array(stamps), gt_cam.t_ns[0], gt_cam.t_ns[-1]), return_inverse=True)
    mats = interpolate(gt_cam, held).matrices()[which]
    (root / "poses.txt").write_text("".join(" ".join(repr(float(x)) for x in m[:3, :].ravel()) + "\n" for m in mats))
    (root / "rgbt_t0_ns.txt").write_text(f"{t0}\n")  # KITTI stamps start at 0: the original epoch
    _mark_synthetic(root, seq)
    return root


def _undistorter(cam: CameraModel) -> Callable[[np.ndarray], np.ndarray]:
    """Frame -> the same frame undistorted with ``K`` kept (identity when ``cam`` has no distortion)."""
    if not np.any(cam.dist):
        return lambda img: img


    size = (int(cam.width), int(cam.height))
    pin = PinholeCamera(np.asarray(cam.K, dtype=np.float64), np.asarray(cam.dist, dtype=np.float64), "radtan", size)
    return RemapTable(*pin.maps(np.eye(3), pin.K, size), cv2.INTER_LINEAR)


# --- TUM RGB-D ---------------------------------------------------------------------------------------

def tum_rgbd_sequence(root: str | Path, *, ground_truth: str | Path | None = None,
                      calib: str | Path | None = None) -> Sequence:
    """TUM RGB-D folder ``root`` (``rgb.txt``, ``groundtruth.txt``) as a monocular sequence of the
    colour camera, frames converted to 8-bit grayscale (16-bit mono frames, which rgbt's writer keeps
    for thermal, pass unchanged); no IMU, the camera is its own body (``T_imu_cam = I``)."""
    from rgbt.vio.calibration import camera_from_file

    root = Path(root)
    rgb_txt = root / "rgb.txt"
    expected = "timestamp[s] filename (TUM RGB-D rgb.txt)"
    if not rgb_txt.is_file():
        raise EvaluationError(f"{rgb_txt}: not found: expected {expected}")
    rows = data_rows(rgb_txt, None)
    check_rows(rgb_txt, rows, 2, expected)
    images = [(row_stamp_ns(rgb_txt, r, r.cells[0], "s"), root / r.cells[1]) for r in rows]
    require_increasing(rgb_txt, np.array([t for t, _ in images], dtype=np.int64), "frame stamps")
    cal = Path(calib) if calib else root / "sensor.yaml"
    if not cal.is_file():
        raise EvaluationError(f"{cal}: camera calibration not found: a TUM RGB-D folder carries none; expected "
                              "sensor.yaml (ASL format) beside rgb.txt, or --calib FILE (Kalibr / ASL / VINS)")
    cam = camera_from_file(cal)
    gt_path = Path(ground_truth) if ground_truth else root / "groundtruth.txt"
    if not gt_path.is_file():
        raise EvaluationError(f"{gt_path}: ground truth not found: expected TUM groundtruth.txt "
                              "(t tx ty tz qx qy qz qw) or --ground-truth FILE")
    gt = load_trajectory(gt_path, "tum")

    def frames() -> Iterator[tuple[int, np.ndarray, bool]]:
        for t, path in images:
            img = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
            if img is None:
                raise EvaluationError(f"{path}: image missing or unreadable (listed in {rgb_txt})")
            if img.ndim == 3:
                img = cv2.cvtColor(img, cv2.COLOR_BGRA2GRAY if img.shape[2] == 4 else cv2.COLOR_BGR2GRAY)
            yield t, img, False

    cam.T_imu_cam, cam.td_s = np.eye(4), 0.0
    return Sequence(root.name, cam, frames, _no_imu(), gt, synthetic=_synthetic_flag(root),
                    meta={"dataset": str(root), "frames": len(images), "ground_truth": str(gt_path),
                          "calibration": str(cal), "imu": False})


def write_tum_rgbd(seq: Sequence, root: str | Path) -> Path:
    """Write ``seq`` as a TUM RGB-D folder: ``rgb/<t>.png`` (RGB frames as colour PNG, mono as is,
    16-bit kept 16-bit), ``rgb.txt`` and ``groundtruth.txt`` (TUM, ``T_world_cam`` at the ground
    truth's own stamps) with stamps printed exactly from int ns, and ``sensor.yaml`` (ASL format,
    ``T_BS = I``: TUM RGB-D has no IMU)."""
    root = Path(root)
    (root / "rgb").mkdir(parents=True, exist_ok=True)
    lines = ["# color images (rgbt export)", "# timestamp filename"]
    for t, img, _ in seq.frames():
        stamp = ns_to_seconds_str(int(t))
        name = f"rgb/{stamp}.png"
        cv2.imwrite(str(root / name), cv2.cvtColor(img, cv2.COLOR_RGB2BGR) if img.ndim == 3 else img)
        lines.append(f"{stamp} {name}")
    (root / "rgb.txt").write_text("\n".join(lines) + "\n")
    seq.ground_truth_camera().save_tum(root / "groundtruth.txt")
    _write_sensor_yaml(root / "sensor.yaml", seq, np.eye(4))
    _mark_synthetic(root, seq)
    return root


# --- synthetic labelling ---------------------------------------------------------------------------

def _mark_synthetic(root: Path, seq: Sequence) -> None:
    if seq.synthetic:
        (root / "SYNTHETIC").write_text(f"synthetic data: written by rgbt from {seq.name}\n")


def _synthetic_flag(root: Path) -> bool:
    return (root / "SYNTHETIC").is_file()

"""Estimator configuration export from the stack model (``calib/stack.yaml``).

Writes the text itself (no YAML library) so OpenCV ``cv::FileStorage`` — which VINS-Fusion,
OpenVINS and ORB-SLAM3 all use — reads it: ``%YAML:1.0`` header, ``!!opencv-matrix`` blocks, and
numbers typed strictly (integers without a point, reals always with one: ORB-SLAM3's v1.0
``Settings`` rejects ``Camera1.fx: 513`` and ``Camera.width: 640.0``).

Frames (``T_a_b`` maps frame b into frame a, as in :mod:`rgbt.stack`): VINS-Fusion ``body_T_cam0``,
OpenVINS ``T_imu_cam`` and ORB-SLAM3 ``IMU.T_b_c1``
are all ``T_imu_cam`` (camera -> IMU body); Kalibr's ``T_cam_imu`` is its inverse. Time offset
``t_imu = t_cam + td`` (VINS ``td``, Kalibr/OpenVINS ``timeshift_cam_imu``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from rgbt.errors import ConfigError
from rgbt.stack import CameraSpec, ImuNoise, Stack
from rgbt.topics import VIO_FEED_IMU_TOPIC, vio_feed_image_topic
from rgbt.vio.feed import feed_rate_hz

ESTIMATORS = ("vins", "openvins", "orbslam3")


@dataclass
class ExportOptions:
    """What the exported configs assume about the feed (the VIO bridge publishes accordingly).

    ``image_topic``: the mono8 feed topic (default ``/rgbt/vio/<camera>/image_mono8``, what the VIO
    bridge node publishes: ``rgbt.topics.vio_feed_image_topic``); ``imu_topic``: the IMU the
    estimator reads (default the bridge's reliable relay ``rgbt.topics.VIO_FEED_IMU_TOPIC``);
    ``rate_hz``: frame rate of the feed (default: ``rgbt.vio.feed.feed_rate_hz`` of the camera, as the
    bridge; must lie on the camera's trigger grid) (estimators must process every frame: VINS ``freq: 0``,
    OpenVINS ``track_frequency`` = rate); ``imu_noise``: "vio" (the stack's tuned VIO values, as CART
    ran) or "datasheet"; ``multiple_thread``: VINS-Fusion flag (1 halves the processed rate on a
    loaded CPU; 0 processes every frame); ``estimate_extrinsic`` / ``estimate_td``: VINS flags.
    """

    camera: str = "thermal"
    image_topic: str | None = None
    imu_topic: str | None = None
    rate_hz: float | None = None
    imu_noise: str = "vio"
    output_path: str = "~/rgbt_vio_results/"
    multiple_thread: int = 0
    estimate_extrinsic: int = 0
    estimate_td: int = 0
    orb_features: int = 1500

    def topic(self) -> str:
        return self.image_topic or vio_feed_image_topic(self.camera)

    def imu(self) -> str:
        return self.imu_topic or VIO_FEED_IMU_TOPIC

    def rate(self, stack: Stack) -> float:
        """Feed rate in Hz (the bridge's default for this camera when ``rate_hz`` is None)."""
        cam = _camera(stack, self.camera)
        return feed_rate_hz(float(stack.trigger.rate_hz), int(cam.trigger_divider), self.rate_hz)

    def describe(self) -> str:
        return " ".join(f"{k}={v}" for k, v in asdict(self).items())


def fmt_real(x: float) -> str:
    """A real that OpenCV FileStorage reads as real: always a '.' in the mantissa (``1.0e-05``)."""
    text = repr(float(x))
    if "inf" in text or "nan" in text:
        raise ConfigError("<export>", "value", x, "a finite number")
    mant, e, exp = text.partition("e")
    if "." not in mant:
        mant += ".0"
    return mant + (e + exp if e else "")


def fmt_int(x: int) -> str:
    if float(x) != int(x):
        raise ConfigError("<export>", "value", x, "an integer")
    return str(int(x))


def opencv_matrix(m: np.ndarray, indent: str = "   ", dt: str = "d") -> str:
    """``!!opencv-matrix`` block for a 2-D array, one matrix row per text line."""
    m = np.asarray(m, dtype=np.float64)
    rows = [", ".join(fmt_real(v) for v in row) for row in m]
    body = (",\n" + indent + "       ").join(rows)
    return (f"!!opencv-matrix\n{indent}rows: {m.shape[0]}\n{indent}cols: {m.shape[1]}\n{indent}dt: {dt}\n"
            f"{indent}data: [{body}]")


def _yaml_list(values: Iterable[float]) -> str:
    return "[" + ", ".join(fmt_real(v) for v in values) + "]"


def _camera(stack: Stack, name: str) -> CameraSpec:
    if name not in stack.cameras:
        raise ConfigError("stack", "cameras", name, f"one of {sorted(stack.cameras)}")
    cam = stack.cameras[name]
    dist = cam.vio_calibration().distortion
    if dist.model not in ("radtan", "none"):
        raise ConfigError("stack", f"cameras.{name}.distortion.model", dist.model,
                          "radtan or none for the PINHOLE exports")
    return cam


def _radtan4(cam: CameraSpec) -> list[float]:
    d = cam.vio_calibration().distortion
    coeffs = list(d.coeffs) + [0.0] * 4
    return [float(c) for c in coeffs[:4]] if d.model == "radtan" else [0.0] * 4


def _noise(stack: Stack, which: str) -> ImuNoise:
    if which == "vio":
        return stack.imu.vio_noise_or_noise()
    if which == "datasheet":
        return stack.imu.noise
    raise ConfigError("<export>", "imu_noise", which, '"vio" or "datasheet"')


# --- VINS-Fusion ----------------------------------------------------------------------------

def vins_camera_yaml(cam: CameraSpec) -> str:
    """VINS-Fusion ``PINHOLE`` camera file (camodocal)."""
    i = cam.vio_calibration().intrinsics
    k1, k2, p1, p2 = _radtan4(cam)
    return (f"%YAML:1.0\n---\nmodel_type: PINHOLE\ncamera_name: {cam.name or 'camera'}\n"
            f"image_width: {fmt_int(cam.width)}\nimage_height: {fmt_int(cam.height)}\n"
            f"distortion_parameters:\n   k1: {fmt_real(k1)}\n   k2: {fmt_real(k2)}\n"
            f"   p1: {fmt_real(p1)}\n   p2: {fmt_real(p2)}\n"
            f"projection_parameters:\n   fx: {fmt_real(i.fx)}\n   fy: {fmt_real(i.fy)}\n"
            f"   cx: {fmt_real(i.cx)}\n   cy: {fmt_real(i.cy)}\n")


def vins_main_yaml(stack: Stack, opts: ExportOptions, cam_file: str) -> str:
    """VINS-Fusion main config: one camera + IMU."""
    cam = _camera(stack, opts.camera)
    n = _noise(stack, opts.imu_noise)
    return f"""%YAML:1.0
# Generated by rgbt vio export from the stack '{stack.name}' (camera {cam.name}); {opts.describe()}
imu: 1
num_of_cam: 1

imu_topic: "{opts.imu()}"
image0_topic: "{opts.topic()}"
output_path: "{opts.output_path}"

cam0_calib: "{cam_file}"
image_width: {fmt_int(cam.width)}
image_height: {fmt_int(cam.height)}

# 0: trust body_T_cam0; 1: optimise around it. body_T_cam0 = T_imu_cam (camera -> IMU body).
estimate_extrinsic: {fmt_int(opts.estimate_extrinsic)}
body_T_cam0: {opencv_matrix(cam.T_imu_cam_matrix())}

# 1 runs tracking and optimisation in separate threads; on a loaded CPU it drops frames silently.
multiple_thread: {fmt_int(opts.multiple_thread)}

max_cnt: 200
min_dist: 30
freq: 0                 # 0: process every input frame (the feed is already at {opts.rate(stack):g} Hz)
F_threshold: 1.0
show_track: 0
flow_back: 1

max_solver_time: 0.04
max_num_iterations: 8
keyframe_parallax: 10.0

acc_n: {fmt_real(n.acc_n)}
gyr_n: {fmt_real(n.gyr_n)}
acc_w: {fmt_real(n.acc_w)}
gyr_w: {fmt_real(n.gyr_w)}
g_norm: {fmt_real(n.g_norm)}

# t_imu = t_cam + td. The VIO bridge publishes camera (trigger) time; td is applied here, once.
estimate_td: {fmt_int(opts.estimate_td)}
td: {fmt_real(cam.td_s)}

load_previous_pose_graph: 0
pose_graph_save_path: "{opts.output_path.rstrip('/')}/pose_graph/"
save_image: 0
"""


# --- OpenVINS -----------------------------------------------------------------------------

def openvins_imucam_yaml(stack: Stack, opts: ExportOptions) -> str:
    """``kalibr_imucam_chain.yaml``: ``T_imu_cam`` (what OpenVINS reads) and Kalibr's ``T_cam_imu``."""
    cam = _camera(stack, opts.camera)
    i = cam.vio_calibration().intrinsics

    def rows(m: np.ndarray) -> str:
        return "".join(f"\n    - {_yaml_list(r)}" for r in m)

    return f"""%YAML:1.0
# Generated by rgbt vio export from the stack '{stack.name}' (camera {cam.name})
# T_imu_cam: camera -> IMU (p_imu = T_imu_cam p_cam); T_cam_imu = its inverse (Kalibr's key).
cam0:
  T_imu_cam:{rows(cam.T_imu_cam_matrix())}
  T_cam_imu:{rows(cam.T_cam_imu_matrix())}
  cam_overlaps: []
  camera_model: pinhole
  distortion_coeffs: {_yaml_list(_radtan4(cam))}
  distortion_model: radtan
  intrinsics: {_yaml_list([i.fx, i.fy, i.cx, i.cy])}
  resolution: [{fmt_int(cam.width)}, {fmt_int(cam.height)}]
  rostopic: {opts.topic()}
  timeshift_cam_imu: {fmt_real(cam.td_s)}  # the VIO bridge publishes camera (trigger) time
"""


def openvins_imu_yaml(stack: Stack, opts: ExportOptions) -> str:
    """``kalibr_imu_chain.yaml`` (continuous-time noise densities, OpenVINS 2.7 intrinsic blocks)."""
    n = _noise(stack, opts.imu_noise)
    eye = "".join(f"\n    - {_yaml_list(r)}" for r in np.eye(3))
    eye4 = "".join(f"\n    - {_yaml_list(r)}" for r in np.eye(4))
    return f"""%YAML:1.0
# Generated by rgbt vio export from the stack '{stack.name}'
imu0:
  T_i_b:{eye4}
  accelerometer_noise_density: {fmt_real(n.acc_n)}
  accelerometer_random_walk: {fmt_real(n.acc_w)}
  gyroscope_noise_density: {fmt_real(n.gyr_n)}
  gyroscope_random_walk: {fmt_real(n.gyr_w)}
  rostopic: {opts.imu()}
  time_offset: 0.0
  update_rate: {fmt_real(stack.imu.rate_hz)}
  model: "kalibr"
  Tw:{eye}
  R_IMUtoGYRO:{eye}
  Ta:{eye}
  R_IMUtoACC:{eye}
  Tg:{"".join(f"{chr(10)}    - {_yaml_list(r)}" for r in np.zeros((3, 3)))}
"""


def openvins_estimator_yaml(stack: Stack, opts: ExportOptions) -> str:
    """``estimator_config.yaml`` for ov_msckf (monocular + IMU)."""
    n = _noise(stack, opts.imu_noise)
    return f"""%YAML:1.0
# Generated by rgbt vio export from the stack '{stack.name}' (camera {opts.camera}); {opts.describe()}
verbosity: "INFO"
use_fej: true
integration: "rk4"
use_stereo: false
max_cameras: 1
calib_cam_extrinsics: {"true" if opts.estimate_extrinsic else "false"}
calib_cam_intrinsics: false
calib_cam_timeoffset: {"true" if opts.estimate_td else "false"}
calib_imu_intrinsics: false
calib_imu_g_sensitivity: false
max_clones: 11
max_slam: 50
max_slam_in_update: 25
max_msckf_in_update: 40
dt_slam_delay: 1
gravity_mag: {fmt_real(n.g_norm)}
feat_rep_msckf: "GLOBAL_3D"
feat_rep_slam: "ANCHORED_MSCKF_INVERSE_DEPTH"
feat_rep_aruco: "ANCHORED_MSCKF_INVERSE_DEPTH"
try_zupt: false
init_window_time: 2.0
init_imu_thresh: 1.0
init_max_disparity: 10.0
init_max_features: 50
init_dyn_use: false
record_timing_information: false
save_total_state: false
# process every frame of the feed ({opts.rate(stack):g} Hz); a lower value thins the input silently
track_frequency: {fmt_real(opts.rate(stack))}
use_klt: true
num_pts: 200
fast_threshold: 20
grid_x: 5
grid_y: 5
min_px_dist: 10
knn_ratio: 0.70
track_frequency_tolerance: 0.0
histogram_method: "HISTOGRAM"
downsample_cameras: false
num_opencv_threads: 2
use_mask: false
up_msckf_sigma_px: 1
up_msckf_chi2_multipler: 1
up_slam_sigma_px: 1
up_slam_chi2_multipler: 1
relative_config_imu: "kalibr_imu_chain.yaml"
relative_config_imucam: "kalibr_imucam_chain.yaml"
"""


# --- ORB-SLAM3 ------------------------------------------------------------------------------

def orbslam3_yaml(stack: Stack, opts: ExportOptions, inertial: bool = True) -> str:
    """ORB-SLAM3 settings, format v1.0 (``File.version: "1.0"``), PinHole camera with radtan."""
    cam = _camera(stack, opts.camera)
    i = cam.vio_calibration().intrinsics
    n = _noise(stack, opts.imu_noise)
    header = f"# Generated by rgbt vio export from the stack '{stack.name}' (camera {cam.name}); {opts.describe()}"
    return orbslam3_settings(cam.width, cam.height, (i.fx, i.fy, i.cx, i.cy), _radtan4(cam), cam.T_imu_cam_matrix(),
                             noise=(n.gyr_n, n.acc_n, n.gyr_w, n.acc_w), imu_rate_hz=stack.imu.rate_hz,
                             fps=opts.rate(stack), features=opts.orb_features, inertial=inertial, header=header)


def orbslam3_settings(width: int, height: int, fxfycxcy: tuple, radtan: list, T_imu_cam: np.ndarray,
                      noise: tuple[float, float, float, float], imu_rate_hz: float, fps: float,
                      features: int = 1500, inertial: bool = True, header: str = "") -> str:
    """ORB-SLAM3 v1.0 settings text. ``noise`` = (gyro n, accel n, gyro walk, accel walk), continuous time."""
    fx, fy, cx, cy = fxfycxcy
    k1, k2, p1, p2 = (list(radtan) + [0.0] * 4)[:4]
    text = f"""%YAML:1.0
{header}
File.version: "1.0"

Camera.type: "PinHole"
Camera1.fx: {fmt_real(fx)}
Camera1.fy: {fmt_real(fy)}
Camera1.cx: {fmt_real(cx)}
Camera1.cy: {fmt_real(cy)}
Camera1.k1: {fmt_real(k1)}
Camera1.k2: {fmt_real(k2)}
Camera1.p1: {fmt_real(p1)}
Camera1.p2: {fmt_real(p2)}
Camera.width: {fmt_int(width)}
Camera.height: {fmt_int(height)}
Camera.fps: {fmt_int(round(fps))}
Camera.RGB: 0
"""
    if inertial:
        gyr_n, acc_n, gyr_w, acc_w = noise
        text += f"""
# IMU.T_b_c1 = T_imu_cam (camera -> body); t_imu = t_cam + td is applied by the feed, not here.
IMU.T_b_c1: {opencv_matrix(T_imu_cam, dt="f")}
IMU.InsertKFsWhenLost: 0
IMU.NoiseGyro: {fmt_real(gyr_n)}
IMU.NoiseAcc: {fmt_real(acc_n)}
IMU.GyroWalk: {fmt_real(gyr_w)}
IMU.AccWalk: {fmt_real(acc_w)}
IMU.Frequency: {fmt_real(imu_rate_hz)}
"""
    text += f"""
ORBextractor.nFeatures: {fmt_int(features)}
ORBextractor.scaleFactor: 1.2
ORBextractor.nLevels: 8
ORBextractor.iniThFAST: 20
ORBextractor.minThFAST: 7

Viewer.KeyFrameSize: 0.05
Viewer.KeyFrameLineWidth: 1.0
Viewer.GraphLineWidth: 0.9
Viewer.PointSize: 2.0
Viewer.CameraSize: 0.08
Viewer.CameraLineWidth: 3.0
Viewer.ViewpointX: 0.0
Viewer.ViewpointY: -0.7
Viewer.ViewpointZ: -1.8
Viewer.ViewpointF: 500.0
"""
    return text


def export(stack: Stack, estimator: str, out_dir: str | Path, opts: ExportOptions,
           inertial: bool = True) -> list[Path]:
    """Write the config files of ``estimator`` for ``opts.camera`` into ``out_dir``; returns the paths."""
    cam = _camera(stack, opts.camera)
    opts = replace(opts, rate_hz=opts.rate(stack))  # resolved (and checked against the trigger grid) once
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, str]
    if estimator == "vins":
        cam_file = f"{cam.name}_pinhole.yaml"
        files = {f"{cam.name}_imu_config.yaml": vins_main_yaml(stack, opts, cam_file),
                 cam_file: vins_camera_yaml(cam)}
    elif estimator == "openvins":
        files = {"estimator_config.yaml": openvins_estimator_yaml(stack, opts),
                 "kalibr_imu_chain.yaml": openvins_imu_yaml(stack, opts),
                 "kalibr_imucam_chain.yaml": openvins_imucam_yaml(stack, opts)}
    elif estimator == "orbslam3":
        files = {f"orbslam3_{cam.name}_{'mono_inertial' if inertial else 'mono'}.yaml":
                 orbslam3_yaml(stack, opts, inertial=inertial)}
    else:
        raise ConfigError("<export>", "estimator", estimator, f"one of {ESTIMATORS}")
    paths = []
    for name, text in files.items():
        path = out / name
        path.write_text(text)
        paths.append(path)
    return paths

"""Build the stack model from calibration files: CART's (camera_info + Kalibr camchains + VINS configs)
or a Kalibr imu-camera chain (e.g. OpenVINS').

Only calibration values come from the files (resolution, intrinsics, distortion, ``T_imu_cam``,
``td_s``, VIO calibrations, pairs, IMU noise); everything else (topics, rates, encodings, trigger
wiring, GNSS, autopilot) comes from a ``base`` stack, by default the repository's ``calib/stack.yaml``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rgbt.calib.camera_info import read_camera_info
from rgbt.calib.kalibr import KalibrCamera, KalibrChain, KalibrImu, read_camchain, read_imu
from rgbt.calib.vins import read_vins_config, read_vins_pinhole
from rgbt.errors import ConfigError
from rgbt.stack import ImuNoise, Stack, invert_transform, load_stack, stack_from_dict


@dataclass(frozen=True)
class CartCameraFiles:
    """Where CART keeps one camera's calibration (file names inside the CART data folder)."""

    camera_info: str  # calibrations/<name>: intrinsics + distortion at native resolution
    vins_config: str  # vins_configs/<name>: body_T_camN (= T_imu_cam) and td
    vins_index: int  # N of body_T_camN; the VIO PINHOLE file is that config's camN_calib


@dataclass(frozen=True)
class CartPairFiles:
    camchain: str  # calibrations/<name>: Kalibr camchain at the 960x600 canvas
    cam0: str
    cam1: str


CART_CAMERAS: dict[str, CartCameraFiles] = {
    "thermal": CartCameraFiles("thermal.yaml", "thermal_imu_config_calib.yaml", 0),
    "color": CartCameraFiles("color.yaml", "stereo_imu_config_calib.yaml", 1),
    "mono": CartCameraFiles("mono.yaml", "mono_imu_config_calib.yaml", 0),
}
CART_PAIRS: dict[str, CartPairFiles] = {
    "color_thermal": CartPairFiles("color_thermal_10x10_calib.yaml", "color", "thermal"),
    "thermal_mono": CartPairFiles("thermal_mono_10x10_calib.yaml", "thermal", "mono"),
}
# VINS config whose IMU parameters become imu.vio_noise
CART_VINS_IMU = "thermal_imu_config_calib.yaml"


def _cart_paths(root: str | Path) -> tuple[Path, Path]:
    """(calibrations folder, VINS configs folder): CART's layout, or all files in one folder."""
    root = Path(root)
    if not root.is_dir():
        raise ConfigError(str(root), "<dir>", None, "a CART data folder (calibrations/ + vins_configs/)")
    calib = root / "calibrations" if (root / "calibrations").is_dir() else root
    vins = root / "vins_configs" if (root / "vins_configs").is_dir() else root
    return calib, vins


def centered_offset(native: tuple[int, int], canvas: tuple[int, int]) -> tuple[float, float]:
    """Where a native image's origin lies when padded centred into a canvas ((w, h) both), px."""
    return ((canvas[0] - native[0]) / 2.0, (canvas[1] - native[1]) / 2.0)


def cart_calibration(root: str | Path) -> dict:
    """The calibration part of a stack dict, read from CART's files (see ``CART_CAMERAS``/``CART_PAIRS``)."""
    calib_dir, vins_dir = _cart_paths(root)
    cameras: dict[str, dict] = {}
    for name, files in CART_CAMERAS.items():
        info = read_camera_info(calib_dir / files.camera_info)
        vins_path = vins_dir / files.vins_config
        vins = read_vins_config(vins_path)
        if files.vins_index not in vins.body_T_cam:
            raise ConfigError(str(vins_path), f"body_T_cam{files.vins_index}", None, "this required key")
        entry = {
            "width": info.image_width, "height": info.image_height,
            "intrinsics": info.intrinsics().model_dump(), "distortion": info.distortion().model_dump(),
            "T_imu_cam": vins.body_T_cam[files.vins_index].tolist(), "td_s": vins.td_s,
        }
        pinhole = vins.cam_calib.get(files.vins_index)
        if pinhole:
            _, _, intr, dist = read_vins_pinhole(vins_dir / pinhole)
            entry["vio"] = {"intrinsics": intr.model_dump(), "distortion": dist.model_dump()}
        cameras[name] = entry
    pairs: dict[str, dict] = {}
    for key, pair_files in CART_PAIRS.items():
        path = calib_dir / pair_files.camchain
        chain = read_camchain(path)
        pairs[key] = pair_from_camchain(chain, pair_files.cam0, pair_files.cam1, source=str(path),
                                        native={n: (cameras[n]["width"], cameras[n]["height"])
                                                for n in (pair_files.cam0, pair_files.cam1)})
    out: dict = {"cameras": cameras, "pairs": pairs}
    noise = read_vins_config(vins_dir / CART_VINS_IMU).imu_noise
    if noise is not None:
        out["imu"] = {"vio_noise": noise.model_dump()}
    return out


def pair_from_camchain(chain: KalibrChain, cam0: str, cam1: str, source: str = "<camchain>",
                       native: dict[str, tuple[int, int]] | None = None) -> dict:
    """A stack ``pairs`` entry from a two-camera camchain; a camera whose native (w, h) differs from
    the chain's resolution is taken as padded centred into that canvas (CART: thermal into 960x600)."""
    if len(chain.cameras) < 2:
        raise ConfigError(source, "cam1", None, "a camchain with two cameras")
    c0, c1 = chain.cameras[0], chain.cameras[1]
    if c0.resolution != c1.resolution:
        raise ConfigError(source, "cam1.resolution", c1.resolution, f"the same canvas as cam0 {c0.resolution}")
    T = c1.T_cn_cnm1_matrix()
    if T is None:
        T = _T_cam_imu(c1, source, "cam1") @ invert_transform(_T_cam_imu(c0, source, "cam0"))
    w, h = c0.resolution
    native = native or {}
    off0 = centered_offset(native.get(cam0, (w, h)), (w, h))
    off1 = centered_offset(native.get(cam1, (w, h)), (w, h))
    return {
        "cam0": cam0, "cam1": cam1, "width": w, "height": h,
        "cam0_intrinsics": c0.intrinsics_model().model_dump(), "cam0_distortion": c0.distortion().model_dump(),
        "cam0_offset": list(off0),
        "cam1_intrinsics": c1.intrinsics_model().model_dump(), "cam1_distortion": c1.distortion().model_dump(),
        "cam1_offset": list(off1),
        "T_cam1_cam0": T.tolist(),
    }


def _T_cam_imu(cam: KalibrCamera, source: str, key: str) -> np.ndarray:
    """``cam``'s 4x4 ``T_cam_imu``; a :class:`ConfigError` naming ``key`` when the chain lacks it."""
    T = cam.T_cam_imu_matrix()
    if T is None:
        raise ConfigError(source, f"{key}.T_cam_imu", None, "T_cam_imu (or T_cn_cnm1 for the pair)")
    return T


def _merge(base: dict, update: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def stack_from_cart(root: str | Path, base: Stack | None = None) -> Stack:
    """The stack with every calibration value read from CART's files in ``root``; the rest from ``base``."""
    base = base if base is not None else load_stack()
    calib = cart_calibration(root)
    data = base.model_dump(mode="json")
    missing = [n for n in calib["cameras"] if n not in data["cameras"]]
    if missing:
        raise ConfigError("base stack", "cameras", sorted(data["cameras"]), f"cameras {missing} to fill in")
    for name in calib["cameras"]:
        data["cameras"][name].pop("vio", None)  # replaced, not merged
    data["pairs"] = {}
    return stack_from_dict(_merge(data, calib), source=f"CART files in {root}")


def stack_from_kalibr(imucam: str | Path | KalibrChain, imu: str | Path | KalibrImu | None = None, *,
                      base: Stack | None = None, names: list[str] | None = None,
                      rate_hz: float = 20.0, name: str = "kalibr") -> Stack:
    """A stack whose cameras come from a Kalibr imu-camera chain.

    Each ``camN`` becomes a camera (named ``names[N]`` or ``camN``; mono8, ``rate_hz``) with
    ``T_imu_cam = inverse(T_cam_imu)`` and ``td_s = timeshift_cam_imu``; consecutive cameras become
    pairs ``camN-1_camN`` (``T_cam1_cam0 = T_cn_cnm1``). IMU noise and rate come from ``imu`` when
    given; IMU, GNSS, autopilot and trigger otherwise from ``base`` (default: ``calib/stack.yaml``).
    """
    source = str(imucam) if not isinstance(imucam, KalibrChain) else "<kalibr chain>"
    chain = imucam if isinstance(imucam, KalibrChain) else read_camchain(imucam)
    if not chain.has_imu():
        first = next(i for i, cam in enumerate(chain.cameras) if cam.T_cam_imu is None)
        raise ConfigError(source, f"cam{first}.T_cam_imu", None, "T_cam_imu for every camera (an imu-camera chain)")
    names = names or [f"cam{i}" for i in range(len(chain.cameras))]
    if len(names) != len(chain.cameras):
        raise ConfigError(source, "<root>", names, f"{len(chain.cameras)} camera names")
    base = base if base is not None else load_stack()
    data = base.model_dump(mode="json")
    cameras = {}
    for i, (cam_name, cam) in enumerate(zip(names, chain.cameras, strict=False)):
        w, h = cam.resolution
        cameras[cam_name] = {
            "name": cam_name, "model": f"Kalibr cam{i}", "modality": "mono", "topic": cam.rostopic or f"/{cam_name}",
            "frame_id": cam_name, "width": w, "height": h, "rate_hz": rate_hz, "encoding": "mono8",
            "trigger_divider": 1, "intrinsics": cam.intrinsics_model().model_dump(),
            "distortion": cam.distortion().model_dump(),
            "T_imu_cam": invert_transform(_T_cam_imu(cam, source, f"cam{i}")).tolist(),
            "td_s": cam.timeshift_cam_imu or 0.0,
        }
    pairs = {}
    for i in range(1, len(chain.cameras)):
        sub = KalibrChain([chain.cameras[i - 1], chain.cameras[i]])
        pairs[f"{names[i - 1]}_{names[i]}"] = pair_from_camchain(sub, names[i - 1], names[i], source)
    data.update(name=name, description=f"built from the Kalibr chain {Path(source).name}",
                cameras=cameras, pairs=pairs)
    data["trigger"]["cameras"] = []
    if imu is not None:
        kimu = imu if isinstance(imu, KalibrImu) else read_imu(imu)
        data["imu"]["noise"] = ImuNoise(acc_n=kimu.accelerometer_noise_density,
                                        acc_w=kimu.accelerometer_random_walk,
                                        gyr_n=kimu.gyroscope_noise_density,
                                        gyr_w=kimu.gyroscope_random_walk,
                                        g_norm=data["imu"]["noise"]["g_norm"]).model_dump()
        data["imu"]["vio_noise"] = None
        data["imu"]["rate_hz"] = kimu.update_rate
        if kimu.rostopic:
            data["imu"]["topic"] = kimu.rostopic
    return stack_from_dict(data, source=source)

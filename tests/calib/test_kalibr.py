"""Kalibr camchain / imucam / imu YAML: CART's and OpenVINS' files round-trip; malformed files fail clearly."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml

from rgbt.yamlio import parse_yaml
from rgbt.calib.kalibr import (KalibrImu, parse_camchain, parse_imu, read_camchain, read_imu, write_camchain,
                               write_imu)
from rgbt.errors import ConfigError

CART_CAMCHAINS = ("color_thermal_10x10_calib.yaml", "thermal_mono_10x10_calib.yaml")


def _raw(path: Path) -> dict:
    return parse_yaml(path.read_text(), str(path))  # tolerates OpenVINS' %YAML:1.0 line


@pytest.mark.parametrize("name", CART_CAMCHAINS)
def test_cart_camchain_round_trips(cart_calib_dir: Path, tmp_path: Path, name: str):
    src = cart_calib_dir / name
    chain = read_camchain(src)
    assert len(chain.cameras) == 2 and chain.cameras[1].T_cn_cnm1 is not None and not chain.has_imu()
    out = write_camchain(chain, tmp_path / name)
    assert read_camchain(out) == chain
    assert yaml.safe_load(out.read_text()) == _raw(src)  # same keys, same values as printed


def test_openvins_imucam_chain_round_trips(openvins_chain: Path, tmp_path: Path):
    chain = read_camchain(openvins_chain)
    assert chain.has_imu()
    cam0, cam1 = chain.cameras
    assert cam0.distortion_model == "equidistant" and cam0.timeshift_cam_imu == pytest.approx(-0.016684572091862235)
    # T_cn_cnm1 agrees with the two T_cam_imu (a property of the file, checked through our parsing)
    T = cam1.T_cam_imu_matrix() @ np.linalg.inv(cam0.T_cam_imu_matrix())
    np.testing.assert_allclose(T, cam1.T_cn_cnm1_matrix(), atol=2e-3)
    for header in (False, True):
        out = write_camchain(chain, tmp_path / f"chain_{header}.yaml", opencv_header=header)
        assert read_camchain(out) == chain
        assert parse_yaml(out.read_text(), "x") == _raw(openvins_chain)
    # the OpenCV-header file is what OpenVINS reads (cv::FileStorage)
    fs = cv2.FileStorage(str(tmp_path / "chain_True.yaml"), cv2.FILE_STORAGE_READ)
    node = fs.getNode("cam1").getNode("T_cam_imu")
    assert node.size() == 4 and node.at(0).at(3).real() == cam1.T_cam_imu[0][3]
    assert fs.getNode("cam0").getNode("timeshift_cam_imu").real() == cam0.timeshift_cam_imu
    fs.release()


def test_imu_yaml_round_trips_flat_and_chain(tmp_path: Path):
    imu = KalibrImu(accelerometer_noise_density=1.373e-3, accelerometer_random_walk=1e-4,
                    gyroscope_noise_density=6.109e-5, gyroscope_random_walk=1e-5, update_rate=200.0,
                    rostopic="/imu/imu")
    flat = write_imu(imu, tmp_path / "imu.yaml")
    assert read_imu(flat) == imu
    assert set(yaml.safe_load(flat.read_text())) == {"accelerometer_noise_density", "accelerometer_random_walk",
                                                     "gyroscope_noise_density", "gyroscope_random_walk",
                                                     "update_rate", "rostopic"}
    imu.extra = {"T_i_b": np.eye(4).tolist(), "model": "calibrated", "time_offset": 0.0}
    chain = write_imu(imu, tmp_path / "imu_chain.yaml", chain=True, opencv_header=True)
    assert chain.read_text().startswith("%YAML:1.0\nimu0:")
    assert read_imu(chain) == imu


GOOD_CAM = {"camera_model": "pinhole", "distortion_model": "radtan", "distortion_coeffs": [-0.1, 0.01, 0.0, 0.0],
            "intrinsics": [500.0, 500.0, 320.0, 256.0], "resolution": [640, 512], "rostopic": "/a"}
GOOD_T = [[1.0, 0, 0, 0.025], [0, 1.0, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, 1.0]]


def _chain(**changes) -> dict:
    cam1 = dict(GOOD_CAM, T_cn_cnm1=GOOD_T)
    for key, value in changes.items():
        if value is None:
            cam1.pop(key)
        else:
            cam1[key] = value
    return {"cam0": dict(GOOD_CAM), "cam1": cam1}


BAD_CHAINS = [
    ({"intrinsics": None}, "cam1.intrinsics", "required"),
    ({"intrinsics": [500.0, 500.0, 320.0]}, "cam1.intrinsics", "4 numbers"),
    ({"intrinsics": [500.0, "f", 320.0, 256.0]}, "cam1.intrinsics[1]", "a number"),
    ({"intrinsics": [-500.0, 500.0, 320.0, 256.0]}, "cam1.intrinsics", "fx, fy > 0"),
    ({"distortion_coeffs": [0.1, 0.2]}, "cam1.distortion_coeffs", "4 numbers"),
    ({"distortion_model": "fov"}, "cam1.distortion_model", "one of"),
    ({"camera_model": "omni"}, "cam1.camera_model", "pinhole"),
    ({"resolution": [640.5, 512]}, "cam1.resolution", "2 integers"),
    ({"T_cn_cnm1": GOOD_T[:3]}, "cam1.T_cn_cnm1", "4x4 matrix"),
    ({"T_cn_cnm1": [[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0], [0, 0, 0]]}, "cam1.T_cn_cnm1", "4x4 matrix"),
    ({"T_cn_cnm1": [[2.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, 1.0]]}, "cam1.T_cn_cnm1", "rotation"),
    ({"T_cn_cnm1": [[1.0, 0, 0, "x"], [0, 1.0, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, 1.0]]}, "cam1.T_cn_cnm1[0][3]",
     "a number"),
    ({"T_cn_cnm1": None}, "cam1.T_cn_cnm1", "required"),
    ({"timeshift_cam_imu": "late"}, "cam1.timeshift_cam_imu", "a number"),
]


@pytest.mark.parametrize("changes,key,expected", BAD_CHAINS, ids=[c[1] + ":" + c[2] for c in BAD_CHAINS])
def test_malformed_camchain_names_key(changes, key, expected):
    with pytest.raises(ConfigError) as err:
        parse_camchain(_chain(**changes), "bad_camchain.yaml")
    assert err.value.path == "bad_camchain.yaml" and err.value.key == key
    assert expected in err.value.expected


def test_malformed_chain_structure_and_imu():
    with pytest.raises(ConfigError, match="cam0, cam1"):
        parse_camchain({"camera0": GOOD_CAM}, "x.yaml")
    with pytest.raises(ConfigError, match="consecutive"):
        parse_camchain({"cam0": GOOD_CAM, "cam2": GOOD_CAM}, "x.yaml")
    with pytest.raises(ConfigError, match="a mapping"):
        parse_camchain({"cam0": [1, 2]}, "x.yaml")
    good_imu = {"accelerometer_noise_density": 0.01, "accelerometer_random_walk": 0.001,
                "gyroscope_noise_density": 0.001, "gyroscope_random_walk": 0.0001, "update_rate": 200}
    assert parse_imu(good_imu).update_rate == 200.0
    with pytest.raises(ConfigError) as err:
        parse_imu({k: v for k, v in good_imu.items() if k != "gyroscope_noise_density"}, "imu.yaml")
    assert err.value.key == "gyroscope_noise_density"
    with pytest.raises(ConfigError) as err:
        parse_imu({"imu0": dict(good_imu, update_rate="fast")}, "imu.yaml")
    assert err.value.key == "imu0.update_rate" and err.value.expected == "a number"
    with pytest.raises(ConfigError, match="a number >= 0"):
        parse_imu(dict(good_imu, accelerometer_random_walk=-1.0), "imu.yaml")

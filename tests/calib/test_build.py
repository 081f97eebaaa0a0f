"""Building the stack from CART's files and a Kalibr chain; exporters; cross-source checks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rgbt.calib.build import stack_from_cart, stack_from_kalibr
from rgbt.calib.camera_info import read_camera_info
from rgbt.calib.check import check_stack, transform_difference
from rgbt.calib.export import (export_camera_info, export_kalibr, kalibr_camchain_from_pair,
                               kalibr_imucam_from_stack)
from rgbt.calib.kalibr import read_camchain, read_imu
from rgbt.calib.vins import read_vins_config
from rgbt.errors import ConfigError
from rgbt.stack import Stack, invert_transform, load_stack


def _scrambled(stack: Stack) -> Stack:
    """The stack with every calibration value replaced, so a builder must fill them from files."""
    data = stack.model_dump(mode="json")
    for cam in data["cameras"].values():
        cam["intrinsics"] = {"fx": 1.0, "fy": 1.0, "cx": 0.0, "cy": 0.0}
        cam["distortion"] = {"model": "none", "coeffs": []}
        cam["T_imu_cam"] = np.eye(4).tolist()
        cam["td_s"] = 0.5
        cam["vio"] = None
    data["imu"]["vio_noise"] = None
    data["pairs"] = {}
    return Stack.model_validate(data)


CALIBRATION_FIELDS = ("width", "height", "intrinsics", "distortion", "T_imu_cam", "td_s", "vio")


def test_stack_from_cart_equals_stack_yaml(cart_dir: Path):
    ref = load_stack()
    built = stack_from_cart(cart_dir, base=_scrambled(ref))
    for name, cam in ref.cameras.items():
        for field in CALIBRATION_FIELDS:
            assert getattr(built.cameras[name], field) == getattr(cam, field), f"{name}.{field}"
    assert built.pairs == ref.pairs  # intrinsics, distortion, offsets (160, 44), T_cam1_cam0
    assert built.imu.vio_noise == ref.imu.vio_noise
    assert built.imu.noise == ref.imu.noise  # not in CART's files: kept from the base
    assert built.cameras["thermal"].topic == ref.cameras["thermal"].topic


def test_stack_holds_vins_extrinsics(cart_dir: Path):
    """The acceptance item: T_imu_cam is VINS' body_T_cam0 (thermal, mono) / body_T_cam1 (colour)."""
    stack = stack_from_cart(cart_dir)
    vins = cart_dir / "vins_configs"
    th = read_vins_config(vins / "thermal_imu_config_calib.yaml")
    np.testing.assert_array_equal(stack.cameras["thermal"].T_imu_cam_matrix(), th.body_T_cam[0])
    assert stack.cameras["thermal"].td_s == th.td_s == -0.01905
    stereo = read_vins_config(vins / "stereo_imu_config_calib.yaml")
    np.testing.assert_array_equal(stack.cameras["mono"].T_imu_cam_matrix(), stereo.body_T_cam[0])
    np.testing.assert_array_equal(stack.cameras["color"].T_imu_cam_matrix(), stereo.body_T_cam[1])
    kal = read_camchain(cart_dir / "calibrations" / "color_thermal_10x10_calib.yaml")
    np.testing.assert_array_equal(stack.pairs["color_thermal"].T_cam1_cam0_matrix(), kal.cameras[1].T_cn_cnm1_matrix())


def test_exported_imucam_carries_inverse(tmp_path: Path):
    stack = load_stack()
    paths = export_kalibr(stack, tmp_path, opencv_header=True)
    chain = read_camchain(tmp_path / "camchain-imucam.yaml")
    assert [c.rostopic for c in chain.cameras] == [c.topic for c in stack.cameras.values()]
    for cam, kcam in zip(stack.cameras.values(), chain.cameras):
        T_cam_imu = kcam.T_cam_imu_matrix()
        # CART's VINS matrices are printed to 8 digits: orthonormal to ~1e-8, so the rigid inverse
        # (R^T, -R^T t) and the matrix inverse agree to that precision
        np.testing.assert_allclose(T_cam_imu, invert_transform(cam.T_imu_cam_matrix()), atol=1e-15)
        np.testing.assert_allclose(T_cam_imu @ cam.T_imu_cam_matrix(), np.eye(4), atol=1e-7)
        assert kcam.timeshift_cam_imu == cam.td_s
        assert kcam.intrinsics == [cam.intrinsics.fx, cam.intrinsics.fy, cam.intrinsics.cx, cam.intrinsics.cy]
    names = list(stack.cameras)
    np.testing.assert_allclose(chain.cameras[1].T_cn_cnm1_matrix(), stack.T_cam_a_cam_b(names[1], names[0]),
                               atol=1e-12)
    imu = read_imu(tmp_path / "imu.yaml")
    n = stack.imu.noise
    assert (imu.accelerometer_noise_density, imu.gyroscope_noise_density, imu.accelerometer_random_walk,
            imu.gyroscope_random_walk, imu.update_rate) == (n.acc_n, n.gyr_n, n.acc_w, n.gyr_w, stack.imu.rate_hz)
    assert {p.name for p in paths} == {"camchain-imucam.yaml", "imu.yaml", "camchain-color_thermal.yaml",
                                       "camchain-thermal_mono.yaml"}


def test_vio_export_uses_vio_calibration(tmp_path: Path):
    stack = load_stack()
    export_kalibr(stack, tmp_path, vio=True)
    chain = read_camchain(tmp_path / "camchain-imucam.yaml")
    vio = stack.cameras["thermal"].vio_calibration()
    assert chain.cameras[0].intrinsics == [vio.intrinsics.fx, vio.intrinsics.fy, vio.intrinsics.cx, vio.intrinsics.cy]
    assert chain.cameras[0].distortion_coeffs == vio.distortion.coeffs
    assert read_imu(tmp_path / "imu.yaml").accelerometer_noise_density == stack.imu.vio_noise.acc_n


def test_exports_reproduce_cart_files(cart_calib_dir: Path, tmp_path: Path):
    stack = load_stack()
    for pair, name in (("color_thermal", "color_thermal_10x10_calib.yaml"),
                       ("thermal_mono", "thermal_mono_10x10_calib.yaml")):
        original = read_camchain(cart_calib_dir / name)
        exported = kalibr_camchain_from_pair(stack, pair)
        for a, b in zip(exported.cameras, original.cameras):
            assert (a.intrinsics, a.distortion_coeffs, a.distortion_model, a.resolution, a.T_cn_cnm1) == \
                (b.intrinsics, b.distortion_coeffs, b.distortion_model, b.resolution, b.T_cn_cnm1)
    for path in export_camera_info(stack, tmp_path):
        mine, cart = read_camera_info(path), read_camera_info(cart_calib_dir / path.name)
        assert (mine.camera_matrix, mine.distortion_coefficients, mine.projection_matrix, mine.image_width) == \
            (cart.camera_matrix, cart.distortion_coefficients, cart.projection_matrix, cart.image_width)


def test_stack_from_openvins_kalibr_chain(openvins_chain: Path, tmp_path: Path):
    stack = stack_from_kalibr(openvins_chain, names=["left", "right"], rate_hz=30.0)
    chain = read_camchain(openvins_chain)
    for name, kcam in zip(("left", "right"), chain.cameras):
        cam = stack.cameras[name]
        np.testing.assert_allclose(cam.T_imu_cam_matrix(), invert_transform(kcam.T_cam_imu_matrix()), atol=1e-15)
        assert cam.td_s == kcam.timeshift_cam_imu
        assert cam.distortion.model == "equidistant" and (cam.width, cam.height) == (640, 480)
        assert cam.topic == kcam.rostopic
    np.testing.assert_array_equal(stack.pairs["left_right"].T_cam1_cam0_matrix(), chain.cameras[1].T_cn_cnm1_matrix())
    # and back: the exported imucam chain equals the fixture's values
    again = kalibr_imucam_from_stack(stack)
    for a, b in zip(again.cameras, chain.cameras):
        np.testing.assert_allclose(a.T_cam_imu_matrix(), b.T_cam_imu_matrix(), atol=1e-15)
        assert (a.intrinsics, a.distortion_coeffs, a.timeshift_cam_imu) == \
            (b.intrinsics, b.distortion_coeffs, b.timeshift_cam_imu)
    with pytest.raises(ConfigError, match="imu-camera chain"):
        stack_from_kalibr(_without_imu(chain))


def _without_imu(chain):
    import copy

    c = copy.deepcopy(chain)
    for cam in c.cameras:
        cam.T_cam_imu = None
    return c


def test_import_cart_errors_name_the_file(tmp_path: Path, cart_dir: Path):
    with pytest.raises(ConfigError, match="CART data folder"):
        stack_from_cart(tmp_path / "nothing")
    (tmp_path / "thermal.yaml").write_text((cart_dir / "calibrations" / "thermal.yaml").read_text()
                                           .replace("image_width: 640", "image_width: six-forty"))
    with pytest.raises(ConfigError) as err:
        stack_from_cart(tmp_path)
    assert err.value.path.endswith("thermal.yaml") and err.value.key == "image_width"
    bad_vins = tmp_path / "vins.yaml"
    bad_vins.write_text("%YAML:1.0\ntd: -0.01\n")
    with pytest.raises(ConfigError) as err:
        read_vins_config(bad_vins)
    assert err.value.key == "body_T_cam0"


def test_check_reports_cart_baseline_inconsistency():
    findings = {(f.check, f.subject): f for f in check_stack(load_stack())}
    ct = findings[("pair extrinsic vs IMU chain", "color_thermal")]
    assert ct.level == "warning"
    assert ct.values["baseline_pair_m"] == pytest.approx(0.025, abs=0.001)
    assert ct.values["baseline_imu_chain_m"] == pytest.approx(0.076, abs=0.001)
    assert ct.values["translation_diff_m"] > 0.04
    tm = findings[("pair extrinsic vs IMU chain", "thermal_mono")]
    assert tm.level == "ok" and tm.values["translation_diff_m"] < 0.001
    assert all(f.level == "ok" for k, f in findings.items() if k[0] == "trigger rate")


def test_transform_difference():
    T = np.eye(4)
    c, s = np.cos(np.radians(3.0)), np.sin(np.radians(3.0))
    T2 = np.array([[c, -s, 0, 0.03], [s, c, 0, 0.04], [0, 0, 1, 0], [0, 0, 0, 1]])
    angle, dt = transform_difference(T2, T)
    assert angle == pytest.approx(3.0) and dt == pytest.approx(0.05)

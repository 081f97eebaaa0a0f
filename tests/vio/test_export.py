"""Config export: CART VINS-Fusion regression, OpenCV FileStorage types, OpenVINS extrinsic direction."""

from __future__ import annotations

import re
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml

from helpers import run_rgbt
from rgbt.stack import load_stack
from rgbt.vio.config import ExportOptions, export, fmt_real


def _printed(text: str, key: str) -> str:
    m = re.search(rf"^\s*{re.escape(key)}:\s*([-+0-9.eE]+)", text, re.M)
    assert m, key
    return m.group(1)


def _half_ulp(number_text: str) -> float:
    """Half a unit of the last printed digit (the source's printed precision)."""
    mant, _, exp = number_text.lower().partition("e")
    decimals = len(mant.split(".")[1]) if "." in mant else 0
    return 0.5 * 10.0 ** (-decimals + (int(exp) if exp else 0))


def _matrix_texts(text: str, key: str) -> list[str]:
    block = text[text.index(key):]
    data = block[block.index("data:"):block.index("]")]
    return re.findall(r"[-+]?[0-9.]+(?:[eE][-+]?[0-9]+)?", data.split("[", 1)[1])


def _fs(path: Path) -> cv2.FileStorage:
    fs = cv2.FileStorage(str(path), cv2.FILE_STORAGE_READ)
    assert fs.isOpened(), path
    return fs


@pytest.mark.parametrize("camera, cart_main, cart_cam", [
    ("thermal", "thermal_imu_config_calib.yaml", "thermal_pinhole.yaml"),
    ("mono", "mono_imu_config_calib.yaml", "cam0_pinhole.yaml"),
])
def test_vins_export_matches_cart(cart_dir, tmp_path, camera, cart_main, cart_cam):
    stack = load_stack()
    paths = export(stack, "vins", tmp_path, ExportOptions(camera=camera))
    main = next(p for p in paths if p.name.endswith("_imu_config.yaml"))
    cam = next(p for p in paths if p.name.endswith("_pinhole.yaml"))
    ref_main = (cart_dir / "vins_configs" / cart_main).read_text()
    ref_cam = (cart_dir / "vins_configs" / cart_cam).read_text()

    ours_main, ours_cam = _fs(main), _fs(cam)
    assert ours_main.getNode("cam0_calib").string() == cam.name
    for key in ("image_width", "image_height"):
        assert ours_main.getNode(key).isInt() and ours_cam.getNode(key).isInt()
        assert int(ours_main.getNode(key).real()) == int(_printed(ref_main, key))
        assert int(ours_cam.getNode(key).real()) == int(_printed(ref_cam, key))
    for group, keys in (("projection_parameters", ("fx", "fy", "cx", "cy")),
                        ("distortion_parameters", ("k1", "k2", "p1", "p2"))):
        for key in keys:
            printed = _printed(ref_cam, key)
            ours = ours_cam.getNode(group).getNode(key)
            assert ours.isReal()
            assert abs(ours.real() - float(printed)) <= _half_ulp(printed), (group, key)
    body = ours_main.getNode("body_T_cam0").mat()
    printed = _matrix_texts(ref_main, "body_T_cam0")
    assert body.shape == (4, 4) and len(printed) == 16
    for value, text in zip(body.ravel(), printed):
        assert abs(value - float(text)) <= _half_ulp(text)
    assert ours_main.getNode("td").real() == pytest.approx(float(_printed(ref_main, "td")))
    # Independent check through OpenCV's reader of the CART file itself.
    ref_fs = _fs(cart_dir / "vins_configs" / cart_main)
    assert np.allclose(ref_fs.getNode("body_T_cam0").mat(), body, atol=1e-8)


def test_openvins_T_imu_cam_is_inverse_of_kalibr_T_cam_imu(fixtures_dir, tmp_path):
    text = (fixtures_dir / "kalibr" / "openvins_uzhfpv_kalibr_imucam_chain.yaml").read_text()
    kalibr = yaml.safe_load(text.split("\n", 1)[1])  # drop the OpenCV "%YAML:1.0" line PyYAML rejects
    T_cam_imu = np.array(kalibr["cam0"]["T_cam_imu"], dtype=float)
    stack = load_stack()
    cam = stack.cameras["thermal"].model_copy(update={"T_imu_cam": np.linalg.inv(T_cam_imu).tolist(),
                                                      "td_s": kalibr["cam0"]["timeshift_cam_imu"]})
    stack = stack.model_copy(update={"cameras": {**stack.cameras, "thermal": cam}})
    export(stack, "openvins", tmp_path, ExportOptions(camera="thermal"))
    fs = _fs(tmp_path / "kalibr_imucam_chain.yaml")
    node = fs.getNode("cam0")

    def mat(key: str) -> np.ndarray:
        n = node.getNode(key)
        return np.array([[n.at(r).at(c).real() for c in range(4)] for r in range(4)])

    T_imu_cam, T_cam_imu_out = mat("T_imu_cam"), mat("T_cam_imu")
    assert np.allclose(T_imu_cam @ T_cam_imu, np.eye(4), atol=1e-12)
    assert np.allclose(T_cam_imu_out, T_cam_imu, atol=1e-12)
    assert not np.allclose(T_imu_cam, T_cam_imu, atol=1e-3)  # the direction matters here
    assert node.getNode("timeshift_cam_imu").real() == pytest.approx(-0.016684572091862235)
    est = _fs(tmp_path / "estimator_config.yaml")
    assert est.getNode("relative_config_imucam").string() == "kalibr_imucam_chain.yaml"
    assert est.getNode("track_frequency").real() == pytest.approx(20.0)


def test_orbslam3_settings_types(tmp_path):
    stack = load_stack()
    (path,) = export(stack, "orbslam3", tmp_path, ExportOptions(camera="thermal", rate_hz=20))
    fs = _fs(path)
    assert fs.getNode("File.version").string() == "1.0"
    for key in ("Camera.width", "Camera.height", "Camera.fps", "Camera.RGB", "ORBextractor.nFeatures",
                "ORBextractor.nLevels", "ORBextractor.iniThFAST", "ORBextractor.minThFAST"):
        assert fs.getNode(key).isInt(), key
    for key in ("Camera1.fx", "Camera1.fy", "Camera1.cx", "Camera1.cy", "Camera1.k1", "Camera1.p2",
                "IMU.NoiseGyro", "IMU.NoiseAcc", "IMU.GyroWalk", "IMU.AccWalk", "IMU.Frequency",
                "ORBextractor.scaleFactor", "Viewer.ViewpointF"):
        assert fs.getNode(key).isReal(), key
    assert fs.getNode("Camera.width").real() == 640 and fs.getNode("Camera1.fx").real() == pytest.approx(513.11461)
    assert np.allclose(fs.getNode("IMU.T_b_c1").mat(), stack.cameras["thermal"].T_imu_cam_matrix(), atol=1e-6)


def test_fmt_real_always_real():
    assert fmt_real(513) == "513.0" and fmt_real(1e-5) == "1.0e-05" and fmt_real(-0.5) == "-0.5"


@pytest.mark.slow
def test_cli_export_all(tmp_path):
    for est in ("vins", "openvins", "orbslam3"):
        run_rgbt("vio", "export", est, "--stack", "calib/stack.yaml", "--camera", "thermal",
                 "--out", tmp_path / est, cwd=Path(__file__).resolve().parents[2])
    assert (tmp_path / "openvins" / "kalibr_imu_chain.yaml").is_file()
    assert _fs(tmp_path / "openvins" / "kalibr_imu_chain.yaml").getNode("imu0").getNode("update_rate").real() == 200.0
    proc = run_rgbt("vio", "export", "vins", "--camera", "nope", "--out", tmp_path / "x", check=False)
    assert proc.returncode == 2 and "nope" in proc.stderr

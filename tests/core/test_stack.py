"""The stack model: loads the CART stack, matches CART's files, rejects every malformed field clearly."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml

from rgbt.errors import ConfigError
from rgbt.paths import DEFAULT_STACK
from rgbt.stack import dump_stack, invert_transform, load_stack, stack_from_dict


@pytest.fixture(scope="module")
def raw() -> dict:
    return yaml.safe_load(DEFAULT_STACK.read_text())


def test_cart_stack_loads():
    stack = load_stack()
    assert set(stack.cameras) == {"thermal", "color", "mono"}
    th = stack.cameras["thermal"]
    assert (th.width, th.height, th.rate_hz, th.encoding) == (640, 512, 60.0, "mono16")
    assert stack.cameras["color"].rate_hz * stack.cameras["color"].trigger_divider == stack.trigger.rate_hz
    assert stack.imu.rate_hz == 200.0
    assert th.name == "thermal"


def _vins_matrix(path) -> np.ndarray:
    import cv2

    fs = cv2.FileStorage(str(path), cv2.FILE_STORAGE_READ)
    try:
        return fs.getNode("body_T_cam0").mat()
    finally:
        fs.release()


@pytest.mark.parametrize("camera,config", [("thermal", "thermal_imu_config_calib.yaml"),
                                           ("mono", "mono_imu_config_calib.yaml"),
                                           ("color", "monocolor_imu_config_calib.yaml")])
def test_T_imu_cam_is_cart_vins_body_T_cam0(cart_dir, camera, config):
    body_T_cam0 = _vins_matrix(cart_dir / "vins_configs" / config)
    stack = load_stack()
    np.testing.assert_allclose(stack.cameras[camera].T_imu_cam_matrix(), body_T_cam0, atol=1e-9)
    # Kalibr's T_cam_imu is the inverse
    np.testing.assert_allclose(stack.cameras[camera].T_cam_imu_matrix() @ body_T_cam0, np.eye(4), atol=1e-6)


def test_color_thermal_extrinsic_from_kalibr(cart_dir):
    chain = yaml.safe_load((cart_dir / "calibrations" / "color_thermal_10x10_calib.yaml").read_text())
    pair = load_stack().pairs["color_thermal"]
    np.testing.assert_array_equal(pair.T_cam1_cam0_matrix(), np.asarray(chain["cam1"]["T_cn_cnm1"]))
    assert pair.cam1_intrinsics.fx == chain["cam1"]["intrinsics"][0]


def test_invert_transform_roundtrip():
    T = load_stack().cameras["thermal"].T_imu_cam_matrix()
    np.testing.assert_allclose(invert_transform(T) @ T, np.eye(4), atol=1e-6)


def test_dump_and_reload_equal(tmp_path):
    stack = load_stack()
    dump_stack(stack, tmp_path / "s.yaml")
    assert load_stack(tmp_path / "s.yaml") == stack


def _set(d: dict, path: str, value):
    keys = path.split(".")
    for k in keys[:-1]:
        d = d[int(k)] if isinstance(d, list) else d[k]
    last = keys[-1]
    if value is _DELETE:
        del d[last]
    elif isinstance(d, list):
        d[int(last)] = value
    else:
        d[last] = value


_DELETE = object()

BAD_FIELDS = [
    ("cameras.thermal.width", -640, "cameras.thermal.width"),
    ("cameras.thermal.width", "wide", "cameras.thermal.width"),
    ("cameras.thermal.rate_hz", 0, "cameras.thermal.rate_hz"),
    ("cameras.thermal.encoding", "yuv422", "cameras.thermal.encoding"),
    ("cameras.thermal.modality", "lidar", "cameras.thermal.modality"),
    ("cameras.thermal.intrinsics.fx", -1.0, "cameras.thermal.intrinsics.fx"),
    ("cameras.thermal.distortion.model", "fisheye62", "cameras.thermal.distortion.model"),
    ("cameras.thermal.distortion.coeffs", [0.1, 0.2], "cameras.thermal.distortion"),
    ("cameras.thermal.T_imu_cam", [[1, 0, 0], [0, 1, 0], [0, 0, 1]], "cameras.thermal.T_imu_cam"),
    ("cameras.thermal.T_imu_cam.3", [0, 0, 1, 1], "cameras.thermal.T_imu_cam"),
    ("cameras.thermal.T_imu_cam.0", [2, 0, 0, 0], "cameras.thermal.T_imu_cam"),
    ("cameras.thermal.topic", _DELETE, "cameras.thermal.topic"),
    ("cameras.thermal.trigger_divider", 0, "cameras.thermal.trigger_divider"),
    ("cameras.thermal.colour", "x", "cameras.thermal.colour"),
    ("imu.rate_hz", "fast", "imu.rate_hz"),
    ("imu.noise.acc_n", -0.1, "imu.noise.acc_n"),
    ("gnss.rate_hz", -5, "gnss.rate_hz"),
    ("autopilot.state_topic", _DELETE, "autopilot.state_topic"),
    ("trigger.rate_hz", 0, "trigger.rate_hz"),
    ("trigger.cameras", ["thermal", "lidar"], "<root>"),
    ("pairs.color_thermal.cam1", "lidar", "<root>"),
    ("pairs.color_thermal.T_cam1_cam0", "identity", "pairs.color_thermal.T_cam1_cam0"),
]


@pytest.mark.parametrize("path,value,key", BAD_FIELDS, ids=[f"{p}={v!r}"[:60] for p, v, _ in BAD_FIELDS])
def test_bad_field_names_file_key_value(raw, tmp_path, path, value, key):
    data = copy.deepcopy(raw)
    _set(data, path, value)
    bad = tmp_path / "bad_stack.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as info:
        load_stack(bad)
    err = info.value
    assert err.path == str(bad)
    assert err.key.startswith(key), err
    assert err.expected
    assert str(bad) in str(err)


def test_unreadable_and_invalid_yaml(tmp_path):
    with pytest.raises(ConfigError, match="readable"):
        load_stack(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("cameras: [unclosed\n")
    with pytest.raises(ConfigError, match="valid YAML"):
        load_stack(broken)
    with pytest.raises(ConfigError, match="mapping"):
        stack_from_dict([1, 2, 3], "list.yaml")

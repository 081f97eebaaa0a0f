"""ROS camera_info YAML: CART's files round-trip; conversion to the stack; malformed files fail clearly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from rgbt.calib.camera_info import (camera_info_from_spec, parse_camera_info, read_camera_info,
                                    write_camera_info)
from rgbt.errors import ConfigError
from rgbt.stack import load_stack

CART_CAMERA_INFO = ("thermal.yaml", "color.yaml", "mono.yaml")


@pytest.mark.parametrize("name", CART_CAMERA_INFO)
def test_cart_camera_info_round_trips(cart_calib_dir: Path, tmp_path: Path, name: str):
    src = cart_calib_dir / name
    info = read_camera_info(src)
    raw = yaml.safe_load(src.read_text())
    # every value as printed in CART's file
    assert (info.image_width, info.image_height, info.camera_name) == (raw["image_width"], raw["image_height"],
                                                                       raw["camera_name"])
    for key in ("camera_matrix", "distortion_coefficients", "rectification_matrix", "projection_matrix"):
        assert getattr(info, key) == [float(v) for v in raw[key]["data"]], key
    out = write_camera_info(info, tmp_path / name, comment="round trip")
    again = read_camera_info(out)
    assert again == info
    assert yaml.safe_load(out.read_text())["distortion_coefficients"] == raw["distortion_coefficients"]


@pytest.mark.parametrize("name", CART_CAMERA_INFO)
def test_camera_info_matches_stack_and_converts_back(cart_calib_dir: Path, name: str):
    info = read_camera_info(cart_calib_dir / name)
    cam = load_stack().cameras[name.removesuffix(".yaml")]
    assert info.distortion().model == "radtan"
    np.testing.assert_array_equal(info.K(), cam.K())
    np.testing.assert_array_equal(info.distortion().as_array(), cam.dist_coeffs())
    back = camera_info_from_spec(cam, camera_name=info.camera_name)
    assert back == info  # plumb_bob 5 coefficients, R = I, P = [K | 0]


def test_equidistant_and_radtan4_conversions():
    cam = load_stack().cameras["thermal"]
    fish = cam.model_copy(update={"distortion": cam.distortion.model_copy(update={"model": "equidistant",
                                                                                  "coeffs": [0.1, 0.01, 0.0, 0.0]})})
    info = camera_info_from_spec(fish)
    assert info.distortion_model == "equidistant" and info.distortion().model == "equidistant"
    vio = cam.vio_calibration()
    info4 = camera_info_from_spec(cam.model_copy(update={"distortion": vio.distortion}))
    assert info4.distortion_model == "plumb_bob" and len(info4.distortion_coefficients) == 5


GOOD = {
    "image_width": 640, "image_height": 512, "camera_name": "cam",
    "camera_matrix": {"rows": 3, "cols": 3, "data": [500.0, 0, 320, 0, 500.0, 256, 0, 0, 1]},
    "distortion_model": "plumb_bob",
    "distortion_coefficients": {"rows": 1, "cols": 5, "data": [-0.1, 0.01, 0, 0, 0]},
    "rectification_matrix": {"rows": 3, "cols": 3, "data": [1, 0, 0, 0, 1, 0, 0, 0, 1]},
    "projection_matrix": {"rows": 3, "cols": 4, "data": [500.0, 0, 320, 0, 0, 500.0, 256, 0, 0, 0, 1, 0]},
}


def _bad(path: str, value) -> dict:
    data = yaml.safe_load(yaml.safe_dump(GOOD))
    *parents, last = path.split(".")
    node = data
    for p in parents:
        node = node[p]
    if value is _DELETE:
        del node[last]
    else:
        node[last] = value
    return data


_DELETE = object()

BAD_CASES = [
    ("image_width", _DELETE, "image_width", "required"),
    ("image_width", "wide", "image_width", "integer"),
    ("image_height", 0, "image_height", ">= 1"),
    ("camera_matrix", _DELETE, "camera_matrix", "required"),
    ("camera_matrix.rows", 4, "camera_matrix.rows", "3"),
    ("camera_matrix.data", [500.0, 0, 320, 0, 500.0, 256, 0, 0], "camera_matrix.data", "9 numbers"),
    ("camera_matrix.data", [500.0, 0, "x", 0, 500.0, 256, 0, 0, 1], "camera_matrix.data[2]", "a number"),
    ("camera_matrix.data", [500.0, 0, 320, 0, 500.0, 256, 0, 0, 2], "camera_matrix", "pinhole K"),
    ("camera_matrix.data", "500 0 320", "camera_matrix.data", "list of numbers"),
    ("distortion_model", "fisheye62", "distortion_model", "one of"),
    ("distortion_coefficients.cols", 4, "distortion_coefficients.data", "rows x cols"),
    ("distortion_coefficients.data", [-0.1, 0.01, 0, 0, "nan?"], "distortion_coefficients.data[4]", "a number"),
    ("projection_matrix.cols", 3, "projection_matrix.cols", "4"),
    ("rectification_matrix.data", [1, 0, 0, 0, 1, 0], "rectification_matrix.data", "9 numbers"),
]


@pytest.mark.parametrize("path,value,key,expected", BAD_CASES, ids=[f"{c[0]}={c[1]!r}"[:40] for c in BAD_CASES])
def test_malformed_camera_info_names_key(path, value, key, expected):
    with pytest.raises(ConfigError) as err:
        parse_camera_info(_bad(path, value), "bad.yaml")
    assert err.value.path == "bad.yaml" and err.value.key == key
    assert expected in err.value.expected


def test_wrong_coefficient_count_and_bad_yaml(tmp_path: Path):
    data = _bad("distortion_model", "equidistant")
    with pytest.raises(ConfigError, match="4 coefficients for equidistant"):
        parse_camera_info(data, "x.yaml")
    bad = tmp_path / "broken.yaml"
    bad.write_text("image_width: [640\n")
    with pytest.raises(ConfigError, match="valid YAML"):
        read_camera_info(bad)
    with pytest.raises(ConfigError, match="readable"):
        read_camera_info(tmp_path / "missing.yaml")
    assert parse_camera_info(GOOD, "good.yaml").intrinsics().fx == 500.0

"""``rgbt calib``: show, import-cart, export, check (subprocess runs of this checkout's CLI)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from helpers import run_rgbt
from rgbt.calib.camera_info import read_camera_info
from rgbt.calib.kalibr import read_camchain
from rgbt.paths import DEFAULT_STACK
from rgbt.stack import load_stack


def test_show_tables_and_json():
    out = run_rgbt("calib", "show", env={"COLUMNS": "160"}).stdout
    assert "cameras" in out and "/boson/thermal/image_raw" in out and "color_thermal" in out
    data = json.loads(run_rgbt("calib", "show", "--json").stdout)
    assert data["cameras"]["thermal"]["width"] == 640
    assert data["pairs"]["color_thermal"]["cam1_offset"] == [160.0, 44.0]


@pytest.mark.slow
def test_import_cart_then_export_and_check(cart_dir: Path, tmp_path: Path):
    stack_path = tmp_path / "stack.yaml"
    run_rgbt("calib", "import-cart", str(cart_dir), "--out", str(stack_path))
    built, ref = load_stack(stack_path), load_stack()
    assert built.pairs == ref.pairs and built.cameras["color"].T_imu_cam == ref.cameras["color"].T_imu_cam

    run_rgbt("calib", "export", "kalibr", "--stack", str(stack_path), "--out", str(tmp_path / "kalibr"))
    chain = read_camchain(tmp_path / "kalibr" / "camchain-imucam.yaml")
    np.testing.assert_allclose(chain.cameras[0].T_cam_imu_matrix() @ built.cameras["thermal"].T_imu_cam_matrix(),
                               np.eye(4), atol=1e-7)
    run_rgbt("calib", "export", "camera-info", "--stack", str(stack_path), "--out", str(tmp_path / "ci"))
    assert read_camera_info(tmp_path / "ci" / "thermal.yaml").camera_matrix == \
        read_camera_info(cart_dir / "calibrations" / "thermal.yaml").camera_matrix

    report = json.loads(run_rgbt("calib", "check", "--stack", str(stack_path), "--json").stdout)
    assert report["valid"] and report["warnings"] >= 1
    warn = [f for f in report["findings"] if f["level"] == "warning"][0]
    assert warn["subject"] == "color_thermal" and warn["values"]["baseline_imu_chain_m"] > 0.07
    assert run_rgbt("calib", "check", "--stack", str(stack_path), "--strict", check=False).returncode == 1
    text = run_rgbt("calib", "check", env={"COLUMNS": "200"}).stdout
    assert "WARNING" in text and "7.61 cm" in text


@pytest.mark.slow
def test_import_kalibr(openvins_chain: Path, cart_dir: Path, tmp_path: Path):
    out = tmp_path / "ov.yaml"
    run_rgbt("calib", "import-kalibr", str(openvins_chain), "--names", "left,right", "--rate", "30", "--out", str(out))
    stack = load_stack(out)
    assert set(stack.cameras) == {"left", "right"} and stack.cameras["left"].rate_hz == 30.0
    assert stack.cameras["right"].td_s == -0.016591431247074982
    report = json.loads(run_rgbt("calib", "check", "--stack", str(out), "--json").stdout)
    assert report["warnings"] == 0
    proc = run_rgbt("calib", "import-kalibr", str(cart_dir / "calibrations" / "color_thermal_10x10_calib.yaml"),
                    "--out", str(tmp_path / "x.yaml"), check=False)
    assert proc.returncode == 2 and "cam0.T_cam_imu" in proc.stderr


@pytest.mark.slow
def test_bad_files_exit_2_with_key(tmp_path: Path, cart_dir: Path):
    bad = tmp_path / "stack.yaml"
    bad.write_text(DEFAULT_STACK.read_text().replace("width: 640", "width: -640"))
    proc = run_rgbt("calib", "check", "--stack", str(bad), check=False)
    assert proc.returncode == 2 and "cameras.thermal.width" in proc.stderr
    calib = tmp_path / "cart"
    calib.mkdir()
    for f in (cart_dir / "calibrations").iterdir():
        (calib / f.name).write_text(f.read_text())
    for f in (cart_dir / "vins_configs").iterdir():
        (calib / f.name).write_text(f.read_text())
    text = (calib / "color_thermal_10x10_calib.yaml").read_text()
    text = text.replace("resolution: [960, 600]", "resolution: [960]", 1)
    (calib / "color_thermal_10x10_calib.yaml").write_text(text)
    proc = run_rgbt("calib", "import-cart", str(calib), "--out", str(tmp_path / "o.yaml"), check=False)
    assert proc.returncode == 2
    assert "color_thermal_10x10_calib.yaml: cam0.resolution" in proc.stderr and "2 integers" in proc.stderr

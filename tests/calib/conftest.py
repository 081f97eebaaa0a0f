"""Fixtures of the calibration tests: CART's calibration files and the OpenVINS Kalibr chain."""

from __future__ import annotations

from pathlib import Path

import pytest



def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"reference file not found: {path}")
    return path


@pytest.fixture(scope="session")
def cart_calib_dir(cart_dir: Path) -> Path:
    return _need(cart_dir / "calibrations")


@pytest.fixture(scope="session")
def openvins_chain(fixtures_dir: Path) -> Path:
    return _need(fixtures_dir / "kalibr" / "openvins_uzhfpv_kalibr_imucam_chain.yaml")

"""Fixtures of the calibration tests: CART's calibration files and the OpenVINS Kalibr chain."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import need


@pytest.fixture(scope="session")
def cart_calib_dir(cart_dir: Path) -> Path:
    return need(cart_dir / "calibrations", "CART calibrations")


@pytest.fixture(scope="session")
def openvins_chain(fixtures_dir: Path) -> Path:
    return need(fixtures_dir / "kalibr" / "openvins_uzhfpv_kalibr_imucam_chain.yaml", "Kalibr imucam fixture")

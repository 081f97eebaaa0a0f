"""Fixtures of the simulator tests: the CART Duck trajectory and a small helper to build stacks."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import need


@pytest.fixture(scope="session")
def duck_tum(cart_dir: Path) -> Path:
    return need(cart_dir / "ground_truth" / "Duck_2023-03-21-14-06-04.txt", "CART Duck ground truth")

"""Fixtures of the simulator tests: the CART Duck trajectory and a small helper to build stacks."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def duck_tum(cart_dir: Path) -> Path:
    path = cart_dir / "ground_truth" / "Duck_2023-03-21-14-06-04.txt"
    if not path.is_file():
        pytest.skip(f"CART Duck ground truth not found at {path}")
    return path

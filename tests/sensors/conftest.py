"""Pseudo-terminal devices for the driver tests: the test side plays the device (``helpers.PtyDevice``:
a stable path to the slave side of a pty, ``unplug()`` / ``plug()``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import PtyDevice


@pytest.fixture
def pty_device(tmp_path: Path):
    dev = PtyDevice(tmp_path / "ttyDEV")
    yield dev
    dev.close()

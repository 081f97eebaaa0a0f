"""Fixtures of the image tests: the real FLIR Duo Pro R frame and its ExifTool metadata dump."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import need


@pytest.fixture(scope="session")
def fff_path(fixtures_dir: Path) -> Path:
    return need(fixtures_dir / "thermal" / "flir_duo_pro_r_frame_000000.fff", "FLIR fixture frame")


@pytest.fixture(scope="session")
def fff_metadata(fixtures_dir: Path) -> dict[str, str]:
    """``exiftool`` text dump of the fixture (key : value), read independently of rgbt."""
    path = need(fixtures_dir / "thermal" / "flir_duo_pro_r_frame_000000.txt", "FLIR fixture metadata")
    meta = {}
    for line in path.read_text().splitlines():
        key, sep, value = line.partition(":")
        if sep:
            meta[key.strip()] = value.strip()
    return meta


@pytest.fixture(scope="session")
def flir_counts(fff_path: Path):
    from rgbt.image.radiometry import read_fff

    return read_fff(fff_path).counts

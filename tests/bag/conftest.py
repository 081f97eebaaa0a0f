"""Fixtures for the bag tests: the real bags in the shared data, and small bags written here."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def bags_dir(fixtures_dir: Path) -> Path:
    path = fixtures_dir / "bags"
    if not path.is_dir():
        pytest.skip(f"bag fixtures not found at {path}")
    return path


@pytest.fixture(scope="session")
def ros1_bag(bags_dir: Path) -> Path:
    path = bags_dir / "ros1" / "robot_localization_test1.bag"
    if not path.is_file():
        pytest.skip(f"ROS 1 fixture not found at {path}")
    return path


@pytest.fixture(scope="session", params=["ros2_talker_sqlite3", "ros2_talker_mcap", "ros2_talker_mcap/talker.mcap"])
def talker_bag(request: pytest.FixtureRequest, bags_dir: Path) -> Path:
    path = bags_dir / request.param
    if not path.exists():
        pytest.skip(f"ROS 2 fixture not found at {path}")
    return path


@pytest.fixture(scope="session")
def converted_ros1(tmp_path_factory: pytest.TempPathFactory, ros1_bag: Path) -> Path:
    """The ROS 1 fixture converted once to an MCAP bag directory (shared by several tests)."""
    from rgbt.bag.convert import convert_bag

    out = tmp_path_factory.mktemp("conv") / "rl_mcap"
    convert_bag(ros1_bag, out)
    return out

"""Fixtures for the bag tests: the real bags in the shared data, and small bags written here."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import need


@pytest.fixture(scope="session")
def bags_dir(fixtures_dir: Path) -> Path:
    return need(fixtures_dir / "bags", "bag fixtures")


@pytest.fixture(scope="session")
def ros1_bag(bags_dir: Path) -> Path:
    return need(bags_dir / "ros1" / "robot_localization_test1.bag", "ROS 1 fixture")


@pytest.fixture(scope="session", params=["ros2_talker_sqlite3", "ros2_talker_mcap", "ros2_talker_mcap/talker.mcap"])
def talker_bag(request: pytest.FixtureRequest, bags_dir: Path) -> Path:
    return need(bags_dir / request.param, "ROS 2 fixture")


@pytest.fixture(scope="session")
def converted_ros1(tmp_path_factory: pytest.TempPathFactory, ros1_bag: Path) -> Path:
    """The ROS 1 fixture converted once to an MCAP bag directory (shared by several tests)."""
    from rgbt.bag.convert import convert_bag

    out = tmp_path_factory.mktemp("conv") / "rl_mcap"
    convert_bag(ros1_bag, out)
    return out

"""Shared test fixtures: the reference data, the CLI, and a loopback-only ROS 2 environment."""

from __future__ import annotations

import functools
import signal
from pathlib import Path

import pytest

from helpers import loopback_ros_env, need, run_rgbt
from rgbt.paths import data_dir as _data_dir
from rgbt.ros_env import apply_ros_defaults

# Every ROS 2 process the tests start stays on loopback (the project's Fast DDS profile).
apply_ros_defaults()

# A suite started as a background job (``cmd &`` in a script) inherits SIGINT ignored, and so would
# every child it starts: the SIGINT a test sends to end a node, a launcher or a stand-in child (as a
# terminal's Ctrl-C would) would be ignored until a timeout's SIGKILL. Restore its default here.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

#: fixtures that start real rclpy + Fast DDS processes: a test using one must be marked ``ros``
ROS_FIXTURES = ("ros_env", "demo_env", "demo_run")


@functools.lru_cache(maxsize=1)
def rclpy_missing() -> str | None:
    """Why ``rclpy`` cannot be imported here (an optional third-party dependency), or None."""
    try:
        import rclpy  # noqa: F401
    except ImportError as exc:
        return f"ROS 2 wheels (ros-jazzy-rclpy) not installed: {exc}"
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Tests marked ``ros`` skip (with the reason) where rclpy is absent; every other test runs.

    A test that uses a ROS fixture without the ``ros`` marker fails: markers say what a test starts.
    """
    uses = [f for f in ROS_FIXTURES if f in getattr(item, "fixturenames", ())]
    marked = item.get_closest_marker("ros") is not None
    if uses and not marked:
        pytest.fail(f"{item.nodeid} uses {', '.join(uses)} (real rclpy processes) but is not marked ros",
                    pytrace=False)
    if marked and rclpy_missing():
        pytest.skip(rclpy_missing())


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The reference data folder: ``RGBT_DATA`` (default ``../shared/data``); tests needing it skip, naming it, when absent."""
    return need(_data_dir(), "reference data folder")


@pytest.fixture(scope="session")
def cart_dir(data_dir: Path) -> Path:
    return data_dir / "cart"


@pytest.fixture(scope="session")
def fixtures_dir(data_dir: Path) -> Path:
    return data_dir / "fixtures"


@pytest.fixture
def rgbt_cli():
    return run_rgbt


@pytest.fixture
def ros_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """Environment for real rclpy + Fast DDS processes: loopback only, fresh domain, temp ROS_HOME.

    Cleans the ``/dev/shm/fastrtps_*`` files created while the test ran.
    """
    if rclpy_missing():
        pytest.skip(rclpy_missing())
    from rgbt.graph.launcher import clean_shm, shm_files

    before = set(shm_files())
    env = loopback_ros_env(tmp_path)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    yield env
    # Only segments created during the test that no live process still maps (never other graphs').
    clean_shm(before)

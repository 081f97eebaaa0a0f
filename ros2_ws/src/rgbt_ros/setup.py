"""ament_python package exposing every module of the repository's ``nodes/`` as an executable.

``rgbt_nodes`` is a symlink to the repository's ``nodes/`` (and ``rgbt_launch`` to ``launch/``) so the
code lives in one place; each node module becomes ``ros2 run rgbt_ros <module>``. The launch file,
profiles and Fast DDS profile are installed to ``share/rgbt_ros/launch``.
"""

from pathlib import Path

from setuptools import setup

PACKAGE = "rgbt_ros"
HERE = Path(__file__).resolve().parent
NODES = sorted(p.stem for p in (HERE / "rgbt_nodes").glob("*.py") if p.stem != "__init__")
LAUNCH = sorted(f"rgbt_launch/{p.name}" for p in (HERE / "rgbt_launch").iterdir() if p.suffix in (".py", ".yaml", ".xml"))

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=["rgbt_nodes"],
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", LAUNCH),
    ],
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="rgbt developers",
    maintainer_email="rgbt@example.org",
    description="ROS 2 nodes of rgbt (thin shells over the rgbt package)",
    license="GPL-3.0-or-later",
    entry_points={"console_scripts": [f"{name} = rgbt_nodes.{name}:main" for name in NODES]},
)

"""The ROS 2 environment rgbt's processes get, and which ROS 2 Python stack this interpreter
would load, without importing ``rclpy``.

Every ROS 2 process rgbt starts stays on loopback unless the environment says otherwise
(:func:`ros_defaults`: ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``, the shipped Fast DDS profile,
Fast DDS as the RMW): ``rgbt up``, the launch file, the benchmarks, ``rgbt replay``, the tests.

Two ways to get rclpy: the PyPI wheels (``ros-jazzy-rclpy`` and friends, the ``ros-wheels`` extra)
inside the venv, or a system ROS 2 (``source /opt/ros/<distro>/setup.bash`` puts its
``site-packages`` on ``PYTHONPATH`` and its prefix on ``AMENT_PREFIX_PATH``). Both at once load one
stack's Python code against the other's C libraries and fail in odd ways, so
:func:`check_single_rclpy` refuses, naming which one to remove. Called before rclpy is imported
(``rgbt.ros.spin``, ``rgbt up``, ``rgbt doctor``).
"""

from __future__ import annotations

import glob
import hashlib
import os
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rgbt.errors import RgbtError
from rgbt.fileio import write_atomic
from rgbt.paths import FASTDDS_PROFILE

#: the RMW rgbt's processes use unless ``RMW_IMPLEMENTATION`` says otherwise
DEFAULT_RMW = "rmw_fastrtps_cpp"
#: the discovery range unless ``ROS_AUTOMATIC_DISCOVERY_RANGE`` says otherwise: this machine only
DEFAULT_DISCOVERY_RANGE = "LOCALHOST"


def loopback_environment(profiles_file: str | None = None) -> dict[str, str]:
    """Loopback discovery and the Fast DDS profile (default: the shipped ``launch/fastdds_loopback.xml``)."""
    return {"ROS_AUTOMATIC_DISCOVERY_RANGE": DEFAULT_DISCOVERY_RANGE,
            "FASTRTPS_DEFAULT_PROFILES_FILE": profiles_file or str(FASTDDS_PROFILE)}


def ros_defaults(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ROS 2 defaults (:func:`loopback_environment`, :data:`DEFAULT_RMW`) that ``environ``
    (default ``os.environ``) does not set already: what a process rgbt starts gets added."""
    environ = os.environ if environ is None else environ
    defaults = {**loopback_environment(), "RMW_IMPLEMENTATION": DEFAULT_RMW}
    return {key: value for key, value in defaults.items() if key not in environ}


def apply_ros_defaults() -> None:
    """Add :func:`ros_defaults` to this process's environment (before rclpy is initialized)."""
    os.environ.update(ros_defaults())


#: the XML namespace of Fast DDS profiles files
FASTDDS_XML_NS = "http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles"


def participant_lease_profile(text: str, lease_s: float) -> str:
    """``text`` (a Fast DDS profiles file) with its default participant's lease set to ``lease_s``
    seconds, announced every quarter of that: how long the other processes keep this process's
    participant, and its readers matched, after it died without saying goodbye (``kill -9``; Fast
    DDS's default 20 s). Raises ``ValueError`` naming what the file lacks."""
    if lease_s <= 0:
        raise ValueError(f"participant lease {lease_s} s: expected > 0")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ValueError(f"not XML: {exc}") from exc

    def tag(name: str) -> str:
        return f"{{{FASTDDS_XML_NS}}}{name}"

    def child(parent: ET.Element, name: str) -> ET.Element:
        found = parent.find(tag(name))
        return found if found is not None else ET.SubElement(parent, tag(name))

    default = [p for p in root.iter(tag("participant")) if p.get("is_default_profile") == "true"]
    if not default:
        raise ValueError(f'no <participant is_default_profile="true"> in namespace {FASTDDS_XML_NS}')
    discovery = child(child(child(default[0], "rtps"), "builtin"), "discovery_config")
    for name, seconds in (("leaseDuration", lease_s), ("leaseAnnouncement", lease_s / 4)):
        old = discovery.find(tag(name))
        if old is not None:
            discovery.remove(old)
        duration = ET.SubElement(discovery, tag(name))
        ET.SubElement(duration, tag("sec")).text = str(int(seconds))
        ET.SubElement(duration, tag("nanosec")).text = str(round((seconds - int(seconds)) * 1e9))
    ET.register_namespace("", FASTDDS_XML_NS)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8" ?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def use_participant_lease(lease_s: float, environ: dict[str, str] | None = None) -> str:
    """Point ``FASTRTPS_DEFAULT_PROFILES_FILE`` in ``environ`` (default ``os.environ``; before
    rclpy creates this process's participant) at a copy of the profiles file in effect (default
    the shipped one) whose participant lease is ``lease_s`` (:func:`participant_lease_profile`). The
    copy, named by its content, lies in the temporary directory and is shared by every process that
    asks for the same. Returns what was done, in words; a file that cannot be used is kept and said."""
    env = os.environ if environ is None else environ
    source = env.get("FASTRTPS_DEFAULT_PROFILES_FILE") or str(FASTDDS_PROFILE)
    try:
        text = participant_lease_profile(Path(source).read_text(), lease_s)
    except (OSError, ValueError) as exc:
        return f"participant lease left as {source} says ({exc})"
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    derived = Path(tempfile.gettempdir()) / f"rgbt_fastdds_lease_{digest}.xml"
    if not derived.exists():  # whole or absent for a process reading it meanwhile
        write_atomic(derived, text, unique=True)
    env["FASTRTPS_DEFAULT_PROFILES_FILE"] = str(derived)
    return f"participant lease {lease_s:g} s (Fast DDS profile {Path(source).name} with it: {derived})"

#: ROS 2 distributions whose rclpy rgbt's nodes support (Humble lacks EventsExecutor: see rgbt.ros.spin)
SUPPORTED_DISTROS = ("humble", "jazzy")


class RosStackConflict(RgbtError):
    """Two rclpy stacks are importable in one interpreter (CLI exit 2)."""


@dataclass(frozen=True)
class RclpyStack:
    """One directory holding an ``rclpy`` package.

    ``kind`` is ``"wheels"`` (installed by pip: a ``*.dist-info`` there owns ``rclpy/__init__.py``)
    or ``"system"`` (a ROS 2 install, e.g. under ``/opt/ros/<distro>``); ``source`` says where it
    was found (``sys.path`` or ``AMENT_PREFIX_PATH``); ``distributions`` are the pip distributions
    (``ros-rclpy``, ``ros-jazzy-rclpy`` ...) of a wheels stack.
    """

    path: Path
    kind: str
    source: str
    distro: str | None = None
    distributions: tuple[str, ...] = field(default_factory=tuple)

    def describe(self) -> str:
        where = f"{self.path} (from {self.source})"
        if self.kind == "wheels":
            dists = ", ".join(self.distributions) or "pip"
            return f"PyPI ROS wheels [{dists}] at {where}"
        return f"system ROS 2 {self.distro or '(distro unknown)'} at {where}"

    def removal(self) -> str:
        """How to remove this stack from the interpreter (one shell hint)."""
        if self.kind == "wheels":
            names = " ".join(_ros_wheel_names(self.path)) or " ".join(self.distributions) or "rclpy"
            return f"pip uninstall {names}  (or recreate the venv with scripts/setup.sh system-ros)"
        return (f"do not source {_prefix_of(self.path)}/setup.bash in this shell and drop {self.path} from "
                "PYTHONPATH (or use a venv without --system-site-packages)")


def _has_rclpy(directory: Path) -> bool:
    return (directory / "rclpy" / "__init__.py").is_file()


def _prefix_of(site: Path) -> Path:
    """``/opt/ros/humble/lib/python3.10/site-packages`` -> ``/opt/ros/humble``."""
    parts = site.parts
    for i, part in enumerate(parts):
        if part in ("lib", "local") and i > 0:
            return Path(*parts[:i])
    return site.parent


def _distro_of(path: Path, environ: Mapping[str, str], distributions: Sequence[str]) -> str | None:
    parts = path.parts
    for i, part in enumerate(parts[:-1]):
        if part == "ros" and i > 0 and parts[i - 1] == "opt":
            return parts[i + 1]
    for name in distributions:  # ros-jazzy-rclpy -> jazzy
        bits = name.lower().split("-")
        if len(bits) >= 3 and bits[0] == "ros" and bits[-1] == "rclpy":
            return bits[1]
    return environ.get("ROS_DISTRO") or None


def _dist_infos(directory: Path) -> list[tuple[str, Path]]:
    """(normalized distribution name, ``*.dist-info`` folder) of the pip installs in ``directory``
    (names from the folder names, no metadata read: fast on a big site-packages)."""
    out: list[tuple[str, Path]] = []
    try:
        entries = os.listdir(directory)
    except OSError:
        return out
    for entry in entries:
        if entry.endswith(".dist-info"):
            name = entry[: -len(".dist-info")].rsplit("-", 1)[0]
            out.append((name.lower().replace("_", "-").replace(".", "-"), directory / entry))
    return out


def _rclpy_owners(directory: Path) -> tuple[str, ...]:
    """Names of the pip distributions in ``directory`` whose RECORD lists ``rclpy/__init__.py``."""
    owners = []
    for name, info in _dist_infos(directory):
        if "rclpy" not in name:
            continue
        try:
            record = (info / "RECORD").read_text(errors="replace")
        except OSError:
            continue
        if any(line.split(",", 1)[0] == "rclpy/__init__.py" for line in record.splitlines()):
            owners.append(name)
    return tuple(sorted(set(owners)))


def _ros_wheel_names(directory: Path) -> list[str]:
    """Every ``ros-*`` / rclpy / rmw distribution installed in ``directory`` (what to uninstall)."""
    return sorted({name for name, _ in _dist_infos(directory)
                   if name.startswith("ros-") or name in ("rclpy", "rmw-dds-common")})


def _ament_sites(environ: Mapping[str, str]) -> list[Path]:
    """The Python package folders of every prefix on ``AMENT_PREFIX_PATH``."""
    sites: list[Path] = []
    for prefix in filter(None, environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)):
        for pattern in ("lib/python3*/site-packages", "lib/python3*/dist-packages",
                        "local/lib/python3*/dist-packages"):
            sites.extend(Path(p) for p in sorted(glob.glob(os.path.join(prefix, pattern))))
    return sites


def rclpy_stacks(path: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> list[RclpyStack]:
    """Every distinct directory holding ``rclpy`` on ``path`` (default ``sys.path``) or under a prefix
    of ``AMENT_PREFIX_PATH`` in ``environ`` (default ``os.environ``), in search order. No import."""
    path = list(sys.path if path is None else path)
    environ = os.environ if environ is None else environ
    seen: set[str] = set()
    stacks: list[RclpyStack] = []
    candidates = [(Path(p or "."), "sys.path") for p in path]
    candidates += [(p, "AMENT_PREFIX_PATH") for p in _ament_sites(environ)]
    for directory, source in candidates:
        try:
            if not _has_rclpy(directory):
                continue
            key = os.path.realpath(directory)
        except OSError:
            continue
        if key in seen:
            continue
        seen.add(key)
        owners = _rclpy_owners(directory)
        wheel_meta = tuple(n for n in _ros_wheel_names(directory) if n.endswith("rclpy"))
        kind = "wheels" if owners else "system"
        dists = tuple(sorted(set(owners) | set(wheel_meta))) if owners else ()
        stacks.append(RclpyStack(directory, kind, source, _distro_of(directory, environ, dists), dists))
    return stacks


def check_single_rclpy(path: Sequence[str] | None = None,
                       environ: Mapping[str, str] | None = None) -> RclpyStack | None:
    """The one rclpy stack this interpreter loads (None when there is none).

    Raises :class:`RosStackConflict` naming both stacks and which to remove when more than one
    directory provides ``rclpy`` (e.g. the PyPI wheels in the venv and a sourced /opt/ros/humble).
    """
    stacks = rclpy_stacks(path, environ)
    if len(stacks) <= 1:
        return stacks[0] if stacks else None
    # keep the system install where there is one (it matches the machine's other ROS packages)
    keep = next((s for s in stacks if s.kind == "system"), stacks[0])
    remove = [s for s in stacks if s is not keep]
    lines = [f"{len(stacks)} rclpy stacks in one interpreter ({sys.executable}): "
             + "; ".join(s.describe() for s in stacks) + "."]
    lines += [f"Keep {keep.describe()}; remove {s.describe()}: {s.removal()}." for s in remove]
    raise RosStackConflict(" ".join(lines))

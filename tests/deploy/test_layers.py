"""The onboard layer runs without the offline extras; verbs that need one name it (exit 3).

A subprocess blocks evo / matplotlib / scipy / pyorbslam3 (and onnxruntime where said) with a
``sys.meta_path`` finder, as on an aircraft installed with ``scripts/setup.sh onboard``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rgbt.extras import EXTRA_OF_MODULE, missing_module

OFFLINE = ("evo", "matplotlib", "scipy", "pyorbslam3")
#: modules of the onboard path: record, preprocess, rectify, segment, drivers, MAVLink, GNSS, CLI
ONBOARD_MODULES = (
    "rgbt.cli", "rgbt.stack", "rgbt.sync", "rgbt.geometry", "rgbt.paths", "rgbt.image", "rgbt.calib",
    "rgbt.sensors.boson", "rgbt.sensors.mavlink", "rgbt.sensors.ubx", "rgbt.sensors.vn100",
    "rgbt.sensors.trigger", "rgbt.bag", "rgbt.seg.stage", "rgbt.seg.backend", "rgbt.hostclock",
    "rgbt.timeref", "rgbt.graph.profile", "rgbt.bag.extract", "rgbt.bag.video", "rgbt.bag.annotate",
    "rgbt.bag.pairs",
)

_BLOCKER = textwrap.dedent("""
    import importlib.abc, sys
    BLOCKED = set(sys.argv[1].split(","))
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
            return None
    sys.meta_path.insert(0, Block())
""")


def _python(code: str, blocked: tuple[str, ...], tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    script = tmp_path / "blocked.py"
    script.write_text(_BLOCKER + textwrap.dedent(code))
    return subprocess.run([sys.executable, str(script), ",".join(blocked), *args], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)


def test_onboard_modules_import_without_offline_extras(tmp_path: Path) -> None:
    proc = _python("""
        import importlib, json, pkgutil
        failed = {}
        for name in sys.argv[2].split(","):
            try:
                importlib.import_module(name)
            except Exception as exc:
                failed[name] = repr(exc)
        print(json.dumps({"failed": failed, "leaked": sorted(m for m in BLOCKED if m in sys.modules)}))
    """, OFFLINE + ("onnxruntime",), tmp_path, ",".join(ONBOARD_MODULES))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"failed": {}, "leaked": []}


def test_attitude_without_scipy(tmp_path: Path) -> None:
    proc = _python("""
        from rgbt.sensors.mavlink import attitude_enu_flu
        print(attitude_enu_flu(0.0, 0.0, 0.0))
    """, OFFLINE, tmp_path)
    assert proc.returncode == 0, proc.stderr
    x, y, z, w = eval(proc.stdout.strip())  # noqa: S307 - our own subprocess prints a tuple
    assert abs(z - 0.5 ** 0.5) < 1e-9 and abs(w - 0.5 ** 0.5) < 1e-9 and abs(x) < 1e-12 and abs(y) < 1e-12


@pytest.mark.parametrize("argv, module, extra", [
    (["vio", "ate", "--ref", "{T}", "--est", "{T}"], "evo", "eval"),
    (["simulate", "--help"], None, None),
])
def test_verbs_name_the_missing_extra(tmp_path: Path, argv: list[str], module: str | None, extra: str | None) -> None:
    traj = tmp_path / "traj.tum"
    traj.write_text("".join(f"{i * 0.1:.1f} {i * 0.1:.1f} 0 0 0 0 0 1\n" for i in range(50)))
    proc = _python("""
        from rgbt.cli import main
        sys.exit(main(sys.argv[2:]))
    """, OFFLINE, tmp_path, *[a.replace("{T}", str(traj)) for a in argv])
    if module is None:  # --help works even where the verb's extra is missing
        assert proc.returncode == 0, proc.stderr
        return
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"rgbt[{extra}]" in lines[0] and "unavailable" in lines[0]


def test_missing_module_message() -> None:
    exc = missing_module("pyorbslam3.core", needed_by="rgbt.vio")
    assert exc.extra == "eval" and "pyorbslam3" in str(exc) and 'rgbt[eval]' in str(exc)
    assert missing_module("onnxruntime").extra == "cpu"
    unknown = missing_module("somethingelse")
    assert unknown.extra is None and "pip install somethingelse" in str(unknown)
    assert set(EXTRA_OF_MODULE.values()) <= {"cpu", "gpu", "eval", "sim", "ros-wheels", "train", "parquet",
                                             "scale"}

"""The built wheel works outside the repository (issue 13, item 4).

Builds the wheel from a copy of the packaging inputs, installs it into a fresh venv (no
``--system-site-packages``), ``cd``s to an empty folder and runs ``rgbt up bench-sim --print``,
``rgbt image normalize`` and ``rgbt demo --duration 5 --no-vio``. Checks that rgbt runs from the
venv (not the checkout), finds its stack / profiles / model in the package data, and writes
nothing into site-packages.

Third-party dependencies: by default the fresh venv sees the running interpreter's
site-packages through a ``.pth`` file (third-party packages only: the checkout's editable rgbt
finder is not carried over), because a full install of the demo set takes ~5 min here.
``RGBT_WHEEL_FULL=1`` installs them instead with ``pip install -c locks/<target>.txt wheel[demo]``.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from rgbt.paths import IN_CHECKOUT, REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.ros, pytest.mark.skipif(not IN_CHECKOUT, reason="builds from the source checkout")]

#: What the wheel is built from (rgbt/data/ holds symlinks into calib/, launch/, engines/, nodes/).
PACKAGING_INPUTS = ("pyproject.toml", "README.md", "LICENSE", "rgbt", "calib", "launch", "nodes", "engines")


def _copy_sources(dst: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc", "cache", "*.engine", "*.plan")
    for name in PACKAGING_INPUTS:
        src = REPO_ROOT / name
        if src.is_dir():
            shutil.copytree(src, dst / name, symlinks=True, ignore=ignore)
        elif src.exists():
            shutil.copy2(src, dst / name)


def _overlay_pth(venv_site: Path) -> None:
    """Let the fresh venv import the running interpreter's third-party packages (not its rgbt)."""
    lines = []
    for sp in dict.fromkeys(site.getsitepackages() + [sysconfig.get_paths()["purelib"]]):
        lines.append(sp)
        for pth in sorted(Path(sp).glob("*.pth")):
            if pth.name.startswith("__editable__") or "rgbt" in pth.name:
                continue
            lines += [ln for ln in pth.read_text().splitlines() if ln.startswith("import ")]
    (venv_site / "zz_rgbt_test_deps.pth").write_text("\n".join(lines) + "\n")


def _run(cmd: list[str], cwd: Path, env: dict, timeout: float) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{cmd} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _site_files(venv_site: Path) -> set[str]:
    return {str(p.relative_to(venv_site)) for p in (venv_site / "rgbt").rglob("*")
            if "__pycache__" not in p.parts}


@pytest.mark.timeout(600)
def test_wheel_runs_from_an_empty_folder(tmp_path: Path, ros_env: dict) -> None:
    src, dist, venv, work = (tmp_path / n for n in ("src", "dist", "venv", "work"))
    for d in (src, dist, work):
        d.mkdir()
    _copy_sources(src)
    base_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(src), "-w", str(dist)], tmp_path,
         base_env, 300)
    wheels = list(dist.glob("rgbt-*.whl"))
    assert len(wheels) == 1, wheels

    _run([sys.executable, "-m", "venv", str(venv)], tmp_path, base_env, 120)
    py = venv / "bin" / "python"
    venv_site = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          tmp_path, base_env, 60).stdout.strip())
    if os.environ.get("RGBT_WHEEL_FULL") == "1":
        tag = f"py{sys.version_info[0]}{sys.version_info[1]}-{platform.machine()}"
        lock = REPO_ROOT / "locks" / f"{tag}.txt"
        cons = ["-c", str(lock)] if lock.is_file() else []
        _run([str(py), "-m", "pip", "install", "-q", *cons, f"{wheels[0]}[demo]"], tmp_path, base_env, 600)
    else:
        _run([str(py), "-m", "pip", "install", "-q", "--no-deps", str(wheels[0])], tmp_path, base_env, 300)
        _overlay_pth(venv_site)

    env = {k: v for k, v in ros_env.items() if k != "FASTRTPS_DEFAULT_PROFILES_FILE"}
    env = {**base_env, **env, "XDG_DATA_HOME": str(tmp_path / "xdg"), "RGBT_CACHE": str(tmp_path / "cache")}
    env.pop("RGBT_BAGS", None)
    env.pop("FASTRTPS_DEFAULT_PROFILES_FILE", None)
    rgbt = str(venv / "bin" / "rgbt")

    where = json.loads(_run([str(py), "-c", (
        "import json, rgbt, rgbt.paths as p; print(json.dumps({'file': rgbt.__file__, 'checkout': p.IN_CHECKOUT,"
        " 'stack': str(p.DEFAULT_STACK), 'launch': str(p.LAUNCH_DIR), 'bags': str(p.BAGS_DIR),"
        " 'engine': str(p.ENGINES_DIR / 'sim_thermal_seg.onnx')}))")], work, env, 60).stdout)
    assert Path(where["file"]).is_relative_to(venv_site), where
    assert not where["checkout"]
    for key in ("stack", "launch", "engine"):
        assert Path(where[key]).is_relative_to(venv_site / "rgbt" / "data") and Path(where[key]).exists(), where
    assert Path(where["bags"]) == tmp_path / "xdg" / "rgbt" / "bags"
    before = _site_files(venv_site)

    printed = _run([rgbt, "up", "bench-sim", "--print"], work, env, 120).stdout
    assert "virtual_stack" in printed and "recorder" in printed

    rng = np.random.default_rng(0)
    raw = (7000 + 2000 * rng.random((64, 80))).astype(np.uint16)
    np.save(work / "raw.npy", raw)
    _run([rgbt, "image", "normalize", "raw.npy", "norm.npy"], work, env, 120)
    norm = np.load(work / "norm.npy")
    assert norm.shape == raw.shape and norm.dtype == np.float32
    assert 0.0 <= float(norm.min()) and float(norm.max()) <= 1.0 and float(norm.std()) > 0.05

    proc = _run([rgbt, "demo", "--duration", "5", "--no-vio", "--json"], work, env, 420)
    reports = list((tmp_path / "xdg" / "rgbt" / "bags").glob("demo-*/report.md"))
    assert len(reports) == 1, (proc.stdout[-2000:], proc.stderr[-2000:])
    assert "synthetic" in reports[0].read_text().lower()
    assert _site_files(venv_site) == before, "rgbt wrote into site-packages"
    assert sorted(p.name for p in work.iterdir()) == ["norm.npy", "raw.npy"], "rgbt wrote into the cwd"

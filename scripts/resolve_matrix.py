#!/usr/bin/env python3
"""Resolution matrix: does each install layer of rgbt resolve from wheels only on each target?

For (CPython 3.10, 3.12) x (x86_64, aarch64) Linux (manylinux_2_28), each layer of
``pyproject.toml`` is resolved with ``uv pip compile --only-binary :all:`` (package metadata only:
nothing is downloaded to install, no hardware needed). Prints one table, target x layer ->
``ok`` or the package that does not resolve and why.

    python scripts/resolve_matrix.py [--markdown docs/DEPLOY_MATRIX.md] [--json]

Exit 1 when a *required* cell fails: ``onboard`` (core + cpu) and ``onboard-floors`` (the same
at the lowest versions pyproject allows) everywhere, ``eval`` on x86_64. The other cells are
reported only. ``UV=/path/to/uv`` picks the uv binary (default: the ``uv`` package or PATH).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHONS = ("3.10", "3.12")
ARCHES = ("x86_64", "aarch64")
#: layer -> (extras, extra uv flags)
LAYERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "onboard": (("cpu",), ()),
    "onboard-floors": (("cpu",), ("--resolution", "lowest-direct")),
    "gpu": (("gpu",), ()),
    "sim": (("sim",), ()),
    "eval": (("eval",), ()),
    "ros-wheels": (("ros-wheels",), ()),
}


def required(layer: str, arch: str) -> bool:
    """Whether a failing cell fails the matrix (onboard everywhere, eval on x86_64)."""
    return layer.startswith("onboard") or (layer == "eval" and arch == "x86_64")


@dataclass
class Cell:
    """One target x layer result; ``package``/``reason`` are empty when it resolves."""

    python: str
    arch: str
    layer: str
    ok: bool
    required: bool
    package: str = ""
    reason: str = ""
    resolved: int = 0
    seconds: float = 0.0


def find_uv() -> str:
    """The uv binary: ``$UV``, the ``uv`` Python package, then PATH; raises FileNotFoundError."""
    if os.environ.get("UV"):
        return os.environ["UV"]
    try:
        from uv import find_uv_bin  # type: ignore[import-not-found]

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        pass
    found = shutil.which("uv") or shutil.which("uv", path=str(Path(sys.executable).parent))
    if not found:
        raise FileNotFoundError("uv is not installed: pip install uv (part of the dev extra)")
    return found


_CULPRIT = [
    re.compile(r"Because (?:only )?([A-Za-z0-9_.\-]+)[^\n]*? has no (?:usable )?wheels"),
    re.compile(r"Because (?:all versions of |only )?([A-Za-z0-9_.\-]+)[^\n]*? (?:has no|have no|are not available|is not available)"),
    re.compile(r"([A-Za-z0-9_.\-]+)[^\n]*? has no (?:usable )?wheels"),
    re.compile(r"no (?:wheels|versions) of ([A-Za-z0-9_.\-]+)"),
]


def _culprit(stderr: str) -> tuple[str, str]:
    text = stderr.strip()
    for rx in _CULPRIT:
        m = rx.search(text)
        if m:
            pkg = m.group(1).split("{")[0].split("[")[0]
            break
    else:
        pkg = "?"
    # uv wraps its explanation over several lines: take the first paragraph after "cause:" / "╰─▶"
    m = re.search(r"(?:cause:|╰─▶)\s*(.*?)(?:\n\s*\n|\Z)", text, re.S)
    reason = " ".join((m.group(1) if m else text).split())
    return pkg, (reason[:200] + "...") if len(reason) > 200 else reason


def resolve(uv: str, python: str, arch: str, layer: str, timeout_s: float = 100.0) -> Cell:
    """Resolve one cell with ``uv pip compile`` (wheels only, metadata only)."""
    extras, flags = LAYERS[layer]
    cmd = [uv, "pip", "compile", str(ROOT / "pyproject.toml"), "--quiet", "--no-header", "--no-annotate",
           "--only-binary", ":all:", "--python-version", python, "--python-platform", f"{arch}-manylinux_2_28",
           "--no-config", "--no-python-downloads", *flags]
    for extra in extras:
        cmd += ["--extra", extra]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return Cell(python, arch, layer, False, required(layer, arch), "?", f"uv timed out after {timeout_s:.0f} s",
                    seconds=time.monotonic() - t0)
    dt = time.monotonic() - t0
    if proc.returncode == 0:
        n = sum(1 for ln in proc.stdout.splitlines() if "==" in ln and not ln.startswith("#"))
        return Cell(python, arch, layer, True, required(layer, arch), resolved=n, seconds=dt)
    pkg, reason = _culprit(proc.stderr)
    return Cell(python, arch, layer, False, required(layer, arch), pkg, reason, seconds=dt)


def run_matrix(uv: str | None = None, jobs: int = 6) -> list[Cell]:
    """Every target x layer cell, in table order."""
    uv = uv or find_uv()
    keys = [(py, arch, layer) for py in PYTHONS for arch in ARCHES for layer in LAYERS]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(lambda k: resolve(uv, *k), keys))


def table(cells: list[Cell]) -> str:
    """The matrix as a Markdown table (rows: targets, columns: layers; ``*`` marks required cells)."""
    layers = list(LAYERS)
    head = "| target | " + " | ".join(layers) + " |\n|---|" + "---|" * len(layers) + "\n"
    rows = []
    for py in PYTHONS:
        for arch in ARCHES:
            out = []
            for layer in layers:
                c = next(c for c in cells if (c.python, c.arch, c.layer) == (py, arch, layer))
                mark = "*" if c.required else ""
                out.append(f"ok{mark} ({c.resolved})" if c.ok else f"**FAILS{mark}**: `{c.package}`")
            rows.append(f"| cp{py.replace('.', '')} {arch} | " + " | ".join(out) + " |")
    notes = [f"- cp{c.python.replace('.', '')} {c.arch} {c.layer}: `{c.package}`: {c.reason}"
             for c in cells if not c.ok]
    return head + "\n".join(rows) + "\n" + ("\nWhy cells fail:\n\n" + "\n".join(notes) + "\n" if notes else "")


def markdown(cells: list[Cell]) -> str:
    """``docs/DEPLOY_MATRIX.md``: the table and how it was made."""
    return ("# Install matrix\n\n"
            "Generated by `python scripts/resolve_matrix.py --markdown docs/DEPLOY_MATRIX.md` (also run by\n"
            "`tests/deploy/test_resolve_matrix.py`). Each cell resolves the layer of `pyproject.toml` with\n"
            "`uv pip compile --only-binary :all: --python-platform <arch>-manylinux_2_28 --python-version <py>`\n"
            "(package metadata only). `ok (N)`: resolves to N packages. `*`: required (the test fails\n"
            "otherwise): `onboard` = core + `cpu`; `onboard-floors` = the same at the lowest versions\n"
            "pyproject allows. `pyorbslam3` has x86_64 Linux wheels only: the `eval` extra skips it\n"
            "elsewhere by a platform marker and `rgbt vio` then names the missing extra (exit 3).\n"
            "`gpu` on aarch64 (Jetson) holds only `onnx` on purpose: JetPack ships TensorRT.\n"
            "`ros-wheels` is reported, not required: on x86_64 it fails here only because `empy` is a\n"
            "pure-Python sdist (pip builds it, which is how `scripts/setup.sh` installs it on this\n"
            "machine); there are no aarch64 ROS wheels, so Jetsons use their system ROS 2\n"
            "(`scripts/setup.sh system-ros`).\n\n" + table(cells))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", type=Path, help="also write the table (with notes) to this file")
    ap.add_argument("--json", action="store_true", help="print the cells as JSON instead of the table")
    args = ap.parse_args(argv)
    try:
        cells = run_matrix()
    except FileNotFoundError as exc:
        print(f"resolve_matrix: {exc}", file=sys.stderr)
        return 3
    if args.markdown:
        args.markdown.write_text(markdown(cells), encoding="utf-8")
    print(json.dumps([asdict(c) for c in cells], indent=1) if args.json else table(cells))
    return 1 if any(c.required and not c.ok for c in cells) else 0


if __name__ == "__main__":
    sys.exit(main())

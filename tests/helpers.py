"""Helpers importable from any test module (``from helpers import run_rgbt``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rgbt.paths import REPO_ROOT


def run_rgbt(*args: str, check: bool = True, timeout: float = 600, env: dict | None = None,
             cwd: str | Path | None = None) -> subprocess.CompletedProcess:
    """Run the ``rgbt`` command of this checkout in a subprocess (``python -m rgbt``)."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + full_env.get("PYTHONPATH", "")
    if env:
        full_env.update(env)
    proc = subprocess.run([sys.executable, "-m", "rgbt", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=full_env, cwd=cwd)
    if check and proc.returncode != 0:
        raise AssertionError(f"rgbt {' '.join(map(str, args))} exited {proc.returncode}\n"
                             f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc

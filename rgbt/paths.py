"""Where rgbt finds its own files and the shared reference data."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_STACK = REPO_ROOT / "calib" / "stack.yaml"
ENGINES_DIR = REPO_ROOT / "engines"
LAUNCH_DIR = REPO_ROOT / "launch"
BAGS_DIR = REPO_ROOT / "bags"


def data_dir() -> Path:
    """The shared reference data (CART calibrations, real fixtures).

    Read from ``RGBT_DATA``; defaults to ``../shared/data`` beside the repository.
    """
    return Path(os.environ.get("RGBT_DATA", REPO_ROOT.parent / "shared" / "data"))


def cache_dir() -> Path:
    """A writable cache (vocabularies, built engines); ``RGBT_CACHE`` or ``~/.cache/rgbt``."""
    path = Path(os.environ.get("RGBT_CACHE", Path.home() / ".cache" / "rgbt"))
    path.mkdir(parents=True, exist_ok=True)
    return path

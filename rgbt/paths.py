"""Where rgbt finds its own files, the shared reference data, and where user data goes.

rgbt's own files (default stack, launch profiles, Fast DDS profile, nodes, demo model) live in one
tree with the layout ``calib/``, ``launch/``, ``engines/``, ``nodes/``:

- run from a source checkout, that tree is the checkout itself (``REPO_ROOT``);
- installed from a wheel, it is the package data ``rgbt/data/`` (the checkout's ``rgbt/data/``
  holds symlinks to the same files, which the wheel build copies in).

User data never goes into the package: bags default to ``RGBT_BAGS``, else ``bags/`` of the
checkout, else ``$XDG_DATA_HOME/rgbt/bags`` (``~/.local/share/rgbt/bags``); caches to
``RGBT_CACHE`` or ``$XDG_CACHE_HOME/rgbt`` (``~/.cache/rgbt``). Every verb that writes takes
``--out``.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parent.parent


def _is_checkout(root: Path) -> bool:
    return (root / "pyproject.toml").is_file() and (root / "calib" / "stack.yaml").is_file()


def package_data_root() -> Path:
    """The installed ``rgbt/data`` tree (same layout as the checkout: calib/, launch/, engines/, nodes/)."""
    return Path(str(resources.files("rgbt") / "data"))


#: True when rgbt runs from a source checkout (editable install or ``PYTHONPATH``).
IN_CHECKOUT = _is_checkout(_CHECKOUT)
#: The root of rgbt's own files: the checkout, or the installed package data (see module docstring).
REPO_ROOT = _CHECKOUT if IN_CHECKOUT else package_data_root()
DEFAULT_STACK = REPO_ROOT / "calib" / "stack.yaml"
ENGINES_DIR = REPO_ROOT / "engines"
LAUNCH_DIR = REPO_ROOT / "launch"
FASTDDS_PROFILE = LAUNCH_DIR / "fastdds_loopback.xml"


def _xdg(var: str, default: str) -> Path:
    value = os.environ.get(var, "")
    return Path(value) if value and Path(value).is_absolute() else Path.home() / default


def user_data_dir() -> Path:
    """``$XDG_DATA_HOME/rgbt`` (default ``~/.local/share/rgbt``); not created here."""
    return _xdg("XDG_DATA_HOME", ".local/share") / "rgbt"


def bags_dir() -> Path:
    """Default bag / report output: ``RGBT_BAGS``, else the checkout's ``bags/``, else ``user_data_dir()/bags``."""
    if os.environ.get("RGBT_BAGS"):
        return Path(os.environ["RGBT_BAGS"])
    return _CHECKOUT / "bags" if IN_CHECKOUT else user_data_dir() / "bags"


BAGS_DIR = bags_dir()


def data_dir() -> Path:
    """The shared reference data (CART calibrations, real fixtures).

    Read from ``RGBT_DATA``; defaults to ``../shared/data`` beside a checkout, else
    ``user_data_dir()/shared-data`` (absent unless the user puts it there).
    """
    if os.environ.get("RGBT_DATA"):
        return Path(os.environ["RGBT_DATA"])
    return _CHECKOUT.parent / "shared" / "data" if IN_CHECKOUT else user_data_dir() / "shared-data"


def cache_dir() -> Path:
    """A writable cache (vocabularies, built engines); ``RGBT_CACHE`` or ``$XDG_CACHE_HOME/rgbt``."""
    path = Path(os.environ["RGBT_CACHE"]) if os.environ.get("RGBT_CACHE") else _xdg("XDG_CACHE_HOME", ".cache") / "rgbt"
    path.mkdir(parents=True, exist_ok=True)
    return path

"""Every Python file of the project parses as Python 3.10 (requires-python >= 3.10; JetPack 6 / Humble)."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import pytest

from rgbt.paths import IN_CHECKOUT, REPO_ROOT

SKIP_DIRS = {".venv", "build", "dist", ".git", "__pycache__", "install", "log", ".pytest_cache"}


def _sources() -> list[Path]:
    out = []
    for path in REPO_ROOT.rglob("*.py"):
        rel = path.relative_to(REPO_ROOT)
        if SKIP_DIRS.intersection(rel.parts) or path.is_symlink() or not path.is_file():
            continue
        out.append(path)
    return sorted(out)


@pytest.mark.slow
@pytest.mark.skipif(not IN_CHECKOUT, reason="needs the source checkout")
def test_every_file_parses_as_python_310() -> None:
    files = _sources()
    assert len(files) > 50 and any(p.parts[-2:] == ("rgbt", "paths.py") for p in files)
    bad = []
    for path in files:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SyntaxWarning)
                ast.parse(path.read_text(encoding="utf-8"), filename=str(path), feature_version=(3, 10))
        except SyntaxError as exc:
            bad.append(f"{path.relative_to(REPO_ROOT)}:{exc.lineno}: {exc.msg}")
    assert not bad, "not Python 3.10 syntax:\n" + "\n".join(bad)


def test_the_check_catches_newer_syntax() -> None:
    with pytest.raises(SyntaxError):
        ast.parse("type Alias = int\n", feature_version=(3, 10))  # PEP 695, Python 3.12
    with pytest.raises(SyntaxError):
        ast.parse("try:\n    pass\nexcept* ValueError:\n    pass\n", feature_version=(3, 10))  # 3.11

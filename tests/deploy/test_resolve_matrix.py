"""The install matrix: every onboard cell resolves from wheels only; eval resolves on x86_64.

Runs ``scripts/resolve_matrix.py`` (uv, metadata only, needs the package index) and writes the table
to ``docs/DEPLOY_MATRIX.md`` and the terminal summary.
"""

from __future__ import annotations

import importlib.util
import sys
import time

import pytest

from rgbt.paths import IN_CHECKOUT, REPO_ROOT

pytestmark = pytest.mark.skipif(not IN_CHECKOUT, reason="needs the source checkout (pyproject.toml)")


def _load_script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("resolve_matrix", REPO_ROOT / "scripts" / "resolve_matrix.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_resolution_matrix(pytestconfig: pytest.Config) -> None:
    rm = _load_script()
    try:
        uv = rm.find_uv()
    except FileNotFoundError as exc:
        pytest.skip(f"{exc} (uv is in the dev extra)")
    t0 = time.monotonic()
    cells = rm.run_matrix(uv)
    dt = time.monotonic() - t0
    table = rm.table(cells)
    (REPO_ROOT / "docs" / "DEPLOY_MATRIX.md").write_text(rm.markdown(cells), encoding="utf-8")
    summary = getattr(pytestconfig, "rgbt_deploy_summary", [])
    pytestconfig.rgbt_deploy_summary = summary  # type: ignore[attr-defined]
    summary.append(f"{table}\n(resolved {len(cells)} cells in {dt:.0f} s)")
    assert {(c.python, c.arch) for c in cells} == {(p, a) for p in ("3.10", "3.12") for a in ("x86_64", "aarch64")}
    failing = [c for c in cells if c.required and not c.ok]
    assert not failing, "required cells do not resolve:\n" + table
    assert dt < 120, f"matrix took {dt:.0f} s (budget 120 s)\n{table}"


def test_culprit_names_the_package() -> None:
    rm = _load_script()
    err = ("  × No solution found when resolving dependencies:\n"
           "  ╰─▶ Because pyorbslam3==0.1.1 has no usable wheels and only pyorbslam3==0.1.1 is available, "
           "we can conclude that all versions of pyorbslam3 cannot be used.\n")
    pkg, reason = rm._culprit(err)
    assert pkg == "pyorbslam3"
    assert "no usable wheels" in reason
    assert rm.required("onboard", "aarch64") and rm.required("eval", "x86_64")
    assert not rm.required("eval", "aarch64") and not rm.required("ros-wheels", "x86_64")

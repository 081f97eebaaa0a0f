"""Deploy tests: the resolution matrix table is printed in the terminal summary (no ``-s`` needed)."""

from __future__ import annotations

def pytest_terminal_summary(terminalreporter, exitstatus, config):  # type: ignore[no-untyped-def]
    """Print what the deploy tests collected (the target x layer matrix)."""
    summary = getattr(config, "rgbt_deploy_summary", [])
    if summary:
        terminalreporter.section("rgbt install matrix (docs/DEPLOY_MATRIX.md)")
        for block in summary:
            terminalreporter.write_line(block)

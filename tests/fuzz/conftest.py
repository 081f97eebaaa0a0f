"""Prints the fuzz table (parser × cases × crashes × hangs) at the end of any run that fuzzed."""

from __future__ import annotations

from fuzz.harness import TALLY, table


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001
    if TALLY:
        terminalreporter.write_sep("=", "fuzz: cases per parser (only RgbtError may escape)")
        terminalreporter.write_line(table())

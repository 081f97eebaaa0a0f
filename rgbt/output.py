"""Shared output helpers for verbs: JSON for machines, rich tables for people."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import Any

from rgbt.fileio import to_json


def print_json(data: Any) -> None:
    sys.stdout.write(to_json(data) + "\n")


def print_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """Print a table to stderr-safe stdout with rich (plain text when not a terminal)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for col in columns:
        table.add_column(str(col))
    for row in rows:
        table.add_row(*[f"{v:.3f}" if isinstance(v, float) else str(v) for v in row])
    Console().print(table)

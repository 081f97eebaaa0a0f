"""Shared output helpers for verbs: JSON for machines, rich tables for people."""

from __future__ import annotations

import json
import sys
from typing import Any, Iterable, Sequence

import numpy as np


def _default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if hasattr(obj, "model_dump"):
        return obj.model_dump()
    if hasattr(obj, "__fspath__"):
        return str(obj)
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def to_json(data: Any) -> str:
    return json.dumps(data, indent=2, default=_default)


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

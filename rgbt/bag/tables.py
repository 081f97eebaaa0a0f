"""Non-image topics as tables: each message flattened to one row, one CSV (or Parquet) file per topic.

Flattening: nested fields join with ``.`` (``pose.position.x``); a ``builtin_interfaces/Time``
(ROS 1 ``time``) becomes one integer-nanosecond column (``header.stamp`` -> ``header.stamp_ns``);
a numeric array of up to :data:`MAX_EXPANDED` values becomes one column per element
(``position_covariance.0`` ...), a longer one or a list of messages a JSON string. Every row starts
with ``log_ns`` (the bag's log time, int ns).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from rgbt.errors import MissingCapability

MAX_EXPANDED = 36  # 6x6 covariance


def _names(msg: Any) -> list[str]:
    """Field names of a rosbags message, without ``__msgtype__`` and the constants (UPPER_CASE, as ROS
    requires of constants; rosbags keeps them as dataclass fields with defaults)."""
    if not dataclasses.is_dataclass(msg):
        return []
    return [f.name for f in dataclasses.fields(msg) if not f.name.startswith("__") and not f.name.isupper()]


def _is_time(value: Any) -> bool:
    return _names(value) == ["sec", "nanosec"]


def flatten(msg: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(column, value)`` pairs of a rosbags message (see the module docstring)."""
    for name in _names(msg):
        value = getattr(msg, name)
        key = f"{prefix}{name}"
        if _is_time(value):
            yield f"{key}_ns", int(value.sec) * 1_000_000_000 + int(value.nanosec)
        elif dataclasses.is_dataclass(value):
            yield from flatten(value, key + ".")
        elif isinstance(value, np.ndarray):
            if value.size <= MAX_EXPANDED and value.dtype.kind in "biuf":
                for i, v in enumerate(value.ravel().tolist()):
                    yield f"{key}.{i}", v
            else:
                yield key, json.dumps(value.tolist())
        elif isinstance(value, (list, tuple)):
            yield key, json.dumps([_plain(v) for v in value])
        elif isinstance(value, bytes):
            yield key, value.hex()
        else:
            yield key, value


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return dict(flatten(value))
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def table_name(topic: str) -> str:
    """File stem of a topic's table: ``/gps/fix`` -> ``gps__fix``."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", topic.strip("/").replace("/", "__")) or "root"


class TopicTables:
    """Writes rows per topic: CSV streamed as messages come, or Parquet (pyarrow) at :meth:`close`."""

    def __init__(self, root: Path, fmt: str = "csv") -> None:
        if fmt not in ("csv", "parquet"):
            raise ValueError(f"table format {fmt!r}: expected csv or parquet")
        if fmt == "parquet":
            try:
                import pyarrow  # noqa: F401
            except ModuleNotFoundError:
                raise MissingCapability("the Python package 'pyarrow' (needed by --tables parquet)",
                                        extra="parquet", hint="or keep the default CSV tables") from None
        self.root, self.fmt = Path(root), fmt
        self.root.mkdir(parents=True, exist_ok=True)
        self._csv: dict[str, tuple[Any, Any, list[str]]] = {}
        self._rows: dict[str, list[dict]] = {}
        self.rows: dict[str, int] = {}

    def path(self, topic: str) -> Path:
        return self.root / f"{table_name(topic)}.{self.fmt}"

    def add(self, topic: str, log_ns: int, msg: Any) -> None:
        row = {"log_ns": int(log_ns), **dict(flatten(msg))}
        self.rows[topic] = self.rows.get(topic, 0) + 1
        if self.fmt == "parquet":
            self._rows.setdefault(topic, []).append(row)
            return
        if topic not in self._csv:
            fh = self.path(topic).open("w", newline="")
            cols = list(row)
            writer = csv.writer(fh)
            writer.writerow(cols)
            self._csv[topic] = (fh, writer, cols)
        _, writer, cols = self._csv[topic]
        writer.writerow([row.get(c, "") for c in cols])

    def close(self) -> dict[str, str]:
        """Finish every file; returns topic -> file path."""
        for fh, _, _ in self._csv.values():
            fh.close()
        if self.fmt == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            for topic, rows in self._rows.items():
                pq.write_table(pa.Table.from_pylist(rows), self.path(topic))
        out = {t: str(self.path(t)) for t in self.rows}
        self._csv, self._rows = {}, {}
        return out

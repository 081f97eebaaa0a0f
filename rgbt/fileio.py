"""Writing files whole, and JSON of rgbt's values: one place for both.

:func:`write_atomic` writes a temporary file beside the target and renames it over it, so a reader
(or a power loss, with ``fsync``) sees the old file or the new one, never a part. :func:`to_json`
encodes what rgbt's results hold (numpy scalars and arrays, pydantic models, paths).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np


def json_default(obj: Any) -> Any:
    """``json.dumps(default=...)`` for rgbt's values: numpy scalars -> Python numbers, arrays ->
    lists, pydantic models -> their dump, paths -> strings."""
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if hasattr(obj, "model_dump"):
        return obj.model_dump()
    if hasattr(obj, "__fspath__"):
        return str(obj)
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def to_json(data: Any, indent: int | None = 2) -> str:
    """``data`` as JSON text (:func:`json_default` for numpy, pydantic and path values)."""
    return json.dumps(data, indent=indent, default=json_default)


def fsync_path(path: str | os.PathLike[str]) -> None:
    """``fsync`` a file or a directory by its path (a directory: the names in it survive a power loss)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: str | os.PathLike[str], data: str | bytes, *, fsync: bool = False,
                 unique: bool = False) -> None:
    """Write ``data`` to ``path`` whole: into ``<name>.tmp`` beside it, then renamed over it.

    ``fsync``: the file and its directory are on disk when this returns (a power loss keeps the
    old file or the new one). ``unique``: the temporary file's name holds this process's id, for a
    file that several processes may write at once (the last rename wins).
    """
    path = Path(path)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp" if unique else f"{path.name}.tmp")
    with open(tmp, "wb" if isinstance(data, bytes) else "w") as fh:
        fh.write(data)
        if fsync:
            fh.flush()
            os.fsync(fh.fileno())
    os.replace(tmp, path)
    if fsync:
        fsync_path(path.parent)


def write_json_atomic(path: str | os.PathLike[str], data: Any, *, indent: int | None = None,
                      fsync: bool = False, unique: bool = False) -> None:
    """:func:`write_atomic` of :func:`to_json` ``(data, indent)`` (no trailing newline)."""
    write_atomic(path, to_json(data, indent), fsync=fsync, unique=unique)

"""Whole-file writes and JSON of rgbt's values (``rgbt.fileio``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rgbt.fileio import to_json, write_atomic, write_json_atomic


def test_write_atomic_replaces_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    path.write_text("old")
    write_atomic(path, "new")
    write_atomic(tmp_path / "frame.bin", b"\x00\xff")
    write_atomic(tmp_path / "shared.json", "x", fsync=True, unique=True)
    assert path.read_text() == "new" and (tmp_path / "frame.bin").read_bytes() == b"\x00\xff"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["frame.bin", "shared.json", "status.json"]


def test_json_of_numpy_paths_and_models(tmp_path: Path) -> None:
    from pydantic import BaseModel

    class M(BaseModel):
        a: int = 1

    data = {"i": np.int64(3), "f": np.float32(0.5), "a": np.arange(2), "p": Path("x/y"), "m": M()}
    assert json.loads(to_json(data)) == {"i": 3, "f": 0.5, "a": [0, 1], "p": "x/y", "m": {"a": 1}}
    write_json_atomic(tmp_path / "d.json", {"n": np.uint8(7)}, indent=2, fsync=True)
    assert (tmp_path / "d.json").read_text() == '{\n  "n": 7\n}'

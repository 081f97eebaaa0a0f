"""scripts/fetch_data.py: the manifest matches the reference data, checksums are enforced, offline fails clearly.

No test downloads anything: the network is replaced by local files.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import sys
import urllib.error
from pathlib import Path

import pytest

from helpers import need
from rgbt.paths import REPO_ROOT, data_dir

SCRIPT = REPO_ROOT / "scripts" / "fetch_data.py"


def _load():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("fetch_data", SCRIPT)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


fetch_data = _load()


def _manifest(tmp_path: Path, files: dict[str, bytes]) -> Path:
    lines = [f"{hashlib.sha256(data).hexdigest()}  {rel}  https://example.invalid/{rel}" for rel, data in files.items()]
    path = tmp_path / "manifest.txt"
    path.write_text("# test manifest\n\n" + "\n".join(lines) + "\n")
    return path


def test_manifest_lists_every_reference_file_with_its_checksum() -> None:
    """Every file of the data folder (but its SOURCES.md) is in the manifest, and all verify."""
    entries = fetch_data.read_manifest()
    root = data_dir()
    need(root / entries[0].path, "reference data")
    on_disk = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.name != "SOURCES.md")
    assert sorted(e.path for e in entries) == on_disk
    assert all(e.url.startswith("https://") for e in entries)
    assert fetch_data.verify(root, entries) == {}
    assert fetch_data.main(["--check", str(root)]) == 0


def test_check_names_missing_and_corrupt_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = _manifest(tmp_path, {"a/one.bin": b"one", "two.txt": b"two", "three.txt": b"three"})
    root = tmp_path / "data"
    (root / "a").mkdir(parents=True)
    (root / "a" / "one.bin").write_bytes(b"one")
    (root / "two.txt").write_bytes(b"TWO")
    assert fetch_data.main(["--check", str(root), "--manifest", str(manifest)]) == 1
    err = capsys.readouterr().err
    assert "two.txt: checksum mismatch" in err and "three.txt: missing" in err and "one.bin" not in err


def test_fetch_downloads_verifies_and_keeps_good_files(tmp_path: Path) -> None:
    files = {"a/one.bin": b"one", "two.txt": b"two"}
    entries = fetch_data.read_manifest(_manifest(tmp_path, files))
    root = tmp_path / "data"
    (root / "a").mkdir(parents=True)
    (root / "a" / "one.bin").write_bytes(b"one")  # already good: not fetched again
    asked: list[str] = []

    def opener(url: str, timeout: float) -> io.BytesIO:
        asked.append(url)
        return io.BytesIO(files[url.split("example.invalid/", 1)[1]])

    assert fetch_data.fetch(root, entries, opener) == 0
    assert asked == ["https://example.invalid/two.txt"]
    assert (root / "two.txt").read_bytes() == b"two" and not list(root.rglob("*.part"))


def test_fetch_refuses_a_file_whose_checksum_differs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    entries = fetch_data.read_manifest(_manifest(tmp_path, {"x.txt": b"expected"}))
    root = tmp_path / "data"
    assert fetch_data.fetch(root, entries, lambda url, timeout: io.BytesIO(b"changed upstream")) == 1
    assert not (root / "x.txt").exists() and not list(root.rglob("*.part"))
    err = capsys.readouterr().err
    assert "x.txt" in err and "checksum mismatch" in err


def test_offline_fails_clearly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    entries = fetch_data.read_manifest(_manifest(tmp_path, {"x.txt": b"x", "y.txt": b"y"}))

    def offline(url: str, timeout: float) -> io.BytesIO:
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    assert fetch_data.fetch(tmp_path / "data", entries, offline) == 1
    err = capsys.readouterr().err
    assert "looks offline" in err and "RGBT_DATA" in err and "example.invalid/x.txt" in err
    assert "y.txt" not in err  # it stops at the first unreachable source, not one timeout per file


def test_bad_manifest_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "m.txt"
    path.write_text("abc  ../escape  https://x\n")
    with pytest.raises(ValueError, match="m.txt:1"):
        fetch_data.read_manifest(path)

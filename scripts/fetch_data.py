#!/usr/bin/env python3
"""Download the reference data the tests read (``RGBT_DATA``) from its public sources, checking SHA-256.

    python scripts/fetch_data.py                 # into $RGBT_DATA, else ../shared/data beside the checkout
    python scripts/fetch_data.py --out DIR       # into DIR (then: export RGBT_DATA=DIR)
    python scripts/fetch_data.py --check DIR     # only verify the files already in DIR (no network)

Each file, its checksum and its source URL are one line of ``scripts/data_manifest.txt``. A file already
present with the right checksum is kept; a download is written beside its target and renamed into place
only once its checksum matches. Exit status: 0 all files present and verified, 1 a file missing, wrong
or unreachable (offline: the first download fails and the script stops, saying so), 2 bad usage.

Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

MANIFEST = Path(__file__).resolve().parent / "data_manifest.txt"
CHECKOUT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Entry:
    """One manifest line: the file's SHA-256 (hex), its path under the data folder, its source URL."""

    sha256: str
    path: str
    url: str


def read_manifest(path: Path = MANIFEST) -> list[Entry]:
    """The entries of ``path`` (``SHA256  RELPATH  URL`` per line; ``#`` comments and blank lines skipped)."""
    entries = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split()
        if len(fields) != 3 or len(fields[0]) != 64 or Path(fields[1]).is_absolute() or ".." in Path(fields[1]).parts:
            raise ValueError(f"{path}:{n}: expected 'SHA256  RELATIVE_PATH  URL', got {line!r}")
        entries.append(Entry(fields[0].lower(), fields[1], fields[2]))
    return entries


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of the file at ``path``."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify(root: Path, entries: list[Entry]) -> dict[str, str]:
    """What is wrong under ``root``: relative path -> ``"missing"`` or ``"checksum mismatch"`` (empty: all good)."""
    problems = {}
    for e in entries:
        p = root / e.path
        if not p.is_file():
            problems[e.path] = "missing"
        elif sha256_of(p) != e.sha256:
            problems[e.path] = "checksum mismatch"
    return problems


def download(entry: Entry, root: Path, opener=urllib.request.urlopen) -> None:  # type: ignore[no-untyped-def]
    """Fetch ``entry`` into ``root``; raises ``OSError`` (network) or ``ValueError`` (checksum)."""
    target = root / entry.path
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    with opener(entry.url, timeout=TIMEOUT_S) as resp:
        part.write_bytes(resp.read())
    got = sha256_of(part)
    if got != entry.sha256:
        part.unlink()
        raise ValueError(f"checksum mismatch: expected {entry.sha256}, got {got} (the source changed?)")
    os.replace(part, target)


def default_root() -> Path:
    """``RGBT_DATA``, else ``../shared/data`` beside this checkout (where the tests look)."""
    env = os.environ.get("RGBT_DATA")
    return Path(env) if env else CHECKOUT.parent / "shared" / "data"


def fetch(root: Path, entries: list[Entry], opener=urllib.request.urlopen) -> int:  # type: ignore[no-untyped-def]
    """Download every entry not already good under ``root``; print one line per problem; exit status."""
    todo = [e for e in entries if e.path in verify(root, [e])]
    print(f"{len(entries) - len(todo)} of {len(entries)} files already present and verified in {root}")
    failed: dict[str, str] = {}
    fetched = 0
    for e in todo:
        try:
            download(e, root, opener)
        except urllib.error.HTTPError as exc:
            failed[e.path] = f"cannot download {e.url}: HTTP {exc.code} {exc.reason}"
            continue
        except OSError as exc:  # DNS, refused, timeout: no route to the source
            if not fetched:
                print(f"fetch_data: error: cannot reach {e.url}: {getattr(exc, 'reason', exc)}\n"
                      "fetch_data: this machine looks offline; copy the data folder from a machine that has "
                      "it and point RGBT_DATA at it", file=sys.stderr)
                return 1
            failed[e.path] = f"cannot download {e.url}: {getattr(exc, 'reason', exc)}"
            continue
        except ValueError as exc:
            failed[e.path] = f"{e.url}: {exc}"
            continue
        fetched += 1
        print(f"fetched {e.path}")
    for path, why in failed.items():
        print(f"fetch_data: {path}: {why}", file=sys.stderr)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--out", type=Path, help="data folder to fill (default: $RGBT_DATA, else ../shared/data)")
    group.add_argument("--check", type=Path, metavar="DIR", help="only verify the files in DIR (no network)")
    parser.add_argument("--manifest", type=Path, default=MANIFEST, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    entries = read_manifest(args.manifest)
    if args.check is not None:
        problems = verify(args.check, entries)
        for path, why in problems.items():
            print(f"fetch_data: {args.check / path}: {why}", file=sys.stderr)
        print(f"{len(entries) - len(problems)} of {len(entries)} files verified in {args.check}")
        return 1 if problems else 0
    return fetch(args.out or default_root(), entries)


if __name__ == "__main__":
    sys.exit(main())

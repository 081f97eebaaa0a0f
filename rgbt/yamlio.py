"""Reading and writing calibration YAML with precise errors (file, key, value, expected).

Both ROS camera_info and Kalibr files are plain YAML; OpenVINS and OpenCV prefix theirs with a
``%YAML:1.0`` line that PyYAML rejects, so that line is accepted and dropped here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from rgbt.errors import ConfigError

OPENCV_HEADER = "%YAML:1.0"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's: ~10x faster, same safe types


def read_text(path: str | Path, what: str = "YAML file") -> str:
    """The UTF-8 text of ``path``; :class:`ConfigError` (naming the file and what was expected) when
    it is missing, a directory, unreadable or not UTF-8 text."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(str(path), "<file>", "a directory", f"a {what}")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(str(path), "<file>", None, f"a readable {what} ({exc.strerror or exc})") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(str(path), f"byte {exc.start}", raw[exc.start:exc.start + 4],
                          f"a UTF-8 text {what} (this is binary or another encoding)") from None


MAX_FLOW_DEPTH = 100  # calibration files nest a few levels; PyYAML takes seconds on thousands


def flow_depth(text: str) -> tuple[int, int]:
    """(deepest ``[`` / ``{`` nesting outside quotes and comments, the line where it is reached)."""
    depth = deepest = 0
    line = where = 1
    quote = ""
    comment = False
    for ch in text:
        if ch == "\n":
            line += 1
            comment = False
        elif comment:
            continue
        elif quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            comment = True
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest, where = depth, line
        elif ch in "]}":
            depth = max(0, depth - 1)
    return deepest, where


def load_yaml_text(text: str, source: str) -> Any:
    """``yaml.safe_load(text)`` with every failure as a :class:`ConfigError` naming ``source`` and the line."""
    if text.count("[") + text.count("{") > MAX_FLOW_DEPTH:  # only then is the scan worth it
        depth, line = flow_depth(text)
        if depth > MAX_FLOW_DEPTH:
            raise ConfigError(source, f"line {line}", f"{depth} nested [ / {{", f"YAML nested at most "
                              f"{MAX_FLOW_DEPTH} levels deep")
    for number, raw in enumerate(text.splitlines(), start=1):
        indent = len(raw) - len(raw.lstrip(" -?:"))
        if indent > 2 * MAX_FLOW_DEPTH:
            raise ConfigError(source, f"line {number}", f"indented {indent} columns",
                              f"YAML nested at most {MAX_FLOW_DEPTH} levels deep")
    try:
        return yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader (libyaml's when built)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "<yaml>"
        raise ConfigError(source, where, None, f"valid YAML ({getattr(exc, 'problem', None) or exc})") from None
    except RecursionError:
        raise ConfigError(source, "<yaml>", None, "YAML nested less deeply (nesting too deep to parse)") from None
    except (ValueError, OverflowError, TypeError) as exc:  # e.g. a timestamp such as 2024-02-31
        raise ConfigError(source, "<yaml>", None, f"valid YAML values ({exc})") from None


def read_yaml(path: str | Path) -> dict:
    """Load a YAML mapping; a leading OpenCV ``%YAML:1.0`` directive line is tolerated."""
    return parse_yaml(read_text(path), str(path))


def parse_yaml(text: str, source: str) -> dict:
    lines = text.splitlines()
    if lines and lines[0].lstrip().startswith("%YAML:"):
        lines[0] = ""  # keep line numbers in error messages
    data = load_yaml_text("\n".join(lines), source)
    if not isinstance(data, dict):
        raise ConfigError(source, "<root>", type(data).__name__, "a mapping")
    return data


class Fields:
    """Typed access to one mapping of a file, naming the file and key path in every error."""

    def __init__(self, data: Any, source: str, prefix: str = "") -> None:
        if not isinstance(data, dict):
            raise ConfigError(source, prefix or "<root>", data, "a mapping")
        self.data, self.source, self.prefix = data, source, prefix

    def key(self, name: str) -> str:
        return f"{self.prefix}.{name}" if self.prefix else name

    def has(self, name: str) -> bool:
        return name in self.data

    def raw(self, name: str) -> Any:
        if name not in self.data:
            raise ConfigError(self.source, self.key(name), None, "this required key")
        return self.data[name]

    def sub(self, name: str) -> Fields:
        return Fields(self.raw(name), self.source, self.key(name))

    def error(self, name: str, value: Any, expected: str) -> ConfigError:
        return ConfigError(self.source, self.key(name), value, expected)

    def string(self, name: str, default: str | None = None) -> str:
        if default is not None and name not in self.data:
            return default
        value = self.raw(name)
        if not isinstance(value, str):
            raise self.error(name, value, "a string")
        return value

    def integer(self, name: str, minimum: int | None = None) -> int:
        value = self.raw(name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(name, value, "an integer")
        if minimum is not None and value < minimum:
            raise self.error(name, value, f"an integer >= {minimum}")
        return value

    def number(self, name: str) -> float:
        return _number(self.raw(name), self.source, self.key(name))

    def numbers(self, name: str, counts: Sequence[int] | None = None) -> list[float]:
        """A flat list of finite numbers whose length is one of ``counts`` (any length if None)."""
        value = self.raw(name)
        if not isinstance(value, list):
            raise self.error(name, value, "a list of numbers")
        out = [_number(v, self.source, f"{self.key(name)}[{i}]") for i, v in enumerate(value)]
        if counts is not None and len(out) not in counts:
            raise self.error(name, value, f"a list of {' or '.join(map(str, counts))} numbers, got {len(out)}")
        return out

    def integers(self, name: str, count: int) -> list[int]:
        value = self.raw(name)
        if (not isinstance(value, list) or len(value) != count
                or any(isinstance(v, bool) or not isinstance(v, int) for v in value)):
            raise self.error(name, value, f"a list of {count} integers")
        return list(value)

    def matrix(self, name: str, rows: int, cols: int) -> list[list[float]]:
        """A matrix written as a list of ``rows`` lists of ``cols`` numbers (Kalibr style)."""
        value = self.raw(name)
        expected = f"a {rows}x{cols} matrix (a list of {rows} lists of {cols} numbers)"
        if not isinstance(value, list) or len(value) != rows:
            raise self.error(name, value, expected)
        out = []
        for r, row in enumerate(value):
            if not isinstance(row, list) or len(row) != cols:
                raise self.error(name, value, expected)
            out.append([_number(v, self.source, f"{self.key(name)}[{r}][{c}]") for c, v in enumerate(row)])
        return out


def _number(value: Any, source: str, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(source, key, value, "a number")
    if not math.isfinite(value):
        raise ConfigError(source, key, value, "a finite number")
    return float(value)


class _Dumper(yaml.SafeDumper):
    """Lists of scalars in flow style (``[1.0, 2.0]``), everything else in block style; block
    sequences are indented under their key (OpenCV's FileStorage parser requires it)."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        return super().increase_indent(flow, False)


def _represent_list(dumper: yaml.SafeDumper, data: list | tuple) -> yaml.Node:
    flow = all(not isinstance(v, (list, dict)) for v in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(list, _represent_list)
_Dumper.add_representer(tuple, _represent_list)


def dump_yaml(data: dict, *, header: str | None = None, sort_keys: bool = False) -> str:
    """YAML text; floats are written with ``repr`` precision so a re-read gives equal values."""
    body = yaml.dump(data, Dumper=_Dumper, sort_keys=sort_keys, default_flow_style=False, width=1000)
    return (header.rstrip("\n") + "\n" if header else "") + body


def write_yaml(path: str | Path, data: dict, *, header: str | None = None, sort_keys: bool = False) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_yaml(data, header=header, sort_keys=sort_keys))
    return path

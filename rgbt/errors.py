"""Exceptions with context: every error names what was wrong and what was expected."""

from __future__ import annotations


class RgbtError(Exception):
    """Base class of every error rgbt raises on bad input."""


class ConfigError(RgbtError):
    """A configuration file (stack.yaml, profile, sidecar) is malformed.

    The message names the file, the key path, the value found and what was expected.
    """

    def __init__(self, path: str, key: str, value: object, expected: str) -> None:
        self.path, self.key, self.value, self.expected = str(path), key, value, expected
        super().__init__(f"{path}: {key}: got {value!r}, expected {expected}")


class ImageError(RgbtError):
    """An image has the wrong dtype, shape or content for the operation."""


class BagError(RgbtError):
    """A bag cannot be read or written (names the file and, where known, the offset)."""


class DecodeError(RgbtError):
    """A device byte stream or log cannot be decoded."""


class ModelError(RgbtError):
    """A segmentation model or its sidecar is missing, corrupt or inconsistent."""


class EvaluationError(RgbtError):
    """Trajectories or estimator outputs cannot be evaluated (empty, non-monotonic, no overlap)."""


class MissingCapability(RgbtError):
    """An optional part of rgbt (an extra, a device, a system library) is not installed here.

    The CLI exits 3 on it. ``extra`` names what to install (``pip install "rgbt[eval]"``) or the
    device / system package that is missing.
    """

    def __init__(self, what: str, extra: str | None = None, hint: str | None = None) -> None:
        self.what, self.extra, self.hint = what, extra, hint
        message = f"{what} is not available"
        if extra:
            message += f": install the '{extra}' extra (pip install \"rgbt[{extra}]\")"
        if hint:
            message += f"; {hint}"
        super().__init__(message)

"""Devices that come and go: the reopen policy and the state machine of one device (no rclpy).

Every driver loop (``rgbt.ros.driver_node`` through :class:`DeviceRunner`, the MAVLink bridge) and
the virtual stack's simulated unplug (``rgbt.graph.devicecontrol``) keep one :class:`DeviceLink` per
device and tell it what happened:
:meth:`~DeviceLink.opened` / :meth:`~DeviceLink.open_failed` for an open attempt,
:meth:`~DeviceLink.read_ok` / :meth:`~DeviceLink.read_failed` for a read. It answers when the next
open attempt is due (:meth:`~DeviceLink.due_in_s`: the loop waits that long on its stop event, never
spinning) and whether a failed read means the device must be closed and reopened.

States: ``starting`` (no open tried yet) -> ``open``; ``starting`` -> ``missing`` (the first open
failed: a degraded start, the node runs without the device and retries); ``open`` -> ``lost`` (the
device failed while open: closed, reopened); ``missing`` / ``lost`` -> ``open``. Open attempts while
missing or lost follow :class:`ReconnectPolicy`: the first after ``first_s`` (0.1 s), each later one
``factor`` (2) times the previous wait, at most ``max_s`` (1 s) apart; a successful open resets it.

A failed read is classified by :func:`classify`:

- ``bad_frame`` (:class:`rgbt.errors.DecodeError`): one frame or message could not be decoded. It
  costs that frame only: counted (``bad_frames``), the loop reads on at once;
- ``failed_read`` (:class:`ReadFailed`): a read returned nothing (a timeout, a transient error);
- ``device`` (:class:`DeviceError`, any ``OSError``: ``ENODEV``, ``EIO``, a serial port gone): the
  device is gone: closed at once and reopened with back-off;
- ``unexpected`` (anything else, e.g. a bug): counted like a failed read; the caller reports it.

Reads that keep failing (``max_failed_reads`` in a row, or no good read for ``failed_read_timeout_s``
while they fail) are a device error too: a device that only yields garbage is reopened, and no
failure, whatever its class, can make a loop spin.

Only state changes are logged (one line each, never one per retry); :meth:`DeviceLink.counters`
and :meth:`DeviceLink.status` are what a node puts into its diagnostics. Times: ``clock`` returns
int ns (``time.monotonic_ns``); fields named ``_s`` are seconds.
"""

from __future__ import annotations

import errno
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from rgbt.errors import DecodeError, RgbtError

Failure = Literal["bad_frame", "failed_read", "device", "unexpected"]

#: diagnostics levels (diagnostic_msgs/DiagnosticStatus)
OK, WARN, ERROR = 0, 1, 2


class DeviceError(RgbtError):
    """The device is gone or unusable (unplugged, cannot be opened, failing): close it and reopen
    it with back-off."""


class ReadFailed(RgbtError):
    """A read returned nothing (a timeout, a transient error). Alone it costs nothing but the read;
    repeated, the device is treated as gone (:class:`ReconnectPolicy`)."""


#: errno values of a device that went away under an open file
GONE_ERRNOS = frozenset({errno.ENODEV, errno.EIO, errno.ENXIO, errno.ENOENT, errno.ESHUTDOWN, errno.EPIPE})


def classify(exc: BaseException) -> Failure:
    """What a failed read (``exc``) means; see the module docstring."""
    if isinstance(exc, (DeviceError, OSError)):  # pyserial's SerialException is an OSError
        return "device"
    if isinstance(exc, ReadFailed):
        return "failed_read"
    if isinstance(exc, DecodeError):
        return "bad_frame"
    return "unexpected"


@dataclass(frozen=True)
class ReconnectPolicy:
    """When to reopen a device and when failed reads mean it is gone (seconds)."""

    first_s: float = 0.1
    factor: float = 2.0
    max_s: float = 1.0
    max_failed_reads: int = 5
    failed_read_timeout_s: float = 1.0

    def __post_init__(self) -> None:
        if not (self.first_s > 0 and self.max_s >= self.first_s and self.factor >= 1 and self.max_failed_reads >= 1
                and self.failed_read_timeout_s > 0):
            raise ValueError(f"ReconnectPolicy {self}: expected first_s > 0, max_s >= first_s, factor >= 1, "
                             "max_failed_reads >= 1, failed_read_timeout_s > 0")

    def delay_s(self, attempt: int) -> float:
        """The wait before open attempt ``attempt`` (0: the first after a loss or a failed start)."""
        return min(self.first_s * self.factor ** attempt, self.max_s)


def _text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class DeviceLink:
    """The state of one device and its counters (see the module docstring).

    ``name`` labels the log lines and the status message (empty: a node's only device); ``log``
    gets the lines of a device going away, ``info`` those of it (re)appearing (both default: no
    log). Not thread-safe: one loop drives it; diagnostics may read :meth:`counters` from another
    thread (plain reads of ints and strings).
    """

    BAD_FRAME_LOG_NS = 10_000_000_000  # a bad frame is logged at most once per 10 s (all are counted)

    def __init__(self, name: str, policy: ReconnectPolicy | None = None, clock: Callable[[], int] = time.monotonic_ns,
                 log: Callable[[str], None] | None = None, info: Callable[[str], None] | None = None) -> None:
        self.name = name
        self._who = f"{name}: " if name else ""
        self.policy = policy or ReconnectPolicy()
        self.clock = clock
        self.log = log or (lambda _text: None)
        self.info = info or (lambda _text: None)
        self.state: Literal["starting", "open", "missing", "lost"] = "starting"
        self.opens = 0  # successful opens
        self.reopens = 0  # successful opens that ended a time gone (missing at start or lost)
        self.unplugs = 0  # open -> lost
        self.open_failures = 0
        self.bad_frames = 0
        self.failed_reads = 0  # reads that returned nothing or raised something unexpected
        self.last_error = ""
        self._attempt = 0  # open attempts since the device went away
        self._next_open_ns = 0
        self._gone_since_ns: int | None = None
        self._gone_total_ns = 0
        self._streak = 0  # failed reads in a row
        self._last_ok_ns = 0
        self._bad_logged_ns: int | None = None

    # -- state -----------------------------------------------------------------------------------
    @property
    def is_open(self) -> bool:
        return self.state == "open"

    @property
    def gone(self) -> bool:
        return self.state in ("missing", "lost")

    def due_in_s(self) -> float:
        """Seconds until the next open attempt is due (0: open now; also 0 while open)."""
        if self.is_open:
            return 0.0
        return max(0, self._next_open_ns - self.clock()) / 1e9

    def gone_s(self) -> float:
        """How long the device has been gone now (0 while open)."""
        return 0.0 if self._gone_since_ns is None else (self.clock() - self._gone_since_ns) / 1e9

    def gone_total_s(self) -> float:
        """Time gone since the start, all outages together (the current one included)."""
        return self._gone_total_ns / 1e9 + self.gone_s()

    # -- open ------------------------------------------------------------------------------------
    def opened(self, what: str = "") -> None:
        """An open attempt succeeded (``what``: e.g. the device path, for the log line)."""
        now = self.clock()
        was, gone_s = self.state, self.gone_s()
        if self._gone_since_ns is not None:
            self._gone_total_ns += now - self._gone_since_ns
            self._gone_since_ns = None
        self.state = "open"
        self.opens += 1
        self._attempt = 0
        self._streak = 0
        self._last_ok_ns = now
        where = f" ({what})" if what else ""
        if was in ("missing", "lost"):
            self.reopens += 1
            self.info(f"{self._who}device back{where} after {gone_s:.2f} s "
                      f"({'missing at start' if was == 'missing' else 'lost'}; reopen {self.reopens})")
        else:
            self.info(f"{self._who}device open{where}")

    def open_failed(self, exc: BaseException) -> None:
        """An open attempt failed: the next one is due after the back-off."""
        now = self.clock()
        self.open_failures += 1
        self.last_error = _text(exc)
        if self.state == "starting":
            self.state = "missing"
            self._gone_since_ns = now
            self.log(f"{self._who}device missing at start ({self.last_error}); running without it, "
                     f"retrying every {self.policy.first_s:g} s to {self.policy.max_s:g} s")
        self._next_open_ns = now + int(self.policy.delay_s(self._attempt) * 1e9)
        self._attempt += 1

    # -- read ------------------------------------------------------------------------------------
    def read_ok(self) -> None:
        """A read returned normally (with data or none yet)."""
        self._streak = 0
        self._last_ok_ns = self.clock()

    def read_failed(self, exc: BaseException) -> bool:
        """Count a failed read; True when the device must be closed now (it is then ``lost``, and
        reopened after the back-off)."""
        now = self.clock()
        kind = classify(exc)
        if kind == "bad_frame":
            self.bad_frames += 1
            if self._bad_logged_ns is None or now - self._bad_logged_ns >= self.BAD_FRAME_LOG_NS:
                self._bad_logged_ns = now
                self.log(f"{self._who}bad frame skipped ({_text(exc)}); {self.bad_frames} so far")
        elif kind != "device":
            self.failed_reads += 1
        self._streak += 1
        timed_out = now - self._last_ok_ns >= self.policy.failed_read_timeout_s * 1e9
        if kind != "device" and self._streak < self.policy.max_failed_reads and not timed_out:
            return False
        if kind != "device":
            exc = DeviceError(f"{self._streak} failed reads in a row, none good for "
                              f"{(now - self._last_ok_ns) / 1e9:.2f} s (last: {_text(exc)})")
        self.lose(exc)
        return True

    def lose(self, exc: BaseException) -> None:
        """The open device is gone (``exc`` says why): ``lost``, reopened after the back-off."""
        now = self.clock()
        self.last_error = _text(exc)
        if self.state != "open":
            return
        self.state = "lost"
        self.unplugs += 1
        self._gone_since_ns = now
        self._next_open_ns = now + int(self.policy.delay_s(0) * 1e9)
        self._attempt = 1
        self.log(f"{self._who}device lost ({self.last_error}); closed, reopening every "
                 f"{self.policy.first_s:g} s to {self.policy.max_s:g} s")

    # -- diagnostics -----------------------------------------------------------------------------
    def counters(self) -> dict[str, object]:
        """Diagnostics values: ``state``, ``reopens``, ``unplugs``, ``gone_s``, ``gone_total_s``,
        ``bad_frames``, ``failed_reads``, ``open_failures``, ``last_error``."""
        return {"state": self.state, "reopens": self.reopens, "unplugs": self.unplugs,
                "gone_s": round(self.gone_s(), 3), "gone_total_s": round(self.gone_total_s(), 3),
                "bad_frames": self.bad_frames, "failed_reads": self.failed_reads,
                "open_failures": self.open_failures, "last_error": self.last_error}

    def status(self) -> tuple[int, str]:
        """(level, message) for the node's diagnostics: ERROR while missing since the start, WARN
        while lost, OK otherwise."""
        if self.state == "missing":
            return ERROR, f"{self.name or 'device'} missing for {self.gone_s():.1f} s, retrying ({self.last_error})"
        if self.state == "lost":
            return WARN, f"{self.name or 'device'} lost {self.gone_s():.1f} s ago, reopening ({self.last_error})"
        return OK, "ok"


class DeviceRunner:
    """One driver loop over :class:`DeviceLink`: :meth:`step` opens the device when an attempt is
    due (``open_device()`` returns it, anything with ``close()``; it raises when it cannot), else
    reads once (``read_once()``, which uses :attr:`device`), classifies what failed and closes a
    device that is gone before it is reopened. It returns how long to wait before the next step
    (s, 0: at once): the caller waits that long on its stop event, so a gone device costs no CPU.

    ``report(where, exc)`` gets the exceptions of no known failure class (a bug?) with where they
    came from; ``label`` names the device in the log lines."""

    def __init__(self, link: DeviceLink, open_device: Callable[[], Any], read_once: Callable[[], None],
                 report: Callable[[str, BaseException], None] | None = None, label: str = "") -> None:
        self.link = link
        self.open_device, self.read_once = open_device, read_once
        self.report = report or (lambda _where, _exc: None)
        self.label = label
        self.device: Any = None

    def step(self) -> float:
        link = self.link
        if self.device is None:
            wait_s = link.due_in_s()
            if wait_s > 0:
                return wait_s
            try:
                self.device = self.open_device()
            except Exception as exc:  # noqa: BLE001 - retried with back-off, logged once per state change
                if not isinstance(exc, (RgbtError, OSError)):  # not a failure a driver names
                    self.report("open_device", exc)
                link.open_failed(exc)
                return link.due_in_s()
            link.opened(self.label)
            return 0.0
        try:
            self.read_once()
        except Exception as exc:  # noqa: BLE001 - classified: a bad frame, a failed read or a gone device
            if classify(exc) == "unexpected":
                self.report("read_once", exc)
            if link.read_failed(exc):
                self.close()
                return link.due_in_s()
            return 0.0
        link.read_ok()
        return 0.0

    def close(self) -> None:
        """Close the device (it may be gone already: a failing close is reported as ``close``, never raised)."""
        device, self.device = self.device, None
        close = getattr(device, "close", None)
        if close is None:
            return
        try:
            close()
        except Exception as exc:  # noqa: BLE001 - the device went away under us
            self.link.last_error = f"close: {_text(exc)}"

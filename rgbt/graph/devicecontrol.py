"""A simulated unplug of the virtual stack's devices, for ``rgbt bench faults`` (no rclpy here).

The file named by :data:`DEVICE_CONTROL_ENV` (``RGBT_DEVICE_CONTROL``) holds one JSON object::

    {"thermal": {"gone_until_wall_ns": 1733400000000000000}}

(any sensor kind of the simulated stack: ``thermal``, ``color``, ``mono``, ``imu``, ...): that
kind's device is unplugged until the given wall time (``time.time_ns``). The virtual stack asks
:meth:`SimulatedDevices.readable` for every sample it is about to publish. A device named in the
file goes through the drivers' own reopen policy (``rgbt.sensors.reconnect``) on the real monotonic
clock: a read while unplugged fails (the device is ``lost``), the reopen attempts fail while it is
gone and follow the back-off, the first one due after the wall time succeeds. Samples due while
the device is not open are not published (the virtual stack counts them, ``unplugged``); other
kinds are untouched.

The file is written whole by the bench (a temporary file renamed over it) and re-read when its
``stat`` changes, looked at no more than every ``period_s``. Unset or absent: nothing is unplugged.
A malformed file is logged once (naming what was expected) and treated as empty.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable

from rgbt.sensors.reconnect import DeviceError, DeviceLink, ReconnectPolicy

DEVICE_CONTROL_ENV = "RGBT_DEVICE_CONTROL"


class DeviceControl:
    """The unplug times of the control file (kind -> wall ns until which the device is gone)."""

    def __init__(
        self, path: str | None = None, period_s: float = 0.02, log: Callable[[str], None] | None = None
    ) -> None:
        self.path = path if path is not None else os.environ.get(DEVICE_CONTROL_ENV, "")
        self.period_s = period_s
        self.log = log or (lambda _text: None)
        self._gone_until: dict[str, int] = {}
        self._stat: tuple[int, int, int] | None = None
        self._next = 0.0

    def gone_until(self) -> dict[str, int]:
        """Kind -> wall time (ns) until which its device is unplugged (re-read when the file changed)."""
        if not self.path:
            return self._gone_until
        now = time.monotonic()
        if now < self._next:
            return self._gone_until
        self._next = now + self.period_s
        try:
            st = os.stat(self.path)
        except OSError:
            self._stat, self._gone_until = None, {}
            return self._gone_until
        key = (st.st_mtime_ns, st.st_ino, st.st_size)
        if key != self._stat:
            self._stat = key
            self._gone_until = self._read()
        return self._gone_until

    def _read(self) -> dict[str, int]:
        try:
            with open(self.path) as fh:
                data = json.load(fh)
            return {str(kind): int(entry["gone_until_wall_ns"]) for kind, entry in data.items()}
        except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
            self.log(f"{DEVICE_CONTROL_ENV} file {self.path}: {type(exc).__name__}: {exc}; expected a JSON object "
                     '{"<kind>": {"gone_until_wall_ns": <int>}}: ignored')
            return {}


class SimulatedDevices:
    """The simulated devices of the kinds the control file names, each a :class:`DeviceLink` under
    ``policy`` (``log`` / ``info``: its state-change lines; ``clock``: monotonic ns)."""

    def __init__(self, control: DeviceControl, policy: ReconnectPolicy, log: Callable[[str], None] | None = None,
                 info: Callable[[str], None] | None = None, clock: Callable[[], int] = time.monotonic_ns) -> None:
        self.control = control
        self.policy = policy
        self.clock = clock
        self._log, self._info = log, info
        self.links: dict[str, DeviceLink] = {}

    def readable(self, kind: str, now_wall_ns: int) -> bool:
        """Whether the sample of ``kind`` due now can be read (its device is open, or reopened now)."""
        gone_until = self.control.gone_until()
        link = self.links.get(kind)
        if link is None:
            if kind not in gone_until:
                return True  # never named: a device that never goes away
            link = self.links[kind] = DeviceLink(kind, self.policy, clock=self.clock, log=self._log, info=self._info)
            link.opened()
        gone = now_wall_ns < gone_until.get(kind, 0)
        if link.is_open:
            if not gone:
                link.read_ok()
                return True
            link.read_failed(DeviceError(f"{kind}: no such device (simulated unplug)"))  # closes it: lost
            return False
        if link.due_in_s() > 0:
            return False
        if gone:
            link.open_failed(DeviceError(f"{kind}: no such device (simulated unplug)"))
            return False
        link.opened()
        link.read_ok()
        return True

    def counters(self) -> dict[str, dict[str, object]]:
        """Kind -> the counters of its device (``DeviceLink.counters``)."""
        return {kind: link.counters() for kind, link in self.links.items()}

"""A serial port that survives unplugging: reconnects with exponential backoff.

Devices are opened with pyserial (``serial.serial_for_url``: a device path such as
``/dev/ttyUSB0`` or a udev symlink, or a pyserial URL). When a read or write fails
(the USB adapter was unplugged, the pseudo-terminal closed) the port is closed and
reopened after ``backoff_s[0]`` seconds, doubling up to ``backoff_s[1]``. After every
successful (re)open ``on_connect`` is called so the driver can configure the device again.
"""

from __future__ import annotations

import select
import termios
import time
from collections.abc import Callable

import serial

# what a vanished device raises: pyserial, the OS, termios (tcdrain on a hung-up pty)
LINK_ERRORS = (serial.SerialException, OSError, ValueError, termios.error)


class SerialLink:
    def __init__(self, port: str, baudrate: int = 115200, backoff_s: tuple[float, float] = (0.05, 2.0),
                 on_connect: Callable[[], None] | None = None) -> None:
        self.port_name = port
        self.baudrate = baudrate
        self.backoff_s = backoff_s
        self.on_connect = on_connect
        self.port: serial.SerialBase | None = None
        self.connects = 0
        self.disconnects = 0
        self.last_error = ""
        self._backoff = backoff_s[0]
        self._next_try = 0.0

    @property
    def connected(self) -> bool:
        return self.port is not None

    def poll(self) -> bool:
        """Try to (re)open when due; returns whether the port is open."""
        if self.port is not None:
            return True
        now = time.monotonic()
        if now < self._next_try:
            return False
        try:
            port = serial.serial_for_url(self.port_name, baudrate=self.baudrate, timeout=0, write_timeout=1.0)
        except LINK_ERRORS as exc:
            self.last_error = f"{self.port_name}: {exc}"
            self._next_try = now + self._backoff
            self._backoff = min(self._backoff * 2, self.backoff_s[1])
            return False
        self.port = port
        self.connects += 1
        self._backoff = self.backoff_s[0]
        if self.on_connect is not None:
            self.on_connect()
        return self.port is not None

    def _drop(self, exc: Exception) -> None:
        self.last_error = f"{self.port_name}: {exc}"
        if self.port is not None:
            try:
                self.port.close()
            except Exception:  # noqa: BLE001 - the device is gone already
                pass
        self.port = None
        self.disconnects += 1
        self._next_try = time.monotonic() + self._backoff

    def read(self, max_bytes: int = 4096, timeout: float = 0.05) -> bytes:
        """Bytes available within ``timeout`` s (b'' when none or disconnected)."""
        if not self.poll():
            time.sleep(max(0.0, min(timeout, self._next_try - time.monotonic())))
            return b""
        return self.read_raw(max_bytes, timeout)

    def read_raw(self, max_bytes: int = 4096, timeout: float = 0.05) -> bytes:
        """Like :meth:`read` but never reconnects (used from ``on_connect``)."""
        port = self.port
        if port is None:
            return b""
        try:
            fd = port.fileno()
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                return b""
            waiting = port.in_waiting  # type: ignore[attr-defined]  # every port class has it; SerialBase does not
            data = port.read(min(max(waiting, 1), max_bytes))
            if not data:
                raise serial.SerialException("readable but no data (device disconnected)")
            return data
        except LINK_ERRORS as exc:
            self._drop(exc)
            return b""

    def write(self, data: bytes) -> bool:
        """Write all of ``data``; False (and a disconnect) if the device is gone."""
        if self.port is None:
            return False
        try:
            self.port.write(data)
            self.port.flush()
            return True
        except LINK_ERRORS as exc:
            self._drop(exc)
            return False

    def close(self) -> None:
        if self.port is not None:
            try:
                self.port.close()
            finally:
                self.port = None

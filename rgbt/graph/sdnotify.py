"""systemd's service notifications (``sd_notify``) without libsystemd; no rclpy here.

Under a ``Type=notify`` unit systemd names a datagram socket in ``$NOTIFY_SOCKET`` (a path, or an
abstract name written with a leading ``@``); each datagram is newline-separated ``KEY=VALUE``
lines: ``READY=1`` (started), ``STATUS=text`` (shown by ``systemctl status``), ``WATCHDOG=1`` (alive:
with ``WatchdogSec=`` systemd kills and restarts a service whose pings stop; it tells the service
the period in ``$WATCHDOG_USEC``, for the process ``$WATCHDOG_PID`` when set), ``STOPPING=1``.
Without ``$NOTIFY_SOCKET`` (not under systemd, a test) every call is a no-op returning False. A
failed send is never an error for the caller: a flight does not stop because systemd is away.
"""

from __future__ import annotations

import os
import socket
import time

#: environment variables systemd sets for a notify service (node processes must not inherit them)
NOTIFY_ENV = ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")
#: the longest time (s) between two watchdog pings, whatever ``WatchdogSec=`` says
MAX_PING_PERIOD_S = 1.0


def notify_address(environ: dict[str, str] | None = None) -> str | None:
    """The socket address of ``$NOTIFY_SOCKET`` (``@name`` -> abstract ``\\0name``); None when unset
    or not a unix socket (``vsock:`` addresses are not supported here)."""
    value = (os.environ if environ is None else environ).get("NOTIFY_SOCKET", "")
    if not value or not value.startswith(("/", "@")):
        return None
    return "\0" + value[1:] if value.startswith("@") else value


def watchdog_period_s(environ: dict[str, str] | None = None) -> float | None:
    """Half of ``$WATCHDOG_USEC`` in s, at most :data:`MAX_PING_PERIOD_S` (the ping period); None
    when systemd asked for no watchdog or asked it of another process (``$WATCHDOG_PID``)."""
    env = os.environ if environ is None else environ
    pid = env.get("WATCHDOG_PID", "")
    if pid and pid != str(os.getpid()):
        return None
    try:
        usec = int(env.get("WATCHDOG_USEC", "0"))
    except ValueError:
        return None
    return min(usec / 2e6, MAX_PING_PERIOD_S) if usec > 0 else None


class Notifier:
    """Sends this process's notifications to ``$NOTIFY_SOCKET`` (read once, at construction)."""

    def __init__(self, environ: dict[str, str] | None = None) -> None:
        self.address = notify_address(environ)
        self.ping_period_s = watchdog_period_s(environ) if self.address else None
        self._last_ping = float("-inf")
        self._sock: socket.socket | None = None

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def send(self, *lines: str) -> bool:
        """One datagram of ``KEY=VALUE`` lines; True when it was sent."""
        if self.address is None or not lines:
            return False
        try:
            if self._sock is None:
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self._sock.sendto("\n".join(lines).encode(), self.address)
            return True
        except OSError:
            return False

    def ready(self, status: str = "") -> bool:
        return self.send("READY=1", *([f"STATUS={status}"] if status else []))

    def status(self, text: str) -> bool:
        return self.send(f"STATUS={' '.join(text.split())}")  # one line

    def ping(self) -> bool:
        """``WATCHDOG=1`` when the watchdog is on and a ping is due (call it from the loop that
        must stay alive; at most every :attr:`ping_period_s` s)."""
        if self.ping_period_s is None:
            return False
        now = time.monotonic()
        if now - self._last_ping < self.ping_period_s:
            return False
        self._last_ping = now
        return self.send("WATCHDOG=1")

    def stopping(self, status: str = "") -> bool:
        return self.send("STOPPING=1", *([f"STATUS={status}"] if status else []))

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

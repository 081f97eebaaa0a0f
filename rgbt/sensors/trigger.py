"""Trigger generator control over serial: a small line protocol (defined here).

Every line is ASCII, ``<BODY>*<XX>\\n``, where ``XX`` is the 8-bit XOR of the BODY bytes as two
uppercase hex digits (as in NMEA). Host -> generator commands and the generator's replies:

============  ==========================  ==============================================
command       reply                       meaning
============  ==========================  ==============================================
``RATE <hz>`` ``OK RATE <hz>``            set the pulse rate (0.1-1000 Hz); allowed while running
``RATE?``     ``RATE <hz>``               current rate, 3 decimals
``START``     ``OK START``                start the pulse train (counter keeps counting)
``STOP``      ``OK STOP``                 stop after the current pulse
``COUNT?``    ``COUNT <n>``               pulses emitted since power-on / ``RESET``
``RESET``     ``OK RESET``                counter to 0
(any)         ``ERR <reason>``            unknown command, bad argument or bad checksum
============  ==========================  ==============================================

A line with a bad checksum is answered ``ERR CHECKSUM`` and ignored. Pulses are rising
edges (the cameras' Line0 / ExtSync input and the VN-100 SyncIn all trigger on the rising
edge). :class:`TriggerDeviceModel` is the reference behaviour of the device (firmware and
tests use it); :class:`TriggerGenerator` is the host side.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from rgbt.errors import DecodeError
from rgbt.sensors.serial_link import SerialLink


def checksum(body: str) -> str:
    c = 0
    for b in body.encode("ascii"):
        c ^= b
    return f"{c:02X}"


def frame_line(body: str) -> bytes:
    return f"{body}*{checksum(body)}\n".encode("ascii")


def parse_line(line: bytes) -> str:
    """The body of a checksummed line; raises :class:`DecodeError` on a bad checksum."""
    raw = bytes(line).strip()
    body, sep, cks = raw.rpartition(b"*")
    try:
        text = body.decode("ascii")
        ok = bool(sep) and checksum(text) == cks.decode("ascii").upper()
    except UnicodeDecodeError:
        ok = False
    if not ok:
        shown = raw[:60].decode("ascii", errors="replace")
        raise DecodeError(f"trigger: {shown!r}: expected ASCII BODY*XX with the XOR checksum")
    return text


class TriggerDeviceModel:
    """Reference generator behaviour: ``handle(line) -> reply line``; ``tick(dt)`` emits pulses."""

    def __init__(self, rate_hz: float = 60.0) -> None:
        self.rate_hz = rate_hz
        self.running = False
        self.count = 0
        self._phase = 0.0

    def handle(self, line: bytes) -> bytes:
        try:
            body = parse_line(line)
        except DecodeError:
            return frame_line("ERR CHECKSUM")
        parts = body.split()
        if not parts:
            return frame_line("ERR EMPTY")
        cmd = parts[0].upper()
        if cmd == "RATE" and len(parts) == 2:
            try:
                hz = float(parts[1])
            except ValueError:
                return frame_line("ERR RATE")
            if not 0.1 <= hz <= 1000:
                return frame_line("ERR RANGE")
            self.rate_hz = hz
            return frame_line(f"OK RATE {hz:.3f}")
        if cmd == "RATE?":
            return frame_line(f"RATE {self.rate_hz:.3f}")
        if cmd == "START":
            self.running = True
            return frame_line("OK START")
        if cmd == "STOP":
            self.running = False
            return frame_line("OK STOP")
        if cmd == "COUNT?":
            return frame_line(f"COUNT {self.count}")
        if cmd == "RESET":
            self.count = 0
            return frame_line("OK RESET")
        return frame_line("ERR UNKNOWN")

    def tick(self, dt_s: float) -> int:
        """Advance time; returns the number of pulses emitted."""
        if not self.running:
            return 0
        self._phase += dt_s * self.rate_hz
        n = int(self._phase)
        self._phase -= n
        self.count += n
        return n


@dataclass
class TriggerOptions:
    port: str = "/dev/ttyACM1"
    baudrate: int = 115200
    rate_hz: float = 60.0
    reply_timeout_s: float = 0.5


class TriggerGenerator:
    """Host side of the protocol over a :class:`SerialLink` (reconnects; re-applies the rate)."""

    def __init__(self, options: TriggerOptions, link: SerialLink | None = None) -> None:
        self.options = options
        self.link = link or SerialLink(options.port, options.baudrate)
        self._buf = bytearray()
        self.errors: list[str] = []

    def request(self, body: str) -> str:
        """Send one command, return the reply body; raises :class:`DecodeError` on ERR/timeout."""
        if not self.link.connected and not self.link.poll():
            raise DecodeError(f"trigger {self.link.port_name}: not connected ({self.link.last_error})")
        self._buf.clear()
        self.link.write(frame_line(body))
        deadline = time.monotonic() + self.options.reply_timeout_s
        while time.monotonic() < deadline:
            self._buf += self.link.read_raw(256, timeout=0.02)
            while b"\n" in self._buf:
                line, _, rest = bytes(self._buf).partition(b"\n")
                self._buf = bytearray(rest)
                try:
                    reply = parse_line(line)
                except DecodeError as exc:
                    self.errors.append(str(exc))
                    continue
                if reply.startswith("ERR"):
                    raise DecodeError(f"trigger: {body!r}: device answered {reply!r}")
                return reply
        raise DecodeError(f"trigger: {body!r}: no reply in {self.options.reply_timeout_s} s")

    def set_rate(self, hz: float) -> None:
        self.request(f"RATE {hz:.3f}")

    def _reply_value(self, body: str, kind: type) -> float | int:
        """The number in the reply ``<WORD> <number>`` to ``body``; DecodeError otherwise."""
        reply = self.request(body)
        parts = reply.split()
        try:
            if len(parts) != 2:
                raise ValueError(reply)
            return kind(parts[1])
        except ValueError:
            raise DecodeError(f"trigger: {body!r}: reply {reply!r}: expected '<WORD> <{kind.__name__}>'") from None

    def rate(self) -> float:
        """Pulse rate, Hz."""
        return float(self._reply_value("RATE?", float))

    def start(self) -> None:
        self.request("START")

    def stop(self) -> None:
        self.request("STOP")

    def count(self) -> int:
        """Pulses since power-on / RESET."""
        return int(self._reply_value("COUNT?", int))

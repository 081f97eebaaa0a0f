"""FLIR Boson / ADK: serial control protocol, telemetry line, and V4L2 frame source.

Serial framing (FLIR Boson SDK, UART "FSLP" framing)::

    0x8E | channel (0x00) | sequence u32 BE | function code u32 BE | status u32 BE
         | payload (big endian fields) | CRC-16-CCITT u16 BE (init 0x1D0F, over channel..payload)
         | 0xAE

Inside the frame (channel .. CRC) the bytes 0x8E, 0x9E, 0xAE are escaped as 0x9E followed by
0x81, 0x91, 0xA1. Commands carry status 0xFFFFFFFF; replies echo the sequence and function
code with status 0 (R_SUCCESS) or an error code. Function codes used here are
:data:`FUNCTIONS`.

Frames come from V4L2 (``cv2.VideoCapture`` with ``CAP_V4L2``, FOURCC ``Y16``,
``CAP_PROP_CONVERT_RGB`` off, buffer size 1). With telemetry on, the Boson adds one line
(640 uint16) above (or below) the image; its frame counter (u32 at byte 84), the frame count
at the last FFC (u32 at byte 88) and the FPA temperature (K x 10, u16 at byte 94) are read by
:func:`parse_telemetry`. Everything hardware specific is behind :class:`FrameSource`.
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum
from typing import Protocol, TypeVar

import cv2
import numpy as np

from rgbt.errors import DecodeError
from rgbt.sensors.crc import crc16_ccitt
from rgbt.sensors.reconnect import DeviceError, ReadFailed
from rgbt.sensors.serial_link import SerialLink

START, END, ESC = 0x8E, 0xAE, 0x9E
_ESCAPED = {START: 0x81, ESC: 0x91, END: 0xA1}
_UNESCAPED = {v: k for k, v in _ESCAPED.items()}
CRC_INIT = 0x1D0F
STATUS_COMMAND = 0xFFFFFFFF

FUNCTIONS = {
    "run_ffc": 0x00050007,
    "get_ffc_in_progress": 0x0005000C,
    "set_ffc_mode": 0x00050012,
    "get_ffc_mode": 0x00050013,
    "lookup_fpa_temp_degc_x10": 0x00050030,
    "get_ffc_status": 0x00050054,
    "set_ext_sync_mode": 0x00050098,
    "get_ext_sync_mode": 0x00050099,
    "get_camera_sn": 0x00050002,
}

_E = TypeVar("_E", bound=IntEnum)


class FfcMode(IntEnum):
    MANUAL = 0
    AUTO = 1
    EXTERNAL = 2
    SHUTTER_TEST = 3


class FfcStatus(IntEnum):
    NEVER_COMMANDED = 0
    IMMINENT = 1
    IN_PROGRESS = 2
    COMPLETE = 3


class ExtSyncMode(IntEnum):
    DISABLED = 0
    MASTER = 1
    SLAVE = 2  # frames start on the external sync input: the trigger


@dataclass(frozen=True)
class BosonPacket:
    channel: int
    sequence: int
    function: int
    status: int
    payload: bytes


def _escape(data: bytes) -> bytes:
    out = bytearray()
    for b in data:
        if b in _ESCAPED:
            out += bytes((ESC, _ESCAPED[b]))
        else:
            out.append(b)
    return bytes(out)


def encode_frame(sequence: int, function: int, payload: bytes = b"", status: int = STATUS_COMMAND,
                 channel: int = 0) -> bytes:
    """One framed, escaped packet (command or reply)."""
    body = struct.pack(">BIII", channel, sequence, function, status) + payload
    body += struct.pack(">H", crc16_ccitt(body, CRC_INIT))
    return bytes((START,)) + _escape(body) + bytes((END,))


@dataclass
class FrameStats:
    packets: int = 0
    crc_failures: int = 0
    bytes_skipped: int = 0
    malformed: int = 0


class FrameDecoder:
    """Incremental decoder: bytes in, :class:`BosonPacket` out; garbage and bad CRCs counted."""

    MAX_FRAME = 2048

    def __init__(self) -> None:
        self.stats = FrameStats()
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[BosonPacket]:
        self._buf += data
        out = []
        buf = self._buf
        while True:
            s = buf.find(bytes((START,)))
            if s < 0:
                self.stats.bytes_skipped += len(buf)
                buf.clear()
                break
            if s > 0:
                self.stats.bytes_skipped += s
                del buf[:s]
            e = buf.find(bytes((END,)), 1)
            if e < 0:
                if len(buf) > self.MAX_FRAME:
                    # no end flag yet: a frame starting before the last MAX_FRAME bytes would be
                    # too long anyway; drop them at once (linear time on a stream of start flags)
                    drop = len(buf) - self.MAX_FRAME
                    self.stats.bytes_skipped += drop
                    del buf[:drop]
                    continue
                break
            nxt_start = buf.rfind(bytes((START,)), 1, e)
            if nxt_start > 0:  # frame starts before this frame's end: all but the last were cut
                self.stats.malformed += 1
                self.stats.bytes_skipped += nxt_start
                del buf[:nxt_start]
                continue
            raw = bytes(buf[1:e])
            del buf[:e + 1]
            pkt = self._decode(raw, e + 1)
            if pkt is not None:
                out.append(pkt)
        return out

    def finish(self) -> None:
        """End of stream: a frame still open can never be completed; its bytes are skipped."""
        self.stats.bytes_skipped += len(self._buf)
        self._buf.clear()

    def _decode(self, raw: bytes, nbytes: int) -> BosonPacket | None:
        body = bytearray()
        it = iter(raw)
        for b in it:
            if b == ESC:
                nxt = next(it, None)
                if nxt not in _UNESCAPED:
                    self.stats.malformed += 1
                    self.stats.bytes_skipped += nbytes
                    return None
                body.append(_UNESCAPED[nxt])
            else:
                body.append(b)
        if len(body) < 15:
            self.stats.malformed += 1
            self.stats.bytes_skipped += nbytes
            return None
        if crc16_ccitt(body[:-2], CRC_INIT) != struct.unpack(">H", body[-2:])[0]:
            self.stats.crc_failures += 1
            self.stats.bytes_skipped += nbytes
            return None
        ch, seq, fn, st = struct.unpack_from(">BIII", body)
        self.stats.packets += 1
        return BosonPacket(ch, seq, fn, st, bytes(body[13:-2]))


class BosonError(DecodeError):
    """The camera answered a command with an error status (or not at all)."""


@dataclass
class BosonOptions:
    port: str = "/dev/ttyACM0"
    baudrate: int = 921600
    ffc_mode: FfcMode = FfcMode.MANUAL  # the recorder decides when to FFC
    ext_sync: ExtSyncMode = ExtSyncMode.SLAVE  # frames on the trigger
    reply_timeout_s: float = 0.5
    reconnect_backoff_s: tuple[float, float] = (0.05, 2.0)


class BosonControl:
    """Boson serial control: FFC, FFC mode/status, FPA temperature, external sync.

    The modes in ``options`` are applied on every (re)connection.
    """

    def __init__(self, options: BosonOptions, link: SerialLink | None = None) -> None:
        self.options = options
        self.link = link or SerialLink(options.port, options.baudrate, backoff_s=options.reconnect_backoff_s)
        self.link.on_connect = self._on_connect
        self.decoder = FrameDecoder()
        self._seq = 0
        self.errors: list[str] = []

    def _on_connect(self) -> None:
        self.decoder = FrameDecoder()
        try:
            self.set_ext_sync_mode(self.options.ext_sync)
            self.set_ffc_mode(self.options.ffc_mode)
        except BosonError as exc:
            self.errors.append(str(exc))

    def connect(self) -> bool:
        return self.link.poll()

    def command(self, name: str, payload: bytes = b"") -> bytes:
        """Send one command; returns the reply payload or raises :class:`BosonError`."""
        fn = FUNCTIONS[name]
        self._seq = (self._seq + 1) & 0xFFFFFFFF
        seq = self._seq
        if not self.link.connected and not self.link.poll():
            raise BosonError(f"Boson {self.link.port_name}: {name}: not connected ({self.link.last_error})")
        if not self.link.write(encode_frame(seq, fn, payload)):
            raise BosonError(f"Boson {self.link.port_name}: {name}: write failed ({self.link.last_error})")
        deadline = time.monotonic() + self.options.reply_timeout_s
        while time.monotonic() < deadline:
            for pkt in self.decoder.feed(self.link.read_raw(4096, timeout=0.02)):
                if pkt.sequence == seq and pkt.function == fn:
                    if pkt.status != 0:
                        raise BosonError(f"Boson: {name} (0x{fn:08X}): status 0x{pkt.status:08X}, expected 0")
                    return pkt.payload
            if not self.link.connected:
                break
        raise BosonError(
            f"Boson {self.link.port_name}: {name} (0x{fn:08X}): no reply in {self.options.reply_timeout_s} s"
        )

    def run_ffc(self) -> None:
        self.command("run_ffc")

    def set_ffc_mode(self, mode: FfcMode) -> None:
        self.command("set_ffc_mode", struct.pack(">i", int(mode)))

    def _reply(self, name: str, fmt: str) -> int:
        """The first big-endian field (``fmt``: ``i`` or ``h``) of the reply to ``name``."""
        payload = self.command(name)
        size = struct.calcsize(">" + fmt)
        if len(payload) < size:
            raise BosonError(f"Boson: {name}: reply payload {payload[:8].hex()} ({len(payload)} bytes): "
                             f"expected at least {size} bytes")
        return struct.unpack_from(">" + fmt, payload)[0]

    def _enum_reply(self, name: str, enum: type[_E]) -> _E:
        value = self._reply(name, "i")
        try:
            return enum(value)
        except ValueError:
            raise BosonError(f"Boson: {name}: value {value}: expected one of "
                             f"{', '.join(f'{m.value} ({m.name})' for m in enum)}") from None

    def get_ffc_mode(self) -> FfcMode:
        return self._enum_reply("get_ffc_mode", FfcMode)

    def get_ffc_status(self) -> FfcStatus:
        return self._enum_reply("get_ffc_status", FfcStatus)

    def ffc_in_progress(self) -> bool:
        return self._reply("get_ffc_in_progress", "h") != 0

    def fpa_temp_c(self) -> float:
        """Focal-plane-array temperature, deg C."""
        return self._reply("lookup_fpa_temp_degc_x10", "h") / 10.0

    def set_ext_sync_mode(self, mode: ExtSyncMode) -> None:
        self.command("set_ext_sync_mode", struct.pack(">i", int(mode)))

    def get_ext_sync_mode(self) -> ExtSyncMode:
        return self._enum_reply("get_ext_sync_mode", ExtSyncMode)

    def close(self) -> None:
        self.link.close()


# ----------------------------------------------------------------------------- frames

@dataclass(frozen=True)
class Telemetry:
    frame_counter: int
    ffc_frame_counter: int  # frame counter at the last FFC
    fpa_temp_k: float


TELEMETRY_OFFSETS = {"frame_counter": 84, "ffc_frame_counter": 88, "fpa_temp_kx10": 94}


def parse_telemetry(line: np.ndarray, byte_order: str = ">") -> Telemetry:
    """Decode the Boson telemetry line (uint16 row as delivered by V4L2)."""
    if byte_order not in (">", "<"):
        raise DecodeError(f"Boson telemetry line: byte order {byte_order!r}: expected '>' or '<'")
    arr = np.asarray(line)
    if arr.dtype.kind not in "uif" or arr.dtype.hasobject:
        raise DecodeError(f"Boson telemetry line: dtype {arr.dtype}: expected an integer row (uint16)")
    raw = np.ascontiguousarray(arr).tobytes()
    if len(raw) < 100:
        raise DecodeError(f"Boson telemetry line: {len(raw)} bytes, expected >= 100")
    fc, ffc = struct.unpack_from(byte_order + "II", raw, TELEMETRY_OFFSETS["frame_counter"])
    (fpa,) = struct.unpack_from(byte_order + "H", raw, TELEMETRY_OFFSETS["fpa_temp_kx10"])
    return Telemetry(fc, ffc, fpa / 10.0)


@dataclass
class ThermalFrame:
    """A raw 16-bit frame: ``image`` uint16 HxW counts, device ``frame_counter``,
    host arrival ``t_host_ns`` and ``ffc`` (an FFC was running: the image is frozen)."""

    image: np.ndarray
    frame_counter: int
    t_host_ns: int
    ffc: bool
    telemetry: Telemetry | None = None


class FrameSource(Protocol):
    """Anything that yields raw thermal frames (V4L2 camera, a file, the simulator)."""

    def read(self) -> ThermalFrame | None: ...

    def close(self) -> None: ...


@dataclass
class V4l2Options:
    device: str = "/dev/video0"
    width: int = 640
    height: int = 512
    telemetry: str = "top"  # "top", "bottom" or "none"
    telemetry_byte_order: str = ">"
    read_timeout_ms: int = 1000  # a read without a frame for this long fails (0: OpenCV's default, 10 s)


class V4l2Source:
    """Boson / ADK over USB (UVC) through OpenCV's V4L2 backend, raw Y16, no RGB conversion.

    Without telemetry the frame counter is the host's count of frames read (drops before
    the host are then invisible: enable telemetry for restamping). Failures say what they mean
    to a driver loop (``rgbt.sensors.reconnect``): a device that cannot be opened, or whose device
    node is gone when a read fails (unplugged), raises :class:`~rgbt.sensors.reconnect.DeviceError`;
    a read that returns no frame (``read_timeout_ms`` passed, a transient error) raises
    :class:`~rgbt.sensors.reconnect.ReadFailed`; a frame of the wrong shape raises ``DecodeError``
    (a bad frame).
    """

    def __init__(self, options: V4l2Options, control: BosonControl | None = None) -> None:
        self.options = options
        self.control = control
        if options.device.startswith("/") and not os.path.exists(options.device):
            raise DeviceError(f"V4L2 {options.device}: no such device (is the camera attached?)")
        cap = cv2.VideoCapture(options.device, cv2.CAP_V4L2)
        if not cap.isOpened():
            raise DeviceError(f"V4L2 {options.device}: cannot open (is the camera attached?)")
        cap.set(cv2.CAP_PROP_FOURCC, cv2.VideoWriter.fourcc(*"Y16 "))
        cap.set(cv2.CAP_PROP_CONVERT_RGB, 0)
        cap.set(cv2.CAP_PROP_BUFFERSIZE, 1)
        if options.read_timeout_ms > 0 and hasattr(cv2, "CAP_PROP_READ_TIMEOUT_MSEC"):
            cap.set(cv2.CAP_PROP_READ_TIMEOUT_MSEC, options.read_timeout_ms)
        extra = 0 if options.telemetry == "none" else 1
        cap.set(cv2.CAP_PROP_FRAME_WIDTH, options.width)
        cap.set(cv2.CAP_PROP_FRAME_HEIGHT, options.height + extra)
        self.cap = cap
        self._count = 0

    def read(self) -> ThermalFrame:
        ok, frame = self.cap.read()
        t_host = time.monotonic_ns()
        if not ok or frame is None:
            device = self.options.device
            if device.startswith("/") and not os.path.exists(device):
                raise DeviceError(f"V4L2 {device}: device node gone (unplugged)")
            raise ReadFailed(
                f"V4L2 {device}: no frame (read failed or timed out after {self.options.read_timeout_ms} ms)"
            )
        try:
            img = np.asarray(frame).view(np.uint16).reshape(-1, self.options.width)
        except ValueError as exc:
            raise DecodeError(f"V4L2 {self.options.device}: frame of {np.asarray(frame).nbytes} bytes: expected rows "
                              f"of {self.options.width} uint16 ({exc})") from None
        return split_frame(img, t_host, self.options, host_count=self._next())

    def _next(self) -> int:
        self._count += 1
        return self._count

    def close(self) -> None:
        self.cap.release()


def split_frame(img: np.ndarray, t_host_ns: int, options: V4l2Options, host_count: int = 0,
                ffc_state: FfcStatus | None = None) -> ThermalFrame:
    """Separate the telemetry line from the image; the frame is flagged ``ffc`` while an FFC
    runs (telemetry: the frame counter equals the last-FFC frame counter, or the camera
    reported FFC in progress)."""
    h = options.height
    if img.ndim != 2 or img.shape[0] not in (h, h + 1):
        raise DecodeError(f"Boson frame: shape {img.shape}: expected {h} rows (or {h + 1} with telemetry) x width")
    if options.telemetry not in ("top", "bottom", "none"):
        raise DecodeError(f"Boson frame: telemetry {options.telemetry!r}: expected 'top', 'bottom' or 'none'")
    if options.telemetry == "none" or img.shape[0] == h:
        return ThermalFrame(img[:h], host_count, t_host_ns, ffc_state == FfcStatus.IN_PROGRESS)
    line, image = (img[0], img[1:h + 1]) if options.telemetry == "top" else (img[h], img[:h])
    tel = parse_telemetry(line, options.telemetry_byte_order)
    ffc = ffc_state == FfcStatus.IN_PROGRESS or tel.frame_counter == tel.ffc_frame_counter
    return ThermalFrame(image, tel.frame_counter, t_host_ns, ffc, tel)


def frames(source: FrameSource, max_frames: int | None = None) -> Iterator[ThermalFrame]:
    n = 0
    while max_frames is None or n < max_frames:
        f = source.read()
        if f is None:
            return
        n += 1
        yield f


class BosonCamera:
    """Frames from a :class:`FrameSource` with the FFC state of the camera attached.

    The FFC status is polled over the serial link: every ``busy_poll_s`` while an FFC runs
    (or was commanded through :meth:`run_ffc`), every ``idle_poll_s`` otherwise (to catch
    automatic FFCs). Frames read while the camera reports ``IN_PROGRESS`` (or the telemetry
    frame counter equals the last-FFC counter) carry ``ffc=True``. Serial errors do not stop
    the video: the error is recorded and the frame keeps its telemetry-based flag.
    """

    def __init__(self, source: FrameSource, control: BosonControl | None, busy_poll_s: float = 0.05,
                 idle_poll_s: float = 1.0) -> None:
        self.source = source
        self.control = control
        self.busy_poll_s, self.idle_poll_s = busy_poll_s, idle_poll_s
        self.status = FfcStatus.NEVER_COMMANDED
        self._busy = False
        self._next_poll = 0.0
        self.errors: list[str] = []

    def run_ffc(self) -> None:
        if self.control is None:
            raise BosonError("Boson: run_ffc needs the serial control link")
        self.control.run_ffc()
        self._busy = True
        self.status = FfcStatus.IN_PROGRESS
        self._next_poll = time.monotonic() + self.busy_poll_s

    def _poll(self) -> None:
        now = time.monotonic()
        if self.control is None or now < self._next_poll:
            return
        try:
            self.status = self.control.get_ffc_status()
        except BosonError as exc:
            self.errors.append(str(exc))
        self._busy = self.status in (FfcStatus.IMMINENT, FfcStatus.IN_PROGRESS)
        self._next_poll = now + (self.busy_poll_s if self._busy else self.idle_poll_s)

    def read(self) -> ThermalFrame | None:
        frame = self.source.read()
        if frame is None:
            return None
        self._poll()
        if self.status == FfcStatus.IN_PROGRESS:
            frame.ffc = True
        return frame

    def close(self) -> None:
        self.source.close()
        if self.control is not None:
            self.control.close()

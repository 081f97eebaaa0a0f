"""VectorNav VN-100: binary output protocol, ASCII commands, and a reconnecting driver.

Binary packet (VN-100 user manual, "Binary Output Protocol")::

    0xFA | groups (1 byte) | one 16-bit little-endian field mask per set group bit
         | payload: the selected fields, group order then field-bit order, little endian
         | CRC-16-CCITT (big endian) over everything after 0xFA

The CRC over ``groups .. CRC`` is 0 for a valid packet. Field sizes per group are
:data:`GROUPS` (VN-100 user manual tables; the same sizes as VectorNav's public
programming library). Fields with variable size (GNSS SatInfo / RawMeas) and extended
field masks (bit 15) are rejected as undecodable.

ASCII messages: ``$VN<CMD>,<fields>*<XX>\\r\\n`` where ``XX`` is the 8-bit XOR of the bytes
between ``$`` and ``*`` (two uppercase hex digits).

Units: angular rate rad/s, acceleration m/s^2, magnetic field Gauss, temperature deg C,
pressure kPa, attitude deg, times ns (device clock: ``TimeStartup`` since power-on,
``TimeSyncIn`` since the last SyncIn edge), ``SyncInCnt`` counts SyncIn edges.
Body frame: the VN-100 sensor frame (x forward, y right, z down).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rgbt.errors import DecodeError
from rgbt.sensors.crc import crc16_ccitt
from rgbt.sensors.serial_link import SerialLink

if TYPE_CHECKING:
    from rgbt.stack import Stack

SYNC = 0xFA

# (name, struct format (little endian, no prefix), column suffixes)
_V3 = ("x", "y", "z")
_UTC = ("year", "month", "day", "hour", "minute", "second", "ms")
Field = tuple[str, str, tuple[str, ...]]

COMMON: list[Field | None] = [
    ("TimeStartup", "Q", ("",)),
    ("TimeGps", "Q", ("",)),
    ("TimeSyncIn", "Q", ("",)),
    ("YawPitchRoll", "3f", ("yaw", "pitch", "roll")),
    ("Quaternion", "4f", ("x", "y", "z", "w")),
    ("AngularRate", "3f", _V3),
    ("Position", "3d", ("lat", "lon", "alt")),
    ("Velocity", "3f", ("n", "e", "d")),
    ("Accel", "3f", _V3),
    ("Imu", "6f", ("accel_x", "accel_y", "accel_z", "gyro_x", "gyro_y", "gyro_z")),
    ("MagPres", "5f", ("mag_x", "mag_y", "mag_z", "temp", "pres")),
    ("DeltaThetaVel", "7f", ("dtime", "dtheta_x", "dtheta_y", "dtheta_z", "dvel_x", "dvel_y", "dvel_z")),
    ("InsStatus", "H", ("",)),
    ("SyncInCnt", "I", ("",)),
    ("TimeGpsPps", "Q", ("",)),
]
TIME: list[Field | None] = [
    ("TimeStartup", "Q", ("",)),
    ("TimeGps", "Q", ("",)),
    ("GpsTow", "Q", ("",)),
    ("GpsWeek", "H", ("",)),
    ("TimeSyncIn", "Q", ("",)),
    ("TimeGpsPps", "Q", ("",)),
    ("TimeUtc", "bBBBBBH", _UTC),
    ("SyncInCnt", "I", ("",)),
    ("SyncOutCnt", "I", ("",)),
    ("TimeStatus", "B", ("",)),
]
IMU: list[Field | None] = [
    ("ImuStatus", "H", ("",)),
    ("UncompMag", "3f", _V3),
    ("UncompAccel", "3f", _V3),
    ("UncompGyro", "3f", _V3),
    ("Temp", "f", ("",)),
    ("Pres", "f", ("",)),
    ("DeltaTheta", "4f", ("dtime", "x", "y", "z")),
    ("DeltaVel", "3f", _V3),
    ("Mag", "3f", _V3),
    ("Accel", "3f", _V3),
    ("AngularRate", "3f", _V3),
    ("SensSat", "H", ("",)),
]
GNSS: list[Field | None] = [
    ("Utc", "bBBBBBH", _UTC),
    ("Tow", "Q", ("",)),
    ("Week", "H", ("",)),
    ("NumSats", "B", ("",)),
    ("Fix", "B", ("",)),
    ("PosLla", "3d", ("lat", "lon", "alt")),
    ("PosEcef", "3d", _V3),
    ("VelNed", "3f", ("n", "e", "d")),
    ("VelEcef", "3f", _V3),
    ("PosU", "3f", ("n", "e", "d")),
    ("VelU", "f", ("",)),
    ("TimeU", "f", ("",)),
    ("TimeInfo", "Bb", ("status", "leap_seconds")),
    ("Dop", "7f", ("g", "p", "t", "v", "h", "n", "e")),
    None,  # SatInfo: variable size
    None,  # RawMeas: variable size
]
ATTITUDE: list[Field | None] = [
    ("VpeStatus", "H", ("",)),
    ("YawPitchRoll", "3f", ("yaw", "pitch", "roll")),
    ("Quaternion", "4f", ("x", "y", "z", "w")),
    ("Dcm", "9f", tuple(f"{r}{c}" for r in range(3) for c in range(3))),
    ("MagNed", "3f", ("n", "e", "d")),
    ("AccelNed", "3f", ("n", "e", "d")),
    ("LinearAccelBody", "3f", _V3),
    ("LinearAccelNed", "3f", ("n", "e", "d")),
    ("YprU", "3f", ("yaw", "pitch", "roll")),
]
INS: list[Field | None] = [
    ("InsStatus", "H", ("",)),
    ("PosLla", "3d", ("lat", "lon", "alt")),
    ("PosEcef", "3d", _V3),
    ("VelBody", "3f", _V3),
    ("VelNed", "3f", ("n", "e", "d")),
    ("VelEcef", "3f", _V3),
    ("MagEcef", "3f", _V3),
    ("AccelEcef", "3f", _V3),
    ("LinearAccelEcef", "3f", _V3),
    ("PosU", "f", ("",)),
    ("VelU", "f", ("",)),
]

#: group bit -> (group name, field table indexed by field bit)
GROUPS: dict[int, tuple[str, list[Field | None]]] = {
    0: ("common", COMMON),
    1: ("time", TIME),
    2: ("imu", IMU),
    3: ("gnss", GNSS),
    4: ("attitude", ATTITUDE),
    5: ("ins", INS),
    6: ("gnss2", GNSS),
}

_STRUCTS: dict[str, struct.Struct] = {}


def _struct(fmt: str) -> struct.Struct:
    s = _STRUCTS.get(fmt)
    if s is None:
        s = _STRUCTS[fmt] = struct.Struct("<" + fmt)
    return s


@dataclass(frozen=True)
class OutputLayout:
    """A binary output configuration: group byte + field masks, with its packet length."""

    groups: int
    masks: tuple[int, ...]  # one per set group bit, ascending
    fields: tuple[tuple[str, str, Field], ...]  # (group name, field name, entry) in payload order
    payload_size: int

    @property
    def header_size(self) -> int:
        return 2 + 2 * len(self.masks)

    @property
    def packet_size(self) -> int:
        """Bytes from 0xFA through the CRC."""
        return self.header_size + self.payload_size + 2

    def header(self) -> bytes:
        return bytes([SYNC, self.groups]) + b"".join(struct.pack("<H", m) for m in self.masks)

    def columns(self) -> list[str]:
        """Flat CSV column names, e.g. ``imu.UncompMag.x``, ``common.TimeStartup``."""
        cols = []
        for gname, fname, (_, _, suffixes) in self.fields:
            for s in suffixes:
                cols.append(f"{gname}.{fname}.{s}" if s else f"{gname}.{fname}")
        return cols


_LAYOUTS: dict[tuple[int, tuple[int, ...]], OutputLayout] = {}


def layout_for(groups: int, masks: Sequence[int]) -> OutputLayout:
    """The layout of a group byte + masks; raises :class:`DecodeError` when not decodable."""
    key = (groups, tuple(masks))
    lay = _LAYOUTS.get(key)
    if lay is not None:
        return lay
    if groups == 0 or groups & 0x80:
        raise DecodeError(f"VN-100 binary: group byte 0x{groups:02x}: expected bits 0-6, at least one")
    set_bits = [b for b in range(7) if groups & (1 << b)]
    if len(set_bits) != len(masks):
        raise DecodeError(f"VN-100 binary: {len(set_bits)} groups but {len(masks)} field masks")
    fields = []
    size = 0
    for gbit, mask in zip(set_bits, masks, strict=False):
        gname, table = GROUPS[gbit]
        if mask == 0 or mask & 0x8000:
            raise DecodeError(
                f"VN-100 binary: group {gname} field mask 0x{mask:04x}: expected non-zero, no extension bit"
            )
        for fbit in range(15):
            if mask & (1 << fbit):
                entry = table[fbit] if fbit < len(table) else None
                if entry is None:
                    raise DecodeError(f"VN-100 binary: group {gname} field bit {fbit}: unknown or variable size")
                fields.append((gname, entry[0], entry))
                size += _struct(entry[1]).size
    lay = OutputLayout(groups, tuple(masks), tuple(fields), size)
    _LAYOUTS[key] = lay
    return lay


def layout_from_names(names: Mapping[str, Sequence[str]]) -> OutputLayout:
    """Build a layout from ``{"common": ["TimeStartup", ...], "imu": [...]}``."""
    groups = 0
    masks = []
    for gbit, (gname, table) in GROUPS.items():
        if gname not in names:
            continue
        groups |= 1 << gbit
        mask = 0
        known = {e[0]: i for i, e in enumerate(table) if e is not None}
        for n in names[gname]:
            if n not in known:
                raise DecodeError(f"VN-100 binary: group {gname}: unknown field {n!r}, expected one of {sorted(known)}")
            mask |= 1 << known[n]
        masks.append(mask)
    return layout_for(groups, masks)


@dataclass
class VnPacket:
    """One decoded binary packet: ``values[(group, field)]`` is a scalar or a tuple."""

    layout: OutputLayout
    values: dict[tuple[str, str], object]
    raw: bytes

    def get(self, group: str, name: str, default: object = None) -> object:
        return self.values.get((group, name), default)

    def row(self) -> list[object]:
        """Values flattened in :meth:`OutputLayout.columns` order."""
        out: list[object] = []
        for gname, fname, _ in self.layout.fields:
            v = self.values[(gname, fname)]
            out.extend(v if isinstance(v, tuple) else (v,))
        return out


def decode_payload(layout: OutputLayout, payload: bytes | memoryview) -> dict[tuple[str, str], object]:
    values: dict[tuple[str, str], object] = {}
    off = 0
    for gname, fname, (_, fmt, suffixes) in layout.fields:
        s = _struct(fmt)
        vals = s.unpack_from(payload, off)
        off += s.size
        values[(gname, fname)] = vals[0] if len(suffixes) == 1 else vals
    return values


def encode_packet(layout: OutputLayout, values: dict[tuple[str, str], object]) -> bytes:
    """Encode a binary packet (what the sensor sends) with a valid CRC."""
    body = bytearray(layout.header()[1:])
    for gname, fname, (_, fmt, _suffixes) in layout.fields:
        v = values[(gname, fname)]
        body += _struct(fmt).pack(*(v if isinstance(v, (tuple, list)) else (v,)))
    body += struct.pack(">H", crc16_ccitt(body))
    return bytes([SYNC]) + bytes(body)


# ----------------------------------------------------------------------------- ASCII

def ascii_checksum(body: str | bytes) -> int:
    """8-bit XOR of the bytes between ``$`` and ``*``."""
    data = body.encode("ascii") if isinstance(body, str) else body
    c = 0
    for b in data:
        c ^= b
    return c


def ascii_command(body: str) -> bytes:
    """``VNWRG,06,0`` -> ``b"$VNWRG,06,0*XX\\r\\n"`` with its XOR checksum."""
    return f"${body}*{ascii_checksum(body):02X}\r\n".encode("ascii")


@dataclass(frozen=True)
class AsciiMessage:
    """A checksummed ``$VN...`` line: ``kind`` (e.g. ``VNYMR``, ``VNWRG``, ``VNERR``) and fields."""

    kind: str
    fields: tuple[str, ...]
    raw: bytes


def parse_ascii(line: bytes) -> AsciiMessage:
    """Parse one ``$...*XX`` line (CR/LF optional); raises :class:`DecodeError` on a bad checksum.

    The checksum is computed over the raw bytes, so a line with non-ASCII bytes is rejected
    (checksum or field error), never a Unicode error.
    """
    raw = bytes(line).strip()
    shown = raw[:40].decode("ascii", errors="replace")
    if not raw.startswith(b"$") or b"*" not in raw:
        raise DecodeError(f"VN-100 ASCII: {shown!r}: expected '$...*XX'")
    body, _, cks = raw[1:].rpartition(b"*")
    if b"$" in body:  # a message starts at its only '$' (an XOR checksum cannot tell '$VN$NV$VN...')
        raise DecodeError(f"VN-100 ASCII: {shown!r}: a second '$' inside the message")
    if cks.upper() != b"XX":  # the sensor accepts XX as 'no checksum'
        if len(cks) != 2 or not all(c in b"0123456789abcdefABCDEF" for c in cks):
            raise DecodeError(f"VN-100 ASCII: {shown!r}: checksum {cks[:8]!r}: expected two hex digits")
        want = int(cks, 16)
        got = ascii_checksum(body)
        if got != want:
            raise DecodeError(f"VN-100 ASCII: {shown!r}: checksum {want:02X}, computed {got:02X}")
    try:
        text = body.decode("ascii")
    except UnicodeDecodeError:
        raise DecodeError(f"VN-100 ASCII: {shown!r}: expected ASCII text") from None
    parts = text.split(",")
    return AsciiMessage(parts[0], tuple(parts[1:]), bytes(line))


@dataclass(frozen=True)
class Ymr:
    """``$VNYMR``: yaw/pitch/roll deg, magnetic Gauss, accel m/s^2, gyro rad/s (body frame)."""

    ypr_deg: tuple[float, float, float]
    mag_gauss: tuple[float, float, float]
    accel_m_s2: tuple[float, float, float]
    gyro_rad_s: tuple[float, float, float]


def parse_ymr(msg: AsciiMessage) -> Ymr:
    if msg.kind != "VNYMR" or len(msg.fields) != 12:
        raise DecodeError(f"VN-100 ASCII: {msg.kind} with {len(msg.fields)} fields: expected VNYMR with 12")
    try:
        v = [float(x) for x in msg.fields]
    except ValueError:
        raise DecodeError(f"VN-100 ASCII: VNYMR fields {msg.fields!r}: expected 12 numbers") from None
    return Ymr((v[0], v[1], v[2]), (v[3], v[4], v[5]), (v[6], v[7], v[8]), (v[9], v[10], v[11]))


# ----------------------------------------------------------------------------- stream parser

@dataclass
class ParserStats:
    """Counts of one stream: binary packets decoded, binary CRC failures, bytes that belong to
    no valid item, ASCII messages and ASCII checksum failures."""

    packets: int = 0
    crc_failures: int = 0
    bytes_skipped: int = 0
    ascii_messages: int = 0
    ascii_checksum_failures: int = 0

    @property
    def checksum_failures(self) -> int:
        """Binary CRC failures plus ASCII checksum failures."""
        return self.crc_failures + self.ascii_checksum_failures


class Vn100Parser:
    """Incremental parser for a VN-100 byte stream mixed with anything else.

    ``feed(data)`` returns the complete items found so far: :class:`VnPacket` for binary
    packets with a good CRC and (if ``ascii=True``) :class:`AsciiMessage` for checksummed
    ``$VN`` lines. Bytes that belong to no valid item are counted in ``stats.bytes_skipped``;
    a plausible binary header whose CRC fails counts one ``crc_failures`` and the parser
    resynchronises one byte later. Call :meth:`finish` at end of stream to count leftovers.
    """

    MAX_ASCII = 512

    def __init__(self, ascii: bool = True) -> None:
        self.ascii = ascii
        self.stats = ParserStats()
        self._buf = bytearray()

    def feed(self, data: bytes, final: bool = False) -> list[VnPacket | AsciiMessage]:
        """Items completed by ``data``. ``final``: no more bytes will come, so a candidate that
        needs more bytes is not a packet (the parser resynchronises one byte later)."""
        self._buf += data
        out: list[VnPacket | AsciiMessage] = []
        buf = self._buf
        pos = 0
        n = len(buf)
        while pos < n:
            b = buf[pos]
            if b == SYNC:
                res = self._try_binary(buf, pos, n)
                if res is None and not final:
                    break  # need more bytes
                if isinstance(res, VnPacket):
                    out.append(res)
                    pos += res.layout.packet_size
                    continue
                pos += 1
                self.stats.bytes_skipped += 1
                continue
            if b == 0x24 and self.ascii:  # '$'
                end = buf.find(b"\n", pos, pos + self.MAX_ASCII)
                if end < 0:
                    if n - pos < self.MAX_ASCII and not final:
                        break  # wait for the rest of the line
                    pos += 1
                    self.stats.bytes_skipped += 1
                    continue
                line = bytes(buf[pos:end + 1])
                if line.startswith(b"$VN") and b"*" in line:
                    try:
                        msg = parse_ascii(line)
                    except DecodeError:
                        self.stats.ascii_checksum_failures += 1
                    else:
                        self.stats.ascii_messages += 1
                        out.append(msg)
                        pos = end + 1
                        continue
                pos += 1
                self.stats.bytes_skipped += 1
                continue
            # skip to the next candidate start byte
            nxt_bin = buf.find(SYNC, pos)
            nxt = nxt_bin if nxt_bin >= 0 else n
            if self.ascii:
                nxt_a = buf.find(b"$", pos, nxt)
                if nxt_a >= 0:
                    nxt = nxt_a
            self.stats.bytes_skipped += nxt - pos
            pos = nxt
        del buf[:pos]
        return out

    def _try_binary(self, buf: bytearray, pos: int, n: int) -> VnPacket | bool | None:
        """A packet, False (not a packet here), or None (need more bytes)."""
        if n - pos < 2:
            return None
        groups = buf[pos + 1]
        if groups == 0 or groups & 0x80:
            return False
        ngroups = bin(groups).count("1")
        hdr = 2 + 2 * ngroups
        if n - pos < hdr:
            return None
        masks = struct.unpack_from(f"<{ngroups}H", buf, pos + 2)
        try:
            lay = layout_for(groups, masks)
        except DecodeError:
            return False
        size = lay.packet_size
        if n - pos < size:
            return None
        body = memoryview(buf)[pos + 1:pos + size]
        if crc16_ccitt(body) != 0:
            body.release()
            self.stats.crc_failures += 1
            return False
        raw = bytes(buf[pos:pos + size])
        body.release()
        self.stats.packets += 1
        return VnPacket(lay, decode_payload(lay, raw[hdr:size - 2]), raw)

    def finish(self) -> list[VnPacket | AsciiMessage]:
        """End of stream: the items still in the buffer (a cut candidate header no longer hides
        the packets behind it); the rest is counted as skipped. Returns those items."""
        out = self.feed(b"", final=True)
        self.stats.bytes_skipped += len(self._buf)
        self._buf.clear()
        return out


def decode_bytes(data: bytes, ascii: bool = False) -> tuple[list[VnPacket], ParserStats]:
    """Decode a whole capture; returns the binary packets and the parser counts."""
    parser = Vn100Parser(ascii=ascii)
    items = parser.feed(data)
    items += parser.finish()
    return [i for i in items if isinstance(i, VnPacket)], parser.stats


# ----------------------------------------------------------------------------- driver

#: Binary output the driver configures (contract of issue 5): 200 Hz with these fields.
DEFAULT_OUTPUT = {
    "common": ["TimeStartup", "TimeSyncIn", "Quaternion", "AngularRate", "Accel", "MagPres", "SyncInCnt"],
}


@dataclass
class Vn100Options:
    """VN-100 driver options. ``port`` is a device path or a pyserial URL."""

    port: str = "/dev/ttyUSB0"
    baudrate: int = 921600
    rate_hz: float = 200.0
    imu_rate_hz: float = 800.0  # internal IMU rate the rate divisor divides
    output: dict[str, list[str]] = field(default_factory=lambda: {k: list(v) for k, v in DEFAULT_OUTPUT.items()})
    serial_port: int = 1  # which VN-100 serial port streams the binary output (AsyncMode 1/2)
    syncin_mode_count: bool = True  # SyncIn COUNT on the trigger, rising edge
    reply_timeout_s: float = 0.5
    reconnect_backoff_s: tuple[float, float] = (0.05, 2.0)

    @classmethod
    def from_stack(cls, stack: Stack, **overrides: Any) -> Vn100Options:
        """Rate and SyncIn wiring from ``calib/stack.yaml`` (``imu.rate_hz``, ``trigger.imu_syncin``)."""
        kw: dict[str, Any] = {"rate_hz": float(stack.imu.rate_hz), "syncin_mode_count": bool(stack.trigger.imu_syncin)}
        kw.update(overrides)
        return cls(**kw)

    def packet_latency_ns(self) -> int:
        """Serial transmit time of one binary packet (10 bits per byte): the IMU's fixed latency."""
        size = layout_from_names(self.output).packet_size
        return int(round(size * 10 / self.baudrate * 1e9))


@dataclass(frozen=True)
class ImuSample:
    """One IMU sample from the binary output, in the device clock.

    ``t_sensor_ns`` VN-100 TimeStartup; ``t_since_sync_ns`` TimeSyncIn (time since the last
    SyncIn edge); ``syncin_count`` SyncInCnt; ``t_host_ns`` host arrival (``time.monotonic_ns``
    unless the caller stamps); gyro rad/s, accel m/s^2 (specific force), body frame.
    """

    t_sensor_ns: int
    t_host_ns: int
    t_since_sync_ns: int | None
    syncin_count: int | None
    gyro_rad_s: tuple[float, float, float] | None
    accel_m_s2: tuple[float, float, float] | None
    quat_xyzw: tuple[float, float, float, float] | None
    temp_c: float | None
    pres_kpa: float | None


def sample_from_packet(pkt: VnPacket, t_host_ns: int) -> ImuSample:
    def pick(*keys: tuple[str, str]) -> Any:  # a decoded field: int, float or a tuple of them
        for k in keys:
            if k in pkt.values:
                return pkt.values[k]
        return None

    t = pick(("common", "TimeStartup"), ("time", "TimeStartup"))
    if t is None:
        raise DecodeError("VN-100 binary: packet has no TimeStartup: expected the common or time group to carry it")
    magpres = pick(("common", "MagPres"))
    temp = magpres[3] if isinstance(magpres, tuple) else pick(("imu", "Temp"))
    pres = magpres[4] if isinstance(magpres, tuple) else pick(("imu", "Pres"))
    return ImuSample(
        t_sensor_ns=int(t),
        t_host_ns=t_host_ns,
        t_since_sync_ns=pick(("common", "TimeSyncIn"), ("time", "TimeSyncIn")),
        syncin_count=pick(("common", "SyncInCnt"), ("time", "SyncInCnt")),
        gyro_rad_s=pick(("common", "AngularRate"), ("imu", "AngularRate"), ("imu", "UncompGyro")),
        accel_m_s2=pick(("common", "Accel"), ("imu", "Accel"), ("imu", "UncompAccel")),
        quat_xyzw=pick(("common", "Quaternion"), ("attitude", "Quaternion")),
        temp_c=temp,
        pres_kpa=pres,
    )


def configuration_commands(options: Vn100Options) -> list[bytes]:
    """ASCII register writes that configure the sensor (each answered by an echo).

    1. register 6 (async data output type) = 0: ASCII output off;
    2. register 32 (synchronization control): SyncIn mode COUNT (3), rising edge, skip 0,
       SyncOut off;
    3. register 75 (binary output 1): serial port, rate divisor, group byte, field masks.
    """
    lay = layout_from_names(options.output)
    divisor = round(options.imu_rate_hz / options.rate_hz)
    if divisor < 1 or abs(options.imu_rate_hz / divisor - options.rate_hz) > 1e-6:
        raise DecodeError(f"VN-100: rate_hz {options.rate_hz}: expected {options.imu_rate_hz}/N")
    masks = ",".join(f"{m:04X}" for m in lay.masks)
    cmds = [ascii_command("VNWRG,06,0")]
    if options.syncin_mode_count:
        cmds.append(ascii_command("VNWRG,32,3,0,0,0,0,1,0,100000000,0"))
    cmds.append(ascii_command(f"VNWRG,75,{options.serial_port},{divisor},{lay.groups:02X},{masks}"))
    return cmds


class Vn100:
    """VN-100 over a :class:`~rgbt.sensors.serial_link.SerialLink`: configure, stream, reconnect.

    On every (re)connection the configuration is written again. Samples whose device time
    does not increase (a replay after reconnect, a duplicate) are dropped and counted, so
    the output never has duplicated or reordered samples; a device time more than
    :attr:`RESTART_NS` before the last one is the sensor restarting (power-cycled with its USB
    adapter): taken, counted in ``restarts``. A driver that makes a new ``Vn100`` for a reopened
    port passes the last device time on (``last_t_sensor_ns``).
    """

    RESTART_NS = 1_000_000_000  # a replay repeats well under a second; a restarted clock goes back further

    def __init__(self, options: Vn100Options, link: SerialLink | None = None) -> None:
        self.options = options
        self.link = link or SerialLink(options.port, options.baudrate, backoff_s=options.reconnect_backoff_s)
        self.link.on_connect = self._on_connect
        self.parser = Vn100Parser(ascii=True)
        self.last_t_sensor_ns: int | None = None
        self.duplicates_dropped = 0
        self.restarts = 0  # the device clock started again (a power cycle)
        self.untimed_packets = 0  # valid packets without TimeStartup (another output configuration)
        self.errors: list[str] = []
        self.configured = False
        self._pending: list[VnPacket | AsciiMessage] = []

    def _on_connect(self) -> None:
        self.parser = Vn100Parser(ascii=True)  # bytes from before the unplug are gone
        self.configured = False
        self.configure()

    def configure(self) -> None:
        """Write the configuration; waits for each echo (or a ``$VNERR``)."""
        for cmd in configuration_commands(self.options):
            self.link.write(cmd)
            want = cmd[1:cmd.index(b"*")].split(b",")[:2]
            deadline = time.monotonic() + self.options.reply_timeout_s
            while time.monotonic() < deadline:
                data = self.link.read_raw(4096, timeout=0.02)
                got = None
                for item in self.parser.feed(data):
                    if isinstance(item, AsciiMessage) and item.kind == "VNERR":
                        self.errors.append(f"{cmd.strip().decode()}: VNERR {','.join(item.fields)}")
                        got = item
                    elif (
                        isinstance(item, AsciiMessage)
                        and [item.kind.encode(), *(f.encode() for f in item.fields[:1])] == want
                    ):
                        got = item
                    else:
                        self._pending.append(item)
                if got is not None:
                    break
            else:
                self.errors.append(f"{cmd.strip().decode()}: no reply in {self.options.reply_timeout_s} s")
        self.configured = True

    def read(self, timeout: float = 0.05) -> list[ImuSample]:
        """Samples that arrived, in device-time order, stamped with host arrival."""
        self.link.poll()
        data = self.link.read(4096, timeout=timeout)
        t_host = time.monotonic_ns()
        items = self._pending + (self.parser.feed(data) if data else [])
        self._pending = []
        out = []
        for item in items:
            if not isinstance(item, VnPacket):
                continue
            if ("common", "TimeStartup") not in item.values and ("time", "TimeStartup") not in item.values:
                self.untimed_packets += 1
                continue
            s = sample_from_packet(item, t_host)
            last = self.last_t_sensor_ns
            if last is not None and s.t_sensor_ns <= last:
                if last - s.t_sensor_ns <= self.RESTART_NS:
                    self.duplicates_dropped += 1
                    continue
                self.restarts += 1
            self.last_t_sensor_ns = s.t_sensor_ns
            out.append(s)
        return out

    def samples(self, duration_s: float) -> Iterator[ImuSample]:
        end = time.monotonic() + duration_s
        while time.monotonic() < end:
            yield from self.read()

    def close(self) -> None:
        self.link.close()




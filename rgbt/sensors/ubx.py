"""u-blox GNSS: UBX NAV-PVT (pyubx2) and NMEA GGA/RMC (pynmeagps) to fixes.

Outputs mirror ``sensor_msgs/NavSatFix`` (lat/lon deg, altitude m above the ellipsoid,
diagonal covariance m^2 from the receiver's accuracy estimates) and
``sensor_msgs/TimeReference`` (GNSS UTC time of the epoch, ns since the Unix epoch).
"""

from __future__ import annotations

import calendar
import datetime
import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from rgbt.errors import DecodeError
from rgbt.sensors.stats import DecodeStats

STATUS_NO_FIX, STATUS_FIX, STATUS_SBAS_FIX, STATUS_GBAS_FIX = -1, 0, 1, 2


@dataclass
class Fix:
    """One GNSS epoch. ``height_m`` is above the WGS-84 ellipsoid (NavSatFix altitude)."""

    source: str  # "NAV-PVT", "GGA"
    t_utc_ns: int | None
    lat: float
    lon: float
    height_m: float
    hmsl_m: float | None
    status: int
    fix_type: int
    num_sv: int
    position_covariance: tuple[float, ...] | None  # 3x3 row-major, ENU, m^2

    def to_dict(self) -> dict:
        return asdict(self)


def _utc_ns(year: int, month: int, day: int, hour: int, minute: int, second: float, nano: int = 0) -> int:
    return calendar.timegm((year, month, day, hour, minute, 0)) * 1_000_000_000 + int(round(second * 1e9)) + nano


def _valid_utc_ns(year: int, month: int, day: int, hour: int, minute: int, second: float,
                  nano: int = 0) -> int | None:
    """:func:`_utc_ns`, or None when the fields are not a calendar date and time of day
    (a receiver without a time solution, or a damaged message)."""
    try:
        if not (1980 <= year <= 9999 and 0 <= hour < 24 and 0 <= minute < 60 and 0 <= second <= 60
                and abs(nano) < 1_000_000_000):
            return None
        datetime.date(year, month, day)
    except (ValueError, TypeError, OverflowError):
        return None
    return _utc_ns(year, month, day, hour, minute, second, nano)


_NAV_PVT_FIELDS = ("validDate", "validTime", "year", "month", "day", "hour", "min", "second", "nano", "gnssFixOk",
                   "fixType", "carrSoln", "diffSoln", "hAcc", "vAcc", "lat", "lon", "height", "hMSL", "numSV")


def fix_from_nav_pvt(p: Any) -> Fix:  # p: a pyubx2 UBXMessage (untyped)
    """NAV-PVT -> :class:`Fix` (lat/lon deg, height mm -> m, hAcc/vAcc mm -> covariance m^2).

    A date/time flagged valid but outside the calendar gives ``t_utc_ns`` None; a message
    without the NAV-PVT fields (a short payload) raises :class:`DecodeError`.
    """
    missing = [f for f in _NAV_PVT_FIELDS if not isinstance(getattr(p, f, None), (int, float))]
    if missing:
        raise DecodeError(f"UBX NAV-PVT: fields {', '.join(missing)} missing: expected the 92-byte payload")
    valid_time = bool(p.validDate and p.validTime)
    t = _valid_utc_ns(p.year, p.month, p.day, p.hour, p.min, p.second, p.nano) if valid_time else None
    ok = bool(p.gnssFixOk) and p.fixType in (2, 3, 4)
    status = STATUS_NO_FIX
    if ok:
        status = STATUS_GBAS_FIX if p.carrSoln else (STATUS_SBAS_FIX if p.diffSoln else STATUS_FIX)
    h, v = (p.hAcc / 1000.0) ** 2, (p.vAcc / 1000.0) ** 2
    return Fix("NAV-PVT", t, float(p.lat), float(p.lon), p.height / 1000.0, p.hMSL / 1000.0, status, int(p.fixType),
               int(p.numSV), (h, 0.0, 0.0, 0.0, h, 0.0, 0.0, 0.0, v))


UBX_MAX_PAYLOAD = 8192
NMEA_MAX_SENTENCE = 512  # NMEA 0183 allows 82 characters; u-blox PUBX,03 lines are longer


def _fletcher(data: bytes, start: int, stop: int) -> tuple[int, int]:
    """UBX 8-bit Fletcher checksum (ck_a, ck_b) of ``data[start:stop]``."""
    if stop - start > 256:  # long payloads (a garbage length field up to 8 KB): vectorised
        x = np.frombuffer(data, np.uint8, count=stop - start, offset=start).astype(np.int64)
        return int(x.sum()) & 0xFF, int((x * np.arange(len(x), 0, -1)).sum()) & 0xFF
    a = b = 0
    for byte in data[start:stop]:
        a = (a + byte) & 0xFF
        b = (b + a) & 0xFF
    return a, b


def _ubx_frames(data: bytes, stats: DecodeStats) -> Iterator[bytes]:
    """Complete UBX frames (``B5 62 class id len16 payload ck_a ck_b``) with a valid Fletcher
    checksum; anything else is skipped one byte at a time (counted in ``stats``)."""
    pos, n = 0, len(data)
    while True:
        s = data.find(b"\xb5\x62", pos)
        if s < 0:
            stats.bytes_skipped += n - pos
            return
        stats.bytes_skipped += s - pos
        if n - s < 8:
            stats.bytes_skipped += n - s
            return
        length = data[s + 4] | (data[s + 5] << 8)
        end = s + 8 + length
        if length > UBX_MAX_PAYLOAD or end > n:
            stats.bytes_skipped += 1
            pos = s + 1
            continue
        if (_fletcher(data, s + 2, end - 2)) != (data[end - 2], data[end - 1]):
            stats.checksum_failures += 1
            stats.bytes_skipped += 1
            pos = s + 1
            continue
        stats.packets += 1
        yield data[s:end]
        pos = end


def ubx_messages(data: bytes, stats: DecodeStats | None = None) -> Iterator[object]:
    """pyubx2 messages of every checksum-valid UBX frame in ``data`` (mixed with anything).

    A frame pyubx2 cannot decode (unknown class/id, inconsistent payload) is counted in
    ``stats.undecodable`` and skipped.
    """
    from pyubx2 import UBXReader

    st = stats if stats is not None else DecodeStats()
    for frame in _ubx_frames(data, st):
        try:
            parsed = UBXReader.parse(frame)
        except Exception:  # noqa: BLE001 - pyubx2 raises several types for unknown messages
            st.undecodable += 1
            continue
        if parsed is not None:
            yield parsed


def read_ubx(stream: BinaryIO, stats: DecodeStats | None = None) -> Iterator[Fix]:
    """NAV-PVT fixes from a UBX byte stream (mixed with NMEA or garbage): framing and
    checksums here, message decoding by pyubx2. ``stats`` counts frames, checksum failures
    and skipped bytes."""
    for parsed in ubx_messages(stream.read(), stats):
        if getattr(parsed, "identity", "") == "NAV-PVT":
            try:
                fix = fix_from_nav_pvt(parsed)
            except DecodeError:
                if stats is not None:
                    stats.undecodable += 1
                continue
            yield fix


def _nmea_sentences(data: bytes, stats: DecodeStats) -> Iterator[bytes]:
    """``$...*HH`` sentences (CR/LF stripped) with a valid XOR checksum; anything else is
    skipped one byte at a time, a sentence whose checksum is wrong counts one failure."""
    pos, n = 0, len(data)
    hexdigits = b"0123456789abcdefABCDEF"
    while True:
        s = data.find(b"$", pos)
        if s < 0:
            stats.bytes_skipped += n - pos
            return
        stats.bytes_skipped += s - pos
        e = data.find(b"\n", s, s + NMEA_MAX_SENTENCE)
        if e < 0:
            e = n if n - s < NMEA_MAX_SENTENCE else -1  # the last line may lack its newline
        line = data[s:e].rstrip(b"\r") if e >= 0 else b""
        star = line.rfind(b"*")
        if e < 0 or star < 0 or len(line) - star != 3 or not all(c in hexdigits for c in line[star + 1:]) \
                or b"$" in line[1:star]:
            stats.bytes_skipped += 1
            pos = s + 1
            continue
        c = 0
        for byte in line[1:star]:
            c ^= byte
        if c != int(line[star + 1:], 16):
            stats.checksum_failures += 1
            stats.bytes_skipped += 1
            pos = s + 1
            continue
        stats.packets += 1
        yield line
        pos = min(e + 1, n)  # the CR LF belong to the sentence


def nmea_messages(data: bytes, stats: DecodeStats | None = None) -> Iterator[object]:
    """pynmeagps messages of every checksum-valid NMEA sentence in ``data``; sentences pynmeagps
    cannot decode are counted in ``stats.undecodable``."""
    from pynmeagps import NMEAReader

    st = stats if stats is not None else DecodeStats()
    for line in _nmea_sentences(data, st):
        try:
            msg = NMEAReader.parse(line + b"\r\n")
        except Exception:  # noqa: BLE001 - pynmeagps raises several types on odd field content
            st.undecodable += 1
            continue
        if msg is None:
            st.undecodable += 1
            continue
        yield msg


def _num(msg: Any, name: str) -> float | None:  # msg: a pynmeagps NMEAMessage (untyped)
    """A finite number field of ``msg``, or None when absent, empty or not a number."""
    value = getattr(msg, name, None)
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def _gga_fix(msg: Any, date: datetime.date | None) -> Fix | None:  # msg: a pynmeagps NMEAMessage
    """GGA -> :class:`Fix`; None without a finite latitude and longitude."""
    lat, lon = _num(msg, "lat"), _num(msg, "lon")
    if lat is None or lon is None or not (-90 <= lat <= 90 and -180 <= lon <= 180):
        return None
    t = None
    tm = getattr(msg, "time", None)
    if date is not None and isinstance(tm, datetime.time):
        t = _valid_utc_ns(date.year, date.month, date.day, tm.hour, tm.minute, tm.second + tm.microsecond / 1e6)
    quality = int(_num(msg, "quality") or 0) if abs(_num(msg, "quality") or 0) < 100 else 0
    status = {0: STATUS_NO_FIX, 2: STATUS_SBAS_FIX, 4: STATUS_GBAS_FIX, 5: STATUS_GBAS_FIX}.get(quality, STATUS_FIX)
    alt = _num(msg, "alt") or 0.0
    sep = _num(msg, "sep") or 0.0
    num_sv = _num(msg, "numSV") or 0.0
    return Fix("GGA", t, lat, lon, alt + sep, alt, status, quality, int(num_sv) if abs(num_sv) < 1000 else 0, None)


def read_nmea(stream: BinaryIO, stats: DecodeStats | None = None) -> Iterator[Fix]:
    """GGA fixes (time of day taken from the last RMC date when present). ``stats`` counts
    sentences, checksum failures and skipped bytes."""
    date: datetime.date | None = None
    for msg in nmea_messages(stream.read(), stats):
        ident = getattr(msg, "msgID", "")
        rmc_date = getattr(msg, "date", None)
        if ident == "RMC" and isinstance(rmc_date, datetime.date):
            date = rmc_date
        elif ident == "GGA":
            fix = _gga_fix(msg, date)
            if fix is not None:
                yield fix


@dataclass
class GnssDecode:
    """What :func:`decode_gnss` found: the fixes and the stream counts."""

    fixes: list[Fix]
    stats: DecodeStats


def decode_gnss(path: str | Path, kind: str = "ubx") -> GnssDecode:
    """Fixes and counts (frames / sentences, checksum failures, bytes skipped) of a UBX or NMEA log."""
    p = Path(path)
    if not p.is_file():
        raise DecodeError(f"{p}: no such file (expected a u-blox {kind.upper()} log)")
    if kind not in ("ubx", "nmea"):
        raise DecodeError(f"{p}: kind {kind!r}: expected 'ubx' or 'nmea'")
    stats = DecodeStats()
    with open(p, "rb") as fh:
        fixes = list(read_ubx(fh, stats) if kind == "ubx" else read_nmea(fh, stats))
    stats.bytes_total = p.stat().st_size
    return GnssDecode(fixes, stats)


def decode_file(path: str | Path, kind: str = "ubx") -> list[Fix]:
    """The fixes of a UBX or NMEA log (see :func:`decode_gnss` for the counts)."""
    return decode_gnss(path, kind).fixes

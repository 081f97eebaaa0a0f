"""u-blox GNSS: UBX NAV-PVT (pyubx2) and NMEA GGA/RMC (pynmeagps) to fixes.

Outputs mirror ``sensor_msgs/NavSatFix`` (lat/lon deg, altitude m above the ellipsoid,
diagonal covariance m^2 from the receiver's accuracy estimates) and
``sensor_msgs/TimeReference`` (GNSS UTC time of the epoch, ns since the Unix epoch).
"""

from __future__ import annotations

import calendar
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import BinaryIO, Iterator

from rgbt.errors import DecodeError

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


def fix_from_nav_pvt(p) -> Fix:  # noqa: ANN001 - pyubx2 UBXMessage
    """NAV-PVT -> :class:`Fix` (lat/lon deg, height mm -> m, hAcc/vAcc mm -> covariance m^2)."""
    valid_time = bool(p.validDate and p.validTime)
    t = _utc_ns(p.year, p.month, p.day, p.hour, p.min, p.second, p.nano) if valid_time else None
    ok = bool(p.gnssFixOk) and p.fixType in (2, 3, 4)
    status = STATUS_NO_FIX
    if ok:
        status = STATUS_GBAS_FIX if p.carrSoln else (STATUS_SBAS_FIX if p.diffSoln else STATUS_FIX)
    h, v = (p.hAcc / 1000.0) ** 2, (p.vAcc / 1000.0) ** 2
    return Fix("NAV-PVT", t, float(p.lat), float(p.lon), p.height / 1000.0, p.hMSL / 1000.0, status, int(p.fixType),
               int(p.numSV), (h, 0.0, 0.0, 0.0, h, 0.0, 0.0, 0.0, v))


UBX_MAX_PAYLOAD = 8192


def _ubx_frames(data: bytes, stats: dict) -> Iterator[bytes]:
    """Complete UBX frames (``B5 62 class id len16 payload ck_a ck_b``) with a valid Fletcher
    checksum; anything else is skipped one byte at a time (counted in ``stats``)."""
    pos, n = 0, len(data)
    while True:
        s = data.find(b"\xb5\x62", pos)
        if s < 0:
            stats["bytes_skipped"] += n - pos
            return
        stats["bytes_skipped"] += s - pos
        if n - s < 8:
            stats["bytes_skipped"] += n - s
            return
        length = data[s + 4] | (data[s + 5] << 8)
        end = s + 8 + length
        if length > UBX_MAX_PAYLOAD or end > n:
            stats["bytes_skipped"] += 1
            pos = s + 1
            continue
        a = b = 0
        for byte in data[s + 2:end - 2]:
            a = (a + byte) & 0xFF
            b = (b + a) & 0xFF
        if (a, b) != (data[end - 2], data[end - 1]):
            stats["checksum_failures"] += 1
            stats["bytes_skipped"] += 1
            pos = s + 1
            continue
        yield data[s:end]
        pos = end


def read_ubx(stream: BinaryIO, stats: dict | None = None) -> Iterator[Fix]:
    """NAV-PVT fixes from a UBX byte stream (mixed with NMEA or garbage): framing and
    checksums here, message decoding by pyubx2."""
    from pyubx2 import UBXReader

    st = stats if stats is not None else {}
    st.setdefault("bytes_skipped", 0)
    st.setdefault("checksum_failures", 0)
    for frame in _ubx_frames(stream.read(), st):
        try:
            parsed = UBXReader.parse(frame)
        except Exception:  # noqa: BLE001 - pyubx2 raises several types for unknown messages
            continue
        if getattr(parsed, "identity", "") == "NAV-PVT":
            yield fix_from_nav_pvt(parsed)


def read_nmea(stream: BinaryIO) -> Iterator[Fix]:
    """GGA fixes (time of day taken from the last RMC date when present)."""
    from pynmeagps import NMEAReader

    reader = NMEAReader(stream, quitonerror=0)
    date = None
    for _raw, msg in reader:
        if msg is None:
            continue
        ident = getattr(msg, "msgID", "")
        if ident == "RMC" and getattr(msg, "date", None):
            date = msg.date
        elif ident == "GGA" and msg.lat != "" and msg.lon != "":
            t = None
            if date is not None and getattr(msg, "time", None):
                tm = msg.time
                t = _utc_ns(date.year, date.month, date.day, tm.hour, tm.minute, tm.second + tm.microsecond / 1e6)
            quality = int(msg.quality or 0)
            status = {0: STATUS_NO_FIX, 2: STATUS_SBAS_FIX, 4: STATUS_GBAS_FIX, 5: STATUS_GBAS_FIX}.get(quality, STATUS_FIX)
            alt = float(msg.alt or 0.0)
            sep = float(msg.sep or 0.0)
            yield Fix("GGA", t, float(msg.lat), float(msg.lon), alt + sep, alt, status, quality, int(msg.numSV or 0), None)


def decode_file(path: str | Path, kind: str = "ubx") -> list[Fix]:
    p = Path(path)
    if not p.is_file():
        raise DecodeError(f"{p}: no such file (expected a u-blox {kind.upper()} log)")
    with open(p, "rb") as fh:
        return list(read_ubx(fh) if kind == "ubx" else read_nmea(fh))

"""u-blox: the real NAV epoch (pyubx2) and NMEA log (pynmeagps)."""

from __future__ import annotations

import io
import json

import pytest

from rgbt.sensors import ubx
from helpers import need


@pytest.fixture(scope="module")
def gnss_dir(fixtures_dir):
    path = fixtures_dir / "gnss"
    return need(path, "GNSS captures")


def test_nav_pvt_fix_and_time_reference(gnss_dir):
    fixes = ubx.decode_file(gnss_dir / "pygpsdata-NAV.ubx", "ubx")
    assert len(fixes) == 1
    f = fixes[0]
    assert (f.lat, f.lon) == (53.4507228, -2.2402855)
    assert f.height_m == pytest.approx(91.184)
    assert f.fix_type == 3 and f.status >= ubx.STATUS_FIX
    assert f.t_utc_ns is not None and f.t_utc_ns // 10**9 == 1638617698  # 2021-12-04 11:34:58/59 UTC
    assert f.position_covariance[0] == pytest.approx((1491 / 1000) ** 2)


def test_ubx_reader_survives_garbage(gnss_dir):
    raw = (gnss_dir / "pygpsdata-NAV.ubx").read_bytes()
    damaged = b"\xb5\x62garbage" + raw[:40] + b"\x00" * 7 + raw
    fixes = list(ubx.read_ubx(io.BytesIO(damaged)))
    assert [(x.lat, x.lon) for x in fixes] == [(53.4507228, -2.2402855)]


def test_nmea_gga_fix(gnss_dir):
    fixes = ubx.decode_file(gnss_dir / "pygpsdata-NMEA.log", "nmea")
    assert fixes and fixes[0].source == "GGA"
    assert fixes[0].lat == pytest.approx(53.4507, abs=1e-3) and fixes[0].lon == pytest.approx(-2.2404, abs=1e-3)


def test_cli_decode_ubx(gnss_dir, rgbt_cli):
    out = json.loads(rgbt_cli("sensors", "decode", "ubx", str(gnss_dir / "pygpsdata-NAV.ubx"), "--json").stdout)
    (fix,) = out["fixes"]
    assert (fix["lat"], fix["lon"]) == (53.4507228, -2.2402855) and fix["height"] == pytest.approx(91.184)

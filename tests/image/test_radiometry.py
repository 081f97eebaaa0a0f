"""FLIR .fff parsing and temperatures, checked against the fixture's ExifTool metadata dump."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest

from rgbt.errors import ImageError
from rgbt.image.radiometry import (celsius_to_counts, celsius_to_tlinear, counts_to_celsius, parse_fff, read_fff,
                                   region_stats, temperature_at, tlinear_to_celsius)


def _num(meta: dict, key: str) -> float:
    return float(meta[key].split()[0])


def test_fff_header_and_metadata_match_exiftool(fff_path, fff_metadata):
    frame = read_fff(fff_path)
    p = frame.params
    assert frame.counts.dtype == np.uint16
    assert frame.counts.shape == (int(fff_metadata["Raw Thermal Image Height"]),
                                  int(fff_metadata["Raw Thermal Image Width"]))
    assert p.planck_r1 == _num(fff_metadata, "Planck R1")
    assert p.planck_b == _num(fff_metadata, "Planck B")
    assert p.planck_f == _num(fff_metadata, "Planck F")
    assert p.planck_o == _num(fff_metadata, "Planck O")
    assert p.planck_r2 == _num(fff_metadata, "Planck R2")
    assert p.emissivity == pytest.approx(_num(fff_metadata, "Emissivity"), abs=0.005)
    assert p.object_distance_m == pytest.approx(_num(fff_metadata, "Object Distance"))
    assert p.reflected_temp_c == pytest.approx(_num(fff_metadata, "Reflected Apparent Temperature"), abs=0.05)
    assert p.atmospheric_temp_c == pytest.approx(_num(fff_metadata, "Atmospheric Temperature"), abs=0.05)
    assert p.ir_window_temp_c == pytest.approx(_num(fff_metadata, "IR Window Temperature"), abs=0.05)
    assert p.ir_window_transmission == pytest.approx(_num(fff_metadata, "IR Window Transmission"))
    assert 100 * p.relative_humidity == pytest.approx(_num(fff_metadata, "Relative Humidity"), abs=0.05)
    for attr, key in [("atm_alpha1", "Atmospheric Trans Alpha 1"), ("atm_alpha2", "Atmospheric Trans Alpha 2"),
                      ("atm_beta1", "Atmospheric Trans Beta 1"), ("atm_beta2", "Atmospheric Trans Beta 2"),
                      ("atm_x", "Atmospheric Trans X")]:
        assert getattr(p, attr) == pytest.approx(_num(fff_metadata, key), abs=5e-7)
    assert frame.camera["model"] == fff_metadata["Camera Model"]
    assert frame.camera["serial_number"] == fff_metadata["Camera Serial Number"]
    # ExifTool's raw median / range are the mid-point and span of the counts
    lo, hi = int(frame.counts.min()), int(frame.counts.max())
    assert hi - lo == int(fff_metadata["Raw Value Range"]) == frame.camera["raw_value_range"]
    assert (lo + hi) // 2 == int(fff_metadata["Raw Value Median"]) == frame.camera["raw_value_median"]


def _metadata_celsius(counts: np.ndarray, meta: dict) -> np.ndarray:
    """Temperatures from the *text* metadata, single-layer form S = E tau S_obj + (1-E) tau S_refl + (1-tau) S_atm.

    tau is the two-band transmission over half the distance, squared (camera -> window -> object).
    """
    r1, b, f, o, r2 = (_num(meta, k) for k in ("Planck R1", "Planck B", "Planck F", "Planck O", "Planck R2"))
    e = _num(meta, "Emissivity")
    d = _num(meta, "Object Distance")
    t_refl, t_atm = _num(meta, "Reflected Apparent Temperature"), _num(meta, "Atmospheric Temperature")
    rh = _num(meta, "Relative Humidity") / 100
    a1, a2, b1, b2, x = (_num(meta, f"Atmospheric Trans {k}") for k in ("Alpha 1", "Alpha 2", "Beta 1", "Beta 2", "X"))
    h2o = rh * math.exp(1.5587 + 0.06939 * t_atm - 0.00027816 * t_atm**2 + 0.00000068455 * t_atm**3)
    half = math.sqrt(d / 2)
    tau_half = x * math.exp(-half * (a1 + b1 * math.sqrt(h2o))) + (1 - x) * math.exp(-half * (a2 + b2 * math.sqrt(h2o)))
    tau = tau_half**2

    def signal(t_c: float) -> float:
        return r1 / (r2 * (math.exp(b / (t_c + 273.15)) - f)) - o

    s = counts.astype(np.float64)
    s_obj = (s - (1 - e) * tau * signal(t_refl) - (1 - tau) * signal(t_atm)) / (e * tau)
    return b / np.log(r1 / (r2 * (s_obj + o)) + f) - 273.15


def test_temperatures_match_metadata_conversion(fff_path, fff_metadata):
    frame = read_fff(fff_path)
    temps = frame.celsius()
    expected = _metadata_celsius(frame.counts, fff_metadata)
    stats = region_stats(temps)
    hy, hx = np.unravel_index(np.argmax(frame.counts), frame.counts.shape)
    cy, cx = np.unravel_index(np.argmin(frame.counts), frame.counts.shape)
    print(f"FLIR frame: hottest {stats.max:.3f} C at {stats.hottest}, coldest {stats.min:.3f} C at "
          f"{stats.coldest}, mean {stats.mean:.3f} C")
    # text metadata is rounded (emissivity 0.94 vs 0.93994 in the file): agree within 0.05 C
    assert stats.max == pytest.approx(expected[hy, hx], abs=0.05)
    assert stats.min == pytest.approx(expected[cy, cx], abs=0.05)
    assert frame.counts[stats.hottest[1], stats.hottest[0]] == frame.counts.max()
    assert frame.counts[stats.coldest[1], stats.coldest[0]] == frame.counts.min()
    assert stats.mean == pytest.approx(expected.mean(), abs=0.05)
    region = region_stats(temps, region=(100, 50, 300, 250))
    assert region.mean == pytest.approx(expected[50:250, 100:300].mean(), abs=0.05)
    assert region.n == 200 * 200
    assert temperature_at(temps, 10, 20) == pytest.approx(expected[20, 10], abs=0.05)
    assert -25.0 < stats.min < stats.max < 135.0  # inside the camera's stated range


def test_black_body_conversion_round_trips(fff_path):
    p = read_fff(fff_path).params
    t = np.array([-20.0, 0.0, 11.5, 37.0, 120.0])
    assert np.allclose(counts_to_celsius(celsius_to_counts(t, p), p, atmospheric=False), t, atol=1e-9)
    with np.errstate(all="ignore"):
        assert np.isnan(counts_to_celsius(np.array([100.0]), p, atmospheric=False)[0])  # S + O <= 0


def test_mask_and_region_errors():
    temps = np.arange(12, dtype=np.float64).reshape(3, 4)
    mask = temps > 8
    s = region_stats(temps, mask=mask)
    assert (s.mean, s.min, s.max, s.n, s.hottest, s.coldest) == (10.0, 9.0, 11.0, 3, (3, 2), (1, 2))
    assert region_stats(temps, region=(1, 1, 4, 3), mask=mask).n == 3
    with pytest.raises(ImageError, match="no valid pixel"):
        region_stats(temps, region=(0, 0, 2, 2), mask=mask)
    with pytest.raises(ImageError, match="region"):
        region_stats(temps, region=(0, 0, 5, 2))
    with pytest.raises(ImageError, match="mask shape"):
        region_stats(temps, mask=np.ones((2, 2), bool))
    with pytest.raises(ImageError, match="outside"):
        temperature_at(temps, 4, 0)


def test_boson_tlinear():
    assert tlinear_to_celsius(30000, "high") == pytest.approx(300.0 - 273.15)
    assert tlinear_to_celsius(15000, "low") == pytest.approx(300.0 - 273.15)
    t = np.array([-40.0, 0.0, 36.6, 140.0])
    assert np.allclose(tlinear_to_celsius(celsius_to_tlinear(t, "high"), "high"), t, atol=0.005)
    assert np.allclose(tlinear_to_celsius(celsius_to_tlinear(t, "low"), "low"), t, atol=0.01)
    assert np.isnan(tlinear_to_celsius(np.array([0]))[0])
    with pytest.raises(ImageError, match="gain"):
        tlinear_to_celsius(100, "medium")
    with pytest.raises(ImageError, match="range"):
        celsius_to_tlinear(500.0, "high")  # 773 K x 100 does not fit 16 bits


# ----------------------------------------------------------------------------- malformed files
def test_bad_fff_files(tmp_path, fff_path):
    data = fff_path.read_bytes()
    with pytest.raises(ImageError, match="not a FLIR FFF"):
        parse_fff(b"PNG" + data[3:])
    with pytest.raises(ImageError, match="not a FLIR FFF"):
        parse_fff(data[:20])
    with pytest.raises(ImageError, match="runs past the end"):
        parse_fff(data[:400_000])
    broken = bytearray(data)
    dir_offset, n = struct.unpack_from(">II", data, 0x18)
    for i in range(n):  # turn the CameraInfo record into a free slot
        if struct.unpack_from(">H", data, dir_offset + 32 * i)[0] == 0x20:
            struct.pack_into(">H", broken, dir_offset + 32 * i, 0)
    with pytest.raises(ImageError, match="CameraInfo"):
        parse_fff(bytes(broken))
    bad_version = bytearray(data)
    struct.pack_into(">I", bad_version, 0x14, 7)
    with pytest.raises(ImageError, match="version"):
        parse_fff(bytes(bad_version))
    with pytest.raises(ImageError, match="no such file|cannot read"):
        read_fff(tmp_path / "missing.fff")

"""Decoder counts (packets, checksum failures, bytes skipped) of ``rgbt sensors decode`` and the
core decoders behind it, on the real captures, damaged copies, and files with nothing valid."""

from __future__ import annotations

import io
import json
import struct

import pytest

from helpers import need
from rgbt.sensors import mavlink as mav
from rgbt.sensors import ubx, vn100
from rgbt.sensors.stats import DecodeStats


def _ubx_frame(cls_id: bytes, payload: bytes) -> bytes:
    body = cls_id + struct.pack("<H", len(payload)) + payload
    a = b = 0
    for byte in body:
        a = (a + byte) & 0xFF
        b = (b + a) & 0xFF
    return b"\xb5\x62" + body + bytes((a, b))


def test_ubx_counts_match_pyubx2_and_damage_is_counted(fixtures_dir):
    from pyubx2 import UBXReader

    raw = need(fixtures_dir / "gnss" / "pygpsdata-NAV.ubx", "u-blox NAV capture").read_bytes()
    # independent count: pyubx2's own stream reader over the same bytes
    n_pyubx2 = sum(1 for _ in UBXReader(io.BytesIO(raw), quitonerror=0))
    clean = ubx.decode_gnss(fixtures_dir / "gnss" / "pygpsdata-NAV.ubx", "ubx").stats
    assert (clean.packets, clean.checksum_failures, clean.bytes_skipped) == (n_pyubx2, 0, 0)
    bad = bytearray(_ubx_frame(b"\x01\x07", bytes(92)))
    bad[-1] ^= 0x01
    stats = DecodeStats()
    fixes = list(ubx.read_ubx(io.BytesIO(b"junk" + bytes(bad) + raw), stats))
    assert len(fixes) == 1
    assert (stats.packets, stats.checksum_failures, stats.bytes_skipped) == (n_pyubx2, 1, 4 + len(bad))


def test_nmea_counts_and_bad_checksum(fixtures_dir):
    path = need(fixtures_dir / "gnss" / "pygpsdata-NMEA.log", "NMEA log")
    raw = path.read_bytes()
    lines = [ln for ln in raw.split(b"\n") if ln.startswith(b"$")]
    clean = ubx.decode_gnss(path, "nmea").stats
    assert (clean.packets, clean.checksum_failures, clean.bytes_skipped) == (len(lines), 0, 0)
    damaged = bytearray(raw)
    star = damaged.index(b"*")
    damaged[star - 1] ^= 0x01  # a field byte of the first sentence: its checksum no longer matches
    stats = DecodeStats()
    list(ubx.read_nmea(io.BytesIO(b"\x00\x01" + bytes(damaged)), stats))
    first_line = len(lines[0]) + 1  # with its CR LF (the CR is still in the split line)
    assert stats.packets == len(lines) - 1 and stats.checksum_failures == 1
    assert stats.bytes_skipped == 2 + first_line


@pytest.mark.slow
def test_tlog_counts_match_pymavlink(fixtures_dir):
    from pymavlink import mavutil

    path = need(fixtures_dir / "mavlink" / "ardusub_small.tlog", "ArduSub tlog")
    conn = mavutil.mavlink_connection(str(path), dialect="ardupilotmega", robust_parsing=True)
    good = bad = 0
    while (m := conn.recv_match()) is not None:
        if m.get_type() == "BAD_DATA":
            bad += "CRC" in str(getattr(m, "reason", ""))
        else:
            good += 1
    conn.close()
    stats = DecodeStats()
    result = mav.decode_tlog(path, stats)
    assert stats.packets == good == sum(result["messages"].values())
    assert stats.checksum_failures == bad
    assert 0 <= stats.bytes_skipped < 0.01 * stats.bytes_total


def test_tlog_garbage_and_damage_are_counted(fixtures_dir):
    records = []
    raw = need(fixtures_dir / "mavlink" / "ardusub_small.tlog", "ArduSub tlog").read_bytes()[:20000]
    for t, m in mav.tlog_messages(raw):
        records.append(struct.pack(">Q", round(t * 1e6)) + bytes(m.get_msgbuf()))
    bad = bytearray(records[3])
    bad[-1] ^= 0x01
    data = b"\x07" * 5 + b"".join(records[:3]) + bytes(bad) + b"".join(records[4:])
    stats = DecodeStats()
    got = [bytes(m.get_msgbuf()) for _, m in mav.tlog_messages(data, stats)]
    assert got == [r[8:] for i, r in enumerate(records) if i != 3]
    assert stats.checksum_failures == 1 and stats.bytes_skipped == 5 + len(bad)  # the damaged record, stamp included


def test_vn100_cut_header_at_the_end_of_garbage_hides_no_packet():
    """A plausible binary header claiming the largest layout, then fewer bytes than it claims: at
    the end of the stream the parser resynchronises and still finds the packets behind it."""
    lay = vn100.layout_from_names(vn100.DEFAULT_OUTPUT)
    vals = {(g, f): (0,) * len(e[2]) if len(e[2]) > 1 else 0 for g, f, e in lay.fields}
    pkts = [vn100.encode_packet(lay, {**vals, ("common", "TimeStartup"): i}) for i in range(3)]
    huge = bytes([vn100.SYNC, 0x7F]) + b"\xff\x7f" * 7
    found, stats = vn100.decode_bytes(huge + b"".join(pkts))
    assert [p.raw for p in found] == pkts
    assert stats.bytes_skipped == len(huge) and stats.packets == 3


# The counts of each capture (fixed files: scripts/data_manifest.txt pins their SHA-256). VN-100: the
# author's parsed CSV has 99 packets; 15,043 bytes - 99 x 124-byte packets = 2,767 other logger bytes.
# NMEA: 21 sentences. MAVLink and UBX: what the decoders counted when the files were added.
DECODE_COUNTS = {
    "vn100": {"packets": 99, "checksum_failures": 0, "bytes_skipped": 15043 - 99 * 124},
    "mavlink": {"packets": 35912, "checksum_failures": 4, "bytes_skipped": 315},
    "ubx": {"packets": 28, "checksum_failures": 0, "bytes_skipped": 0},
    "nmea": {"packets": 21, "checksum_failures": 0, "bytes_skipped": 0},
}


@pytest.mark.slow
@pytest.mark.parametrize("kind,rel", [("vn100", "vectornav/F00294.bin"), ("mavlink", "mavlink/ardusub_small.tlog"),
                                      ("ubx", "gnss/pygpsdata-NAV.ubx"), ("nmea", "gnss/pygpsdata-NMEA.log")])
def test_cli_reports_counts_and_rejects_files_without_a_packet(kind, rel, fixtures_dir, tmp_path, rgbt_cli):
    real = need(fixtures_dir / rel, f"{kind} capture")
    out = json.loads(rgbt_cli("sensors", "decode", kind, str(real), "--json").stdout)
    assert {k: out[k] for k in DECODE_COUNTS[kind]} == DECODE_COUNTS[kind], out
    data = real.read_bytes()
    cut = tmp_path / f"cut_{kind}.bin"  # a file shorter than its first packet
    cut.write_bytes(data[:5] if kind != "vn100" else data[:data.index(b"\xfa\x14\x3e\x00") + 40])
    empty = tmp_path / f"empty_{kind}.bin"
    empty.write_bytes(b"")
    noise = tmp_path / f"noise_{kind}.bin"
    noise.write_bytes(bytes((i * 73 + 11) % 251 for i in range(3000)).replace(b"$", b"#"))
    label = {"vn100": "VN-100 binary", "mavlink": "MAVLink", "ubx": "UBX", "nmea": "NMEA"}[kind]
    for f in (cut, empty, noise):
        res = rgbt_cli("sensors", "decode", kind, str(f), "--json", check=False)
        lines = res.stderr.strip().splitlines()
        assert res.returncode == 2 and len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
        n = f.stat().st_size
        assert f"{f}: no valid {label} packet in {n} bytes (" in lines[0]
        assert lines[0].endswith(f"checksum failures, {n} bytes skipped)")
        assert res.stdout == ""

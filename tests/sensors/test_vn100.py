"""VN-100: the real capture against its parsed CSV, generated packets, damaged streams, and a
pty-emulated sensor that is configured, streams, is unplugged and comes back."""

from __future__ import annotations

import csv
import threading
import time

import pytest

from rgbt.errors import DecodeError
from rgbt.sensors import vn100
from rgbt.sensors.serial_link import SerialLink
from helpers import need, read_lines


@pytest.fixture(scope="module")
def capture(fixtures_dir):
    path = fixtures_dir / "vectornav" / "F00294.bin"
    return need(path, "VN-100 capture").read_bytes()


def _csv_rows(fixtures_dir):
    with open(fixtures_dir / "vectornav" / "F00294_B.csv") as fh:
        rows = list(csv.reader(fh))
    return [[v.strip() for v in r if v.strip()] for r in rows[1:]]


def test_real_capture_every_packet_matches_the_parsed_csv(capture, fixtures_dir):
    packets, stats = vn100.decode_bytes(capture)
    assert stats.crc_failures == 0
    assert stats.packets == len(packets) == capture.count(bytes.fromhex("fa143e003a00"))
    assert all(p.layout.packet_size == 124 for p in packets)
    assert stats.bytes_skipped == len(capture) - 124 * len(packets)
    rows = _csv_rows(fixtures_dir)
    # The author's parser split on the logger's separators; one packet written right after
    # another (no separator) is missing from the CSV. Every CSV row must match the next
    # decoded packet in order, to the printed precision (%.6e), with every field.
    unmatched = []
    i = 0
    for p in packets:
        printed = [f"{v:.6e}" for v in p.row()]
        if i < len(rows) and printed == rows[i]:
            i += 1
        else:
            unmatched.append(p)
    assert i == len(rows) == 98
    assert len(unmatched) == 1 and unmatched[0].raw[:1] == b"\xfa"
    first = packets[0]
    assert first.layout.columns()[0] == "imu.UncompMag.x" and len(first.row()) == 29


def test_general_layouts_round_trip_through_encoder_and_parser():
    lay = vn100.layout_from_names({
        "common": ["TimeStartup", "TimeSyncIn", "Quaternion", "AngularRate", "Accel", "MagPres", "SyncInCnt"],
        "time": ["TimeUtc", "SyncInCnt"],
        "imu": ["DeltaTheta", "Temp"],
        "attitude": ["Dcm", "YprU"],
        "ins": ["PosLla", "VelNed"],
    })
    values = {}
    for g, name, (_, fmt, suffixes) in lay.fields:
        n = len(suffixes)
        if fmt.endswith("f") or fmt.endswith("d"):
            v = tuple(0.5 * (k + 1) for k in range(n))
        else:
            v = tuple(range(1, n + 1))
        values[(g, name)] = v if n > 1 else v[0]
    pkt = vn100.encode_packet(lay, values)
    assert len(pkt) == lay.packet_size
    # expected size from the manual's tables: common 8+8+16+12+12+20+4, time 8+4, imu 16+4, att 36+12, ins 24+12
    assert lay.payload_size == 80 + 12 + 20 + 48 + 36
    packets, stats = vn100.decode_bytes(b"noise" + pkt + pkt[:50])
    assert stats.packets == 1 and packets[0].values == values
    assert stats.bytes_skipped == 5 + 50


def _stream_layout():
    return vn100.layout_from_names(vn100.DEFAULT_OUTPUT)


def _sample_packet(lay, i):
    return vn100.encode_packet(lay, {
        ("common", "TimeStartup"): 1_000_000_000 + 5_000_000 * i,
        ("common", "TimeSyncIn"): (5_000_000 * i) % 16_666_667,
        ("common", "Quaternion"): (0.0, 0.0, 0.0, 1.0),
        ("common", "AngularRate"): (0.01 * i, 0.0, -0.01),
        ("common", "Accel"): (0.0, 0.0, -9.81),
        ("common", "MagPres"): (0.2, 0.0, 0.4, 25.0, 101.3),
        ("common", "SyncInCnt"): (5 * i) // 17,
    })


def test_garbage_truncated_and_crc_corrupted_streams_are_counted(capture):
    lay = _stream_layout()
    good = [_sample_packet(lay, i) for i in range(50)]
    bad = bytearray(good[10])
    bad[20] ^= 0x40  # corrupt the payload: CRC fails
    stream = b"".join(good[:10]) + bytes(bad) + b"\xfa\xfa\x00garbage$VNZZZ" + b"".join(good[11:40])
    stream += good[40][:30] + b"".join(good[41:]) + capture[:500] + good[0][:-3]
    parser = vn100.Vn100Parser(ascii=True)
    items = []
    for k in range(0, len(stream), 37):  # arbitrary chunking
        items += parser.feed(stream[k:k + 37])
    parser.finish()
    times = [p.values[("common", "TimeStartup")] for p in items if isinstance(p, vn100.VnPacket) and p.layout is lay]
    expected = [1_000_000_000 + 5_000_000 * i for i in range(50) if i not in (10, 40)]
    assert times == expected
    assert parser.stats.crc_failures >= 1
    n_real = vn100.decode_bytes(capture[:500])[1].packets  # the last real packet is cut at 500 bytes
    assert parser.stats.packets == 48 + n_real
    # every byte is either part of a valid packet or counted as skipped
    used = sum(len(p.raw) for p in items if isinstance(p, vn100.VnPacket))
    assert used + parser.stats.bytes_skipped == len(stream)


def test_ascii_commands_checksums_and_ymr():
    cmds = vn100.configuration_commands(vn100.Vn100Options())
    for c in cmds:
        body, cks = c[1:].decode().strip().split("*")
        x = 0
        for ch in body.encode():
            x ^= ch
        assert int(cks, 16) == x
    assert cmds[-1].startswith(b"$VNWRG,75,1,4,01,2535*")  # 800/4 = 200 Hz, common group fields
    line = vn100.ascii_command("VNYMR,+006.380,+000.023,-001.953,+1.0640,-0.2531,+3.0614,+00.005,+00.344,"
                               "-09.758,-0.001222,-0.000450,-0.001218")
    ymr = vn100.parse_ymr(vn100.parse_ascii(line))
    assert ymr.ypr_deg == (6.38, 0.023, -1.953) and ymr.accel_m_s2[2] == -9.758
    with pytest.raises(DecodeError, match="checksum"):
        vn100.parse_ascii(line.replace(b"+006", b"+007"))


class Vn100Device(threading.Thread):
    """The sensor side: answers register writes with their echo; streams after register 75."""

    def __init__(self, dev, preamble: bytes) -> None:
        super().__init__(daemon=True)
        self.dev, self.preamble = dev, preamble
        self.layout = _stream_layout()
        self.next = 0
        self.streaming = False
        self.paused = False
        self.replay_on_config = 0
        self.commands: list[bytes] = []
        self.stop = threading.Event()

    def run(self) -> None:
        buf = b""
        while not self.stop.is_set():
            lines, buf = read_lines(self.dev, buf)
            for line in lines:
                msg = vn100.parse_ascii(line)  # raises on a bad checksum: the test fails
                self.commands.append(line.strip())
                self.dev.write(vn100.ascii_command(",".join((msg.kind, *msg.fields))))
                if msg.kind == "VNWRG" and msg.fields[0] == "75":
                    self.dev.write(self.preamble)
                    if self.replay_on_config:  # data the USB adapter still held: duplicates
                        self.dev.write(b"".join(_sample_packet(self.layout, i)
                                                for i in range(max(0, self.next - self.replay_on_config), self.next)))
                    self.streaming = True
            if self.streaming and not self.paused:
                self.dev.write(b"".join(_sample_packet(self.layout, self.next + k) for k in range(4)))
                self.next += 4


def _collect(driver, n, timeout=10.0):
    out = []
    end = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < end:
        out += driver.read(timeout=0.02)
    return out


def test_pty_vn100_configure_stream_unplug_reconnect(pty_device, capture):
    device = Vn100Device(pty_device, preamble=capture)
    device.start()
    link = SerialLink(str(pty_device.path), 921600, backoff_s=(0.02, 0.1))
    driver = vn100.Vn100(vn100.Vn100Options(port=str(pty_device.path), reply_timeout_s=1.0), link)
    try:
        first = _collect(driver, 200)
        assert len(first) >= 200
        assert [c.split(b"*")[0] for c in device.commands] == [c.split(b"*")[0].strip() for c in
                                                               vn100.configuration_commands(driver.options)]
        assert driver.untimed_packets == capture.count(bytes.fromhex("fa143e003a00"))
        # unplug: the device vanishes mid-stream
        device.paused = True
        pty_device.unplug()
        during = _collect(driver, 1, timeout=0.3)
        assert link.disconnects == 1 and not link.connected
        # plug back: same path, new pty; the driver reconnects, reconfigures, the device replays
        n_cmds = len(device.commands)
        device.streaming = False
        device.paused = False
        device.replay_on_config = 40
        pty_device.plug()
        after = _collect(driver, 200)
        assert link.connects == 2
        assert len(device.commands) == n_cmds + 3  # configured again after the reconnect
        samples = first + during + after
        t = [s.t_sensor_ns for s in samples]
        assert all(b > a for a, b in zip(t, t[1:])), "duplicated or reordered samples"
        assert len(after) >= 200 and after[-1].t_sensor_ns > first[-1].t_sensor_ns
        assert driver.duplicates_dropped >= 1
        s = after[-1]
        assert s.accel_m_s2 == pytest.approx((0.0, 0.0, -9.81)) and s.temp_c == 25.0 and s.syncin_count is not None
    finally:
        device.stop.set()
        device.join(2)
        driver.close()


def test_cli_decode_vn100_csv_and_json(capture, fixtures_dir, tmp_path, rgbt_cli):
    import json

    out_csv = tmp_path / "vn.csv"
    res = json.loads(rgbt_cli("sensors", "decode", "vn100", str(fixtures_dir / "vectornav" / "F00294.bin"),
                              "--csv", str(out_csv), "--json").stdout)
    n = capture.count(bytes.fromhex("fa143e003a00"))
    assert res == {"packets": n, "checksum_failures": 0, "crc_failures": 0, "bytes_skipped": len(capture) - 124 * n}
    with open(out_csv) as fh:
        rows = list(csv.reader(fh))
    assert len(rows) == n + 1 and len(rows[0]) == 29 and rows[0][9] == "imu.Temp"
    assert float(rows[1][9]) == pytest.approx(19.45568, abs=1e-5)  # first CSV row of the author's parse


def test_cli_decode_vn100_damaged_file_and_missing_file(tmp_path, rgbt_cli):
    import json

    lay = _stream_layout()
    good = [_sample_packet(lay, i) for i in range(20)]
    bad = bytearray(good[5])
    bad[-1] ^= 0xFF
    data = b"\x00\xfa\x01" + b"".join(good[:5]) + bytes(bad) + b"".join(good[6:]) + good[0][:40]
    f = tmp_path / "damaged.bin"
    f.write_bytes(data)
    res = json.loads(rgbt_cli("sensors", "decode", "vn100", str(f), "--json").stdout)
    assert res["packets"] == 19 and res["crc_failures"] >= 1
    assert res["bytes_skipped"] == len(data) - 19 * lay.packet_size
    missing = rgbt_cli("sensors", "decode", "vn100", str(tmp_path / "nope.bin"), check=False)
    assert missing.returncode == 2 and "nope.bin" in missing.stderr


@pytest.mark.slow
def test_cli_vn100_live_against_pty_sensor(pty_device, rgbt_cli):
    import json

    device = Vn100Device(pty_device, preamble=b"")
    device.start()
    try:
        out = json.loads(rgbt_cli("sensors", "vn100", str(pty_device.path), "--duration", "1.5", "--json").stdout)
    finally:
        device.stop.set()
        device.join(2)
    assert out["samples"] > 50 and out["rate_hz"] == pytest.approx(200.0, rel=1e-6)
    assert out["crc_failures"] == 0 and out["connects"] == 1 and out["errors"] == []


def test_a_replay_is_dropped_but_a_restarted_sensor_clock_is_taken():
    """After a reopen the sensor may repeat what the USB adapter held (device times just before the
    last: dropped) or have restarted with its adapter (its clock seconds back: taken, counted)."""

    class Link:  # the serial port: hands over the queued bytes
        connected = True

        def __init__(self, chunks):
            self.chunks = chunks

        def poll(self):
            return True

        def read(self, max_bytes=4096, timeout=0.05):
            return self.chunks.pop(0) if self.chunks else b""

    lay = _stream_layout()
    # indices: 5 ms apart from 1 s of device time; 394 -> 2.97 s, a replay of 390..393, then 0 -> 1.0 s
    order = [390, 391, 392, 393, 394, 392, 393, 0, 1]
    driver = vn100.Vn100(vn100.Vn100Options(port="unused"), Link([_sample_packet(lay, i) for i in order]))
    got = []
    for _ in order:
        got += driver.read()
    assert [s.t_sensor_ns for s in got] == [1_000_000_000 + 5_000_000 * i for i in (390, 391, 392, 393, 394, 0, 1)]
    assert driver.duplicates_dropped == 2 and driver.restarts == 1

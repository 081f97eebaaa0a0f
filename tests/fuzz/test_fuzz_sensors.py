"""Fuzzing of the device byte-stream parsers in ``rgbt.sensors`` (issue 12, item 2).

Seeds: the real captures under ``fixtures/`` (VN-100 binary output, an ArduSub tlog, a u-blox
NAV epoch and NMEA log) and packets built with the project's own encoders, pyubx2, pynmeagps and
pymavlink. Mutations: truncation at every packet boundary and at arbitrary offsets, bit flips,
random bytes, huge length fields, garbage prepended to / inserted between valid packets, and
payloads rewritten behind a recomputed checksum (so the message decoders see them).

Properties (``fuzz.harness.check``): only ``RgbtError`` escapes, no case hangs or blows up memory;
for stream parsers, every valid packet placed after or between garbage is still found, and a
stream fed in arbitrary chunks decodes like the whole.
"""

from __future__ import annotations

import io
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzz.harness import FUZZ, check
from helpers import need
from rgbt.paths import data_dir
from rgbt.sensors import boson, trigger, ubx, vn100
from rgbt.sensors import mavlink as mav
from rgbt.sensors.stats import DecodeStats

FIXTURES = data_dir() / "fixtures"


def _fixture(rel: str, what: str) -> bytes:
    return need(FIXTURES / rel, what).read_bytes()


# ----------------------------------------------------------------------------- generic mutations

def _is_subsequence(small: list, big: list) -> bool:
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


@st.composite
def mutated(draw, seeds: list[bytes], huge=None) -> bytes:  # noqa: ANN001
    """One seed after up to 4 mutations: bit flips, truncation, insertion, deletion, overwrite,
    and (``huge(data, rng_int)``) a protocol-specific huge length field."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for op in draw(st.lists(st.sampled_from(["flip", "cut", "insert", "delete", "overwrite", "huge"]), max_size=4)):
        n = len(data)
        if op == "flip" and n:
            i = draw(st.integers(0, n - 1))
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "cut":
            data = data[:draw(st.integers(0, n))]
        elif op == "insert":
            i = draw(st.integers(0, n))
            data[i:i] = draw(st.binary(max_size=32))
        elif op == "delete" and n:
            i = draw(st.integers(0, n - 1))
            del data[i:i + draw(st.integers(1, 16))]
        elif op == "overwrite" and n:
            i = draw(st.integers(0, n - 1))
            chunk = draw(st.binary(min_size=1, max_size=16))
            data[i:i + len(chunk)] = chunk
        elif op == "huge" and huge is not None and n:
            data = bytearray(huge(bytes(data), draw(st.integers(0, n - 1))))
    return bytes(data)


def garbage(packets: list[bytes], markers: list[bytes]):  # noqa: ANN201
    """Bytes that are no complete packet: random bytes, start markers, packet prefixes."""
    prefix = st.sampled_from(packets).flatmap(lambda p: st.integers(0, len(p) - 1).map(lambda k: p[:k]))
    part = st.one_of(st.binary(max_size=48), st.sampled_from(markers), prefix)
    return st.lists(part, max_size=6).map(b"".join)


@st.composite
def interleaved(draw, packets: list[bytes], markers: list[bytes]) -> tuple[list[bytes], bytes]:  # noqa: ANN001
    """Some valid packets (in order) with garbage before, between and after them."""
    chosen = draw(st.lists(st.sampled_from(packets), min_size=1, max_size=6))
    junk = garbage(packets, markers)
    out = bytearray(draw(junk))
    for p in chosen:
        out += p + draw(junk)
    return chosen, bytes(out)


def _boundaries(packets: list[bytes]) -> list[int]:
    ends, pos = [0], 0
    for p in packets:
        pos += len(p)
        ends.append(pos)
    return ends


# ----------------------------------------------------------------------------- VN-100

def _vn_packet(layout: vn100.OutputLayout, draw_float, draw_int) -> bytes:  # noqa: ANN001
    """A CRC-valid packet of ``layout`` with drawn field values."""
    values = {}
    for gname, fname, (_, fmt, suffixes) in layout.fields:
        vals = tuple(draw_float() if ch in "fd" else draw_int(ch) for ch in _expand(fmt))
        values[(gname, fname)] = vals[0] if len(suffixes) == 1 else vals
    return vn100.encode_packet(layout, values)


def _expand(fmt: str) -> list[str]:
    out, num = [], ""
    for ch in fmt:
        if ch.isdigit():
            num += ch
        else:
            out += [ch] * int(num or 1)
            num = ""
    return out


_INT_RANGE = {"B": (0, 255), "b": (-128, 127), "H": (0, 65535), "I": (0, 2**32 - 1), "Q": (0, 2**64 - 1)}
VN_LAYOUTS = [
    vn100.layout_from_names(vn100.DEFAULT_OUTPUT),
    vn100.layout_from_names({"common": ["TimeStartup"], "imu": ["UncompGyro", "Temp"]}),
    vn100.layout_from_names({"time": ["TimeUtc", "GpsWeek"], "attitude": ["Dcm", "YawPitchRoll"], "ins": ["PosLla"]}),
]


def _built_vn_packets(seed: int) -> list[bytes]:
    rng = np.random.default_rng(seed)
    out = []
    for lay in VN_LAYOUTS:
        for _ in range(3):
            out.append(_vn_packet(lay, lambda: float(rng.normal()),
                                  lambda ch: int(rng.integers(*_INT_RANGE[ch], endpoint=True, dtype=np.uint64))
                                  if ch == "Q" else int(rng.integers(_INT_RANGE[ch][0], _INT_RANGE[ch][1] + 1))))
    return out


VN_BUILT = _built_vn_packets(0)
VN_ASCII = [vn100.ascii_command("VNYMR,+010.123,-002.001,+001.500,+0.2100,-0.0300,+0.4000,-00.123,+00.456,-09.801,"
                                "+0.001234,-0.002345,+0.000123"),
            vn100.ascii_command("VNWRG,75,1,4,01,0129"), vn100.ascii_command("VNERR,03"), b"$VNRRG,01,VN-100T*XX\r\n"]


def _vn_huge(data: bytes, i: int) -> bytes:
    """A binary header claiming every group and every field (the largest layout) at ``i``."""
    return data[:i] + bytes([vn100.SYNC, 0x7F]) + b"\xff\x7f" * 7 + data[i + 16:]


@pytest.fixture(scope="module")
def vn_real() -> tuple[bytes, list[bytes]]:
    data = _fixture("vectornav/F00294.bin", "real VN-100 binary capture")
    pkts, _ = vn100.decode_bytes(data)
    assert len(pkts) == 99
    return data, [p.raw for p in pkts]


def _vn_decode(ascii: bool):  # noqa: ANN202
    def run(data: bytes) -> list:  # type: ignore[type-arg]
        pkts, stats = vn100.decode_bytes(data, ascii=ascii)
        assert stats.bytes_skipped <= len(data)
        return [p.raw for p in pkts]
    return run


@pytest.mark.slow
@FUZZ
@given(data=st.data())
def test_vn100_binary_mutations(vn_real, data):
    real, pkts = vn_real
    seeds = [real, real[:2000], b"".join(VN_BUILT), b"".join(pkts[:5])]
    for ascii in (False, True):
        check("vn100 binary", _vn_decode(ascii), data.draw(mutated(seeds, huge=_vn_huge)))


def test_vn100_binary_truncated_at_every_packet_boundary(vn_real):
    _, pkts = vn_real
    stream = b"".join(pkts[:20] + VN_BUILT)
    every = pkts[:20] + VN_BUILT
    for k, end in enumerate(_boundaries(every)):
        for cut in (end, end + 1, end - 1):
            if 0 <= cut <= len(stream):
                got = check("vn100 binary", _vn_decode(False), stream[:cut])
                assert got == every[:k] if cut >= end else got == every[:max(0, k - 1)]


@FUZZ
@given(data=st.data())
def test_vn100_every_packet_after_garbage_is_found(vn_real, data):
    _, real_pkts = vn_real
    packets = real_pkts[:10] + VN_BUILT
    chosen, stream = data.draw(interleaved(packets, [bytes([vn100.SYNC]), bytes([vn100.SYNC, 0x01]), b"$VN"]))
    got = check("vn100 binary", _vn_decode(False), stream)
    assert got is not None and _is_subsequence(chosen, got), "a valid VN-100 packet after garbage was lost"
    # fed in arbitrary chunks, the incremental parser finds the same packets
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8)))

    def chunked(buf: bytes) -> list[bytes]:
        parser = vn100.Vn100Parser(ascii=False)
        out = []
        for a, b in zip([0, *cuts], [*cuts, len(buf)]):
            out += parser.feed(buf[a:b])
        out += parser.finish()
        return [p.raw for p in out]

    assert check("vn100 binary", chunked, stream) == got


@FUZZ
@given(data=st.data())
def test_vn100_ascii(data):
    line = data.draw(st.one_of(mutated(VN_ASCII), st.binary(max_size=80).map(lambda b: b"$VN" + b)))

    def run(buf: bytes) -> object:
        msg = vn100.parse_ascii(buf)
        return vn100.parse_ymr(msg) if msg.kind == "VNYMR" else msg

    check("vn100 ascii", run, line)
    # a checksummed line with arbitrary fields: the checksum passes, the field parser must cope
    body = b"VNYMR," + data.draw(st.binary(max_size=120)).replace(b"*", b"").replace(b"\n", b"")
    check("vn100 ascii", run, b"$" + body + b"*%02X\r\n" % vn100.ascii_checksum(body))
    # mixed binary + ASCII stream
    chosen, stream = data.draw(interleaved(VN_ASCII[:3] + VN_BUILT[:3], [b"$", b"$VN", bytes([vn100.SYNC])]))

    def mixed(buf: bytes) -> list[bytes]:
        parser = vn100.Vn100Parser(ascii=True)
        items = parser.feed(buf) + parser.finish()
        return [i.raw for i in items]

    got = check("vn100 ascii", mixed, stream)
    assert got is not None and _is_subsequence(chosen, got), "a valid VN-100 item after garbage was lost"


# ----------------------------------------------------------------------------- Boson

def _boson_frames(draw) -> list[bytes]:  # noqa: ANN001
    frames = []
    for _ in range(draw(st.integers(1, 4))):
        payload = draw(st.one_of(st.binary(max_size=24), st.sampled_from([b"\x8e\x9e\xae", b"\x00\x00\x01\x7c"])))
        frames.append(boson.encode_frame(draw(st.integers(0, 2**32 - 1)),
                                         draw(st.sampled_from(list(boson.FUNCTIONS.values()))), payload,
                                         status=draw(st.sampled_from([0, boson.STATUS_COMMAND, 0x8E9EAE]))))
    return frames


BOSON_SEEDS = [boson.encode_frame(1, boson.FUNCTIONS["lookup_fpa_temp_degc_x10"], b"\x01\x7c", status=0),
               boson.encode_frame(0x8E9EAE, 0x00050098, bytes([0x8E, 0x9E, 0xAE, 0x00]), status=0),
               boson.encode_frame(7, boson.FUNCTIONS["run_ffc"])]


def _boson_huge(data: bytes, i: int) -> bytes:
    """A frame start followed by a long body without end flag (the framing has no length field)."""
    return data[:i] + bytes([boson.START]) + bytes(range(256)).replace(b"\xae", b"") * 12 + data[i:]


def _boson_decode(data: bytes) -> list[bytes]:
    dec = boson.FrameDecoder()
    out = dec.feed(data)
    dec.finish()
    assert dec.stats.bytes_skipped <= len(data)
    return [boson.encode_frame(p.sequence, p.function, p.payload, p.status, p.channel) for p in out]


@FUZZ
@given(data=st.data())
def test_boson_serial_frames(data):
    frames = _boson_frames(data.draw)
    seeds = [b"".join(frames), b"".join(BOSON_SEEDS)]
    check("boson serial", _boson_decode, data.draw(mutated(seeds, huge=_boson_huge)))
    chosen, stream = data.draw(interleaved(frames + BOSON_SEEDS, [b"\x8e", b"\x9e", b"\xae", b"\x8e\x00"]))
    got = check("boson serial", _boson_decode, stream)
    assert got is not None and _is_subsequence(chosen, got), "a valid Boson frame after garbage was lost"


def test_boson_serial_truncated_at_every_boundary():
    stream = b"".join(BOSON_SEEDS * 2)
    for k, end in enumerate(_boundaries(BOSON_SEEDS * 2)):
        assert len(check("boson serial", _boson_decode, stream[:end])) == k
        if end:
            assert len(check("boson serial", _boson_decode, stream[:end - 1])) == k - 1


class _FakeBosonLink:
    """The camera side of the serial link: answers each command with a fuzzed reply."""

    connected = True
    port_name = "fuzz"
    last_error = None

    def __init__(self, reply) -> None:  # noqa: ANN001 - (seq, fn) -> bytes
        self.reply = reply
        self.pending = b""
        self.dec = boson.FrameDecoder()
        self.on_connect = None

    def poll(self) -> bool:
        return True

    def write(self, data: bytes) -> bool:
        for cmd in self.dec.feed(data):
            self.pending += self.reply(cmd.sequence, cmd.function)
        return True

    def read_raw(self, n: int, timeout: float = 0.0) -> bytes:  # noqa: ARG002
        out, self.pending = self.pending[:n], self.pending[n:]
        return out

    def close(self) -> None:
        pass


@FUZZ
@given(payload=st.binary(max_size=8), status=st.sampled_from([0, 0, 0, 1, 0xFFFFFFFF]),
       junk=st.binary(max_size=16), seq_off=st.sampled_from([0, 0, 0, 1]),
       call=st.sampled_from(["get_ffc_mode", "get_ffc_status", "ffc_in_progress", "fpa_temp_c", "get_ext_sync_mode"]))
def test_boson_control_replies(payload, status, junk, seq_off, call):
    link = _FakeBosonLink(lambda seq, fn: junk + boson.encode_frame(seq + seq_off, fn, payload, status=status))
    ctl = boson.BosonControl(boson.BosonOptions(reply_timeout_s=0.02), link=link)  # type: ignore[arg-type]
    check("boson serial", lambda _: getattr(ctl, call)(), None)


@FUZZ
@given(raw=st.binary(max_size=1400), dtype=st.sampled_from([">u2", "<u2", "u1", "<i4", "f4"]),
       order=st.sampled_from([">", "<", "=", "!"]))
def test_boson_telemetry_line(raw, dtype, order):
    size = np.dtype(dtype).itemsize
    line = np.frombuffer(raw[:len(raw) // size * size], dtype=dtype)
    tel = check("boson telemetry", lambda x: boson.parse_telemetry(x, order), line)
    if tel is not None and order == ">" and dtype == ">u2" and len(raw) >= 100:
        assert tel.frame_counter == struct.unpack_from(">I", raw, 84)[0]


@FUZZ
@given(rows=st.integers(0, 7), width=st.integers(1, 80), height=st.integers(1, 5),
       telemetry=st.sampled_from(["top", "bottom", "none", "left"]), fill=st.binary(min_size=2, max_size=2),
       ndim=st.sampled_from([2, 2, 1, 3]))
def test_boson_split_frame(rows, width, height, telemetry, fill, ndim):
    img = np.full((rows, width), struct.unpack("<H", fill)[0], dtype=np.uint16)
    if ndim == 1:
        img = img.ravel()
    elif ndim == 3:
        img = img[..., None]
    opts = boson.V4l2Options(width=width, height=height, telemetry=telemetry)
    frame = check("boson telemetry", lambda x: boson.split_frame(x, 0, opts), img)
    if frame is not None:
        assert frame.image.shape == (height, width)


# ----------------------------------------------------------------------------- trigger generator

TRIGGER_LINES = [trigger.frame_line(b) for b in ("RATE 60.000", "RATE?", "START", "STOP", "COUNT?", "RESET",
                                                 "OK RATE 30.000", "COUNT 1234", "ERR RANGE")]


class _FakeTriggerLink:
    connected = True
    port_name = "fuzz"
    last_error = None

    def __init__(self, reply: bytes) -> None:
        self.reply = reply

    def poll(self) -> bool:
        return True

    def write(self, data: bytes) -> bool:  # noqa: ARG002
        return True

    def read_raw(self, n: int, timeout: float = 0.0) -> bytes:  # noqa: ARG002
        out, self.reply = self.reply[:n], self.reply[n:]
        return out

    def close(self) -> None:
        pass


@FUZZ
@given(data=st.data())
def test_trigger_protocol(data):
    line = data.draw(st.one_of(mutated(TRIGGER_LINES), st.binary(max_size=40)))
    check("trigger", trigger.parse_line, line)
    model = trigger.TriggerDeviceModel()
    reply = check("trigger", model.handle, line)
    assert reply is not None and trigger.parse_line(reply)  # the device always answers a checksummed line
    body = data.draw(st.sampled_from(["RATE", "COUNT", "OK", "ERR", ""])) + data.draw(st.text(max_size=12))
    body = body.replace("*", "").replace("\n", "")
    framed = data.draw(st.sampled_from([trigger.frame_line(body) if body.isascii() else line, line]))

    ask_rate = data.draw(st.booleans())

    def host(buf: bytes) -> float | int:
        """The host side reading the (fuzzed) reply to RATE? or COUNT?."""
        gen = trigger.TriggerGenerator(trigger.TriggerOptions(reply_timeout_s=0.01), link=_FakeTriggerLink(buf))  # type: ignore[arg-type]
        return gen.rate() if ask_rate else gen.count()

    check("trigger", host, framed)


# ----------------------------------------------------------------------------- UBX / NMEA

def _ubx_checksum(body: bytes) -> bytes:
    a = b = 0
    for byte in body:
        a = (a + byte) & 0xFF
        b = (b + a) & 0xFF
    return bytes((a, b))


def _ubx_frame(cls_id: bytes, payload: bytes) -> bytes:
    body = cls_id + struct.pack("<H", len(payload)) + payload
    return b"\xb5\x62" + body + _ubx_checksum(body)


def _ubx_huge(data: bytes, i: int) -> bytes:
    return data[:i] + b"\xb5\x62\x01\x07\xff\xff" + data[i + 6:]


@pytest.fixture(scope="module")
def ubx_real() -> tuple[bytes, list[bytes]]:
    data = _fixture("gnss/pygpsdata-NAV.ubx", "real u-blox NAV epoch")
    stats = DecodeStats()
    frames = list(ubx._ubx_frames(data, stats))
    assert stats.packets == len(frames) > 0
    return data, frames


def _nav_pvt(**kw) -> bytes:  # noqa: ANN003
    from pyubx2 import GET, UBXMessage

    return UBXMessage("NAV", "NAV-PVT", GET, **kw).serialize()


UBX_BUILT = [_nav_pvt(year=2021, month=12, day=4, hour=11, min=34, second=58, validDate=1, validTime=1, lat=53.45,
                      lon=-2.24, fixType=3, gnssFixOk=1, numSV=12, height=91184, hMSL=42000, hAcc=1000, vAcc=2000),
             _nav_pvt(year=0, month=13, day=40, hour=25, validDate=1, validTime=1, fixType=3, gnssFixOk=1)]


def _ubx_decode(data: bytes) -> list[bytes]:
    """The checksum-valid frames of ``data``; every NAV-PVT among them decoded to a fix."""
    stats = DecodeStats()
    fixes = list(ubx.read_ubx(io.BytesIO(data), stats))
    frames = list(ubx._ubx_frames(data, DecodeStats()))
    assert stats.bytes_skipped <= len(data) and len(fixes) <= stats.packets == len(frames)
    return frames


@pytest.mark.slow
@FUZZ
@given(data=st.data())
def test_ubx_mutations(ubx_real, data):
    real, frames = ubx_real
    windows = [b"".join(frames[i:i + 4]) for i in range(0, len(frames), 4)]  # the whole capture, 4 frames a seed
    check("ubx", _ubx_decode, data.draw(mutated([*windows, b"".join(UBX_BUILT), real[:300]], huge=_ubx_huge)))
    # a NAV-PVT (or any real frame) payload rewritten behind a valid checksum: pyubx2 + fix_from_nav_pvt see it
    frame = data.draw(st.sampled_from(frames + UBX_BUILT))
    payload = bytearray(frame[6:-2])
    for _ in range(data.draw(st.integers(1, 6))):
        if payload:
            payload[data.draw(st.integers(0, len(payload) - 1))] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        payload = payload[:data.draw(st.integers(0, len(payload)))]
    check("ubx", _ubx_decode, _ubx_frame(frame[2:4], bytes(payload)))


def test_ubx_truncated_at_every_frame_boundary(ubx_real):
    frames = ubx_real[1][:10] + UBX_BUILT
    stream = b"".join(frames)
    for k, end in enumerate(_boundaries(frames)):
        assert len(check("ubx", _ubx_decode, stream[:end])) == k


@pytest.mark.slow
@FUZZ
@given(data=st.data())
def test_ubx_every_frame_after_garbage_is_found(ubx_real, data):
    _, frames = ubx_real
    chosen, stream = data.draw(interleaved(frames + UBX_BUILT, [b"\xb5", b"\xb5\x62", b"\xb5\x62\x01\x07"]))
    got = check("ubx", _ubx_decode, stream)
    assert got is not None and _is_subsequence(chosen, got), "a valid UBX frame after garbage was lost"


def _nmea(body: bytes) -> bytes:
    c = 0
    for byte in body:
        c ^= byte
    return b"$" + body + b"*%02X\r\n" % c


@pytest.fixture(scope="module")
def nmea_real() -> list[bytes]:
    data = _fixture("gnss/pygpsdata-NMEA.log", "real NMEA log")
    lines = [ln + b"\n" for ln in data.split(b"\n") if ln.strip()]
    assert len(lines) == 21
    return lines


NMEA_BUILT = [_nmea(b"GPGGA,223721.70,5327.00000,N,00214.40000,W,1,6,0.0,56.0,M,48.5,M,,"),
              _nmea(b"GPRMC,103607.00,A,5327.03942,N,00214.42462,W,0.085,,060321,,,A"),
              _nmea(b"GNGGA,,,,,,0,00,99.99,,,,,,")]


def _nmea_decode(data: bytes) -> list[bytes]:
    stats = DecodeStats()
    fixes = list(ubx.read_nmea(io.BytesIO(data), stats))
    assert stats.bytes_skipped <= len(data) and len(fixes) <= stats.packets
    return list(ubx._nmea_sentences(data, DecodeStats()))


@FUZZ
@given(data=st.data())
def test_nmea_mutations(nmea_real, data):
    real = b"".join(nmea_real)
    check("nmea", _nmea_decode, data.draw(mutated([real, b"".join(NMEA_BUILT), real[:400]],
                                                   huge=lambda d, i: d[:i] + b"$GPGGA," + b"1" * 900 + d[i:])))
    # arbitrary fields behind a valid checksum: pynmeagps and the GGA/RMC conversion see them
    talker = data.draw(st.sampled_from([b"GPGGA", b"GNGGA", b"GPRMC", b"GNRMC", b"PUBX", b"GPGSV"]))
    fields = data.draw(st.lists(st.one_of(st.binary(max_size=10), st.sampled_from([b"", b"A", b"N", b"W", b"99",
                                                                                   b"060321", b"123519.00",
                                                                                   b"5327.0394", b"-1e999"])),
                                max_size=16))
    body = (talker + b"," + b",".join(fields)).replace(b"*", b"").replace(b"\n", b"").replace(b"$", b"")
    check("nmea", _nmea_decode, _nmea(body))


@FUZZ
@given(data=st.data())
def test_nmea_every_sentence_after_garbage_is_found(nmea_real, data):
    packets = [ln if ln.endswith(b"\r\n") else ln[:-1] + b"\r\n" for ln in nmea_real] + NMEA_BUILT
    chosen, stream = data.draw(interleaved(packets, [b"$", b"$GP", b"*", b"\r\n"]))
    got = check("nmea", _nmea_decode, stream)
    assert got is not None and _is_subsequence([c.rstrip(b"\r\n") for c in chosen], got), \
        "a valid NMEA sentence after garbage was lost"


# ----------------------------------------------------------------------------- MAVLink tlog

def _mav_built() -> list[bytes]:
    from pymavlink.dialects.v10 import ardupilotmega as apm1
    from pymavlink.dialects.v20 import ardupilotmega as apm2

    out = []
    for apm in (apm1, apm2):
        m = apm.MAVLink(None, srcSystem=1, srcComponent=1)
        msgs = [apm.MAVLink_heartbeat_message(12, 3, 128, 0, 4, 3),
                apm.MAVLink_attitude_message(1000, 0.1, -0.2, 1.5, 0.0, 0.0, 0.0),
                apm.MAVLink_statustext_message(6, b"\xff\xfe arming \xfd", *([0, 0] if apm is apm2 else [])),
                apm.MAVLink_global_position_int_message(5, 534507228, -22402855, 91000, 50000, 0, 0, 0, 0)]
        for i, msg in enumerate(msgs):
            out.append(struct.pack(">Q", 1_683_220_747_000_000 + 10_000 * i + len(out)) + bytes(msg.pack(m)))
    return out


MAV_BUILT = _mav_built()


@pytest.fixture(scope="module")
def tlog_real() -> list[bytes]:
    data = _fixture("mavlink/ardusub_small.tlog", "real ArduSub tlog")[:60_000]
    records = [struct.pack(">Q", round(t * 1e6)) + bytes(m.get_msgbuf()) for t, m in mav.tlog_messages(data)]
    assert len(records) > 100
    return records


def _tlog_decode(data: bytes) -> list[tuple]:  # type: ignore[type-arg]
    """``(stamp us, frame bytes)`` of every valid record; heartbeats go through the arm tracker."""
    stats = DecodeStats()
    tracker = mav.ArmTracker()
    out = []
    for t, m in mav.tlog_messages(data, stats):
        out.append((None if t is None else round(t * 1e6), bytes(m.get_msgbuf())))
        if t is not None:
            tracker.update(m, t)
    assert stats.packets == len(out) and stats.bytes_skipped <= len(data)
    return out


def _mav_huge(data: bytes, i: int) -> bytes:
    """A v2 start marker claiming a 255-byte signed payload of a known message."""
    return data[:i] + b"\xfd\xff\x01\x00\x00\x01\x01\x00\x00\x00" + data[i + 10:]


def _mav_payload_rewrite(data, record: bytes) -> bytes:  # noqa: ANN001
    """The record's payload changed behind a recomputed CRC (the message decoder sees it)."""
    from pymavlink.dialects.v20 import ardupilotmega as apm
    from pymavlink.generator.mavcrc import x25crc

    frame = bytearray(record[8:])
    hdr = 6 if frame[0] == 0xFE else 10
    msgid = frame[5] if frame[0] == 0xFE else frame[7] | frame[8] << 8 | frame[9] << 16
    payload = bytearray(frame[hdr:hdr + frame[1]])
    for _ in range(data.draw(st.integers(1, 6))):
        if payload:
            payload[data.draw(st.integers(0, len(payload) - 1))] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        payload = payload[:data.draw(st.integers(0, len(payload)))]
    head = bytearray(frame[:hdr])
    head[1] = len(payload)
    crc = x25crc(bytes(head[1:] + payload) + bytes([apm.mavlink_map[msgid].crc_extra])).crc
    return record[:8] + bytes(head + payload) + struct.pack("<H", crc)


@FUZZ
@given(data=st.data())
def test_mavlink_tlog_mutations(tlog_real, data):
    seeds = [b"".join(tlog_real[:80]), b"".join(MAV_BUILT), b"".join(tlog_real[:20])]
    check("mavlink tlog", _tlog_decode, data.draw(mutated(seeds, huge=_mav_huge)))
    record = data.draw(st.sampled_from(tlog_real[:60] + MAV_BUILT))
    check("mavlink tlog", _tlog_decode, _mav_payload_rewrite(data, record))


def test_mavlink_tlog_truncated_at_every_record_boundary(tlog_real):
    records = tlog_real[:40] + MAV_BUILT
    stream = b"".join(records)
    for k, end in enumerate(_boundaries(records)):
        assert len(check("mavlink tlog", _tlog_decode, stream[:end])) == k
        if end:
            assert len(check("mavlink tlog", _tlog_decode, stream[:end - 1])) == k - 1


@FUZZ
@given(data=st.data())
def test_mavlink_every_record_after_garbage_is_found(tlog_real, data):
    records = tlog_real[:30] + MAV_BUILT
    chosen, stream = data.draw(interleaved(records, [b"\xfd", b"\xfe", b"\xfd\x09\x00\x00", b"\xfe\x09"]))
    got = check("mavlink tlog", _tlog_decode, stream)
    want = [(struct.unpack(">Q", r[:8])[0], r[8:]) for r in chosen]
    assert got is not None and _is_subsequence(want, got), "a valid MAVLink record after garbage was lost"


@pytest.mark.slow
@FUZZ
@given(data=st.data())
def test_mavlink_decode_tlog_file(tlog_real, data, tmp_path_factory):
    path = Path(tmp_path_factory.mktemp("tlog")) / "fuzz.tlog"
    path.write_bytes(data.draw(mutated([b"".join(tlog_real[:60]), b""], huge=_mav_huge)))
    check("mavlink tlog", mav.decode_tlog, path)

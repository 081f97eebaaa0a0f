"""FLIR Boson: serial framing against captured bytes, a pty-emulated camera with reconnect,
and the telemetry line / frame-source contract."""

from __future__ import annotations

import struct
import threading
import time

import numpy as np
import pytest

from rgbt.sensors import boson as b
from rgbt.sensors.serial_link import SerialLink

# Bytes exchanged with a real Boson (published in a public Boson command-line tool's README):
GET_SERIAL_CMD = bytes.fromhex("8E 00 00 00 00 01 00 05 00 02 FF FF FF FF 01 0B AE")
FPA_TEMP_CMD = bytes.fromhex("8E 00 00 00 00 01 00 05 00 30 FF FF FF FF 49 66 AE")
FPA_TEMP_REPLY = bytes.fromhex("8E 00 00 00 00 01 00 05 00 30 00 00 00 00 01 7C BD CE AE")
RUN_FFC_CMD = bytes.fromhex("8E 00 00 00 00 01 00 05 00 07 FF FF FF FF 22 5C AE")
RUN_FFC_REPLY = bytes.fromhex("8E 00 00 00 00 01 00 05 00 07 00 00 00 00 BB 93 AE")


def test_framing_matches_captured_bytes():
    assert b.encode_frame(1, b.FUNCTIONS["get_camera_sn"]) == GET_SERIAL_CMD
    assert b.encode_frame(1, b.FUNCTIONS["lookup_fpa_temp_degc_x10"]) == FPA_TEMP_CMD
    assert b.encode_frame(1, b.FUNCTIONS["run_ffc"]) == RUN_FFC_CMD
    dec = b.FrameDecoder()
    (reply,) = dec.feed(b"\x00junk" + FPA_TEMP_REPLY)
    assert reply.status == 0 and struct.unpack(">h", reply.payload)[0] / 10 == 38.0
    assert dec.stats.bytes_skipped == 5
    (ffc,) = dec.feed(RUN_FFC_REPLY)
    assert ffc.function == b.FUNCTIONS["run_ffc"] and ffc.payload == b""


def test_escaping_round_trip_and_damaged_frames_counted():
    payload = bytes([0x8E, 0x9E, 0xAE, 0x00, 0x8E])
    frame = b.encode_frame(0x8E9EAE, 0x00050098, payload, status=0)
    assert frame.count(0x8E) == 1 and frame.count(0xAE) == 1  # only the flags stay unescaped
    corrupt = bytearray(frame)
    corrupt[frame.index(0x98)] ^= 0x01  # function code byte (never escaped)
    dec = b.FrameDecoder()
    out = dec.feed(bytes(corrupt) + frame[:10] + frame + frame[:7])
    assert [p.payload for p in out] == [payload]
    assert out[0].sequence == 0x8E9EAE
    assert dec.stats.crc_failures == 1 and dec.stats.malformed == 1
    assert [p.payload for p in dec.feed(frame[7:])] == [payload]  # split across two reads: reassembled
    assert dec.feed(frame[7:]) == [] and dec.stats.packets == 2  # a tail without its start flag is garbage


class BosonDevice(threading.Thread):
    """The camera side: answers every command like the firmware (status 0, big-endian values)."""

    def __init__(self, dev) -> None:
        super().__init__(daemon=True)
        self.dev = dev
        self.stop = threading.Event()
        self.log: list[str] = []
        self.state = {"ffc_mode": 1, "ext_sync": 0, "ffc_status": 0, "status_polls": 0}
        self.garbage_before_reply = False

    def run(self) -> None:
        dec = b.FrameDecoder()
        names = {v: k for k, v in b.FUNCTIONS.items()}
        while not self.stop.is_set():
            for cmd in dec.feed(self.dev.read(0.005)):
                name = names.get(cmd.function, "unknown")
                self.log.append(name)
                st = self.state
                reply = b""
                if name == "set_ffc_mode":
                    st["ffc_mode"] = struct.unpack(">i", cmd.payload)[0]
                elif name == "get_ffc_mode":
                    reply = struct.pack(">i", st["ffc_mode"])
                elif name == "set_ext_sync_mode":
                    st["ext_sync"] = struct.unpack(">i", cmd.payload)[0]
                elif name == "get_ext_sync_mode":
                    reply = struct.pack(">i", st["ext_sync"])
                elif name == "run_ffc":
                    st["ffc_status"], st["status_polls"] = 2, 0
                elif name == "get_ffc_status":
                    if st["ffc_status"] == 2 and st["status_polls"] >= 1:  # FFC takes one poll
                        st["ffc_status"] = 3
                    reply = struct.pack(">i", st["ffc_status"])
                    st["status_polls"] += 1
                elif name == "lookup_fpa_temp_degc_x10":
                    reply = struct.pack(">h", 380)
                out = b.encode_frame(cmd.sequence, cmd.function, reply, status=0)
                if self.garbage_before_reply:
                    bad = bytearray(out)
                    bad[-3] ^= 0xFF
                    out = b"\x13\x37garbage" + bytes(bad) + out
                self.dev.write(out)


def test_pty_boson_configure_command_unplug_reconnect(pty_device):
    cam = BosonDevice(pty_device)
    cam.start()
    link = SerialLink(str(pty_device.path), 921600, backoff_s=(0.02, 0.1))
    ctl = b.BosonControl(b.BosonOptions(port=str(pty_device.path), reply_timeout_s=1.0), link)
    try:
        assert ctl.connect()
        assert cam.log[:2] == ["set_ext_sync_mode", "set_ffc_mode"]  # applied on connect
        assert ctl.get_ext_sync_mode() == b.ExtSyncMode.SLAVE and ctl.get_ffc_mode() == b.FfcMode.MANUAL
        assert ctl.fpa_temp_c() == 38.0
        ctl.run_ffc()
        assert ctl.get_ffc_status() == b.FfcStatus.IN_PROGRESS
        assert ctl.get_ffc_status() == b.FfcStatus.COMPLETE
        cam.garbage_before_reply = True
        assert ctl.fpa_temp_c() == 38.0
        assert ctl.decoder.stats.crc_failures == 1 and ctl.decoder.stats.bytes_skipped >= 9
        cam.garbage_before_reply = False
        pty_device.unplug()
        with pytest.raises(b.BosonError):
            ctl.fpa_temp_c()
        assert not link.connected
        cam.state["ext_sync"] = 0  # the camera power-cycled: defaults again
        n = len(cam.log)
        pty_device.plug()
        deadline = time.monotonic() + 5
        while not ctl.connect() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert link.connects == 2
        assert cam.log[n:n + 2] == ["set_ext_sync_mode", "set_ffc_mode"]
        assert ctl.get_ext_sync_mode() == b.ExtSyncMode.SLAVE
    finally:
        cam.stop.set()
        cam.join(2)
        ctl.close()


def _raw_frame(counter: int, ffc_counter: int) -> np.ndarray:
    """A 513x640 Y16 buffer as the Boson sends it with telemetry on top."""
    img = np.full((513, 640), 7000, np.uint16)
    line = bytearray(1280)
    struct.pack_into(">II", line, 84, counter, ffc_counter)
    struct.pack_into(">H", line, 94, 3112)
    img[0] = np.frombuffer(bytes(line), np.uint16)
    img[1:] += np.arange(512, dtype=np.uint16)[:, None]
    return img


class ReplaySource:
    """A FrameSource over prepared buffers (stands in for V4L2 in tests)."""

    def __init__(self, buffers) -> None:
        self.buffers = list(buffers)
        self.opts = b.V4l2Options()

    def read(self):
        if not self.buffers:
            return None
        return b.split_frame(self.buffers.pop(0), time.monotonic_ns(), self.opts)

    def close(self) -> None:
        pass


def test_telemetry_line_gives_counter_and_ffc_flag():
    src = ReplaySource([_raw_frame(100 + i, 103) for i in range(6)])
    frames = list(b.frames(src))
    assert [f.frame_counter for f in frames] == [100, 101, 102, 103, 104, 105]
    assert [f.ffc for f in frames] == [False, False, False, True, False, False]
    assert frames[0].image.shape == (512, 640) and frames[0].image[0, 0] == 7000
    assert frames[0].telemetry.fpa_temp_k == pytest.approx(311.2)
    no_tel = b.split_frame(np.zeros((512, 640), np.uint16), 0, b.V4l2Options(telemetry="none"), host_count=7,
                           ffc_state=b.FfcStatus.IN_PROGRESS)
    assert no_tel.frame_counter == 7 and no_tel.ffc


def test_each_frame_carries_the_ffc_state_polled_over_serial(pty_device):
    cam = BosonDevice(pty_device)
    cam.start()
    link = SerialLink(str(pty_device.path), 921600, backoff_s=(0.02, 0.1))
    ctl = b.BosonControl(b.BosonOptions(port=str(pty_device.path), reply_timeout_s=1.0), link)
    src = ReplaySource([_raw_frame(200 + i, 0) for i in range(8)])
    camera = b.BosonCamera(src, ctl, busy_poll_s=0.0, idle_poll_s=0.0)
    try:
        assert ctl.connect()
        first = camera.read()
        camera.run_ffc()  # the camera reports IN_PROGRESS on the next poll, COMPLETE on the one after
        rest = list(b.frames(camera))
        flags = [first.ffc] + [f.ffc for f in rest]
        assert flags == [False, True, False, False, False, False, False, False]
        assert [f.frame_counter for f in rest] == list(range(201, 208))
        assert "run_ffc" in cam.log and cam.log.count("get_ffc_status") >= 2
    finally:
        cam.stop.set()
        cam.join(2)
        camera.close()


def test_cli_boson_status_and_ffc(pty_device, rgbt_cli):
    import json

    cam = BosonDevice(pty_device)
    cam.start()
    try:
        out = json.loads(rgbt_cli("sensors", "boson", str(pty_device.path), "ffc", "--json").stdout)
        assert out == {"fpa_temp_c": 38.0, "ffc_mode": "MANUAL", "ffc_status": "IN_PROGRESS", "ext_sync": "SLAVE"}
        assert "run_ffc" in cam.log
    finally:
        cam.stop.set()
        cam.join(2)


def test_v4l2_source_reports_a_missing_camera(tmp_path):
    from rgbt.sensors.reconnect import DeviceError

    with pytest.raises(DeviceError, match="no such device"):
        b.V4l2Source(b.V4l2Options(device=str(tmp_path / "video99")))
    (tmp_path / "video0").write_bytes(b"")  # there, but not a camera
    with pytest.raises(DeviceError, match="cannot open"):
        b.V4l2Source(b.V4l2Options(device=str(tmp_path / "video0")))


def test_v4l2_read_failures_say_bad_frame_no_frame_or_unplugged(tmp_path, monkeypatch):
    """What a driver loop needs to tell apart (rgbt.sensors.reconnect). No V4L2 camera here: OpenCV's
    capture is replaced by one that returns what ``cv2.VideoCapture.read`` returns on the hardware."""
    import cv2

    from rgbt.errors import DecodeError
    from rgbt.sensors.reconnect import DeviceError, ReadFailed, classify

    node = tmp_path / "video0"
    node.write_bytes(b"")
    reads = [(True, np.zeros((1, 640 * 513 * 2), np.uint8)), (True, np.zeros((1, 999), np.uint8)),
             (True, np.zeros((1, 640 * 100 * 2), np.uint8)), (False, None), (False, None)]
    settings = {}

    class Capture:
        def __init__(self, device, api):
            assert (device, api) == (str(node), cv2.CAP_V4L2)

        def isOpened(self):
            return True

        def set(self, prop, value):
            settings[prop] = value
            return True

        def read(self):
            return reads.pop(0)

        def release(self):
            pass

    monkeypatch.setattr(cv2, "VideoCapture", Capture)
    src = b.V4l2Source(b.V4l2Options(device=str(node), telemetry="bottom", read_timeout_ms=500))
    assert settings[cv2.CAP_PROP_READ_TIMEOUT_MSEC] == 500  # a camera that stops sending fails the read
    assert src.read().image.shape == (512, 640)
    for _ in range(2):  # an odd-sized buffer, a frame of 100 rows: bad frames
        with pytest.raises(DecodeError) as bad:
            src.read()
        assert classify(bad.value) == "bad_frame"
    with pytest.raises(ReadFailed, match="no frame"):
        src.read()
    node.unlink()  # unplugged: the device node went away
    with pytest.raises(DeviceError, match="gone"):
        src.read()

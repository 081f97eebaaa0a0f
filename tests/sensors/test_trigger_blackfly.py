"""Trigger generator protocol over a pty (the test side runs the device model) and the
Blackfly parameter file."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
import yaml

from rgbt.errors import ConfigError, DecodeError
from rgbt.sensors import blackfly, trigger
from rgbt.sensors.serial_link import SerialLink
from helpers import read_lines


class TriggerDevice(threading.Thread):
    def __init__(self, dev) -> None:
        super().__init__(daemon=True)
        self.dev, self.model = dev, trigger.TriggerDeviceModel(rate_hz=30.0)
        self.stop = threading.Event()

    def run(self) -> None:
        buf = b""
        while not self.stop.is_set():
            lines, buf = read_lines(self.dev, buf)
            for line in lines:
                self.dev.write(self.model.handle(line))


def test_protocol_checksums():
    assert trigger.frame_line("RATE 60.000") == b"RATE 60.000*" + trigger.checksum("RATE 60.000").encode() + b"\n"
    assert trigger.parse_line(b"COUNT 12*" + trigger.checksum("COUNT 12").encode()) == "COUNT 12"
    with pytest.raises(DecodeError):
        trigger.parse_line(b"COUNT 13*" + trigger.checksum("COUNT 12").encode())
    model = trigger.TriggerDeviceModel()
    assert model.handle(b"START*00\n").startswith(b"ERR CHECKSUM")
    assert model.handle(trigger.frame_line("RATE 5000")).startswith(b"ERR RANGE")


def test_pty_trigger_rate_start_count_stop_reconnect(pty_device):
    dev = TriggerDevice(pty_device)
    dev.start()
    gen = trigger.TriggerGenerator(trigger.TriggerOptions(port=str(pty_device.path)),
                                   SerialLink(str(pty_device.path), backoff_s=(0.02, 0.1)))
    try:
        gen.set_rate(60)
        assert gen.rate() == 60.0
        gen.start()
        dev.model.tick(1.0)  # one second of pulses
        assert gen.count() == 60
        gen.stop()
        dev.model.tick(1.0)
        assert gen.count() == 60
        with pytest.raises(DecodeError, match="ERR"):
            gen.request("FIRE")
        pty_device.unplug()
        with pytest.raises(DecodeError):
            gen.count()
        pty_device.plug()
        gen.link.poll()
        import time
        deadline = time.monotonic() + 5
        while not gen.link.poll() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert gen.count() == 60  # the device kept its counter
    finally:
        dev.stop.set()
        dev.join(2)
        gen.link.close()


def _stack():
    cam = SimpleNamespace(frame_id="color_optical", width=960, height=600, modality="color", trigger_divider=2)
    return SimpleNamespace(cameras={"color": cam}, trigger=SimpleNamespace(rate_hz=60.0))


def test_blackfly_params_trigger_line0_exposure_below_period():
    stack = _stack()
    p = blackfly.spinnaker_params(stack, "color", exposure_us=50_000)
    assert p["trigger_source"] == "Line0" and p["trigger_activation"] == "RisingEdge" and p["trigger_mode"] == "On"
    assert p["chunk_enable_frame_id"] and p["chunk_enable_timestamp"] and p["chunk_mode_active"]
    period_us = 1e6 * 2 / 60.0
    assert p["exposure_time"] < period_us
    text = blackfly.spinnaker_params_yaml(stack, "color")
    loaded = yaml.safe_load(text)
    assert loaded["blackfly_color"]["ros__parameters"]["image_width"] == 960
    with pytest.raises(ConfigError):
        blackfly.spinnaker_params(stack, "thermal")


def test_blackfly_params_from_the_repository_stack(tmp_path, rgbt_cli):
    from rgbt.stack import load_stack
    from rgbt.sync import RestamperOptions

    stack = load_stack()
    out = tmp_path / "color.yaml"
    rgbt_cli("sensors", "blackfly-params", "--camera", "color", "--out", str(out))
    p = yaml.safe_load(out.read_text())["blackfly_color"]["ros__parameters"]
    cam = stack.cameras["color"]
    assert (p["image_width"], p["image_height"], p["frame_id"]) == (cam.width, cam.height, cam.frame_id)
    assert p["exposure_time"] < 1e6 * cam.trigger_divider / stack.trigger.rate_hz
    opts = RestamperOptions.from_stack(stack)
    assert opts.cameras["thermal"].divider == 1 and opts.cameras["color"].divider == 2
    assert opts.trigger_rate_hz == stack.trigger.rate_hz


@pytest.mark.slow
def test_cli_trigger_against_pty_device(pty_device, rgbt_cli):
    import json

    dev = TriggerDevice(pty_device)
    dev.start()
    try:
        out = json.loads(rgbt_cli("sensors", "trigger", str(pty_device.path), "rate", "60", "--json").stdout)
        assert out == {"rate_hz": 60.0, "count": 0}
        rgbt_cli("sensors", "trigger", str(pty_device.path), "start")
        assert dev.model.running
        dev.model.tick(0.5)
        out = json.loads(rgbt_cli("sensors", "trigger", str(pty_device.path), "count", "--json").stdout)
        assert out["count"] == 30
    finally:
        dev.stop.set()
        dev.join(2)
    gone = rgbt_cli("sensors", "trigger", str(pty_device.path) + ".absent", "count", check=False)
    assert gone.returncode == 2 and "not connected" in gone.stderr


def test_pyspin_source_needs_pyspin():
    try:
        import PySpin  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match="PySpin"):
            blackfly.PySpinSource(blackfly.spinnaker_params(_stack(), "color"))
    else:  # pragma: no cover - only where the Spinnaker SDK is installed
        pytest.skip("PySpin installed: covered on the hardware")


class _FakePySpin:
    """The parts of PySpin that PySpinSource uses, behaving as the SDK does when a camera is there, is
    not, or goes away (no Spinnaker SDK or camera here): errors are SpinnakerException with an errorcode."""

    class SpinnakerException(Exception):
        def __init__(self, message, errorcode):
            super().__init__(message)
            self.errorcode = errorcode

    def __init__(self, cameras):
        self.cameras, self.released = cameras, 0
        fake = self

        class System:
            @staticmethod
            def GetInstance():
                return fake

        self.System = System
        node = SimpleNamespace(GetEntryByName=lambda _n: SimpleNamespace(GetValue=lambda: 0),
                               SetIntValue=lambda _v: None, SetValue=lambda _v: None)
        self.CEnumerationPtr = self.CBooleanPtr = self.CFloatPtr = lambda _node: node

    def GetCameras(self):
        cams = list(self.cameras)
        return SimpleNamespace(GetSize=lambda: len(cams), GetByIndex=lambda i: cams[i], Clear=cams.clear)

    def ReleaseInstance(self):
        self.released += 1


class _FakeCamera:
    def __init__(self, images):
        self.images, self.state = images, []

    def Init(self):
        self.state.append("init")

    def GetNodeMap(self):
        return SimpleNamespace(GetNode=lambda name: name)

    def BeginAcquisition(self):
        self.state.append("begin")

    def EndAcquisition(self):
        self.state.append("end")

    def DeInit(self):
        self.state.append("deinit")

    def GetNextImage(self, timeout_ms):
        item = self.images.pop(0)
        if isinstance(item, Exception):
            raise item
        return item


def _image(incomplete=False, frame_id=7):
    import numpy as np

    return SimpleNamespace(IsIncomplete=lambda: incomplete, GetImageStatus=lambda: 4, Release=lambda: None,
                           GetNDArray=lambda: np.zeros((600, 960, 3), np.uint8),
                           GetChunkData=lambda: SimpleNamespace(GetFrameID=lambda: frame_id))


def test_pyspin_source_failures_say_bad_frame_no_image_or_camera_gone(monkeypatch):
    import sys

    from rgbt.sensors.reconnect import DeviceError, ReadFailed

    params = blackfly.spinnaker_params(_stack(), "color")
    spin = _FakePySpin([])
    monkeypatch.setitem(sys.modules, "PySpin", spin)
    with pytest.raises(DeviceError, match="0 camera"):  # not attached: retried by the driver, not a config error
        blackfly.PySpinSource(params)
    assert spin.released == 1  # a failed open releases the system
    exc = spin.SpinnakerException
    cam = _FakeCamera([_image(frame_id=7), _image(incomplete=True), exc("timeout", blackfly.SPINNAKER_ERR_TIMEOUT),
                       exc("camera removed", -1010)])
    spin.cameras = [cam]
    src = blackfly.PySpinSource(params)
    assert src.read()[1] == 7
    with pytest.raises(DecodeError, match="incomplete"):
        src.read()
    with pytest.raises(ReadFailed, match="no image"):
        src.read()
    with pytest.raises(DeviceError, match="camera removed"):
        src.read()
    cam.EndAcquisition = lambda: (_ for _ in ()).throw(exc("not streaming", -1002))  # closing a camera that is gone
    src.close()
    assert cam.state[-1] == "deinit" and spin.released == 2 and src.cam is None

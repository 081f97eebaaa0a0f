"""``rgbt bench preprocess``: the rectify stage with a local stand-in (until calib lands) and when absent."""

from __future__ import annotations

import sys
import types

import cv2
import numpy as np

from rgbt.bench import preprocess


class _StandInRectifier:
    """Local stand-in for C5's ``RgbtRectifier`` (same call shape: 960x600 colour + 640x512 thermal)."""

    calls = 0

    def __init__(self) -> None:
        xs, ys = np.meshgrid(np.arange(960, dtype=np.float32) * 640 / 960, np.arange(600, dtype=np.float32) * 512 / 600)
        self.map1, self.map2 = cv2.convertMaps(xs, ys, cv2.CV_16SC2)

    @classmethod
    def from_stack(cls, stack, pair="color_thermal"):
        assert pair == "color_thermal" and stack is not None
        return cls()

    def rectify(self, color, thermal):
        assert color.shape == (600, 960, 3) and thermal.shape == (512, 640)
        type(self).calls += 1
        return color, cv2.remap(thermal, self.map1, self.map2, cv2.INTER_LINEAR)


def test_rectify_stage_with_stand_in(monkeypatch):
    fake_rectify = types.ModuleType("rgbt.image.rectify")
    fake_rectify.RgbtRectifier = _StandInRectifier
    fake_stack = types.ModuleType("rgbt.stack")
    fake_stack.load_stack = lambda path=None: object()
    monkeypatch.setitem(sys.modules, "rgbt.image.rectify", fake_rectify)
    monkeypatch.setitem(sys.modules, "rgbt.stack", fake_stack)
    frames = [np.zeros((512, 640), np.uint16)]
    stats = preprocess._rectify_stage(7, frames)
    assert stats["n"] == 7 and stats["median_ms"] > 0 and "missing" not in stats
    assert _StandInRectifier.calls == 7 + 5  # timed calls + warm-up


def test_rectify_stage_reports_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "rgbt.image.rectify", None)  # import fails
    stats = preprocess._rectify_stage(3, [np.zeros((512, 640), np.uint16)])
    assert stats["median_ms"] is None and "rectification not available" in stats["missing"]


def test_rectify_stage_reports_construction_failure(monkeypatch):
    fake_rectify = types.ModuleType("rgbt.image.rectify")

    class Broken:
        @classmethod
        def from_stack(cls, stack, pair="color_thermal"):
            raise ValueError("no such pair")

    fake_rectify.RgbtRectifier = Broken
    monkeypatch.setitem(sys.modules, "rgbt.image.rectify", fake_rectify)
    fake_stack = types.ModuleType("rgbt.stack")
    fake_stack.load_stack = lambda path=None: object()
    monkeypatch.setitem(sys.modules, "rgbt.stack", fake_stack)
    stats = preprocess._rectify_stage(3, [np.zeros((512, 640), np.uint16)])
    assert stats["median_ms"] is None and "no such pair" in stats["missing"]

"""``rgbt bench preprocess``: the ``rectify_pair`` stage times the real ``rgbt.image.rectify.RgbtRectifier``
built from the stack calibration (``calib/stack.yaml``, pair ``color_thermal``), and reports when it
cannot build it."""

from __future__ import annotations

import json
import math
import sys

import numpy as np
import pytest

from helpers import run_rgbt
from rgbt.bench import preprocess
from rgbt.image.rectify import RgbtRectifier
from rgbt.image.synthetic import SyntheticSceneOptions, SyntheticThermal
from rgbt.stack import load_stack


@pytest.fixture
def rectify_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[RgbtRectifier, np.ndarray, np.ndarray, tuple]]:
    """Every ``RgbtRectifier.rectify`` call (the real method, still run): (rectifier, colour, thermal, result)."""
    calls: list = []
    real = RgbtRectifier.rectify

    def spy(self: RgbtRectifier, img0: np.ndarray, img1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        out = real(self, img0, img1)
        calls.append((self, img0, img1, out))
        return out

    monkeypatch.setattr(RgbtRectifier, "rectify", spy)
    return calls


def test_rectify_stage_times_the_real_rectifier(rectify_calls: list) -> None:
    scene = SyntheticThermal(SyntheticSceneOptions(seed=1))
    frames = [scene.frame(i, (40.0 * i, 256.0)) for i in range(3)]
    stats = preprocess._rectify_stage(7, frames)
    assert "missing" not in stats, stats
    assert stats["n"] == 7 and 0 < stats["median_ms"] <= stats["p99_ms"] and math.isfinite(stats["p99_ms"])
    assert len(rectify_calls) == 7 + 5  # timed calls + warm-up, all through the real method
    rectifier = rectify_calls[0][0]
    assert rectifier.modalities == ("color", "thermal") and rectifier.size == (960, 600)
    # the same stack pair built here independently rectifies the benchmark's inputs to the same pixels
    reference = RgbtRectifier.from_stack(load_stack(), pair="color_thermal")
    for _, color, thermal, (out0, out1) in rectify_calls[-3:]:
        assert color.shape == (600, 960, 3) and thermal.shape == (512, 640)
        want0, want1 = reference.tables[0](color), reference.tables[1](thermal)
        assert out0.shape == (600, 960, 3) and out1.shape == (600, 960) and out1.dtype == np.uint16
        assert np.array_equal(out0, want0) and np.array_equal(out1, want1)
    # the thermal frame really moved onto the 960x600 canvas (not passed through or blank)
    _, _, thermal, (_, out1) = rectify_calls[-1]
    assert out1.std() > 0.1 * thermal.std()


def test_rectify_stage_reports_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rgbt.image.rectify", None)  # import fails
    stats = preprocess._rectify_stage(3, [np.zeros((512, 640), np.uint16)])
    assert stats["median_ms"] is None and "rectification not available" in stats["missing"]


def test_rectify_stage_reports_construction_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stack without the ``color_thermal`` pair: the real ``from_stack`` refuses it, the stage says why."""
    import rgbt.stack

    stack = load_stack()
    no_pairs = stack.model_copy(update={"pairs": {}})
    monkeypatch.setattr(rgbt.stack, "load_stack", lambda path=None: no_pairs)
    stats = preprocess._rectify_stage(3, [np.zeros((512, 640), np.uint16)])
    assert stats["median_ms"] is None and "pairs.color_thermal" in stats["missing"], stats


@pytest.mark.slow
def test_cli_bench_preprocess_reports_the_rectify_stage() -> None:
    proc = run_rgbt("bench", "preprocess", "--frames", "3", "--ref-frames", "1", "--no-parity", "--json")
    stages = json.loads(proc.stdout)["stages"]
    rect = stages["rectify_pair"]
    assert "missing" not in rect and rect["n"] == 3 and rect["median_ms"] > 0

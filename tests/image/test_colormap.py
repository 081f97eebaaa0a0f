"""Colormaps and the labelled colorbar."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from rgbt.errors import ImageError
from rgbt.image.colormap import COLORMAPS, IRONBOW_ANCHORS, apply_colormap, colorbar, ironbow_lut, with_colorbar

RAMP = np.tile(np.linspace(0, 1, 256, dtype=np.float32), (4, 1))


@pytest.mark.parametrize("name", COLORMAPS)
def test_every_colormap_gives_rgb(name):
    out = apply_colormap(RAMP, name)
    assert out.shape == (4, 256, 3) and out.dtype == np.uint8
    assert len({tuple(c) for c in out[0]}) > 50  # the ramp is not collapsed
    assert np.array_equal(apply_colormap((RAMP * 255).round().astype(np.uint8), name), out)


@pytest.mark.parametrize("name,cv_id", [("magma", cv2.COLORMAP_MAGMA), ("viridis", cv2.COLORMAP_VIRIDIS),
                                        ("inferno", cv2.COLORMAP_INFERNO), ("spring", cv2.COLORMAP_SPRING),
                                        ("summer", cv2.COLORMAP_SUMMER), ("jet", cv2.COLORMAP_JET)])
def test_opencv_maps_in_rgb_order(name, cv_id):
    u8 = np.arange(256, dtype=np.uint8)[None, :]
    bgr = cv2.applyColorMap(u8, cv_id)
    assert np.array_equal(apply_colormap(u8, name), bgr[:, :, ::-1])


def test_grey_maps():
    white = apply_colormap(RAMP, "white-hot")[0]
    black = apply_colormap(RAMP, "black-hot")[0]
    assert np.array_equal(white, apply_colormap(RAMP, "gray")[0])
    assert np.all(np.diff(white[:, 0].astype(int)) >= 0) and white[-1].tolist() == [255, 255, 255]
    assert np.array_equal(black[:, 0], 255 - white[:, 0])


def test_ironbow_follows_its_anchors():
    lut = ironbow_lut()
    assert lut.shape == (256, 3)
    for pos, r, g, b in IRONBOW_ANCHORS:
        i = int(round(pos * 255))
        assert np.abs(lut[i].astype(int) - [r, g, b]).max() <= 5, (pos, lut[i])  # half a step off
    luminance = lut @ np.array([0.299, 0.587, 0.114])
    assert luminance[-1] > luminance[128] > luminance[0]  # cold dark, hot bright


def test_colorbar_and_composite():
    bar = colorbar(200, 10.0, 30.0, unit="degC")
    assert bar.shape == (200, 90, 3) and bar.dtype == np.uint8
    assert (bar[:, :, 0] < 128).sum() > 50  # labels were drawn (dark text on white)
    img = apply_colormap(RAMP.repeat(50, axis=0), "jet")
    out = with_colorbar(img, 0, 1000, name="jet", unit="counts")
    assert out.shape == (200, 256 + 90, 3)
    assert np.array_equal(out[:, :256], img)


def test_bad_inputs():
    with pytest.raises(ImageError, match="unknown name"):
        apply_colormap(RAMP, "rainbow-ish")
    with pytest.raises(ImageError, match="single-channel"):
        apply_colormap(np.zeros((4, 4, 3), np.float32))
    with pytest.raises(ImageError, match="float"):
        apply_colormap(np.zeros((4, 4), np.uint16))
    with pytest.raises(ImageError, match="height"):
        colorbar(10, 0, 1)
    with pytest.raises(ImageError, match="HxWx3"):
        with_colorbar(np.zeros((4, 4), np.uint8), 0, 1)

"""Percentile exactness, CART parity of normalize + CLAHE, and the defined bad-input behaviour."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from rgbt.errors import ImageError
from rgbt.image.normalize import (PERCENTILE_METHODS, Clahe, NormalizeOptions, Normalizer, clip_histograms,
                                  compact_histogram, histogram, normalize, percentile_bounds,
                                  percentiles_from_histogram, rescale, to_uint8)
from rgbt.image.synthetic import SyntheticSceneOptions, SyntheticThermal

MEAN_TOL, MAX_TOL = 0.01, 0.06  # issue 2 acceptance, [0,1] scale


def cart_reference(frame: np.ndarray, low: float = 1.0, high: float = 99.0) -> np.ndarray:
    """CART's code path, written here independently of rgbt (skimage is the oracle)."""
    from skimage.exposure import equalize_adapthist

    p_lo, p_hi = np.percentile(frame, [low, high])
    x = np.clip((frame.astype(np.float64) - p_lo) / (p_hi - p_lo), 0.0, 1.0)
    return equalize_adapthist(x, clip_limit=0.01)


# ----------------------------------------------------------------------------- percentiles
def _random_frames():
    rng = np.random.default_rng(7)
    yield rng.integers(0, 65536, (64, 80), dtype=np.uint16)                       # full range
    yield (20000 + rng.normal(0, 30, (97, 131))).astype(np.uint16)                # narrow, odd size
    yield rng.choice(np.array([5, 6, 6000], dtype=np.uint16), (40, 50))           # heavy ties
    yield np.concatenate([np.zeros(7, np.uint16), np.full(3, 65535, np.uint16)]).reshape(2, 5)  # tiny
    yield rng.integers(0, 256, (33, 17), dtype=np.uint8)                          # uint8


@pytest.mark.parametrize("method", PERCENTILE_METHODS)
def test_percentiles_equal_numpy_exactly(method):
    qs = [0.0, 0.5, 1.0, 5.0, 33.3, 50.0, 95.0, 99.0, 99.9, 100.0]
    for frame in _random_frames():
        ours = percentiles_from_histogram(histogram(frame), qs, method=method)
        ref = np.percentile(frame, qs, method=method)
        assert ours == [float(v) for v in ref], (frame.shape, frame.dtype, method)
        assert percentile_bounds(frame, 1.0, 99.0, method) == tuple(np.percentile(frame, [1.0, 99.0], method=method))


def test_histogram_equals_bincount():
    for frame in _random_frames():
        assert np.array_equal(histogram(frame), np.bincount(frame.ravel(), minlength=histogram(frame).size))
        offset, counts = compact_histogram(frame)
        assert offset == frame.min() and counts.size == int(frame.max()) - int(frame.min()) + 1


def test_percentile_bounds_float_and_nan():
    rng = np.random.default_rng(3)
    frame = rng.normal(20.0, 5.0, (50, 60))
    assert percentile_bounds(frame, 5, 95) == tuple(np.percentile(frame, [5, 95]))
    frame[::7, ::3] = np.nan
    frame[1, 1] = np.inf
    finite = frame[np.isfinite(frame)]
    assert percentile_bounds(frame, 1, 99) == tuple(np.percentile(finite, [1, 99]))
    with pytest.raises(ImageError, match="NaN"):
        percentile_bounds(np.full((8, 8), np.nan))


@pytest.mark.parametrize("low,high", [(99, 1), (-1, 50), (50, 101), (5, 5), (float("nan"), 9)])
def test_bad_percentiles(low, high):
    with pytest.raises(ImageError, match="percentiles"):
        percentile_bounds(np.zeros((4, 4), np.uint16), low, high)


def test_bad_method():
    with pytest.raises(ImageError, match="method"):
        percentile_bounds(np.zeros((4, 4), np.uint16), method="weibull")


# ----------------------------------------------------------------------------- CLAHE internals
def test_clip_histograms_equals_skimage():
    from skimage.exposure._adapthist import clip_histogram  # the oracle's own routine

    rng = np.random.default_rng(11)
    hists = []
    for _ in range(60):
        n_used = int(rng.integers(1, 256))
        h = np.zeros(256, np.int64)
        idx = rng.choice(256, n_used, replace=False)
        h[idx] = rng.integers(0, 400, n_used)
        hists.append(h)
    hists = np.array(hists)
    for clim in (1, 7, 51, 300):
        ours = clip_histograms(hists, clim)
        for row, ref_in in zip(ours, hists):
            assert np.array_equal(row, clip_histogram(ref_in.copy(), clim))


def test_clahe_rejects_tiny_and_wrong_dtype():
    with pytest.raises(ImageError, match="at least 8x8"):
        Clahe()(np.zeros((7, 100), np.uint8))
    with pytest.raises(ImageError, match="uint8"):
        Clahe()(np.zeros((64, 64), np.uint16))


# ----------------------------------------------------------------------------- parity
def _parity(frame):
    d = np.abs(normalize(frame).astype(np.float64) - cart_reference(frame))
    return float(d.mean()), float(d.max())


def test_parity_real_flir_frame(flir_counts):
    out = normalize(flir_counts)
    assert out.dtype == np.float32 and out.shape == flir_counts.shape
    assert out.min() == 0.0 and out.max() == 1.0
    mean, mx = _parity(flir_counts)
    print(f"parity on the real FLIR frame: mean {mean:.2e}, max {mx:.2e}")
    assert mean <= MEAN_TOL and mx <= MAX_TOL


@pytest.mark.parametrize("case", ["crop_600x500", "crop_477x333", "resize_320x256", "resize_1280x1024",
                                  "crop_100x64", "float32", "uint8"])
def test_parity_real_frame_other_sizes(flir_counts, case):
    frames = {
        "crop_600x500": flir_counts[:500, :600],
        "crop_477x333": flir_counts[37:370, 11:488],
        "resize_320x256": cv2.resize(flir_counts, (320, 256), interpolation=cv2.INTER_AREA),
        "resize_1280x1024": cv2.resize(flir_counts, (1280, 1024), interpolation=cv2.INTER_LINEAR),
        "crop_100x64": flir_counts[200:264, 300:400],
        "float32": flir_counts.astype(np.float32),
        "uint8": ((flir_counts - flir_counts.min()) * 2).astype(np.uint8),
    }
    mean, mx = _parity(frames[case])
    assert mean <= MEAN_TOL and mx <= MAX_TOL, (case, mean, mx)


@pytest.mark.parametrize("seed,shape", [(0, (512, 640)), (1, (300, 410)), (2, (257, 333))])
def test_parity_synthetic_frames(seed, shape):
    scene = SyntheticThermal(SyntheticSceneOptions(height=shape[0], width=shape[1], object_radius=25, seed=seed))
    frame = scene.frame(seed, (shape[1] * 0.3, shape[0] * 0.6))
    mean, mx = _parity(frame)
    assert mean <= MEAN_TOL and mx <= MAX_TOL, (shape, mean, mx)


def test_parity_other_percentiles(flir_counts):
    out = Normalizer(NormalizeOptions(low=5, high=95))(flir_counts)
    d = np.abs(out - cart_reference(flir_counts, 5, 95))
    assert d.mean() <= MEAN_TOL and d.max() <= MAX_TOL


@pytest.mark.parametrize("clip_limit,nbins", [(0.03, 128), (0.005, 256), (0.0, 64)])
def test_parity_other_clahe_settings(flir_counts, clip_limit, nbins):
    from skimage.exposure import equalize_adapthist

    lo, hi = np.percentile(flir_counts, [1, 99])
    ref = equalize_adapthist(np.clip((flir_counts - lo) / (hi - lo), 0, 1), clip_limit=clip_limit, nbins=nbins)
    out = Normalizer(NormalizeOptions(clip_limit=clip_limit, nbins=nbins))(flir_counts)
    d = np.abs(out - ref)
    assert d.mean() <= 1e-3 and d.max() <= 1e-3, (d.mean(), d.max())


def test_linear_mode_matches_formula(flir_counts):
    lo, hi = np.percentile(flir_counts, [1, 99])
    ref = np.clip((flir_counts - lo) / (hi - lo), 0, 1)
    out = normalize(flir_counts, clahe=False)
    assert out.dtype == np.float32
    assert np.abs(out - ref).max() < 1e-6


# ----------------------------------------------------------------------------- defined behaviour
@pytest.mark.parametrize("dtype", [np.uint16, np.uint8, np.float32, np.float64])
@pytest.mark.parametrize("clahe", [True, False])
def test_constant_frame_is_half(dtype, clahe):
    frame = np.full((64, 80), 100, dtype=dtype)
    out = normalize(frame, clahe=clahe)
    assert out.dtype == np.float32 and np.all(out == 0.5)


def test_near_constant_frame_has_no_blow_up():
    frame = np.full((64, 80), 3000, np.uint16)
    frame[10, 10] = 3001  # one hot pixel: p1 == p99 == 3000
    out = normalize(frame)
    assert np.isfinite(out).all() and out.min() >= 0 and out.max() <= 1
    assert out[0, 0] == 0.5 and out[10, 10] == 1.0


def test_nan_pixels_come_out_dark_and_finite():
    rng = np.random.default_rng(5)
    frame = rng.normal(30.0, 2.0, (64, 80)).astype(np.float32)
    frame[5:9, 5:9] = np.nan
    for clahe in (True, False):
        out = normalize(frame, clahe=clahe)
        assert np.isfinite(out).all() and 0 <= out.min() and out.max() <= 1
    assert np.all(normalize(frame, clahe=False)[5:9, 5:9] == 0.0)
    with pytest.raises(ImageError, match="NaN"):
        normalize(np.full((16, 16), np.nan, np.float32))


@pytest.mark.parametrize("bad,match", [
    (np.zeros((8, 8), np.int32), "dtype"),
    (np.zeros((8, 8), np.int16), "dtype"),
    (np.zeros((8, 8), bool), "dtype"),
    (np.zeros((8, 8, 3), np.uint16), "shape"),
    (np.zeros((8,), np.uint16), "shape"),
    (np.zeros((0, 8), np.uint16), "empty"),
    ([[1, 2], [3, 4]], "numpy array"),
])
def test_bad_frames_raise(bad, match):
    with pytest.raises(ImageError, match=match):
        normalize(bad)


def test_single_channel_3d_accepted(flir_counts):
    assert np.array_equal(normalize(flir_counts[:, :, None]), normalize(flir_counts))


def test_too_small_for_clahe():
    frame = np.arange(35, dtype=np.uint16).reshape(5, 7)
    with pytest.raises(ImageError, match="at least 8x8"):
        normalize(frame)
    assert normalize(frame, clahe=False).shape == (5, 7)


def test_bad_options():
    for kwargs in ({"clip_limit": -0.1}, {"nbins": 1000}, {"tiles_per_dim": 0}, {"min_range": 0},
                   {"low": 50, "high": 40}):
        with pytest.raises(ImageError):
            NormalizeOptions(**kwargs)


def test_rescale_requires_ordered_bounds():
    with pytest.raises(ImageError, match="hi > lo"):
        rescale(np.zeros((4, 4), np.uint16), 5.0, 5.0)


def test_to_uint8():
    img = np.array([[0.0, 0.5, 1.0, 2.0, -1.0, np.nan]], np.float32)
    assert to_uint8(img).tolist() == [[0, 128, 255, 255, 0, 0]]
    with pytest.raises(ImageError):
        to_uint8(np.zeros((2, 2), np.uint16))

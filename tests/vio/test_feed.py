"""Estimator feed rules (:mod:`rgbt.vio.feed`): IMU windows in integer ns, rate selection, normalization modes."""

from __future__ import annotations

import numpy as np
import pytest

from rgbt.errors import EvaluationError, ImageError
from rgbt.vio.feed import ImuData, ImuWindow, RateSelector, ThermalToMono8, prepare_feed


def _imu(n: int = 1000, t0: int = 1_700_000_000_000_000_000, step: int = 5_000_000) -> ImuData:
    t = t0 + np.arange(n, dtype=np.int64) * step
    return ImuData(t, np.tile([0.1, 0.2, 0.3], (n, 1)), np.tile([0, 0, 9.81], (n, 1)))


def test_imu_window_exact_half_open_intervals_each_sample_once():
    imu = _imu()
    t0 = int(imu.t_ns[0])
    win = ImuWindow(imu)
    frames = t0 + np.arange(1, 100) * 50_000_000  # 20 Hz, exactly on IMU stamps
    sent = []
    prev = t0 - 1
    for tf in frames:
        rows = win.take(int(tf), t0)
        stamps = t0 + np.round(rows[:, 0] * 1e9).astype(np.int64)
        assert np.all(stamps > prev) and np.all(stamps <= tf)  # (t_{k-1}, t_k]
        assert stamps[-1] == tf  # the sample at the frame time belongs to this frame
        sent.extend(stamps.tolist())
        prev = tf
    assert sent == sorted(set(sent))  # strictly increasing, none twice
    assert len(sent) == int((frames[-1] - t0) // 5_000_000) + 1


def test_imu_window_applies_td_and_rejects_going_back():
    imu = _imu()
    t0 = int(imu.t_ns[0])
    win = ImuWindow(imu, td_s=0.010)
    rows = win.take(t0 + 100_000_000, t0)
    assert round(rows[-1, 0] * 1e9) == 110_000_000  # up to t_cam + td on the IMU clock
    with pytest.raises(EvaluationError, match="increase"):
        win.take(t0 + 100_000_000, t0)


def test_imu_data_rejects_duplicate_stamps():
    t = np.array([0, 5, 5, 10], dtype=np.int64)
    with pytest.raises(EvaluationError, match="strictly increasing"):
        ImuData(t, np.zeros((4, 3)), np.zeros((4, 3)))


def test_rate_selector_60_to_20_hz_with_jitter():
    rng = np.random.default_rng(0)
    t = (np.arange(600) * 1e9 / 60 + rng.normal(0, 1e6, 600)).astype(np.int64)
    sel = RateSelector(20.0)
    kept = [x for x in t if sel.keep(int(x))]
    assert len(kept) == 200
    assert np.allclose(np.diff(kept), 50e6, atol=5e6)


def test_percentile_and_fixed_modes():
    rng = np.random.default_rng(0)
    frame = rng.integers(7000, 9000, (64, 80)).astype(np.uint16)
    img, frozen = ThermalToMono8("percentile")(frame, 0)
    assert img.dtype == np.uint8 and not frozen
    lo, hi = np.percentile(frame, [5, 95])
    assert abs(np.mean(frame <= lo) - np.mean(img == 0)) < 0.01
    fixed = ThermalToMono8("fixed")
    a, _ = fixed(frame, 0)
    b, _ = fixed((frame + 200).astype(np.uint16), 1)  # warmer scene: fixed mode does not rescale
    assert b.mean() > a.mean() + 10
    with pytest.raises(ImageError):
        ThermalToMono8("nope")


def test_temporal_mode_drops_frozen_frames():
    rng = np.random.default_rng(1)
    frames = []
    last = None
    for k in range(60):  # 60 Hz, a freeze (FFC) at frames 20..35
        t = 1_000_000_000 + k * 16_666_667
        if 20 <= k < 36 and last is not None:
            frames.append((t, last, True))
            continue
        last = rng.integers(7000, 9000, (64, 80)).astype(np.uint16)
        frames.append((t, last, False))
    feed = list(prepare_feed(iter(frames), "temporal", rate_hz=20.0))
    assert len(feed) == 20
    frozen = [f for f in feed if f.frozen]
    assert frozen and all(f.ffc_truth for f in frozen)
    # the paper's per-frame mode lets the frozen frames through with fresh stamps
    assert not any(f.frozen for f in prepare_feed(iter(frames), "percentile", rate_hz=20.0))


def test_feed_bridge_streaming_counters():
    rng = np.random.default_rng(2)
    from rgbt.vio.feed import FeedBridge

    bridge = FeedBridge("percentile", rate_hz=20.0)
    out = [bridge.image(k * 16_666_667, rng.integers(7000, 9000, (32, 40)).astype(np.uint16)) for k in range(60)]
    kept = [f for f in out if f is not None]
    assert len(kept) == 20 and all(f.image.dtype == np.uint8 for f in kept)
    assert bridge.counters == {"in": 60, "thinned": 40, "frozen_dropped": 0, "out": 20}

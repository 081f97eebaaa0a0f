"""Temporal (VIO) mode: no brightness flicker with a moving hot object, FFC / frozen-frame reports."""

from __future__ import annotations

import numpy as np
import pytest

from rgbt.errors import ImageError
from rgbt.image.normalize import NormalizeOptions, Normalizer, TemporalNormalizer, TemporalOptions
from rgbt.image.synthetic import SyntheticSceneOptions, moving_object_sequence

SCENE = SyntheticSceneOptions(height=256, width=320, object_radius=45, seed=4)  # object ~7 % of the view


@pytest.fixture(scope="module")
def sequence():
    # SYNTHETIC: 2 s at 60 Hz, a hot object crossing; frames 50-57 frozen (FFC-like repeats)
    return moving_object_sequence(120, SCENE, rate_hz=60.0, frozen=tuple(range(50, 58)))


def _mean_jumps(means):
    return np.abs(np.diff(np.asarray(means, dtype=np.float64)))


def test_no_flicker_with_moving_hot_object(sequence):
    temporal = TemporalNormalizer()
    per_frame = Normalizer(NormalizeOptions(low=5, high=95, clahe=False, min_range=16))
    t_means, p_means = [], []
    for t_ns, frame, _ in sequence:
        t_means.append(temporal(frame, t_ns).image.mean())
        p_means.append(per_frame(frame).mean())
    jump_t, jump_p = _mean_jumps(t_means).max(), _mean_jumps(p_means).max()
    print(f"max frame-to-frame mean-brightness jump: temporal {jump_t:.4f}, per-frame {jump_p:.4f}")
    assert jump_p > 0.05            # the per-frame bounds do flicker on this sequence
    assert jump_t < 0.25 * jump_p   # the smoothed bounds remove most of it
    assert jump_t < 0.03


def test_frozen_frames_reported_and_bounds_held(sequence):
    temporal = TemporalNormalizer()
    outs = [temporal(frame, t_ns) for t_ns, frame, _ in sequence]
    truth = [z for _, _, z in sequence]
    assert [o.frozen for o in outs] == truth
    assert outs[0].mad is None and outs[1].mad > 1.0
    assert outs[57].frozen_run == 8 and outs[58].frozen_run == 0
    for i in range(50, 58):
        assert outs[i].bounds == outs[49].bounds
        assert outs[i].mad == 0.0


def test_near_identical_frame_counts_as_frozen():
    rng = np.random.default_rng(0)
    a = (1000 + rng.normal(0, 20, (64, 64))).astype(np.uint16)
    b = a.copy()
    b[0, :10] += 1  # a few counts of difference (mad << 0.5)
    temporal = TemporalNormalizer()
    temporal(a, 0)
    assert temporal(b, 16_000_000).frozen
    c = (a.astype(np.int32) + rng.integers(-5, 6, a.shape)).clip(0).astype(np.uint16)
    assert not temporal(c, 33_000_000).frozen


def test_driver_ffc_flag_holds_bounds():
    rng = np.random.default_rng(1)
    a = (1000 + rng.normal(0, 20, (64, 64))).astype(np.uint16)
    b = a + 300  # a real change, but the driver says the frame is an FFC frame
    temporal = TemporalNormalizer()
    first = temporal(a, 0)
    out = temporal(b, 16_000_000, ffc=True)
    assert out.frozen and out.bounds == first.bounds and out.mad > 100


def test_smoothing_follows_time_constant():
    a = np.tile(np.arange(0, 1000, 10, dtype=np.uint16), (16, 1))
    b = a + 500
    temporal = TemporalNormalizer(TemporalOptions(tau_s=1.0))
    r0 = temporal(a, 0)
    r1 = temporal(b, 1_000_000_000)  # one tau later: 1 - e^-1 of the way
    expected = r0.bounds[0] + (1 - np.exp(-1.0)) * (r1.raw_bounds[0] - r0.bounds[0])
    assert r1.bounds[0] == pytest.approx(expected)
    snap = TemporalNormalizer(TemporalOptions(tau_s=0.0))
    snap(a, 0)
    assert snap(b, 1).bounds == snap._normalizer.bounds(b)


def test_constant_frames_give_half_and_no_error():
    temporal = TemporalNormalizer()
    for i in range(3):
        out = temporal(np.full((32, 32), 7000, np.uint16), i * 10)
        assert out.flat and np.all(out.image == 0.5)
    assert out.frozen


def test_bad_stamps_and_shapes():
    temporal = TemporalNormalizer()
    frame = np.zeros((32, 32), np.uint16)
    temporal(frame, 100)
    with pytest.raises(ImageError, match="increasing"):
        temporal(frame, 100)
    with pytest.raises(ImageError, match="integer"):
        temporal(frame, 200.0)
    with pytest.raises(ImageError, match="shape changed"):
        temporal(np.zeros((16, 32), np.uint16), 300)
    with pytest.raises(ImageError, match="dtype changed"):
        temporal(np.zeros((32, 32), np.uint8), 300)
    temporal.reset()
    assert temporal(np.zeros((16, 32), np.uint16), 50).bounds is not None
    with pytest.raises(ImageError):
        TemporalOptions(tau_s=-1)
    with pytest.raises(ImageError):
        TemporalOptions(low=95, high=5)

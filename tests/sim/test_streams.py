"""Streams of the simulated stack: timing, trigger counts, FFC, drops, determinism, night inversion."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from rgbt.sim import SimOptions, SimStack
from rgbt.geo import lla_to_enu
from rgbt.sim.world import LAND_CLASSES, WATER


def _by_kind(samples) -> dict[str, list]:
    out = defaultdict(list)
    for s in samples:
        out[s.kind].append(s)
    return out


@pytest.fixture(scope="module")
def clip(duck_tum: Path) -> tuple[SimStack, dict[str, list]]:
    """2 s over the Duck trajectory with an FFC at 0.8 s and many drops."""
    sim = SimStack(SimOptions(trajectory=str(duck_tum), duration_s=2.0, start_s=12.0, seed=5, world_seed=0, ffc_first_s=0.8,
                              drop_prob=0.05, lead_in_s=0.5, lead_out_s=0.5))
    return sim, _by_kind(sim.samples())


@pytest.mark.slow
def test_rates_and_order(clip) -> None:
    sim, by = clip
    counts = {k: len(v) for k, v in by.items()}
    assert counts["thermal"] == 120 and counts["color"] == 60 and counts["mono"] == 60
    assert counts["imu"] == 400 and counts["trigger"] == 120
    assert counts["gnss"] == 10 and counts["global"] == 10 and counts["pose"] == 40
    everything = sorted((s for v in by.values() for s in v), key=lambda s: s.t_ns)
    assert everything[0].t_ns >= sim.t_start_ns and everything[-1].t_ns < sim.t_end_ns
    for kind, samples in by.items():
        t = np.array([s.t_ns for s in samples])
        host = np.array([s.t_host_ns for s in samples])
        assert np.all(np.diff(t) > 0), kind
        assert np.all(host > t), kind  # nothing arrives before it happened
        assert np.all(np.diff(host) > 0), kind
    th_lat = np.array([s.t_host_ns - s.t_ns for s in by["thermal"]]) * 1e-6
    assert 8.0 < np.median(th_lat) < 16.0 and 1.5 < th_lat.std() < 4.5  # 12 ms + 3 ms jitter


@pytest.mark.slow
def test_trigger_counts_consistent(clip) -> None:
    sim, by = clip
    pulses = {s.seq: s.t_ns for s in by["trigger"]}
    assert list(pulses) == list(range(1, 121))
    for s in by["thermal"]:
        assert pulses[s.seq + 1] == s.t_ns  # frame n <- pulse count n + 1 (divider 1)
    for kind in ("color", "mono"):
        for s in by[kind]:
            assert pulses[2 * s.seq + 1] == s.t_ns  # frame n <- pulse 2n (divider 2)
    for s in by["imu"]:
        d = s.data
        assert s.seq == d.syncin_count
        assert pulses[d.syncin_count] + d.t_since_sync_ns == s.t_ns
        assert 0 <= d.t_since_sync_ns < 1e9 / 60
    # every thermal frame: the first IMU sample after it reports that frame's pulse
    imu_t = np.array([s.t_ns for s in by["imu"]])
    for s in by["thermal"][:-1]:
        j = int(np.searchsorted(imu_t, s.t_ns, side="right"))
        assert by["imu"][j].data.syncin_count == s.seq + 1
    # colour and thermal frames of the same pulse share one stamp
    th = {s.t_ns: s.seq for s in by["thermal"]}
    assert all(th[s.t_ns] == 2 * s.seq for s in by["color"])


@pytest.mark.slow
def test_ffc_freezes_frames(clip) -> None:
    sim, by = clip
    frames = by["thermal"]
    ffc = [s for s in frames if s.ffc]
    assert 28 <= len(ffc) <= 31  # 0.5 s at 60 Hz
    first = frames.index(ffc[0])
    before = frames[first - 1]
    assert not before.ffc
    for s in ffc:
        assert np.array_equal(s.data, before.data) and np.array_equal(s.label, before.label)
    after = frames[first + len(ffc)]
    assert not after.ffc and not np.array_equal(after.data, before.data)
    assert not any(s.ffc for s in by["color"])


def test_drops_and_state(clip) -> None:
    sim, by = clip
    drops = sum(s.dropped for k in ("thermal", "color", "mono") for s in by[k])
    assert 3 <= drops <= 40  # 5 % of 240 frames
    armed = [(s.t_ns, s.data.armed) for s in by["state"]]
    assert armed[0][1] is False and armed[-1][1] is False
    assert any(a for _, a in armed)
    assert any(t == sim.t_arm_ns and a for t, a in armed)
    assert any(t == sim.t_disarm_ns and not a for t, a in armed)


def test_gnss_pose_noise_free_match_truth(duck_tum: Path) -> None:
    sim = SimStack(SimOptions(trajectory=str(duck_tum), duration_s=1.0, start_s=10.0, noise=False, cameras=[]))
    by = _by_kind(sim.samples(["gnss", "global", "pose"]))
    for kind in ("gnss", "global"):
        t = np.array([s.t_ns for s in by[kind]])
        lla = np.array([[s.data.lat, s.data.lon, s.data.alt] for s in by[kind]])
        enu = lla_to_enu(lla, sim.origin_lla)
        truth = sim.trajectory.position(sim.trajectory.tau(t))
        assert np.abs(enu - truth).max() < 1e-6
        assert abs(lla[0, 0] - 36.18) < 0.01  # Duck, NC
    for s in by["pose"]:
        T = sim.trajectory.T_world_vehicle(sim.trajectory.tau(s.t_ns))[0]
        assert np.allclose(s.data.T_world_body, T, atol=1e-12)


@pytest.mark.slow
def test_deterministic_for_a_seed(duck_tum: Path) -> None:
    def run(seed: int, kinds=None) -> list:
        sim = SimStack(SimOptions(trajectory=str(duck_tum), duration_s=0.4, start_s=3.0, seed=seed, world_seed=0,
                                  drop_prob=0.1))
        return list(sim.samples(kinds))

    a, b, c = run(1), run(1), run(2)
    assert [(s.kind, s.t_ns, s.t_host_ns, s.seq, s.dropped) for s in a] == \
           [(s.kind, s.t_ns, s.t_host_ns, s.seq, s.dropped) for s in b]
    for x, y in zip(a, b):
        if isinstance(x.data, np.ndarray):
            assert np.array_equal(x.data, y.data) and np.array_equal(x.label, y.label)
        elif x.kind == "imu":
            assert np.array_equal(x.data.gyro_rad_s, y.data.gyro_rad_s)
            assert np.array_equal(x.data.accel_m_s2, y.data.accel_m_s2)
    th_a = [s.data for s in a if s.kind == "thermal"]
    th_c = [s.data for s in c if s.kind == "thermal"]
    assert not np.array_equal(th_a[0], th_c[0])
    # one stream does not depend on which others are selected
    only = [s for s in run(1, ["thermal"])]
    assert all(np.array_equal(x.data, y.data) for x, y in zip(only, th_a))
    assert len(only) == len(th_a)


@pytest.mark.slow
def test_night_inversion(duck_tum: Path) -> None:
    """By day water is colder than land, at night warmer (in the rendered thermal counts)."""
    means = {}
    for night in (False, True):
        sim = SimStack(SimOptions(trajectory=str(duck_tum), duration_s=0.2, start_s=12.0, night=night,
                                  cameras=["thermal", "color"], drop_prob=0.0))
        frames = _by_kind(sim.samples(["thermal", "color"]))
        th = frames["thermal"][-1]
        water = th.label == WATER
        land = np.isin(th.label, LAND_CLASSES)
        assert water.sum() > 1000 and land.sum() > 1000
        means[night] = (th.data[water].mean(), th.data[land].mean())
        # colour is dark at night
        means[(night, "rgb")] = frames["color"][-1].data.mean()
    assert means[False][0] < means[False][1] - 500  # > 5 K colder by day
    assert means[True][0] > means[True][1] + 300  # > 3 K warmer at night
    assert means[(True, "rgb")] < 0.2 * means[(False, "rgb")]


def test_threaded_rendering_gives_the_same_bytes(duck_tum: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rgbt.sim import simstack

    def frames() -> list:
        sim = SimStack(SimOptions(trajectory=str(duck_tum), duration_s=0.3, start_s=6.0, seed=2, world_seed=0,
                                  ffc_first_s=0.1, ffc_duration_s=0.1))
        return [(s.kind, s.seq, s.ffc, s.data.tobytes(), s.label.tobytes())
                for s in sim.samples(["thermal", "color"])]

    monkeypatch.setattr(simstack, "RENDER_AHEAD", 0)
    inline = frames()
    monkeypatch.setattr(simstack, "RENDER_AHEAD", 2)
    threaded = frames()
    assert any(f[2] for f in inline)  # an FFC inside the clip
    assert inline == threaded

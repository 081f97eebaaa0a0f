"""Live mode: samples handed over in host-arrival order at the requested pace."""

from __future__ import annotations

import json
import typing

import numpy as np
import pytest

from rgbt.sim import SimOptions, SimStack
from rgbt.sim.live import host_order, paced, preload


def test_paced_host_order_and_timing() -> None:
    sim = SimStack(SimOptions(trajectory="hover", duration_s=0.3, cameras=[], drop_prob=0.0))
    everything = list(sim.samples())
    ordered = list(host_order(iter(everything)))
    assert sorted(id(s) for s in ordered) == sorted(id(s) for s in everything)  # nothing lost
    host = [s.t_host_ns for s in ordered]
    assert host == sorted(host)
    assert host != [s.t_host_ns for s in everything]  # GNSS latency really reorders

    now = [0]
    slept = []

    def clock() -> int:
        return now[0]

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += int(round(seconds * 1e9))

    out = [s for s, _ in paced(iter(everything), speed=2.0, clock=clock, sleep=sleep)]
    assert [s.t_host_ns for s in out] == host
    span_s = (host[-1] - host[0]) * 1e-9
    assert abs(now[0] * 1e-9 - span_s / 2.0) < 1e-6  # half the host-time span at speed 2
    # one sleep per later host stamp, half its gap to the previous one (the fake clock never lags)
    gaps_s = [g * 1e-9 for g in np.diff(host) if g > 0]
    assert slept == pytest.approx([g / 2.0 for g in gaps_s], abs=1e-9)


@pytest.mark.slow
def test_paced_skips_dropped_frames() -> None:
    sim = SimStack(SimOptions(trajectory="hover", duration_s=0.2, cameras=["thermal"], drop_prob=0.3))
    frames = list(sim.samples(["thermal"]))
    assert any(s.dropped for s in frames)
    out = [s for s, _ in paced(iter(frames), speed=1e6)]
    assert [s.seq for s in out] == [s.seq for s in frames if not s.dropped]
    assert all(isinstance(s.data, np.ndarray) for s in out)


def test_paced_due_times_and_preload() -> None:
    sim = SimStack(SimOptions(trajectory="hover", duration_s=0.3, cameras=[], drop_prob=0.0))
    everything = list(sim.samples())
    pulled = []
    it, n = preload((pulled.append(s) or s for s in everything), 0.1)
    assert n == len(pulled) and 0 < n < len(everything)  # ~0.1 s generated ahead, not more
    assert pulled[-1].t_ns - pulled[0].t_ns >= 0.1e9 > pulled[-2].t_ns - pulled[0].t_ns
    assert list(it) == everything
    now = [5_000]
    out = list(paced(iter(everything), clock=lambda: now[0], sleep=lambda s: None, start_ns=1_000))
    first = out[0][0]
    # due = start + host time since the first sample: a constant offset from host time at speed 1
    assert out[0][1] == 1_000 and all(due - s.t_host_ns == 1_000 - first.t_host_ns for s, due in out)


@pytest.mark.slow
def test_preload_drops_the_lazy_labels_it_holds_unless_asked() -> None:
    sim = SimStack(SimOptions(trajectory="hover", duration_s=0.2, cameras=["thermal"], drop_prob=0.0))
    it, n = preload(sim.samples(), 0.1)
    held = list(it)[:n]
    frames = [s for s in held if s.kind == "thermal"]
    assert frames and all(s.label is None for s in frames)  # the renderer's intermediates are not kept
    it, n = preload(sim.samples(), 0.1, keep_labels=True)
    frames = [s for s in list(it)[:n] if s.kind == "thermal"]
    assert frames and all(s.label is not None and s.label.shape == s.data.shape[:2] for s in frames)


def test_after_a_stall_only_what_the_device_buffers_hold_is_handed_over() -> None:
    from rgbt.sim.live import DeviceBuffer

    ms = 1_000_000
    device = DeviceBuffer(0.3, now_ns=0)
    # samples due every 5 ms; the loop runs on time for 1 s
    assert not any(device.overflowed(t, t) for t in range(0, 1000 * ms, 5 * ms))
    # a 3 s stall (SIGSTOP): at 4.0 s the samples due from 1.0 s on are handed over as fast as possible
    now = 4000 * ms
    kept = [due for due in range(1000 * ms, 4200 * ms, 5 * ms) if not device.overflowed(now + (due - 1000 * ms) // 50, due)]
    assert kept and min(kept) >= now - 300 * ms  # what was older than the 0.3 s buffer is gone
    assert kept == list(range(kept[0], 4200 * ms, 5 * ms))  # from there on nothing more is lost


def test_a_loop_that_is_only_slow_loses_nothing_and_hold_zero_never_drops() -> None:
    from rgbt.sim.live import DeviceBuffer

    ms = 1_000_000
    slow = DeviceBuffer(0.3, now_ns=0)
    # every step 10 ms of wall for 5 ms of samples: 2.5 s late after 5 s, never a gap of 0.3 s
    assert not any(slow.overflowed(2 * t, t) for t in range(0, 5000 * ms, 5 * ms))
    never = DeviceBuffer(0.0, now_ns=0)
    assert not never.overflowed(10_000 * ms, 0) and not never.overflowed(10_001 * ms, 1 * ms)


def test_the_first_player_writes_the_schedule_anchor_and_the_others_read_it(tmp_path) -> None:
    from rgbt.errors import ConfigError
    from rgbt.graph.options import SimKind
    from rgbt.sim.live import ScheduleAnchor, schedule_anchor
    from rgbt.sim.simstack import KINDS

    path = str(tmp_path / "anchor.json")
    first, written = schedule_anchor(path, ScheduleAnchor(5_000_000_000, 100))
    assert written and first == ScheduleAnchor(5_000_000_000, 100)
    assert json.loads((tmp_path / "anchor.json").read_text()) == {"t0_wall_ns": 5_000_000_000, "t0_sim_ns": 100}
    again, written = schedule_anchor(path, ScheduleAnchor(9_000_000_000, 7))  # a restart: the first one's timeline
    assert not written and again == first and again.due_ns(1_100) == 5_000_001_000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["anchor.json"]  # no temporary file left
    (tmp_path / "anchor.json").write_text('{"t0_wall_ns": "soon"}')
    with pytest.raises(ConfigError, match="t0_sim_ns"):
        schedule_anchor(path, first)
    assert typing.get_args(SimKind) == KINDS  # VirtualStackOptions.kinds takes exactly the simulator's kinds


def test_catch_up_skips_what_is_overdue_until_one_is_on_time() -> None:
    from rgbt.sim.live import CatchUp

    catch_up = CatchUp(0.1)
    now = 10_000_000_000
    assert [catch_up.skip(now, due) for due in (now - 900_000_000, now - 150_000_000, now - 50_000_000,
                                                now - 500_000_000)] == [True, True, False, False]

"""Nearest-stamp matching (``rgbt.timematch``) and the graph bench's host-arrival latency join built on it."""

from __future__ import annotations

import numpy as np

from rgbt.bench.graph import since_host
from rgbt.timematch import nearest_index, nearest_within


def test_nearest_index_ties_go_to_the_earlier_stamp_and_ends_clamp() -> None:
    stamps = np.array([10, 20, 30])
    assert nearest_index(stamps, np.array([0, 14, 15, 16, 29, 99])).tolist() == [0, 0, 0, 1, 2, 2]
    assert nearest_index(np.array([5]), np.array([0, 7])).tolist() == [0, 0]


def test_nearest_within_a_tolerance() -> None:
    t0 = 1_700_000_000_000_000_000  # a real epoch in ns: no float rounding
    stamps = np.array([t0 + 10, t0 + 20, t0 + 30], dtype=np.int64)
    assert [nearest_within(stamps, t0 + q, 5) for q in (4, 15, 16, 26, 35, 36)] == [None, 0, 1, 2, 2, None]
    assert nearest_within(np.array([], dtype=np.int64), t0, 10**9) is None
    assert nearest_within(stamps[:1], t0, 10) == 0


def test_host_latency_joins_recorded_stamps_to_the_frames_host_arrival() -> None:
    ms = 1_000_000
    sources = {"frames": {"/thermal": {"t_true_ns": [1000 * ms, 1016 * ms], "t_host_ns": [1012 * ms, 1030 * ms]},
                          "/color": {"t_true_ns": [1000 * ms], "t_host_ns": [1014 * ms]},
                          "/mono": {"t_true_ns": [1000 * ms]}},  # no host arrivals (an older manifest)
               "imu_t_true_ns": [1000 * ms, 1005 * ms], "imu_t_host_ns": [1001 * ms, 1006 * ms]}
    arrivals = {"/thermal": [[1000 * ms + 10, 1020 * ms], [1016 * ms, 1040 * ms], [1500 * ms, 1600 * ms]],
                "/imu": [[1005 * ms, 1008 * ms]],
                "/rgbt/seg/class_ids": [[1000 * ms, 1050 * ms]],  # input complete when the colour frame came
                "/mono": [[1000 * ms, 1001 * ms]], "/gps/fix": [[1, 2]]}
    out = since_host(sources, arrivals, ["/thermal", "/color", "/mono", "/imu"])
    assert set(out) == {"/thermal", "/imu", "/rgbt/seg/class_ids"}
    assert out["/thermal"]["matched"] == 2  # the stamp 0.5 s away from any frame is not matched
    assert out["/thermal"]["p50_ms"] == 9.0  # 8 and 10 ms
    assert out["/imu"]["p99_ms"] == 2.0
    assert out["/rgbt/seg/class_ids"]["p50_ms"] == 36.0  # 1050 - max(1012, 1014)

"""SegPipeline: newest frame first, overlap of preprocessing and inference, no starvation, errors.

Real stage, real ONNX Runtime model; the only thing the tests control is *when* steps run (an
event gate around ``infer`` or ``prepare``), so the outcomes do not depend on machine speed.
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

from rgbt.paths import ENGINES_DIR
from rgbt.seg.pipeline import SegPipeline, lower_thread_priority
from rgbt.seg.stage import SegmentationStage, SegStageOptions
from rgbt.seg.synthetic import scene
from helpers import wait_until

MODEL = str(ENGINES_DIR / "sim_thermal_seg.onnx")


@pytest.fixture(scope="module")
def frames():
    return [scene(512, 640, seed=s)[0] for s in range(4)]


@pytest.fixture(scope="module")
def serial(frames):
    st = SegmentationStage(SegStageOptions(MODEL))
    return [st.process(f).class_ids for f in frames]


class _Collect:
    def __init__(self):
        self.items, self.done = [], threading.Condition()

    def __call__(self, t_ns, result):
        with self.done:
            self.items.append((t_ns, result))
            self.done.notify_all()


def test_live_keeps_the_newest_frame(frames, serial):
    st = SegmentationStage(SegStageOptions(MODEL))
    gate, started = threading.Event(), threading.Event()
    infer = st.infer

    def gated(x):
        started.set()
        assert gate.wait(10)
        return infer(x)

    st.infer = gated
    out = _Collect()
    pipe = SegPipeline(st, out)
    pipe.submit(10, frames[0], tag="cam")
    assert started.wait(10)  # frame 0 is being inferred
    for t, f in zip((11, 12, 13), frames[1:]):
        pipe.submit(t, f)  # overtake each other while inference is blocked
    wait_until(lambda: pipe.stats()["queued_raw"] == 0 and pipe.stats()["prep_busy"] == 0
               and pipe.stats()["queued_ready"] == 1, period_s=0.002)
    gate.set()
    pipe.close(drain=True)
    assert [t for t, _ in out.items] == [10, 13]
    assert out.items[0][1].tag == "cam" and out.items[1][1].tag is None
    assert np.array_equal(out.items[0][1].class_ids, serial[0])
    assert np.array_equal(out.items[1][1].class_ids, serial[3])
    stats = pipe.stats()
    assert (stats["submitted"], stats["processed"], stats["dropped_stale"], stats["errors"]) == (4, 2, 2, 0)
    assert out.items[1][1].timing["prepared_by"] == "prep"  # prepared while frame 0 was inferred
    assert out.items[1][1].timing["latency_ms"] >= out.items[1][1].timing["infer_ms"]


def _starve_prep_thread(st):
    """Block every ``prepare`` the prep thread makes until the returned event is set."""
    release = threading.Event()
    prepare = st.prepare

    def gated(frame, buf, rgb=None):
        if threading.current_thread().name == "seg-prep":
            release.wait(30)
        return prepare(frame, buf, rgb)

    st.prepare = gated
    return release


def test_a_starved_prep_thread_does_not_stop_segmentation(frames, serial):
    st = SegmentationStage(SegStageOptions(MODEL))
    release = _starve_prep_thread(st)
    out = _Collect()
    pipe = SegPipeline(st, out, steal_after_ms=30)
    pipe.submit(1, frames[0])
    with out.done:
        assert out.done.wait_for(lambda: out.items, timeout=10)  # prep thread still blocked
    assert out.items[0][1].timing["prepared_by"] == "inference"
    assert np.array_equal(out.items[0][1].class_ids, serial[0])
    release.set()
    pipe.close(drain=True)
    stats = pipe.stats()
    assert (stats["processed"], stats["prepared_inline"], stats["dropped_stale"]) == (1, 1, 0)


def test_lossless_keeps_order_when_the_prep_thread_starves(frames, serial):
    st = SegmentationStage(SegStageOptions(MODEL))
    release = _starve_prep_thread(st)
    out = _Collect()
    pipe = SegPipeline(st, out, lossless=True, steal_after_ms=30)
    for i, f in enumerate(frames):
        pipe.submit(i, f)
    with out.done:
        assert out.done.wait_for(lambda: len(out.items) == len(frames), timeout=20)
    release.set()
    pipe.close(drain=True)
    assert [t for t, _ in out.items] == list(range(len(frames)))
    for (_, r), ref in zip(out.items, serial):
        assert np.array_equal(r.class_ids, ref)
    assert pipe.stats()["processed"] == len(frames)


def test_stream_equals_process_and_overlaps(frames, serial):
    # the default preprocessing thread is SCHED_IDLE (it runs where a core is idle, so on a busy
    # machine the inference thread prepares instead): the overlap itself is tested at normal priority
    st = SegmentationStage(SegStageOptions(MODEL, prep_priority="normal"))
    infer = st.infer

    def slow_infer(x: np.ndarray) -> np.ndarray:  # a model slower than preprocessing: what overlaps
        time.sleep(0.05)  # (with the tiny test model, who prepares depends on the scheduler)
        return infer(x)

    st.infer = slow_infer  # type: ignore[method-assign]
    streamed = list(st.stream(frames * 2))
    assert [r.class_ids.tobytes() for r in streamed] == [a.tobytes() for a in serial * 2]
    # while frame n is inferred, the preprocessing thread prepares frame n + 1
    assert sum(r.timing["prepared_by"] == "prep" for r in streamed) >= len(streamed) // 2


def test_bad_frame_is_counted_and_the_pipeline_keeps_going(frames, serial):
    st = SegmentationStage(SegStageOptions(MODEL))
    out, errors = _Collect(), []
    pipe = SegPipeline(st, out, lossless=True, on_error=lambda t, e: errors.append((t, e)))
    pipe.submit(1, np.zeros((512, 640), np.float32))  # wrong dtype
    pipe.submit(2, frames[1])
    pipe.close(drain=True)
    assert [t for t, _ in errors] == [1] and "uint16" in str(errors[0][1])
    assert [t for t, _ in out.items] == [2] and np.array_equal(out.items[0][1].class_ids, serial[1])
    assert pipe.stats()["errors"] == 1


def test_live_drops_a_frame_that_comes_too_late_and_counts_it(frames, serial):
    """``late_after_periods``: a frame whose inference would start more than a period after the
    stream's quickest recent arrival is not segmented (``dropped_late``); on-time frames are."""
    P, transport = 16_666_667, 5_000_000
    st = SegmentationStage(SegStageOptions(MODEL))
    out = _Collect()
    pipe = SegPipeline(st, out, late_after_periods=1.0)
    try:
        now = time.time_ns()
        for k in range(60, 0, -1):  # a live 60 Hz history up to now
            pipe.gate.arrived(now - k * P - transport, now - k * P)
        late_t = time.time_ns() - transport - 4 * P
        pipe.submit(late_t, frames[0])
        wait_until(lambda: pipe.stats()["dropped_late"] + pipe.stats()["dropped_stale"] == 1, period_s=0.002)
        fresh_t = time.time_ns() - transport
        pipe.submit(fresh_t, frames[1])
        wait_until(lambda: len(out.items) == 1, period_s=0.002)
    finally:
        pipe.close(drain=False)
    stats = pipe.stats()
    assert [t for t, _ in out.items] == [fresh_t] and np.array_equal(out.items[0][1].class_ids, serial[1])
    assert stats["dropped_late"] == 1 and stats["processed"] == 1, stats
    assert stats["wait_p99_ms"] >= 0 and stats["work_p99_ms"] > 0 and stats["arrival_p99_ms"] > 0


def test_lossless_never_drops_late_frames(frames, serial):
    """Offline runs (``stream``) segment every frame, however old its stamp."""
    st = SegmentationStage(SegStageOptions(MODEL))
    out = _Collect()
    pipe = SegPipeline(st, out, lossless=True, late_after_periods=1.0)
    assert not pipe.gate.enabled
    pipe.submit(1, frames[0])
    pipe.close(drain=True)
    assert [t for t, _ in out.items] == [1] and pipe.stats()["dropped_late"] == 0


def test_stream_raises_a_frame_error(frames):
    st = SegmentationStage(SegStageOptions(MODEL))
    with pytest.raises(Exception, match="uint16"):
        list(st.stream([frames[0], np.zeros((4, 4, 3), np.uint16)]))


def test_prep_thread_priority():
    seen = {}

    def probe():
        seen["applied"] = lower_thread_priority("idle")
        seen["policy"] = os.sched_getscheduler(0)

    t = threading.Thread(target=probe)
    t.start()
    t.join()
    assert seen["applied"] == "SCHED_IDLE" and seen["policy"] == os.SCHED_IDLE
    assert os.sched_getscheduler(0) != os.SCHED_IDLE  # only that thread
    with pytest.raises(ValueError, match="prep_priority"):
        SegmentationStage(SegStageOptions(MODEL, prep_priority="realtime"))

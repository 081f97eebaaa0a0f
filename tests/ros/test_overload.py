"""Overload behaviour by design (issue 18 item 2): processing nodes take the newest frame and drop
stale ones with counters; the recorder is lossless within an explicit memory budget and counts
what it had to drop. Nothing here asserts a time: the bounds are structural (one frame waiting at
most, every frame accounted for).

Synthetic data: random mono16 frames (labelled by their stamp) and short String messages.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from rgbt.ros.mailbox import LatestMailbox
from rgbt.graph.options import RecorderOptions
from rgbt.graph.recording import MANIFEST, Recording, plan_buffers


# --- the mailbox alone ---------------------------------------------------------------------------

def test_mailbox_keeps_only_the_newest_and_counts_the_stale() -> None:
    started, release = threading.Event(), threading.Event()
    handled: list[int] = []

    def handle(item: int) -> None:
        handled.append(item)
        started.set()
        release.wait(10)

    box = LatestMailbox(handle, priority="normal")
    try:
        box.submit(1)
        assert started.wait(10)  # the worker holds item 1
        for item in (2, 3, 4):  # arrive while it works: 2 and 3 are stale when 4 arrives
            box.submit(item)
        release.set()
        deadline = time.monotonic() + 10
        while box.counts["processed"] < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        box.close()
    assert handled == [1, 4]
    stats = box.stats()
    assert (stats["submitted"], stats["processed"], stats["dropped_stale"], stats["errors"]) == (4, 2, 2, 0)
    assert stats["priority"] == "normal" and "work_p99_ms" in stats and "wait_p50_ms" in stats


def test_mailbox_counts_errors_and_keeps_going() -> None:
    errors: list[BaseException] = []
    done = threading.Event()

    def handle(item: int) -> None:
        if item == 1:
            raise ValueError("bad frame")
        done.set()

    box = LatestMailbox(handle, priority="low", on_error=errors.append)
    try:
        box.submit(1)
        deadline = time.monotonic() + 10
        while not errors and time.monotonic() < deadline:
            time.sleep(0.01)
        box.submit(2)
        assert done.wait(10)
    finally:
        box.close()
    assert [str(e) for e in errors] == ["bad frame"] and box.counts["errors"] == 1
    assert box.counts["processed"] == 1


def test_mailbox_max_rate_takes_the_newest_once_per_interval() -> None:
    """``max_rate_hz``: after a frame the worker rests until 1 / rate has passed since it started;
    frames arriving meanwhile replace each other (counted stale) and the newest is taken next."""
    starts: list[tuple[int, float]] = []
    box = LatestMailbox(lambda item: starts.append((item, time.monotonic())), priority="normal", max_rate_hz=2.0)
    try:
        box.submit(1)
        deadline = time.monotonic() + 10
        while not starts and time.monotonic() < deadline:
            time.sleep(0.005)
        for item in (2, 3, 4):
            box.submit(item)
        deadline = time.monotonic() + 10
        while len(starts) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        box.max_rate_hz = 0.0  # live change: no limit from the next frame on
        box.submit(5)
        deadline = time.monotonic() + 10
        while len(starts) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        box.close()
    assert [item for item, _ in starts] == [1, 4, 5]
    assert starts[1][1] - starts[0][1] >= 0.5  # not before 1 / max_rate_hz
    stats = box.stats()
    assert (stats["submitted"], stats["processed"], stats["dropped_stale"]) == (5, 3, 2)



def test_mailbox_max_rate_takes_frames_on_the_streams_own_time() -> None:
    """With stamps, ``max_rate_hz`` picks the frames by stamp (10 Hz of a 30 Hz stream: every third,
    within half a frame period), each taken as it comes instead of after a rest; the frames in
    between are dropped as stale without replacing a due one; a missing due frame lets the next
    one through, and a stamp going back (a replay restarted) starts again."""
    period = 33_333_333
    taken: list[int] = []
    done = threading.Semaphore(0)

    def handle(item: int) -> None:
        taken.append(item)
        done.release()

    box = LatestMailbox(handle, priority="normal", max_rate_hz=10.0)
    try:
        for k in [0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 1000, 1001, 1003]:  # 6 lost; 1000: a jump back in time
            box.submit(k, 10 * period * (k < 1000) + k % 1000 * period)
            if k in (0, 3, 7, 10, 1000, 1003):  # due: wait until the worker took it
                assert done.acquire(timeout=10)
    finally:
        box.close()
    assert taken == [0, 3, 7, 10, 1000, 1003]
    assert box.counts["dropped_stale"] == 7 and box.counts["submitted"] == 13


# --- the recorder's memory budget ----------------------------------------------------------------

class _SlowWriter:
    """A bag writer stand-in whose writes wait for ``release`` (a disk that stalls); records what it got."""

    def __init__(self, path: Path, **_kw) -> None:  # type: ignore[no-untyped-def]
        self.path, self.written, self.release = Path(path), [], threading.Event()
        _SlowWriter.last = self

    def add_topic(self, *a) -> None:  # type: ignore[no-untyped-def]
        pass

    def write(self, topic: str, t_ns: int, raw: bytes) -> None:
        self.release.wait(10)
        self.written.append((topic, t_ns, raw))

    def close(self) -> None:
        self.release.set()


def test_recorder_budget_drops_are_counted_never_silent(tmp_path: Path) -> None:
    from rgbt.stamps import cdr_with_stamp

    opts = RecorderOptions(out_dir=str(tmp_path / "bags"), min_free_mb=1, start="manual")
    rec = Recording(opts, log=lambda m: None, writer_factory=_SlowWriter)
    rec.add_topic("/img", "sensor_msgs/msg/Image")
    raw = bytes(4) + bytes(1000)  # CDR header + a stamp + payload: 1004 bytes
    rec.writer_budget_bytes = 10 * len(raw) + 10  # the writer queue holds 10 of them
    rec.start("manual")
    sent = 40
    for i in range(sent):  # the disk stalls: the first is being written, then 10 queue, the rest is over budget
        rec.on_message("/img", cdr_with_stamp(raw, i), i)
    writer = _SlowWriter.last
    writer.release.set()
    rec.stop("test")
    manifest = json.loads((Path(rec.bags[0]) / MANIFEST).read_text())
    topic = manifest["topics"]["/img"]
    written = len(writer.written)
    assert topic["count"] == written and 10 <= written <= 11
    assert topic["dropped_budget"] == sent - written == topic["drops"]  # every message accounted for
    assert rec.topic_stats["/img"].count == sent


def test_recorder_budget_plan_is_sized_from_the_stack() -> None:
    from rgbt.graph.recording import stack_message_bytes, stack_rates
    from rgbt.stack import load_stack

    stack = load_stack()
    rates, sizes = stack_rates(stack), stack_message_bytes(stack)
    plan = plan_buffers(RecorderOptions(buffer_s=4.0, dds_window_s=1.0), rates, sizes)
    data_rate = sum(rates[t] * sizes[t] for t in rates)
    assert plan.budget_bytes == int(4.0 * data_rate)
    thermal = stack.cameras["thermal"]
    assert sizes[thermal.topic] == thermal.width * thermal.height * 2 + 100
    assert plan.depths[thermal.topic] == int(thermal.rate_hz)  # one second of each stream in the reader queue
    reserve = sum(plan.depths[t] * sizes[t] for t in plan.depths)
    assert plan.writer_bytes == plan.budget_bytes - reserve
    assert plan.budget_bytes < 600e6  # a few seconds of the stack, not the ~0.9 GB of depth-300 queues
    default = plan_buffers(RecorderOptions(), rates, sizes)  # 8 s of the stack, 3 s of it in reader queues
    assert default.budget_bytes == int(8.0 * data_rate) and default.budget_bytes < 1e9
    assert default.depths[thermal.topic] == 3 * int(thermal.rate_hz)
    # a before-lock topic carries its stack stream before the sync locks: the same depth, counted once
    from rgbt.graph.recording import before_lock_streams

    same = before_lock_streams(stack)
    with_before = plan_buffers(RecorderOptions(), rates, sizes, same)
    assert len(same) == len(stack.cameras) + 1
    assert all(with_before.depths[t] == default.depths[of] for t, of in same.items())
    assert (with_before.writer_bytes, with_before.budget_bytes) == (default.writer_bytes, default.budget_bytes)
    # a durable stream's queue also holds its publisher's retained history (a take-over receives it at
    # once, beside the live samples): the budget grows by it, the writer queue keeps its share
    durable = {thermal.topic, stack.imu.topic}
    taking = plan_buffers(RecorderOptions(durable_history_s=2.0), rates, sizes, same, durable)
    assert taking.depths[thermal.topic] == 5 * int(thermal.rate_hz)
    assert taking.depths[stack.imu.topic] == 5 * int(stack.imu.rate_hz)
    assert taking.depths[stack.cameras["color"].topic] == default.depths[stack.cameras["color"].topic]
    assert all(taking.depths[t] == default.depths[of] for t, of in same.items())  # before-lock: volatile
    history = 2 * (thermal.rate_hz * sizes[thermal.topic] + stack.imu.rate_hz * sizes[stack.imu.topic])
    assert taking.budget_bytes == default.budget_bytes + int(history)
    assert taking.writer_bytes == default.writer_bytes
    explicit = plan_buffers(RecorderOptions(memory_budget_mb=50), rates, sizes)
    assert explicit.budget_bytes == 50_000_000
    assert explicit.writer_bytes == 2 * max(sizes.values())  # the reader queues take it all: a floor


# --- a slow consumer in its own process ------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.ros
def test_slow_preprocess_drops_stale_frames_and_counts_them(ros_env: dict) -> None:
    """A burst of full-size thermal frames much faster than the preprocess node can normalize them:
    it processes the newest, drops the stale ones with counts, and the last frame always comes out
    (no queue grows behind it)."""
    from sensor_msgs.msg import Image

    from helpers import spawn_nodes, stop_nodes, watch_diagnostics
    from rgbt.image.codec import cdr_to_image, image_to_cdr
    from rgbt.ros.qos import qos_profile
    from rgbt.ros.spin import BackgroundNode

    proc = spawn_nodes("thermal_preprocess:thermal_preprocess",
                       params=["input_topic:=/t/thermal", "output_prefix:=/t/out", "diagnostics_period_s:=0.2",
                               "input_qos:=reliable", "input_depth:=400", "output_qos:=reliable"])
    side = BackgroundNode("overload_test", handle_signals=False)
    out_stamps: list[int] = []
    pub = side.node.create_publisher(Image, "/t/thermal", qos_profile("reliable", 400))
    side.node.create_subscription(Image, "/t/out/image_mono8", lambda raw: out_stamps.append(cdr_to_image(raw).t_ns),
                                  qos_profile("reliable", 400), raw=True)
    diag = watch_diagnostics(side.node, "thermal_preprocess")
    side.start()
    n = 120
    try:
        deadline = time.monotonic() + 60
        while not (pub.get_subscription_count() and side.node.count_publishers("/t/out/image_mono8")):
            assert proc.poll() is None and time.monotonic() < deadline, "preprocess node never matched"
            time.sleep(0.1)
        time.sleep(0.5)
        rng = np.random.default_rng(3)
        frame = rng.integers(20000, 30000, (512, 640), dtype=np.uint16)  # SYNTHETIC
        for i in range(1, n + 1):  # as fast as we can publish: far above what normalization + CLAHE keeps up with
            pub.publish(image_to_cdr(frame, i, "boson", "mono16"))
        deadline = time.monotonic() + 60
        while not (diag.get("latest.submitted") == str(n) and out_stamps and out_stamps[-1] == n
                   and int(diag.get("latest.processed", 0)) == len(out_stamps)):
            assert time.monotonic() < deadline, (diag, out_stamps[-5:])
            time.sleep(0.1)
    finally:
        side.close()
        out = stop_nodes(proc)
    assert proc.returncode == 0, out
    processed, stale = int(diag["latest.processed"]), int(diag["latest.dropped_stale"])
    assert processed + stale == n and stale > 0, diag  # every frame either processed or counted as stale
    assert out_stamps == sorted(set(out_stamps)) and out_stamps[-1] == n  # newest first, the last one out
    assert diag["latest.priority"] in ("nice 19", "normal (could not lower)")


def _threads(pid: int) -> dict[int, tuple[str, int, int, int]]:
    """tid -> (name, policy, real-time priority, nice) of every thread of ``pid`` (``/proc``)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:  # the thread ended meanwhile
            continue
        name = stat[stat.index("(") + 1: stat.rindex(")")]
        f = stat[stat.rindex(")") + 2:].split()  # fields from the 3rd (state) on
        out[int(task.name)] = (name, int(f[38]), int(f[37]), int(f[16]))
    return out


@pytest.mark.slow
@pytest.mark.ros
def test_a_node_runs_its_whole_process_real_time_and_a_low_worker_leaves_it(ros_env: dict) -> None:
    """``realtime_priority`` reaches every thread of the node's process, the middleware's threads started
    before the node included; the mailbox worker at ``worker_priority: low`` runs an ordinary policy at
    nice 19 (a nice value means nothing to a real-time thread)."""
    import os
    import resource

    from helpers import spawn_nodes, stop_nodes
    from rgbt.doctor import has_cap_sys_nice

    soft, _ = resource.getrlimit(resource.RLIMIT_RTPRIO)
    if not (has_cap_sys_nice() or soft == resource.RLIM_INFINITY or soft >= 5):
        pytest.skip("this runner may not use real-time priorities (no CAP_SYS_NICE, RLIMIT_RTPRIO < 5)")
    proc = spawn_nodes("thermal_preprocess:thermal_preprocess",
                       params=["input_topic:=/t/rt_thermal", "output_prefix:=/t/rt_out", "realtime_priority:=5",
                               "worker_priority:=low"])
    try:
        deadline = time.monotonic() + 60
        threads: dict = {}
        while not any(name.startswith("rgbt-") and nice == 19 for name, _p, _r, nice in threads.values()):
            assert proc.poll() is None and time.monotonic() < deadline, (threads, stop_nodes(proc))
            time.sleep(0.2)
            threads = _threads(proc.pid)
    finally:
        out = stop_nodes(proc)
    if "SCHED_RR 5 not permitted" in out:  # e.g. a container's cgroup without a real-time budget
        pytest.skip("real time refused here: " + next(line for line in out.splitlines() if "not permitted" in line))
    assert "process real-time priority: SCHED_RR 5" in out, out
    workers = {t: v for t, v in threads.items() if v[0].startswith("rgbt-")}
    others = {t: v for t, v in threads.items() if t not in workers}
    assert len(others) >= 3, threads  # the executor and the middleware's threads
    assert all(policy == os.SCHED_RR and prio == 5 for _n, policy, prio, _nice in others.values()), others
    assert all(policy == os.SCHED_OTHER and prio == 0 and nice == 19 for _n, policy, prio, nice in workers.values()), workers

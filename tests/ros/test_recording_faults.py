"""The recorder's answers to field faults (``rgbt.graph.recording``), without ROS, on real bags written
by ``rgbt.bag.writer``: every loss in ``loss_ranges`` with its cause, the manifest written at open and
close, the take-over of a killed recorder's bag (recovered, duplicates left out, the step between
the two counted), a full disk that closes the bag without churn, and a size cap per flight."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from rgbt.bag.loss import MEMORY_BUDGET, LossLog, missing_between, ranges_before, steps_not_counted
from rgbt.bag.types import ros2_typestore
from rgbt.graph.options import RecorderOptions
from rgbt.graph.recording import DISK_FULL, MANIFEST, SIZE_CAP, Recording, unfinished_bags

S = 1_000_000_000
IMU = "/imu/imu"
IMU_UNLOCKED = "/rgbt/raw/imu/unlocked"
PERIOD = 5_000_000  # 200 Hz


def _imu(stamp: int) -> bytes:
    store = ros2_typestore()
    T = store.types
    cov = np.zeros(9)
    msg = T["sensor_msgs/msg/Imu"](T["std_msgs/msg/Header"](T["builtin_interfaces/msg/Time"](stamp // S, stamp % S), "imu"),
                                   T["geometry_msgs/msg/Quaternion"](0.0, 0.0, 0.0, 1.0), cov,
                                   T["geometry_msgs/msg/Vector3"](0.0, 0.0, 0.0), cov,
                                   T["geometry_msgs/msg/Vector3"](0.0, 0.0, 9.81), cov)
    return bytes(store.serialize_cdr(msg, "sensor_msgs/msg/Imu"))


def _recording(out: Path, flight: str = "f1", writer_factory=None, **kw) -> Recording:  # type: ignore[no-untyped-def]
    opts = RecorderOptions(out_dir=str(out), min_free_mb=0, start="always", **kw)
    rec = Recording(opts, log=lambda m: None, writer_factory=writer_factory, flight_id=flight)
    rec.add_topic(IMU, "sensor_msgs/msg/Imu")
    rec.add_topic(IMU_UNLOCKED, "sensor_msgs/msg/Imu")
    rec.expected_rates = {IMU: 200.0}
    rec.same_stream = {IMU_UNLOCKED: IMU}
    return rec


SECOND = "/second/imu"  # a second stream on the trigger clock (a camera's place), 50 Hz
PERIOD2 = 20_000_000


def _with_second_stream(rec: Recording) -> Recording:
    rec.add_topic(SECOND, "sensor_msgs/msg/Imu")
    rec.expected_rates = {IMU: 200.0, SECOND: 50.0}
    return rec


def _manifest(bag: str | Path) -> dict:
    return json.loads((Path(bag) / MANIFEST).read_text())


def _stamps(bag: Path, read_bag) -> list[int]:  # type: ignore[no-untyped-def]
    return [m.header.stamp.sec * S + m.header.stamp.nanosec for _, m, _ in read_bag(bag).get(IMU, [])]


def _killed_recorders_bag(out: Path, samples: list[int], second: bool = False) -> Path:
    """A recorder that writes IMU ``samples`` (indices; with ``second``, every 4th on :data:`SECOND`
    too) and is "killed": its writer thread ends without closing the file (whole chunks on disk, as
    a SIGKILL leaves it after a periodic fsync), its manifest names a PID that is gone."""
    first = _with_second_stream(_recording(out)) if second else _recording(out)
    first.start("always")
    old = Path(first.bag_path)
    for i in samples:
        s = 10 * S + i * PERIOD
        first.on_message(IMU, _imu(s), s)
        if second and i % 4 == 0:
            first.on_message(SECOND, _imu(s), s)
    first.sink.queue.put(None)
    first.sink.thread.join()
    first.sink.writer._file.close_chunk()
    first.sink.writer._file.out.flush()  # and its last block, as after the writer's periodic fsync
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    manifest = _manifest(old)
    manifest["pid"] = dead.pid
    (old / MANIFEST).write_text(json.dumps(manifest))
    return old


def _take_over(out: Path, samples: range, rec: Recording | None = None) -> Recording:
    """A recorder (``rec``, default a plain one) that starts, takes over this flight's open bags, records
    IMU ``samples`` (indices) and shuts down."""
    rec = rec or _recording(out)
    rec.recover_at_start()
    rec.start("always")
    for i in samples:
        s = 10 * S + i * PERIOD
        rec.on_message(IMU, _imu(s), s)
    rec.shutdown()
    return rec


def test_loss_log_merges_a_run_of_one_cause_and_counts_steps() -> None:
    log = LossLog()
    for stamp in (10, 15, 20):
        log.lost("/t", stamp, "write error")
    log.kept("/t")
    log.lost("/t", 30, "write error")
    log.gap("/t", 40, 50, 3)
    assert log.to_json("/t") == [[10, 20, 3, "write error"], [30, 30, 1, "write error"], [40, 50, 3, "not received"]]
    assert log.count() == 7
    assert missing_between(0, 10, 5) == 1 and missing_between(0, 7, 5) == 0 and missing_between(0, 25, 5) == 4


def test_the_manifest_is_written_at_open_and_says_closed_with_each_loss_and_its_cause(tmp_path: Path) -> None:
    rec = _recording(tmp_path / "bags")
    rec.start("always")
    bag = Path(rec.bag_path)
    opened = _manifest(bag)
    assert opened["state"] == "recording" and opened["flight_id"] == "f1" and opened["pid"] > 0
    assert unfinished_bags(tmp_path / "bags") == []  # this process is alive: not someone's to recover
    stamps = [10 * S + i * PERIOD for i in range(100) if not 40 <= i < 50]
    for s in stamps:
        rec.on_message(IMU, _imu(s), s + 1_000_000)
    # samples 60..69 came on the before-lock topic (the sync lost lock): recorded, not lost
    for i in range(60, 70):
        rec.on_message(IMU_UNLOCKED, _imu(10 * S + i * PERIOD), 0)
    for i in range(100, 110):
        if i not in range(60, 70):
            s = 10 * S + i * PERIOD
            rec.on_message(IMU, _imu(s), s)
    rec.shutdown()
    closed = _manifest(bag)
    assert closed["state"] == "closed" and closed["stop_reason"] == "shutdown"
    assert closed["topics"][IMU]["loss_ranges"] == [[10 * S + 40 * PERIOD, 10 * S + 49 * PERIOD, 10, "not received"]]
    assert closed["lost_total"] == 10


class _FullDisk:
    """A bag writer whose disk fills after ``room`` messages (``ENOSPC``, as ``BagWriter`` raises it)."""

    made: list[_FullDisk] = []

    def __init__(self, path: Path, **_kw) -> None:  # type: ignore[no-untyped-def]
        from rgbt.bag.writer import BagWriter

        self.inner, self.room = BagWriter(path, fsync=False), 30
        _FullDisk.made.append(self)

    def add_topic(self, *a) -> None:  # type: ignore[no-untyped-def]
        self.inner.add_topic(*a)

    def write(self, topic: str, t_ns: int, raw: bytes) -> None:
        if self.room == 0:
            from rgbt.errors import BagError

            self.inner.close()
            raise BagError("disk full") from OSError(errno.ENOSPC, "No space left on device")
        self.room -= 1
        self.inner.write(topic, t_ns, raw)

    def durable_last_log(self) -> dict[str, int]:
        return self.inner.durable_last_log()

    def close(self) -> None:
        self.inner.close()


def test_a_full_disk_closes_the_bag_counts_what_it_lacks_and_starts_no_new_bag(tmp_path: Path, read_bag) -> None:
    _FullDisk.made.clear()
    rec = _recording(tmp_path / "bags", writer_factory=_FullDisk)
    rec._free_mb = lambda: 0.0  # type: ignore[method-assign]  # the disk the writer filled
    rec.start("always")
    bag = Path(rec.bag_path)
    for i in range(60):
        s = 10 * S + i * PERIOD
        rec.on_message(IMU, _imu(s), s)
        rec.on_armed(True, s)  # the 1 Hz armed republish must not start a bag on a full disk
        rec.tick(s)
    rec.sink and rec.sink.thread.join(2)
    for i in range(60, 80):
        s = 10 * S + i * PERIOD
        rec.on_message(IMU, _imu(s), s)
        rec.tick(s)
    rec.shutdown()
    assert len(_FullDisk.made) == 1 and rec.hold == DISK_FULL and rec.state == "stopped"
    manifest = _manifest(bag)
    written = _stamps(bag, read_bag)
    lost_in_bag = sum(r[2] for r in manifest["topics"][IMU]["loss_ranges"])
    after = manifest["not_recorded_after_stop"]["lost_total"]
    assert manifest["state"] == "closed" and manifest["stop_reason"].startswith("write error")
    assert len(written) + lost_in_bag + after == 80  # every sample: in the bag, or counted


def test_a_killed_recorders_bag_is_taken_over_without_duplicates_and_the_step_counted(tmp_path: Path,
                                                                                       read_bag) -> None:
    out = tmp_path / "bags"
    # the first recorder writes samples 0..199 and is "killed": its bag stays open, its PID is gone
    old = _killed_recorders_bag(out, list(range(200)))
    assert [b for b, _ in unfinished_bags(out)] == [old]
    # the spare takes over: the publishers' history repeats 150..199; 200..209 were never received
    second = _recording(out)
    assert second.recover_at_start() == [] and second.previous is not None
    second.start("always")
    new = Path(second.bag_path)
    for i in [*range(150, 200), *range(210, 300)]:
        s = 10 * S + i * PERIOD
        second.on_message(IMU, _imu(s), s)
    second.shutdown()
    recovered, closed = _manifest(old), _manifest(new)
    assert recovered["state"] == "recovered" and closed["state"] == "closed"
    assert closed["continues"] == old.name
    old_stamps, new_stamps = _stamps(old, read_bag), _stamps(new, read_bag)
    assert len(old_stamps) + len(new_stamps) == len(set(old_stamps) | set(new_stamps))  # no sample twice
    assert recovered["duplicates_skipped"] == 200 - 150
    assert len(old_stamps) == 150 and len(new_stamps) == 140
    # the step is inside the new bag's stream (its history began at 150): counted there, once
    assert closed["topics"][IMU]["loss_ranges"] == [[10 * S + 200 * PERIOD, 10 * S + 209 * PERIOD, 10,
                                                    "not received"]]
    assert closed["takeover"]["lost"] == {}


def test_a_take_over_leaves_the_losses_after_its_cut_to_the_new_bag(tmp_path: Path, read_bag) -> None:
    """A killed recorder's manifest said it dropped 140..159 and 180..189 (its memory budget); the
    take-over's history repeats 150..199, so the recovered bag ends at 149: of its losses only
    140..149 are its own (150..159 and 180..189 are in the new bag), each message counted once."""
    out = tmp_path / "bags"
    old = _killed_recorders_bag(out, [i for i in range(200) if not (140 <= i < 160 or 180 <= i < 190)])
    manifest = _manifest(old)
    manifest["topics"][IMU]["loss_ranges"] = [[10 * S + 140 * PERIOD, 10 * S + 159 * PERIOD, 20, MEMORY_BUDGET],
                                              [10 * S + 180 * PERIOD, 10 * S + 189 * PERIOD, 10, MEMORY_BUDGET]]
    manifest["topics"][IMU]["lost_total"] = 30
    (old / MANIFEST).write_text(json.dumps(manifest))
    new = Path(_take_over(out, range(150, 300)).bag_path)
    recovered, closed = _manifest(old), _manifest(new)
    assert recovered["topics"][IMU]["loss_ranges"] == [[10 * S + 140 * PERIOD, 10 * S + 149 * PERIOD, 10,
                                                        MEMORY_BUDGET]]
    assert recovered["topics"][IMU]["lost_total"] == 10 and recovered["lost_total"] == 10
    assert closed["topics"][IMU]["loss_ranges"] == [] and closed["takeover"]["lost"] == {}
    held = set(_stamps(old, read_bag)) | set(_stamps(new, read_bag))
    assert len(held) + 10 == 300  # every sample of 0..299 held once or counted lost once
    assert ranges_before([[0, 90, 10, MEMORY_BUDGET]], 45) == [[0, 40, 5, MEMORY_BUDGET]]
    assert ranges_before([[50, 50, 1, MEMORY_BUDGET]], 50) == []
    assert ranges_before([[40, 60, 1, "not received"]], 50) == [[40, 60, 1, "not received"]]  # a 2.4-period step
    # the step at the boundary, less what the old bag had counted already
    assert steps_not_counted(0, 110, 10, [[10, 40, 4, MEMORY_BUDGET]]) == [[50, 100, 6]]
    assert steps_not_counted(0, 110, 10, [[40, 50, 2, MEMORY_BUDGET]]) == [[10, 30, 3], [60, 100, 5]]
    assert steps_not_counted(0, 110, 10, []) == [[10, 100, 10]] and steps_not_counted(0, 10, 10, []) == []


def test_a_take_over_without_history_counts_the_step_between_the_two_bags(tmp_path: Path, read_bag) -> None:
    out = tmp_path / "bags"
    # 50..54 never received: the killed recorder had not written its manifest since
    old = _killed_recorders_bag(out, [i for i in range(100) if not 50 <= i < 55])
    second = _recording(out)
    second.recover_at_start()
    second.start("always")
    new = Path(second.bag_path)
    for i in range(120, 200):  # volatile publishers: nothing of 100..119 comes again
        s = 10 * S + i * PERIOD
        second.on_message(IMU, _imu(s), s)
    second.shutdown()
    closed = _manifest(new)
    assert _manifest(old)["duplicates_skipped"] == 0
    # the recovered bag's own step, counted from what the recovery found in it
    assert _manifest(old)["topics"][IMU]["loss_ranges"] == [[10 * S + 50 * PERIOD, 10 * S + 54 * PERIOD, 5,
                                                            "not received"]]
    assert closed["topics"][IMU]["loss_ranges"] == [[10 * S + 100 * PERIOD, 10 * S + 119 * PERIOD, 20,
                                                    "recorder restart"]]


def test_a_stream_that_reaches_the_take_over_late_still_has_its_step_counted(tmp_path: Path, monkeypatch) -> None:
    import rgbt.graph.recording as recording

    monkeypatch.setattr(recording, "TAKEOVER_WAIT_S", 0.2)
    out = tmp_path / "bags"
    old = _killed_recorders_bag(out, list(range(100)))
    second = _recording(out)
    second.recover_at_start()
    second.start("always")
    new = Path(second.bag_path)
    time.sleep(0.5)  # the take-over stopped waiting for the stream before its first sample came
    for i in range(120, 200):
        s = 10 * S + i * PERIOD
        second.on_message(IMU, _imu(s), s)
    second.shutdown()
    assert _manifest(old)["state"] == "recovered"
    closed = _manifest(new)
    assert closed["takeover"]["lost"] == {IMU: 20}
    assert closed["topics"][IMU]["loss_ranges"] == [[10 * S + 100 * PERIOD, 10 * S + 119 * PERIOD, 20,
                                                    "recorder restart"]]


def test_a_recorder_killed_while_taking_over_leaves_a_chain_recovered_whole(tmp_path: Path, monkeypatch,
                                                                            read_bag) -> None:
    """Three recorders: the first killed, the second killed while taking over (it never recovered the
    first bag, and it received the IMU only from sample 80 on, the history the first bag also
    holds), the third takes over both: no sample twice in the flight, and every step lost between
    the bags counted, also where the middle bag holds none of a stream."""
    import rgbt.graph.recording as recording

    monkeypatch.setattr(recording, "TAKEOVER_WAIT_S", 0.2)
    out = tmp_path / "bags"
    first = _killed_recorders_bag(out, list(range(100)))
    time.sleep(1.1)  # bags are named by the second they start
    middle = _killed_recorders_bag(out, [*range(80, 100), *range(110, 120)])
    third = _recording(out)
    third.recover_at_start()
    third.start("always")
    new = Path(third.bag_path)
    for i in range(150, 200):
        s = 10 * S + i * PERIOD
        third.on_message(IMU, _imu(s), s)
    third.shutdown()
    assert _manifest(first)["state"] == _manifest(middle)["state"] == "recovered"
    stamps = [*_stamps(first, read_bag), *_stamps(middle, read_bag), *_stamps(new, read_bag)]
    assert len(stamps) == len(set(stamps))  # the first bag's tail that the middle one holds is left out
    indices = sorted((s - 10 * S) // PERIOD for s in stamps)
    assert indices == [*range(100), *range(110, 120), *range(150, 200)]
    closed = _manifest(new)
    assert closed["takeover"]["lost"] == {IMU: 30} and closed["takeover"]["older_bags"] == [first.name]
    ranges = sorted(map(tuple, closed["topics"][IMU]["loss_ranges"]))
    assert ranges == [(10 * S + 120 * PERIOD, 10 * S + 149 * PERIOD, 30, "recorder restart")]
    # the step inside the middle bag (100-109) is that bag's own, counted when it was recovered
    assert [r[2] for r in _manifest(middle)["topics"][IMU]["loss_ranges"]] == [10]


def test_a_stream_the_middle_bag_never_received_has_its_whole_step_counted(tmp_path: Path, monkeypatch) -> None:
    """A recorder that took over and was killed deaf (nothing received): the step runs from the first
    bag's last sample to the third bag's first."""
    import rgbt.graph.recording as recording

    monkeypatch.setattr(recording, "TAKEOVER_WAIT_S", 0.2)
    out = tmp_path / "bags"
    _killed_recorders_bag(out, list(range(100)))
    time.sleep(1.1)
    _killed_recorders_bag(out, [])
    third = _take_over(out, range(150, 200))
    closed = _manifest(third.bag_path)
    assert closed["takeover"]["lost"] == {IMU: 50}
    assert closed["topics"][IMU]["loss_ranges"] == [[10 * S + 100 * PERIOD, 10 * S + 149 * PERIOD, 50,
                                                    "recorder restart"]]


def test_a_stream_silent_at_the_end_of_a_recording_is_lost_up_to_the_newest_stamp_of_the_others(
        tmp_path: Path) -> None:
    """The IMU flows for 2 s; the second stream stops after 0.5 s (a camera gone for good): its
    manifest counts every sample of its rate from its last stamp to the IMU's newest. A stream whose
    last sample is within a period of the newest stamp lost nothing."""
    rec = _with_second_stream(_recording(tmp_path / "bags"))
    rec.start("always")
    for i in range(400):
        s = 10 * S + i * PERIOD
        rec.on_message(IMU, _imu(s), s)
        if i % 4 == 0 and i < 100:
            rec.on_message(SECOND, _imu(s), s)
    rec.shutdown()
    last, end = 10 * S + 96 * PERIOD, 10 * S + 399 * PERIOD
    n = (end - last) // PERIOD2
    topics = _manifest(rec.bags[0])["topics"]
    assert topics[SECOND]["loss_ranges"] == [[last + PERIOD2, last + n * PERIOD2, n, "not received"]]
    assert n == 75 and topics[IMU]["loss_ranges"] == []

    rec = _with_second_stream(_recording(tmp_path / "bags2"))
    rec.start("always")
    for i in range(400):
        s = 10 * S + i * PERIOD
        rec.on_message(IMU, _imu(s), s)
        if i % 4 == 0:  # the last at sample 396, 3 IMU periods before the newest IMU stamp
            rec.on_message(SECOND, _imu(s), s)
    rec.shutdown()
    assert _manifest(rec.bags[0])["topics"][SECOND]["loss_ranges"] == []


def test_a_stream_the_take_over_never_receives_is_lost_to_the_end_of_the_recording(tmp_path: Path,
                                                                                 monkeypatch) -> None:
    """The killed recorder's bag holds both streams; the recorder that takes over receives the IMU
    only: the second stream is lost from the old bag's last sample to the IMU's newest stamp."""
    import rgbt.graph.recording as recording

    monkeypatch.setattr(recording, "TAKEOVER_WAIT_S", 0.2)
    out = tmp_path / "bags"
    _killed_recorders_bag(out, list(range(100)), second=True)
    second = _take_over(out, range(100, 300), _with_second_stream(_recording(out)))
    closed = _manifest(second.bag_path)
    last, end = 10 * S + 96 * PERIOD, 10 * S + 299 * PERIOD
    n = (end - last) // PERIOD2
    assert closed["takeover"]["lost"] == {SECOND: n}
    assert closed["topics"][SECOND]["loss_ranges"] == [[last + PERIOD2, last + n * PERIOD2, n, "recorder restart"]]
    assert closed["topics"][IMU]["loss_ranges"] == []


def test_waiting_for_the_writer_to_catch_up_ends_when_it_stays_caught_up_or_at_the_bound(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from rgbt.graph.recording import CAUGHT_UP_BYTES

    rec = _recording(tmp_path / "bags")
    t0 = time.monotonic()
    rec.wait_caught_up(settle_s=0.3, max_s=5.0)  # no bag open: caught up from the start
    assert 0.3 <= time.monotonic() - t0 < 5.0
    rec.sink = SimpleNamespace(backlog_bytes=CAUGHT_UP_BYTES + 1)  # type: ignore[assignment]  # a writer behind
    t0 = time.monotonic()
    rec.wait_caught_up(settle_s=0.3, max_s=1.0)  # never settles: the bound ends the wait
    assert time.monotonic() - t0 >= 1.0
    rec.sink = None


def test_the_size_cap_is_per_flight_and_holds(tmp_path: Path) -> None:
    out = tmp_path / "bags"
    raw = _imu(10 * S)
    cap_mb = 200 * len(raw) / 1e6  # 200 samples of this flight in all
    first = _recording(out, max_total_mb=cap_mb)
    first.start("always")
    for i in range(120):
        s = 10 * S + i * PERIOD
        first.on_message(IMU, _imu(s), s)
    first.shutdown()
    second = _recording(out, max_total_mb=cap_mb)  # the same flight, restarted: 80 more fit
    second.recover_at_start()
    second.start("always")
    for i in range(120, 300):
        s = 10 * S + i * PERIOD
        second.on_message(IMU, _imu(s), s)
        second.on_armed(True, s)
        second.tick(s)
    second.shutdown()
    assert second.hold == SIZE_CAP and len(second.bags) == 1
    counts = [_manifest(b)["topics"][IMU]["count"] for b in (*first.bags, *second.bags)]
    assert counts[0] == 120 and 75 <= counts[1] <= 81
    other = _recording(out, flight="f2", max_total_mb=cap_mb)  # another flight starts from zero
    other.recover_at_start()
    assert other.flight_bytes == 0


_SLOW_RECORDER = """
import sys, time
from pathlib import Path
from rgbt.bag.writer import BagWriter
from rgbt.graph.options import RecorderOptions
from rgbt.graph.recording import Recording
sys.path.insert(0, {tests!r})
from test_recording_faults import IMU, PERIOD, S, _imu

class SlowWriter(BagWriter):  # a writer on a loaded host: far behind what arrives; a chunk a message
    def __init__(self, path, **kw):
        super().__init__(path, **{{**kw, "flush_interval_s": 0.0}})

    def write(self, *a):
        time.sleep(0.02)
        super().write(*a)

opts = RecorderOptions(out_dir={out!r}, min_free_mb=0, start="always", spool_dir={spool!r})
rec = Recording(opts, log=lambda m: None, writer_factory=lambda p, **kw: SlowWriter(p, **kw), flight_id="f1")
rec.add_topic(IMU, "sensor_msgs/msg/Imu")
rec.expected_rates = {{IMU: 200.0}}
rec.writer_budget_bytes = 4 << 20
rec.open_spool()
rec.start("always")
for i in range(400):
    rec.on_message(IMU, _imu(10 * S + i * PERIOD), 10 * S + i * PERIOD)
while rec.sink.done < 50:  # some in the bag file, most still queued
    time.sleep(0.005)
print("written", rec.sink.done, flush=True)
time.sleep(60)
"""


def test_a_killed_recorders_unwritten_queue_reaches_the_take_over_through_its_spool(tmp_path: Path, read_bag,
                                                                                     monkeypatch) -> None:
    """A recorder whose writer is far behind is killed (SIGKILL, a real process): what it had queued
    and not written is in its spool, and the recorder that takes the flight over writes it; the
    publishers' history reaches further back (into what the old bag holds) and repeats the spool's:
    left out. Every sample once, in stamp order, nothing lost."""
    import os
    import signal

    import rgbt.bag.spool

    # the killed writer closed a chunk per message: of what it had written, only its file's last partial
    # block (< 4 KiB, a few of those chunks) may be missing: a 16 KiB margin of the spool (~45 samples)
    monkeypatch.setattr(rgbt.bag.spool, "PENDING_CHUNK_BYTES", 16 << 10)

    out, spool_dir = tmp_path / "bags", tmp_path / "shm"
    spool_dir.mkdir()
    code = _SLOW_RECORDER.format(tests=str(Path(__file__).parent), out=str(out), spool=str(spool_dir))
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline() if child.stdout else ""
        assert line.startswith("written"), line
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert int(line.split()[1]) < 300  # the writer had not written the last 100+ samples
    assert len(list(spool_dir.iterdir())) == 1
    second = _recording(out, spool_dir=str(spool_dir))
    second.writer_budget_bytes = 4 << 20
    second.open_spool()
    second.recover_at_start()
    second.start("always")
    new = Path(second.bag_path)
    for i in range(500):  # the durable history repeats 0..399 (older than the spool's too), then live ones
        s = 10 * S + i * PERIOD
        second.on_message(IMU, _imu(s), s)
    second.shutdown()
    old = Path(_manifest(new)["bag"].replace(new.name, _manifest(new)["continues"]))
    old_stamps, new_stamps = _stamps(old, read_bag), _stamps(new, read_bag)
    assert old_stamps and sorted(old_stamps + new_stamps) == [10 * S + i * PERIOD for i in range(500)]  # each once
    assert old_stamps + new_stamps == sorted(old_stamps + new_stamps)  # in stamp order in each bag
    closed, recovered = _manifest(new), _manifest(old)
    assert closed["spool_replayed"]["messages"] >= 100 and closed["spool_duplicates"] == 400
    assert closed["topics"][IMU]["loss_ranges"] == [] and recovered["lost_total"] == 0
    assert list(spool_dir.iterdir()) == []  # both spools removed

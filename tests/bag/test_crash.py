"""Crash safety: a writer process stopped with SIGTERM, killed with SIGKILL, or hitting a file size
limit (EFBIG, like a full disk) leaves a readable bag; a killed recording is recovered."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rgbt.bag import open_bag
from rgbt.bag.mcapscan import scan_mcap
from rgbt.bag.recover import recover_bag
from rgbt.paths import REPO_ROOT

CHILD = Path(__file__).with_name("_crash_writer.py")


def _start(out: Path, split: int = 0, limit: int = 0) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    return subprocess.Popen([sys.executable, str(CHILD), str(out), str(split), str(limit)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def _progress_until(proc: subprocess.Popen, durable_at_least: int) -> tuple[int, int]:
    assert proc.stdout is not None
    for line in proc.stdout:
        parts = line.split()
        if parts and parts[0] == "P" and int(parts[2]) >= durable_at_least:
            return int(parts[1]), int(parts[2])
    raise AssertionError(f"writer ended early: {proc.stderr.read() if proc.stderr else ''}")


def _numbers(path: Path) -> list[int]:
    with open_bag(path) as bag:
        return [int(r.msg.data[:8]) for r in bag.messages()]


def test_sigterm_closes_cleanly(tmp_path: Path) -> None:
    out = tmp_path / "term"
    proc = _start(out, split=150_000)
    _progress_until(proc, 200)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    written = int(stdout.split("DONE")[-1])
    files = sorted(out.glob("*.mcap"))
    assert len(files) > 1 and all(scan_mcap(f).finished for f in files)
    assert _numbers(out) == list(range(written))


def test_sigkill_keeps_finished_splits_and_recovers_open_file(tmp_path: Path) -> None:
    out = tmp_path / "kill"
    proc = _start(out, split=150_000)
    written, durable = _progress_until(proc, 200)
    proc.kill()
    proc.wait(timeout=30)
    # before recovery: the finished splits are readable, the open file is reported
    with open_bag(out) as bag:
        finished = bag.message_count
        assert bag.unfinished_files
    assert finished <= durable
    assert _numbers(out) == list(range(finished))
    result = recover_bag(out)
    assert all(scan_mcap(f).finished for f in out.glob("*.mcap"))
    numbers = _numbers(out)
    assert len(numbers) >= durable  # everything that was durable when last reported survived
    assert numbers == list(range(len(numbers)))  # in order, no holes, payloads intact
    assert result["message_count"] == len(numbers)
    with open_bag(out) as bag:
        assert bag.synthetic and bag.unfinished_files == []


def test_file_size_limit_closes_cleanly_with_bag_error(tmp_path: Path) -> None:
    out = tmp_path / "full"
    proc = _start(out, limit=400_000)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    err = next(line for line in stdout.splitlines() if line.startswith("ERR"))
    assert "write failed" in err and "errno 27" in err and "full_0.mcap at offset" in err
    assert "closed cleanly" in err
    kept = int(next(line for line in stdout.splitlines() if line.startswith("KEPT")).split()[1])
    assert kept > 50
    assert all(scan_mcap(f).finished for f in out.glob("*.mcap"))
    assert _numbers(out) == list(range(kept))


@pytest.mark.parametrize("direct_io", [False, True], ids=["page-cache", "o-direct"])
def test_disk_full_drops_trailing_chunks_to_fit_summary(tmp_path: Path, monkeypatch, direct_io: bool) -> None:
    """ENOSPC on a nearly full disk: the summary of many small chunks does not fit in the space
    freed by the rollback, so trailing chunks are dropped until it does; the bag stays valid."""
    import errno

    from rgbt.bag import BagWriter
    from rgbt.bag import writer as writer_mod
    from rgbt.bag.types import ros2_typestore
    from rgbt.errors import BagError

    quota = 300_000
    cls = writer_mod._DirectFile if direct_io else writer_mod._RawFile
    real_write = cls.write

    def full_disk_write(self, data):  # a disk with `quota` bytes free for this file
        if self.tell() + len(memoryview(data).cast("B")) > quota:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(self, data)

    monkeypatch.setattr(cls, "write", full_disk_write)
    String = ros2_typestore().types["std_msgs/msg/String"]
    w = BagWriter(tmp_path / "nospc", chunk_size_bytes=1000, fsync=False, direct_io=direct_io)
    if direct_io and not isinstance(w._file.bio, cls):
        pytest.skip(f"the filesystem of {tmp_path} refuses O_DIRECT: the page-cache case covers it")
    w.add_topic("/n", "std_msgs/msg/String")
    with pytest.raises(BagError, match=r"No space left on device \(errno 28\).*closed cleanly") as info:
        for i in range(10_000):
            w.write_msg("/n", 1_000 + i, String(f"{i:08d}" + "y" * 1500))
    assert w.closed
    lost = int(str(info.value).split(" message(s) not written")[0].rsplit(" ", 1)[1])
    kept = w.message_count
    assert kept + lost == i + 1 and lost > 1  # more than the failed message: chunks were dropped
    assert all(scan_mcap(f).finished for f in (tmp_path / "nospc").glob("*.mcap"))
    assert _numbers(tmp_path / "nospc") == list(range(kept))


def test_close_from_a_signal_handler_mid_stream(tmp_path: Path) -> None:
    """A handler that calls close() whenever the signal lands (possibly inside write()): every write
    that returned is in the finished bag, nothing after it, and the next write says closed."""
    import pytest

    from rgbt.bag import BagWriter
    from rgbt.bag.types import ros2_typestore
    from rgbt.errors import BagError

    String = ros2_typestore().types["std_msgs/msg/String"]
    w = BagWriter(tmp_path / "alarm", chunk_size_bytes=20_000, split_size_bytes=100_000, fsync=False)
    w.add_topic("/n", "std_msgs/msg/String")
    old = signal.signal(signal.SIGALRM, lambda *_: w.close())
    n = 0
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        with pytest.raises(BagError, match="closed"):
            while n < 10_000_000:
                w.write_msg("/n", 1_000 + n, String(f"{n:08d}" + "z" * 500))
                n += 1
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert w.closed and n > 0
    assert all(scan_mcap(f).finished for f in (tmp_path / "alarm").glob("*.mcap"))
    assert _numbers(tmp_path / "alarm") == list(range(n))


def test_recover_keeps_a_file_named_after_its_folder(tmp_path: Path) -> None:
    """A bag folder ``X`` holding an unfinished ``X.mcap`` (the name ``ros2 bag record`` tools and
    users give): recovery salvages it in place. It used to delete it (the MCAP writer created its
    file under the folder's name and removed what was there)."""
    from rgbt.bag import BagWriter
    from rgbt.bag.types import ros2_typestore

    String = ros2_typestore().types["std_msgs/msg/String"]
    src = tmp_path / "src"
    w = BagWriter(src, chunk_size_bytes=1000, fsync=False)
    w.add_topic("/n", "std_msgs/msg/String")
    for i in range(200):
        w.write_msg("/n", 1_000 + i, String(f"{i:08d}" + "y" * 100))
    w.close()
    bag = tmp_path / "X"
    bag.mkdir()
    data = next(src.glob("*.mcap")).read_bytes()
    (bag / "X.mcap").write_bytes(data[: len(data) * 2 // 3])  # cut: no summary, a partial chunk
    result = recover_bag(bag)
    assert (bag / "X.mcap").exists() and scan_mcap(bag / "X.mcap").finished
    kept = result["recovered"]["X.mcap"]
    assert 0 < kept < 200 and _numbers(bag) == list(range(kept))
    assert sorted(p.name for p in bag.iterdir()) == ["X.mcap", "metadata.yaml"]

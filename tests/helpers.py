"""Helpers importable from any test module (``from helpers import run_rgbt``)."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import threading
import time
import tty
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from rgbt.paths import REPO_ROOT
from rgbt.ros_env import DEFAULT_RMW, loopback_environment


def checkout_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment with this checkout first on ``PYTHONPATH``, and ``extra``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra or {})
    return env


def run_rgbt(*args: str, check: bool = True, timeout: float = 600, env: dict | None = None,
             cwd: str | Path | None = None) -> subprocess.CompletedProcess:
    """Run the ``rgbt`` command of this checkout in a subprocess (``python -m rgbt``)."""
    proc = subprocess.run([sys.executable, "-m", "rgbt", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=checkout_env(env), cwd=cwd)
    if check and proc.returncode != 0:
        raise AssertionError(f"rgbt {' '.join(map(str, args))} exited {proc.returncode}\n"
                             f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


def loopback_ros_env(home: Path) -> dict[str, str]:
    """Environment for real rclpy + Fast DDS processes: loopback only, a fresh random domain (10..99),
    ``ROS_HOME`` / ``ROS_LOG_DIR`` under ``home``, profile locks of ``rgbt up`` under ``home`` (tests of
    the same profile running side by side on one machine are not one instance)."""
    return {
        "RGBT_LOCK_DIR": str(home / "locks"),
        **loopback_environment(),
        "ROS_DOMAIN_ID": str(10 + uuid.uuid4().int % 90),
        "ROS_HOME": str(home / "ros_home"),
        "ROS_LOG_DIR": str(home / "ros_log"),
        "RMW_IMPLEMENTATION": DEFAULT_RMW,
    }


def spawn_nodes(*nodes: str, params: tuple[str, ...] | list[str] = ()) -> subprocess.Popen:
    """Start one process of this checkout's nodes (``python -m rgbt.ros.spin --node NAME:EXECUTABLE``
    per entry) with ``-p`` parameters (``"key:=value"``); stdout and stderr merged, as text."""
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "rgbt.ros.spin"]
    for node in nodes:
        cmd += ["--node", node]
    cmd.append("--ros-args")
    for p in params:
        cmd += ["-p", p]
    return subprocess.Popen(cmd, env=env, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def write_small_profile(folder: Path) -> Path:
    """A two-group profile (health monitor + a recorder of ``/rgbt/health`` into ``folder/bags``) for
    ``rgbt up`` tests: ``folder/small.yaml``."""
    import yaml

    profile = folder / "small.yaml"
    profile.write_text(yaml.safe_dump({"description": "health monitor + recorder", "nodes": [
        {"name": "health", "parameters": {"period_s": 0.2, "disk_path": str(folder)}},
        {"name": "recorder", "parameters": {"topics": ["/rgbt/health"], "min_free_mb": 10.0, "write_state": False,
                                            "start": "always", "out_dir": str(folder / "bags"),
                                            "diagnostics_period_s": 0.25}},
    ]}))
    return profile


def start_up(profile: Path, log: Path | None, *extra: str, env: dict[str, str] | None = None,
             **popen: object) -> subprocess.Popen:
    """``rgbt up PROFILE --duration 120 EXTRA...`` of this checkout, stderr into ``log`` (stdout
    discarded), unless ``popen`` says otherwise; ``env`` on top of this process's environment."""
    streams = {"stdout": subprocess.DEVNULL, "stderr": open(log, "w")} if log is not None else {}
    return subprocess.Popen([sys.executable, "-m", "rgbt", "up", str(profile), "--duration", "120", *extra],
                            env=checkout_env(env), **{**streams, **popen})


def process_alive(pid: int) -> bool:
    """``pid`` runs (a zombie nobody reaped yet counts as gone: not every PID 1 reaps orphans)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def children_of(pid: int) -> list[int]:
    """The live processes whose parent is ``pid`` (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(entry))
    return sorted(out)


def wait_gone(pids: list[int], timeout: float = 30) -> float:
    """Seconds until none of ``pids`` runs (fails after ``timeout``, naming the survivors)."""
    import time

    t0 = time.monotonic()
    while alive := [p for p in pids if process_alive(p)]:
        assert time.monotonic() - t0 < timeout, f"PIDs {alive} still alive after {timeout} s"
        time.sleep(0.02)
    return time.monotonic() - t0


def wait_for_line(log: Path, pattern: str, proc: subprocess.Popen | None = None, timeout: float = 90,
                  may_exit: bool = False):  # type: ignore[no-untyped-def]
    """The first match of ``pattern`` in the text of ``log``, polled until ``timeout`` (s); fails at
    once when ``proc`` has exited (unless ``may_exit``)."""
    import re
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = re.search(pattern, log.read_text() if log.exists() else "")
        if m:
            return m
        assert proc is None or may_exit or proc.poll() is None, log.read_text()
        time.sleep(0.1)
    raise AssertionError(f"{pattern!r} not in {log}:\n{log.read_text() if log.exists() else '(no file)'}")


def stop_nodes(proc: subprocess.Popen, timeout: float = 30) -> str:
    """Ctrl-C a :func:`spawn_nodes` process (if still running) and return its whole output."""
    import signal

    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    return proc.communicate(timeout=timeout)[0]


def watch_diagnostics(node, status: str) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Subscribe the rclpy ``node`` to ``/diagnostics``; the returned dict keeps the newest key -> value
    of the status named ``status`` (filled from the node's executor)."""
    from diagnostic_msgs.msg import DiagnosticArray

    from rgbt.ros.qos import qos_profile

    values: dict[str, str] = {}

    def on_diag(msg) -> None:  # type: ignore[no-untyped-def]
        for st in msg.status:
            if st.name == status:
                values.update({kv.key: kv.value for kv in st.values})

    node.create_subscription(DiagnosticArray, "/diagnostics", on_diag, qos_profile("reliable", 50))
    return values


def need(path: Path, what: str = "reference data") -> Path:
    """``path`` of the reference data when it exists; otherwise skip the test with the reason: what is
    missing, where, and the variable that points the tests at the data (``RGBT_DATA``, see
    ``scripts/fetch_data.py``)."""
    if not path.exists():
        pytest.skip(f"{what} not found at {path} (set RGBT_DATA to the reference data folder; "
                    "scripts/fetch_data.py downloads it)")
    return path


def wait_until(cond: Callable[[], object], timeout_s: float = 10.0, what: str = "condition", *,
               period_s: float = 0.02) -> object:
    """Poll ``cond()`` every ``period_s`` (s) until it returns something truthy (returned); fail after
    ``timeout_s`` (s), naming ``what``. The one polling loop of the tests: wait for a condition, never
    for a fixed time."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} not met within {timeout_s} s")
        time.sleep(period_s)


def read_lines(dev, buf: bytes) -> tuple[list[bytes], bytes]:  # type: ignore[no-untyped-def]
    """One short read from a pty device end: the complete lines now in ``buf`` and the unfinished rest."""
    buf += dev.read(0.005)
    *lines, rest = buf.split(b"\n")
    return lines, rest


def independent_miou(pairs: list[tuple[np.ndarray, np.ndarray]], ignore_ids: tuple[int, ...] = (0, 1),
                     n_classes: int = 12) -> tuple[float | None, dict[int, float]]:
    """mIoU of (ground truth, prediction) class-id masks, written here from the definition (not
    ``rgbt.seg.metrics``): pixels whose ground truth is ignored or >= ``n_classes`` do not count; for
    every other class ``c`` IoU = TP / (TP + FP + FN) where it is defined; the mean over those classes."""
    tp: dict[int, int] = {}
    fp: dict[int, int] = {}
    fn: dict[int, int] = {}
    for gt, pred in pairs:
        assert gt.shape == pred.shape, (gt.shape, pred.shape)
        valid = (gt < n_classes) & ~np.isin(gt, ignore_ids)
        for c in range(n_classes):
            if c in ignore_ids:
                continue
            is_gt, is_pred = (gt == c) & valid, (pred == c) & valid
            tp[c] = tp.get(c, 0) + int(np.count_nonzero(is_gt & is_pred))
            fp[c] = fp.get(c, 0) + int(np.count_nonzero(is_pred & ~is_gt))
            fn[c] = fn.get(c, 0) + int(np.count_nonzero(is_gt & ~is_pred))
    ious = {c: tp[c] / (tp[c] + fp[c] + fn[c]) for c in tp if tp[c] + fp[c] + fn[c] > 0}
    return (float(sum(ious.values()) / len(ious)) if ious else None), ious


def read_class_pngs(root: Path, pred_folder: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """(``masks/`` ground truth, ``pred_folder/`` prediction) uint8 pairs of a CART-layout folder's
    ``test.txt`` items, read with OpenCV alone."""
    import cv2

    pairs = []
    for item in (Path(root) / "test.txt").read_text().split():
        place_traj, name = item.rsplit("/", 1)
        gt = cv2.imread(str(Path(root) / place_traj / "masks" / f"{name}.png"), cv2.IMREAD_UNCHANGED)
        pred = cv2.imread(str(Path(root) / place_traj / pred_folder / f"{name}.png"), cv2.IMREAD_UNCHANGED)
        assert gt is not None and pred is not None, (root, item, pred_folder)
        pairs.append((gt, pred))
    return pairs


def tiny_seg_dataset(tmp_path: Path, masks: list[np.ndarray]) -> Path:
    """SYNTHETIC: a CART-layout dataset ``tmp_path/ds`` with one 16-bit ramp frame per label in ``masks``
    (``place/traj/NNNNNN``), and ``train.txt`` / ``val.txt`` listing all of them."""
    from rgbt.seg.dataset import write_item

    root = tmp_path / "ds"
    items = []
    for i, m in enumerate(masks):
        item = f"place/traj/{i:06d}"
        write_item(root, item, (np.arange(m.size, dtype=np.uint16).reshape(m.shape) * 50), m)
        items.append(item)
    (root / "train.txt").write_text("".join(i + "\n" for i in items))
    (root / "val.txt").write_text("".join(i + "\n" for i in items))
    return root


class PtyDevice:
    """A device on a pseudo-terminal, the test side playing the device: a stable path (a symlink, like
    a udev rule) to the slave side; ``unplug()`` closes the master (the driver sees the device
    vanish), ``plug()`` creates a new pty behind the same path (the device came back)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.master: int | None = None
        self._slave: int | None = None
        self.lock = threading.Lock()
        self.dropped = 0
        self.plug()

    def plug(self) -> None:
        master, slave = os.openpty()
        tty.setraw(slave)
        os.set_blocking(master, False)  # bytes nobody reads are dropped (after 0.5 s): never blocks
        self.master, self._slave = master, slave
        tmp = self.path.with_suffix(".new")
        if tmp.exists() or tmp.is_symlink():
            tmp.unlink()
        os.symlink(os.ttyname(slave), tmp)
        os.replace(tmp, self.path)

    def unplug(self) -> None:
        with self.lock:
            for fd in (self.master, self._slave):
                if fd is not None:
                    os.close(fd)
            self.master = self._slave = None
        if self.path.is_symlink():
            self.path.unlink()

    def write(self, data: bytes) -> None:
        with self.lock:
            if self.master is None:
                return
            view = memoryview(data)
            while view:
                try:
                    n = os.write(self.master, view)
                except BlockingIOError:  # wait a little for the reader, then drop like a UART
                    _, w, _ = select.select([], [self.master], [], 0.5)
                    if not w:
                        self.dropped += len(view)
                        return
                    continue
                except OSError:
                    return
                view = view[n:]

    def read(self, timeout: float = 0.05) -> bytes:
        fd = self.master
        if fd is None:
            time.sleep(timeout)
            return b""
        try:
            r, _, _ = select.select([fd], [], [], timeout)
            return os.read(fd, 4096) if r else b""
        except OSError:
            return b""

    def close(self) -> None:
        if self.master is not None:
            self.unplug()


class EmulatedVn100(threading.Thread):
    """The sensor side of a :class:`PtyDevice`: echoes register writes, then (once register 75 is
    written) streams 200 Hz binary packets with TimeStartup, TimeSyncIn and SyncInCnt of a 60 Hz
    trigger. Unplugged and plugged back (the device's ``unplug`` / ``plug``), it streams again once
    reconfigured, its clock running on (the sensor kept its power)."""

    def __init__(self, dev: PtyDevice) -> None:
        from rgbt.sensors import vn100

        super().__init__(daemon=True)
        self.dev = dev
        self.vn100 = vn100
        self.layout = vn100.layout_from_names(vn100.DEFAULT_OUTPUT)
        self.stop = threading.Event()
        self.sent = 0
        self.configured = 0  # times register 75 (the binary output) was written

    def packet(self, i: int) -> bytes:
        t = 1_000_000_000 + 5_000_000 * i  # 200 Hz on the sensor clock
        pulse = t * 60 // 1_000_000_000  # a 60 Hz trigger on the same clock
        return self.vn100.encode_packet(self.layout, {
            ("common", "TimeStartup"): t, ("common", "TimeSyncIn"): t - pulse * 1_000_000_000 // 60,
            ("common", "Quaternion"): (0.0, 0.0, 0.0, 1.0), ("common", "AngularRate"): (0.01, 0.0, -0.01),
            ("common", "Accel"): (0.0, 0.0, -9.81), ("common", "MagPres"): (0.2, 0.0, 0.4, 25.0, 101.3),
            ("common", "SyncInCnt"): pulse})

    def run(self) -> None:
        buf, streaming, t0 = b"", False, time.monotonic()
        while not self.stop.is_set():
            if self.dev.master is None:  # unplugged: silent until configured again
                streaming, buf = False, b""
            lines, buf = read_lines(self.dev, buf)
            for line in lines:
                msg = self.vn100.parse_ascii(line)
                self.dev.write(self.vn100.ascii_command(",".join((msg.kind, *msg.fields))))
                if msg.kind == "VNWRG" and msg.fields[0] == "75":
                    streaming = True
                    self.configured += 1
            due = int((time.monotonic() - t0) / 0.005)  # 200 Hz: the sensor's clock runs on, always
            if not streaming:
                self.sent = due
            while self.sent < due:
                self.dev.write(self.packet(self.sent))
                self.sent += 1

    def close(self) -> None:
        self.stop.set()
        self.join(2)
        self.dev.close()


class SpunNodes:
    """Nodes in one rclpy context, spun from the test's own thread by :meth:`spin_until`: the driver
    nodes under test and listeners (:meth:`listener`). :meth:`close` closes and destroys them all."""

    def __init__(self) -> None:
        import rclpy
        from rclpy.experimental import EventsExecutor

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.executor = EventsExecutor(context=self.context)
        self.nodes: list = []

    def add(self, node):  # type: ignore[no-untyped-def]
        self.nodes.append(node)
        self.executor.add_node(node)
        return node

    def listener(self, name: str):  # type: ignore[no-untyped-def]
        import rclpy

        return self.add(rclpy.create_node(name, context=self.context))

    def spin_until(self, cond, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
        """Spin until ``cond()`` holds; fails the test after ``timeout`` s."""
        from rclpy.task import Future

        deadline = time.monotonic() + timeout
        while not cond():
            assert time.monotonic() < deadline, f"timed out after {timeout} s"
            self.executor.spin_until_future_complete(Future(), timeout_sec=0.05)

    def close(self) -> None:
        for node in self.nodes:
            close = getattr(node, "close", None)  # an RgbtNode releases its devices, threads
            if close is not None:
                close()
        self.executor.shutdown()
        for node in self.nodes:
            node.destroy_node()
        self.context.try_shutdown()

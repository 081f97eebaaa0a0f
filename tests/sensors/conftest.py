"""Pseudo-terminal devices for the driver tests: the test side plays the device.

``PtyDevice`` exposes a stable path (a symlink, like a udev rule) to the slave side of a pty;
``unplug()`` closes the master (the driver sees the device vanish), ``plug()`` creates a new
pty behind the same path (the device came back).
"""

from __future__ import annotations

import os
import select
import threading
import time
import tty
from pathlib import Path

import pytest


class PtyDevice:
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


@pytest.fixture
def pty_device(tmp_path: Path):
    dev = PtyDevice(tmp_path / "ttyDEV")
    yield dev
    dev.close()

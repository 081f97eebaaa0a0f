"""Where ``rgbt up`` and its node processes write: the terminal until it hangs up, then a log file;
no rclpy here.

The node processes do not write to the launcher's terminal directly: their stdout and stderr are two
pipes that relay threads of the launcher copy to its own stdout and stderr (file descriptors 1 and
2). When the operator's terminal goes away (a dropped SSH session: SIGHUP, then writes fail with
EIO), :meth:`Console.detach` points the launcher's descriptors 1 and 2 at a log file (``os.dup2``)
and everything, the children's output included, goes on there; the flight does not notice. The
same happens when a write to the output fails (a closed pipe of ``rgbt up | tee``).

A relay thread blocked on a stopped output would, once a pipe's buffer is full, block the children
writing to it; the pipes are enlarged (up to 1 MiB, Linux) so a stalled terminal takes long to fill them.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Callable
from pathlib import Path

#: the log file's name in the graph's work folder
LOG_FILE = "up.log"
PIPE_SIZE = 1 << 20


class Console:
    """Relay of the children's output to this process's fds 1 and 2, moved to a log on hang-up."""

    def __init__(self) -> None:
        # decided at start: a hung-up terminal no longer says it is one
        self.terminal = os.isatty(1) or os.isatty(2)
        self.log_path: Path | None = None
        self.detached = False
        self._lock = threading.Lock()
        self._pipes = [os.pipe(), os.pipe()]  # (read, write) for the children's stdout, stderr
        for read, _ in self._pipes:
            try:
                fcntl.fcntl(read, getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_SIZE)
            except OSError:
                pass  # the system's pipe size limit: the default buffer
        self._threads: list[threading.Thread] = []

    @property
    def child_stdout(self) -> int:
        return self._pipes[0][1]

    @property
    def child_stderr(self) -> int:
        return self._pipes[1][1]

    def start(self, log_path: Path) -> None:
        """Start relaying; ``log_path``: where the output goes after :meth:`detach`."""
        self.log_path = Path(log_path)
        for (read, _), target in zip(self._pipes, (1, 2), strict=False):
            thread = threading.Thread(target=self._relay, args=(read, target), daemon=True,
                                      name=f"rgbt-relay-{target}")
            thread.start()
            self._threads.append(thread)

    def _relay(self, read: int, target: int) -> None:
        try:
            while data := os.read(read, 65536):  # b"": every writer (children, this process) closed
                try:
                    _write_all(target, data)
                except OSError:  # the output is gone (hung-up terminal, closed pipe): to the log
                    if self.detach():
                        try:
                            _write_all(target, data)
                        except OSError:
                            pass
        except OSError:
            pass
        finally:
            os.close(read)

    def detach(self) -> Path | None:
        """Point this process's stdout and stderr at the log file (once; before :meth:`start`
        there is none). Returns the log's path, None when it could not be opened."""
        with self._lock:
            if not self.detached and self.log_path is not None:
                try:
                    fd = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                except OSError:
                    return None
                os.dup2(fd, 1)
                os.dup2(fd, 2)
                os.close(fd)
                self.detached = True
            return self.log_path if self.detached else None

    def hang_up(self) -> str:
        """SIGHUP arrived: leave a terminal for the log; the line to log about it."""
        if not self.terminal:
            return "rgbt up: SIGHUP: ignored (the output is no terminal); the flight goes on"
        path = self.detach()
        return (f"rgbt up: SIGHUP: the terminal hung up; the flight goes on, its output "
                f"{f'continues in {path}' if path else 'is lost (no log file could be opened)'}")

    def guard(self, log: Callable[[str], object]) -> Callable[[str], None]:
        """``log`` that moves to the log file when the output fails instead of raising."""
        def say(line: str) -> None:
            try:
                log(line)
            except OSError:
                if self.detach():
                    try:
                        log(line)
                    except OSError:
                        pass
        return say

    def close(self, timeout_s: float = 2.0) -> None:
        """Close this process's ends of the pipes (after the children are gone) and let the relays
        copy what is left (at most ``timeout_s`` s: a process that still holds a pipe open)."""
        for _, write in self._pipes:
            try:
                os.close(write)
            except OSError:
                pass
        for thread in self._threads:
            thread.join(timeout=timeout_s)
        if not self._threads:
            for read, _ in self._pipes:
                os.close(read)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]

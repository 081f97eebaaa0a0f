"""One running graph per profile: an exclusive lock per profile name (``rgbt up``, ``rgbt record``);
no rclpy here.

A second ``rgbt up flight`` would fight the first for the serial ports and cameras. The launcher
takes ``flock(LOCK_EX | LOCK_NB)`` on ``<lock dir>/<instance name>.lock`` before it starts anything,
writes its PID in the file, and every node process inherits the open file (``pass_fds``): the lock
is held until the *last* process of the graph is gone, so a process that somehow outlived its
launcher still keeps a new graph off the devices. A second instance is refused with
:class:`InstanceLocked` (exit 2) naming the PID that holds the lock.

The lock dir, first that can be used:

1. ``$RGBT_LOCK_DIR`` (tests, or a deliberate choice);
2. ``/run/lock/rgbt`` when ``/run/lock`` is writable: one place for the whole machine, so the
   systemd service (root) and an operator's shell see each other's locks (made world-writable and
   sticky, like ``/run/lock``);
3. ``$XDG_RUNTIME_DIR/rgbt`` (this user's runtime folder);
4. ``<temp dir>/rgbt-locks-<uid>`` (the fallback; this user's processes only).

The instance name (lock file, systemd unit ``rgbt-<name>.service``): ``NAME`` for ``launch/NAME.yaml``
(``rgbt up flight`` and ``rgbt up launch/flight.yaml`` are one instance), ``NAME-<8 hex digits of
its resolved path>`` for a profile file elsewhere. Lock files are never deleted (deleting one
would let two processes lock two different files of the same name).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import tempfile
from pathlib import Path

from rgbt.errors import RgbtError
from rgbt.graph.profile import profile_path
from rgbt.paths import LAUNCH_DIR

#: environment variable naming the lock folder (overrides the search above)
LOCK_DIR_ENV = "RGBT_LOCK_DIR"
SYSTEM_LOCK_DIR = Path("/run/lock")


class InstanceLocked(RgbtError):
    """The profile's graph is already running (its lock is held)."""


def instance_name(profile: str | Path) -> str:
    """The name one running instance of ``profile`` (a name in ``launch/`` or a YAML path) is known by."""
    path = Path(profile_path(profile)).resolve()
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", path.stem)
    if path.parent == LAUNCH_DIR.resolve():
        return stem
    return f"{stem}-{hashlib.sha1(str(path).encode()).hexdigest()[:8]}"


def lock_dir(environ: dict[str, str] | None = None) -> Path:
    """The folder of the lock files (module docstring: the order), created when missing."""
    env = os.environ if environ is None else environ
    if env.get(LOCK_DIR_ENV):
        path = Path(env[LOCK_DIR_ENV])
        path.mkdir(parents=True, exist_ok=True)
        return path
    if os.access(SYSTEM_LOCK_DIR, os.W_OK):
        path = SYSTEM_LOCK_DIR / "rgbt"
        if _usable(path, mode=0o1777):
            return path
    if env.get("XDG_RUNTIME_DIR") and _usable(Path(env["XDG_RUNTIME_DIR"]) / "rgbt", mode=0o700):
        return Path(env["XDG_RUNTIME_DIR"]) / "rgbt"
    path = Path(tempfile.gettempdir()) / f"rgbt-locks-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def _usable(path: Path, mode: int) -> bool:
    """``path`` exists (made with ``mode`` when missing) and this process can create files in it."""
    try:
        path.mkdir(exist_ok=False)
        os.chmod(path, mode)  # mkdir's mode is cut by the umask
    except FileExistsError:
        pass
    except OSError:
        return False
    return path.is_dir() and os.access(path, os.W_OK | os.X_OK)


def holders(path: Path) -> list[int]:
    """PIDs of the processes that have ``path`` open (those this process may look at in /proc)."""
    try:
        st = path.stat()
    except OSError:
        return []
    out = []
    for pid in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not pid.isdigit():
            continue
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                fst = os.stat(f"/proc/{pid}/fd/{fd}")
                if (fst.st_dev, fst.st_ino) == (st.st_dev, st.st_ino):
                    out.append(int(pid))
                    break
        except OSError:
            continue
    return sorted(out)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (a PID of another user's process counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class InstanceLock:
    """The held lock of one profile's graph (:meth:`acquire`); ``fd`` is what children inherit.

    A context manager: leaving it closes this process's descriptor (the lock is free once the
    children holding it are gone too)."""

    def __init__(self, name: str, path: Path, fd: int) -> None:
        self.name, self.path, self.fd = name, path, fd

    @classmethod
    def acquire(cls, name: str, directory: Path | None = None) -> InstanceLock:
        """Lock ``name`` for this process (never waits); :class:`InstanceLocked` when it is held."""
        path = lock_path(name) if directory is None else Path(directory) / f"{name}.lock"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            writable = True
        except PermissionError:  # another user's lock file (sticky folder): locking needs no write access
            fd = os.open(path, os.O_RDONLY)
            writable = False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise InstanceLocked(f"the graph of profile {name!r} is already running: lock {path} is "
                                 f"{holder_text(path)}; stop it first (one graph per profile)") from None
        except BaseException:
            os.close(fd)
            raise
        if writable:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return cls(name, path, fd)

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> InstanceLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def lock_path(name: str) -> Path:
    return lock_dir() / f"{name}.lock"


def holder_text(path: Path) -> str:
    """Who holds the lock at ``path``: the launcher whose PID is in the file, or what is left of its
    graph (node processes that outlived it still hold the inherited descriptor)."""
    try:
        text = path.read_text().strip()
    except OSError:
        text = ""
    owner = int(text) if text.isdigit() else None
    if owner is not None and pid_alive(owner):
        return f"held by PID {owner}"
    left = [p for p in holders(path) if p != os.getpid()]
    gone = f"rgbt PID {owner}, which is gone" if owner is not None else "a launcher that is gone"
    return f"held by PID(s) {', '.join(map(str, left))} (left from {gone})" if left else "held by another process"


def lock_state(name: str) -> str:
    """Whether the graph of instance ``name`` runs, by its lock (without taking it)."""
    path = lock_path(name)
    if not [p for p in holders(path) if p != os.getpid()]:
        return f"not running (lock {path} free)"
    return f"running (lock {path} {holder_text(path)})"

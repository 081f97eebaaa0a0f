"""A real, small filesystem for the fault bench's full-disk flight (no rclpy here).

``disk_full_real`` records onto a tmpfs of a few hundred MB mounted where the bags go, so the writer
meets a real ``ENOSPC`` from the kernel (not a size cap of its own). Mounting needs root or
``CAP_SYS_ADMIN``; without it :meth:`SmallDisk.mount` says so and the flight is reported as not run.
The mount is removed afterwards (lazily if a file is still open).
"""

from __future__ import annotations

import subprocess
from pathlib import Path


class SmallDisk:
    """A tmpfs of ``size_mb`` MB at ``path`` (created if missing)."""

    def __init__(self, path: Path, size_mb: int) -> None:
        self.path, self.size_mb = Path(path), int(size_mb)
        self.mounted = False

    def mount(self) -> str:
        """Mount it; "" when mounted, else why not (the command's own words)."""
        self.path.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.size_mb}m,mode=0755", "rgbt-faults",
                               str(self.path)], capture_output=True, text=True)
        if proc.returncode != 0:
            return (f"could not mount a {self.size_mb} MB tmpfs at {self.path} (needs root or CAP_SYS_ADMIN): "
                    f"{proc.stderr.strip() or proc.returncode}")
        self.mounted = True
        return ""

    def unmount(self) -> None:
        if not self.mounted:
            return
        if subprocess.run(["umount", str(self.path)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(self.path)], capture_output=True)
        self.mounted = False

"""Pre-rendered simulated runs on disk: render once, play many times at the real rate.

The simulator renders the full CART stack at about 0.85x real time with both cores of a 2-core host
(measured: 6 s of samples in 7.1 s wall, 10.7 s CPU, Intel Xeon, idle). A virtual stack that renders
while it publishes therefore falls behind once its preload is spent, and every stream reaches the
graph later and later (0.6 s per second in the fault flights: 4.5 s late after 9.5 s). A cache
written ahead (:func:`write_cache`) is played instead (:func:`open_cache`): the frames are memory-
mapped from one file (the page cache serves them; a restarted publisher starts at once), the other
samples come from a pickle next to it.

A cache is a private, local artefact of the program that wrote it (a benchmark's temporary
folder, a demo flight's folder while it flies): it is keyed by the complete simulator options and the stack model they
load (:func:`cache_key`) and is never read from elsewhere. Synthetic data, like everything the simulator
makes.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from rgbt.errors import ConfigError
from rgbt.sim.options import SimOptions

#: bump when the layout changes (an older cache is then re-rendered, never misread)
FORMAT = 1
SAMPLES_FILE, FRAMES_FILE, KEY_FILE = "samples.pkl", "frames.bin", "key.json"


@dataclass(frozen=True)
class FrameRef:
    """Where a frame's pixels lie in :data:`FRAMES_FILE` (bytes from ``offset``)."""

    offset: int
    shape: tuple[int, ...]
    dtype: str


def cache_key(options: SimOptions) -> str:
    """SHA-256 of everything that determines the samples: the options (defaults filled), the stack
    model they load (default ``calib/stack.yaml``) and :data:`FORMAT`."""
    from rgbt.stack import load_stack

    stack = load_stack(options.stack_path).model_dump(mode="json")
    text = json.dumps({"format": FORMAT, "options": options.model_dump(mode="json"), "stack": stack},
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def write_cache(options: SimOptions, directory: str | Path,
                progress: Callable[[float, float], None] | None = None) -> Path:
    """Render the run of ``options`` into ``directory`` (created; replaced when it exists) and return
    it. ``progress(done_s, total_s)`` is called about once per simulated second. Written to a
    temporary folder first and renamed, so a half-written cache never looks complete. The frames
    reach the disk before this returns: their write-back (gigabytes) would otherwise go on while the
    run is played and take the disk from the recorder's writes (a recorder of the fault bench then
    fell over 5 s behind and dropped frames over its memory budget)."""
    from rgbt.sim.simstack import SimStack

    directory = Path(directory)
    tmp = directory.with_name(directory.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    samples = []
    offset, t0, next_report = 0, None, 0.0
    with open(tmp / FRAMES_FILE, "wb") as frames:
        for s in SimStack(options).samples():
            t0 = s.t_ns if t0 is None else t0
            data = s.data
            if isinstance(data, np.ndarray):
                pixels = np.ascontiguousarray(data)
                frames.write(pixels.data.cast("B"))
                data = FrameRef(offset, tuple(pixels.shape), pixels.dtype.str)
                offset += pixels.nbytes
            samples.append(replace(s, data=data, label_fn=None))
            if progress is not None and (s.t_ns - t0) / 1e9 >= next_report:
                progress(next_report, options.duration_s)
                next_report += 1.0
        frames.flush()
        os.fsync(frames.fileno())
    with open(tmp / SAMPLES_FILE, "wb") as fh:
        pickle.dump(samples, fh, protocol=pickle.HIGHEST_PROTOCOL)
    (tmp / KEY_FILE).write_text(json.dumps({"key": cache_key(options), "samples": len(samples),
                                            "frame_bytes": offset, "synthetic": True}))
    shutil.rmtree(directory, ignore_errors=True)
    os.replace(tmp, directory)
    return directory


class SimCache:
    """A cache opened for playing: :meth:`samples` yields the run's samples in true-time order,
    frames as read-only arrays over the memory-mapped frame file (no labels)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        with open(directory / SAMPLES_FILE, "rb") as fh:
            self._samples = pickle.load(fh)  # our own file (written by write_cache), see the module doc
        size = (directory / FRAMES_FILE).stat().st_size
        self._frames = np.memmap(directory / FRAMES_FILE, dtype=np.uint8, mode="r") if size else None

    def __len__(self) -> int:
        return len(self._samples)

    def samples(self, kinds: Iterable[str] | None = None) -> Iterator:
        """The samples of ``kinds`` (default: all), as ``SimStack.samples``."""
        wanted = None if kinds is None else set(kinds)
        for s in self._samples:
            if wanted is not None and s.kind not in wanted:
                continue
            ref = s.data
            if isinstance(ref, FrameRef):
                dtype = np.dtype(ref.dtype)
                count = int(np.prod(ref.shape))
                assert self._frames is not None  # a frame reference implies the frames file
                pixels = np.frombuffer(self._frames, dtype=dtype, count=count, offset=ref.offset).reshape(ref.shape)
                s = replace(s, data=pixels)
            yield s


def _mismatch(directory: Path, key: str) -> str:
    """Why the cache in ``directory`` is not the one of ``key`` ("" when it is); reads only its key file."""
    key_path = directory / KEY_FILE
    if not key_path.exists():
        return f"no simulation cache in {directory} (expected {KEY_FILE}, {SAMPLES_FILE}, {FRAMES_FILE})"
    try:
        stored = json.loads(key_path.read_text()).get("key")
    except (OSError, ValueError) as exc:
        return f"{key_path}: unreadable ({exc})"
    return "" if stored == key else f"{directory}: written for other simulator options or another stack file"


def open_cache(directory: str | Path, options: SimOptions) -> tuple[SimCache | None, str]:
    """The cache in ``directory`` when it was written for exactly ``options``; else ``(None, why)``."""
    directory = Path(directory)
    why = _mismatch(directory, cache_key(options))
    if why:
        return None, why
    try:
        return SimCache(directory), ""
    except (OSError, pickle.UnpicklingError, EOFError) as exc:
        raise ConfigError("sim_cache", "folder", str(directory), f"a complete cache ({exc})") from exc


def render_once(options: SimOptions, root: str | Path, log: Callable[[str], None] | None = None) -> Path:
    """The cache of ``options`` under ``root`` (one folder per key), rendered now unless present."""
    key = cache_key(options)
    directory = Path(root) / key[:16]
    if not _mismatch(directory, key):  # present: its key file says so, nothing else is read
        return directory
    t0 = time.monotonic()
    write_cache(options, directory, None if log is None else
                lambda done_s, total_s: log(f"rendering the simulated run: {done_s:.0f} / {total_s:.1f} s"))
    if log is not None:
        log(f"rendered {options.duration_s:g} s of the simulated stack in {time.monotonic() - t0:.1f} s "
            f"({', '.join(options.cameras)})")
    return directory


def render_for_virtual_stack(parameters: dict, root: str | Path, log: Callable[[str], None] | None = None) -> Path:
    """:func:`render_once` for a virtual stack node's parameters (its ``sim`` fields and
    ``stack_path``, as a profile with overrides gives them): the folder to set as its ``sim_cache``."""
    fields = dict(parameters.get("sim") or {})
    if parameters.get("stack_path"):
        fields.setdefault("stack_path", parameters["stack_path"])
    return render_once(SimOptions(**fields), root, log=log)

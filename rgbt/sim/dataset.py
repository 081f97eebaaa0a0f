"""CART-layout labelled datasets from simulated runs (segmentation training / evaluation).

Layout (contract C3)::

    ROOT/PLACE/TRAJ/thermal16/NNNNNN.png   uint16 thermal counts (T-linear, 0.01 K / count)
    ROOT/PLACE/TRAJ/masks/NNNNNN.png       uint8 CART class ids (0-11) of the thermal frame
    ROOT/PLACE/TRAJ/rgb/NNNNNN.png         colour 960x600 (the frame of the same trigger pulse)
    ROOT/PLACE/TRAJ/masks_rgb/NNNNNN.png   uint8 class ids of the colour frame
    ROOT/train.txt, val.txt, test.txt      lines ``PLACE/TRAJ/NNNNNN``
    ROOT/SYNTHETIC.md                      says the data is synthetic and how it was made

``NNNNNN`` is the thermal frame number (device counter). Dropped frames are skipped; frames frozen
by an FFC are kept (the label is the frozen frame's, so it stays exact).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import cv2
import numpy as np

from rgbt.seg.dataset import SPLITS, temporal_split, write_splits  # noqa: F401 - re-exported
from rgbt.sim.options import SimOptions
from rgbt.sim.simstack import SimSample, SimStack

_PNG = [cv2.IMWRITE_PNG_COMPRESSION, 1]


def place_and_traj(options: SimOptions, name: str) -> tuple[str, str]:
    """``("Sim<Place>", "<trajectory>_<day|night>_s<seed>[_t<start>]")`` for a run."""
    stem = name.replace(" ", "_")
    place = "Sim" + (stem.split("_")[0].split("-")[0].capitalize() if stem else "World")
    tod = "night" if options.night else "day"
    traj = f"{stem}_{tod}_s{options.seed}"
    if options.start_s:
        traj += f"_t{options.start_s:g}"
    return place, traj


def _write_png(path: Path, img: np.ndarray) -> None:
    if img.ndim == 3:
        img = cv2.cvtColor(img, cv2.COLOR_RGB2BGR)
    if not cv2.imwrite(str(path), img, _PNG):
        raise OSError(f"cannot write {path}")


class CartSequenceWriter:
    """Writes one sequence ``ROOT/PLACE/TRAJ`` from simulated samples fed in time order."""

    def __init__(self, root: Path, place: str, traj: str, stride: int, dividers: dict[str, int],
                 with_rgb: bool = True) -> None:
        if stride < 1:
            raise ValueError(f"stride must be >= 1, got {stride}")
        self.sequence = f"{place}/{traj}"
        seq_dir = Path(root) / place / traj
        self.dirs = {"thermal16": seq_dir / "thermal16", "masks": seq_dir / "masks"}
        if with_rgb:
            self.dirs.update(rgb=seq_dir / "rgb", masks_rgb=seq_dir / "masks_rgb")
        for d in self.dirs.values():
            d.mkdir(parents=True, exist_ok=True)
        self.stride, self.div, self.with_rgb = stride, dividers, with_rgb
        self._pulses: set[int] = set()
        self.ids: list[str] = []

    def add(self, s: SimSample) -> bool:
        """Write the sample if it is a selected frame; returns True when something was written."""
        if s.dropped or s.kind not in ("thermal", "color"):
            return False
        pulse = s.seq * self.div[s.kind]
        if s.kind == "thermal":
            if s.seq % self.stride:
                return False
            fid = f"{s.seq:06d}"
            label = s.label
            assert label is not None  # camera samples carry their labels
            _write_png(self.dirs["thermal16"] / f"{fid}.png", s.data)
            _write_png(self.dirs["masks"] / f"{fid}.png", label)
            self.ids.append(fid)
            self._pulses.add(pulse)
            return True
        if self.with_rgb and pulse in self._pulses:
            fid = f"{pulse // self.div['thermal']:06d}"
            label = s.label
            assert label is not None
            _write_png(self.dirs["rgb"] / f"{fid}.png", s.data)
            _write_png(self.dirs["masks_rgb"] / f"{fid}.png", label)
            return True
        return False


def sequence_writer(sim: SimStack, root: Path, stride: int, with_rgb: bool = True) -> CartSequenceWriter:
    place, traj = place_and_traj(sim.options, sim.trajectory.name)
    with_rgb = with_rgb and "color" in sim.options.cameras
    dividers: dict[str, int] = {k: sim.stack.camera(k).trigger_divider for k in ("thermal", "color")
                                if k in sim.stack.cameras}
    return CartSequenceWriter(root, place, traj, stride, dividers, with_rgb)


def write_sequence(sim: SimStack, root: Path, stride: int, *, with_rgb: bool = True,
                   progress: Callable[[float], None] | None = None) -> tuple[str, list[str]]:
    """Write every ``stride``-th thermal frame of ``sim`` (plus colour/masks) under ``root``.

    Returns ``(PLACE/TRAJ, [frame ids])``. ``stride`` should be even when colour is written so that
    the colour camera (triggered every second pulse) has a frame at the same pulse.
    """
    writer = sequence_writer(sim, root, stride, with_rgb)
    kinds = ["thermal"] + (["color"] if writer.with_rgb else [])
    for s in sim.samples(kinds):
        if writer.add(s) and progress is not None and s.kind == "thermal":
            progress((s.t_ns - sim.t_start_ns) * 1e-9)
    if progress is not None:
        progress(sim.options.duration_s)
    return writer.sequence, writer.ids


def write_split_files(root: Path, lines: dict[str, list[str]]) -> None:
    write_splits(root, lines)
    (Path(root) / "SYNTHETIC.md").write_text(
        "# Synthetic data\n\nRendered by rgbt.sim (procedural world, CART class ids, simulated FLIR Boson "
        "thermal counts: T-linear 0.01 K/count). Not real CART imagery.\n")


def write_cart_dataset(root: str | Path, options_list: Iterable[SimOptions], stride: int = 10, *,
                       splits: Sequence[str] | None = None, with_rgb: bool = True,
                       progress: Callable[[str, float], None] | None = None) -> Path:
    """Simulate each run of ``options_list`` and write a CART-layout dataset under ``root``.

    ``splits`` (one of train/val/test per run) puts whole sequences in one split (no leakage
    between neighbouring frames across splits); without it each sequence is cut into contiguous
    70/15/15 % blocks. Returns ``root``.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    options_list = list(options_list)
    if splits is not None and (len(splits) != len(options_list) or set(splits) - set(SPLITS)):
        raise ValueError(f"splits must give one of {SPLITS} per run ({len(options_list)} runs), got {splits}")
    lines: dict[str, list[str]] = {k: [] for k in SPLITS}
    runs = []
    for i, options in enumerate(options_list):
        sim = SimStack(options)
        label = f"{sim.trajectory.name} {'night' if options.night else 'day'}"
        cb = (lambda t, _n=label: progress(_n, t)) if progress else None
        seq, ids = write_sequence(sim, root, stride, with_rgb=with_rgb, progress=cb)
        if splits is not None:
            parts = {k: (ids if k == splits[i] else []) for k in SPLITS}
        else:
            parts = temporal_split(ids)
        for k in SPLITS:
            lines[k].extend(f"{seq}/{fid}" for fid in parts[k])
        runs.append({"sequence": seq, "frames": len(ids), "options": options.model_dump(mode="json")})
    write_split_files(root, lines)
    (root / "runs.json").write_text(json.dumps({"synthetic": True, "stride": stride, "runs": runs}, indent=2))
    return root

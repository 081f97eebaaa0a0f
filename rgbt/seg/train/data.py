"""Streaming training / validation samples over a CART-layout dataset (numpy only, no torch).

Each sample is read from disk when asked for (no whole-dataset arrays), augmented on the raw
counts (:mod:`rgbt.seg.train.augment`), normalized and fitted by the runtime's own
:func:`rgbt.seg.preprocess.prepare`, and its label mapped to training targets: CART's ignored ids
(unknown, background) and pixels outside the frame (pad fit) become :data:`IGNORE`.
The objects work as map-style datasets for ``torch.utils.data.DataLoader``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from rgbt.errors import ImageError, ModelError
from rgbt.seg.classes import CART_CLASSES, IGNORE_IDS
from rgbt.seg.dataset import frame_path, list_items, load_thermal, read_png
from rgbt.seg.preprocess import fit_mode, prepare
from rgbt.seg.sidecar import InputSpec
from rgbt.seg.train.augment import augment
from rgbt.seg.train.options import MODEL_NAMES, SIZE_MULTIPLE, AugmentOptions, TrainOptions
from rgbt.seg.train.pretrained import resolve_pretrained

IGNORE = 255
CLASS_NAMES = [c.name for c in CART_CLASSES]


@dataclass
class SplitScan:
    """Items of a split, checked: every thermal frame and label exists, label ids are in the table."""

    items: list[str]
    counts: np.ndarray  # pixels per class id (K,), all ids
    items_sha256: str


def scan_split(root: str | Path, split: str | None, class_names: list[str]) -> SplitScan:
    """Check every item of ``split`` (ImageError naming the file on a missing frame or label, or a
    label with ids outside the class table) and count label pixels per class (for class weights)."""
    root = Path(root)
    items = list_items(root, split)
    k = len(class_names)
    counts = np.zeros(256, np.int64)
    for item in items:
        if item.count("/") < 2:
            raise ImageError(f"{split or root}: item {item!r} is not PLACE/TRAJ/NNNNNN")
        th = frame_path(root, item, "thermal16")
        if not th.is_file():
            raise ImageError(f"{th}: thermal frame not found (listed in {split or 'the dataset'})")
        mpath = frame_path(root, item, "masks")
        if not mpath.is_file():
            raise ImageError(f"{mpath}: label not found for {item} (every thermal16 frame needs masks/NNNNNN.png)")
        c = np.bincount(read_png(mpath, np.uint8).ravel(), minlength=256)
        bad = np.nonzero(c[k:])[0] + k
        if bad.size:
            raise ImageError(f"{mpath}: label ids {bad.tolist()} outside the class table "
                             f"(expected 0..{k - 1}: {', '.join(class_names)})")
        counts += c
    digest = hashlib.sha256("\n".join(items).encode()).hexdigest()
    return SplitScan(items, counts[:k], digest)


def check_inputs(opts: TrainOptions, resume: bool = False) -> tuple[SplitScan, SplitScan]:
    """Everything that can be wrong with the inputs, checked before torch does any work
    (RgbtError -> exit 2): model name, input size, the --pretrained file, the run folder, both splits
    and their labels."""
    ckpt = Path(opts.run_dir) / "last.pt"
    if resume and not ckpt.is_file():
        raise ModelError(f"{ckpt}: no checkpoint to resume from")
    if not resume and ckpt.exists():
        raise ModelError(
            f"{opts.run_dir}: run folder already has a checkpoint: pass --resume, or choose another --run-dir"
        )
    if opts.model not in MODEL_NAMES:
        raise ModelError(f"--model {opts.model!r}: unknown model, expected one of {', '.join(MODEL_NAMES)}")
    m = SIZE_MULTIPLE[opts.model]
    if opts.height % m or opts.width % m:
        raise ModelError(
            f"--size {opts.height}x{opts.width}: height and width must be multiples of {m} for {opts.model}"
        )
    if opts.pretrained and not resume:
        resolve_pretrained(opts.pretrained, opts.model)
    train = scan_split(opts.dataset, opts.split, CLASS_NAMES)
    val = scan_split(opts.dataset, opts.val, CLASS_NAMES)
    evaluated = [i for i in range(len(CLASS_NAMES)) if i not in IGNORE_IDS]
    if not (train.counts[evaluated] > 0).any():
        raise ModelError(f"{opts.split}: the training labels contain no evaluated class (only unknown/background)")
    return train, val


def class_weights(counts: np.ndarray, ignore_ids: list[int] | tuple[int, ...]) -> np.ndarray:
    """Inverse square-root pixel frequency (rare classes count more), mean 1 over the classes present;
    0 for absent and ignored classes."""
    counts = counts.astype(np.float64).copy()
    counts[list(ignore_ids)] = 0
    present = counts > 0
    w = np.zeros_like(counts)
    w[present] = 1.0 / np.sqrt(counts[present])
    if present.any():
        w[present] /= w[present].mean()
    return w.astype(np.float32)


def targets(mask: np.ndarray, spec: InputSpec, fit_kind: str, ignore_ids: Iterable[int]) -> np.ndarray:
    """Label (HxW uint8 class ids, frame size) -> model-size int64 targets, ignored ids -> IGNORE."""
    fit = fit_mode(fit_kind, mask.shape, (spec.height, spec.width))
    if fit.mode == "pad":
        y: np.ndarray = np.full((spec.height, spec.width), IGNORE, np.uint8)
        y[: mask.shape[0], : mask.shape[1]] = mask
    else:
        y = cv2.resize(mask, (spec.width, spec.height), interpolation=cv2.INTER_NEAREST)
    y = y.astype(np.int64)
    y[np.isin(y, list(ignore_ids))] = IGNORE
    return y


class TrainSamples:
    """Augmented training samples: ``[i] -> (1xHxW float32 input, HxW int64 targets)``.

    The augmentation of item ``i`` in epoch ``e`` draws from ``default_rng([seed, e, i])``: the same
    run gives the same samples whatever the worker count, and a resumed run continues the sequence.
    """

    def __init__(self, root: str | Path, items: list[str], spec: InputSpec, fit_kind: str, ignore_ids: Iterable[int],
                 aug: AugmentOptions, seed: int) -> None:
        self.root, self.items, self.spec, self.fit_kind = Path(root), items, spec, fit_kind
        self.ignore_ids, self.aug, self.seed, self.epoch = list(ignore_ids), aug, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        th, mask = load_thermal(self.root, self.items[i])
        th, mask = augment(th, mask, self.aug, np.random.default_rng([self.seed, self.epoch, i]))
        x, _ = prepare({"thermal": th}, self.spec, self.fit_kind)
        return x[0], targets(mask, self.spec, self.fit_kind, self.ignore_ids)


class ValSamples:
    """Validation samples as the runtime sees them: ``[i] -> (1xHxW float32 input, full-size label)``."""

    def __init__(self, root: str | Path, items: list[str], spec: InputSpec, fit_kind: str) -> None:
        self.root, self.items, self.spec, self.fit_kind = Path(root), items, spec, fit_kind

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        th, mask = load_thermal(self.root, self.items[i])
        x, _ = prepare({"thermal": th}, self.spec, self.fit_kind)
        return x[0], mask

"""CART-layout segmentation datasets: ``ROOT/PLACE/TRAJ/{thermal16,masks}/NNNNNN.png``.

Optional ``rgb/`` (colour) with ``masks_rgb/``; split files (``ROOT/train.txt`` ...) list
``PLACE/TRAJ/NNNNNN`` one per line.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np

from rgbt.errors import ImageError


def list_items(root: str | Path, split: str | Path | None = None) -> list[str]:
    """Items ``PLACE/TRAJ/NNNNNN`` of a split file (a path, or a name like ``test`` in ROOT), or all frames."""
    root = Path(root)
    if not root.is_dir():
        raise ImageError(f"{root}: dataset directory not found")
    if split is not None:
        sp = Path(split)
        if not sp.is_file() and (root / f"{split}.txt").is_file():
            sp = root / f"{split}.txt"
        if not sp.is_file():
            raise ImageError(f"{split}: split file not found")
        items = [ln.strip() for ln in sp.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
        items = [i[:-4] if i.endswith(".png") else i for i in items]
    else:
        items = sorted(str(p.relative_to(root).parent.parent / p.stem) for p in root.glob("*/*/thermal16/*.png"))
    if not items and split is not None:
        raise ImageError(f"{sp}: split file lists no frames (expected lines PLACE/TRAJ/NNNNNN)")
    if not items:
        raise ImageError(f"{root}: no frames found (expected PLACE/TRAJ/thermal16/NNNNNN.png)")
    return items


def frame_path(root: Path, item: str, folder: str) -> Path:
    """``ROOT/PLACE/TRAJ/FOLDER/NNNNNN.png`` of an item."""
    place_traj, name = item.rsplit("/", 1)
    return root / place_traj / folder / f"{name}.png"


def read_png(path: Path, dtype: type, channels: int = 1) -> np.ndarray:
    if not path.is_file():
        raise ImageError(f"{path}: file not found")
    img = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if img is None:
        raise ImageError(f"{path}: not a readable PNG")
    if img.dtype != dtype:
        raise ImageError(f"{path}: dtype {img.dtype}, expected {np.dtype(dtype).name}")
    if channels == 1 and img.ndim != 2:
        raise ImageError(f"{path}: {img.shape} image, expected single-channel")
    if channels == 3:
        if img.ndim != 3 or img.shape[2] != 3:
            raise ImageError(f"{path}: {img.shape} image, expected 3 channels")
        img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
    return img


def load_thermal(root: str | Path, item: str) -> tuple[np.ndarray, np.ndarray]:
    """(thermal uint16 HxW, mask uint8 HxW) of one item."""
    root = Path(root)
    th = read_png(frame_path(root, item, "thermal16"), np.uint16)
    mask = read_png(frame_path(root, item, "masks"), np.uint8)
    if th.shape != mask.shape:
        raise ImageError(f"{root / item}: thermal {th.shape} and mask {mask.shape} differ in size")
    return th, mask


def load_rgb(root: str | Path, item: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(rgb uint8 HxWx3, mask uint8 HxW) of one item, or None when the item has no colour frame."""
    root = Path(root)
    p = frame_path(root, item, "rgb")
    if not p.is_file():
        return None
    return read_png(p, np.uint8, 3), read_png(frame_path(root, item, "masks_rgb"), np.uint8)


def write_item(root: str | Path, item: str, thermal: np.ndarray, mask: np.ndarray | None,
               rgb: np.ndarray | None = None, mask_rgb: np.ndarray | None = None) -> None:
    """Write one item in CART layout (used by tests and the stand-in generator)."""
    root = Path(root)
    for folder, img in (("thermal16", thermal), ("masks", mask), ("rgb", rgb), ("masks_rgb", mask_rgb)):
        if img is None:
            continue
        p = frame_path(root, item, folder)
        p.parent.mkdir(parents=True, exist_ok=True)
        out = cv2.cvtColor(img, cv2.COLOR_RGB2BGR) if img.ndim == 3 else img
        if not cv2.imwrite(str(p), out):
            raise ImageError(f"{p}: cannot write PNG")


SPLITS = ("train", "val", "test")


def write_splits(root: str | Path, lines: dict[str, list[str]]) -> None:
    """``ROOT/train.txt``, ``val.txt``, ``test.txt`` listing ``PLACE/TRAJ/NNNNNN`` items (missing splits empty)."""
    for k in SPLITS:
        (Path(root) / f"{k}.txt").write_text("".join(line + "\n" for line in lines.get(k, [])))


def temporal_split(ids: Sequence[str], fractions: tuple[float, float, float] = (0.7, 0.15, 0.15)
                   ) -> dict[str, list[str]]:
    """Contiguous blocks (train first, then val, then test): neighbouring frames stay in one split."""
    n = len(ids)
    a = int(round(n * fractions[0]))
    b = int(round(n * (fractions[0] + fractions[1])))
    return {"train": list(ids[:a]), "val": list(ids[a:b]), "test": list(ids[b:])}

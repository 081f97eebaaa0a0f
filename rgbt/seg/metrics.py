"""Confusion matrix and IoU for class-id masks (CART: unknown and background ignored)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from rgbt.errors import ImageError
from rgbt.seg.classes import CART_CLASSES, IGNORE_IDS, OBJECT_IDS


def confusion(gt: np.ndarray, pred: np.ndarray, num_classes: int, ignore_ids: Iterable[int] = IGNORE_IDS) -> np.ndarray:
    """KxK int64 matrix, rows = ground truth, columns = prediction; pixels whose ground truth is in
    ``ignore_ids`` (or >= K) are skipped. A prediction of an ignored id still counts (as a miss)."""
    if gt.shape != pred.shape:
        raise ImageError(f"mask shapes differ: ground truth {gt.shape}, prediction {pred.shape}")
    g = gt.reshape(-1).astype(np.int64)
    p = pred.reshape(-1).astype(np.int64)
    keep = g < num_classes
    for i in ignore_ids:
        keep &= g != i
    p = np.clip(p[keep], 0, num_classes - 1)
    return np.bincount(g[keep] * num_classes + p, minlength=num_classes * num_classes).reshape(num_classes, num_classes)


@dataclass
class IoUResult:
    per_class: dict[str, float | None]  # None: class absent from ground truth and prediction
    miou: dict[str, float | None]  # "stuff", "object", "all"
    confusion: np.ndarray
    class_names: list[str]
    n_images: int

    def to_json(self) -> dict:
        return {"per_class": self.per_class, "miou": self.miou, "n_images": self.n_images,
                "confusion": {"classes": self.class_names, "matrix": self.confusion.tolist()}}


def iou_from_confusion(cm: np.ndarray, names: list[str] | None = None, ignore_ids: Iterable[int] = IGNORE_IDS,
                       object_ids: Iterable[int] = OBJECT_IDS, n_images: int = 0) -> IoUResult:
    """IoU_c = TP / (TP + FP + FN); mIoU averages the classes that occur (in ground truth or prediction).

    Only evaluated classes are reported (ignored ids are left out). The stuff / object split
    averages over the object ids and the other evaluated ids.
    """
    k = cm.shape[0]
    names = names or [c.name for c in CART_CLASSES][:k]
    tp = np.diag(cm).astype(np.float64)
    eval_ids = [i for i in range(k) if i not in ignore_ids]
    # false positives only from evaluated ground-truth rows
    rows = np.array(eval_ids)
    fp = cm[rows].sum(0).astype(np.float64) - tp
    fn = cm.sum(1).astype(np.float64) - tp
    per_class: dict[str, float | None] = {}
    ious: dict[int, float] = {}
    for i in eval_ids:
        denom = tp[i] + fp[i] + fn[i]
        if denom > 0:
            ious[i] = float(tp[i] / denom)
        per_class[names[i]] = ious.get(i)

    def mean(ids: Iterable[int]) -> float | None:
        vals = [ious[i] for i in ids if i in ious]
        return float(np.mean(vals)) if vals else None

    miou = {"stuff": mean([i for i in eval_ids if i not in object_ids]),
            "object": mean([i for i in eval_ids if i in object_ids]), "all": mean(eval_ids)}
    return IoUResult(per_class, miou, cm, names, n_images)

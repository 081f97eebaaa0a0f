"""``rgbt seg eval``: a model on a CART-layout dataset -> per-class IoU, stuff/object/all mIoU."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rgbt.seg.dataset import list_items, load_thermal
from rgbt.seg.metrics import IoUResult, confusion, iou_from_confusion
from rgbt.seg.stage import SegmentationStage, SegStageOptions


def evaluate(dataset: str | Path, engine: str | Path, split: str | None = None, backend: str = "onnxruntime",
             progress: bool = False) -> IoUResult:
    stage = SegmentationStage(SegStageOptions(str(engine), backend, color=False))
    sc = stage.model.sidecar
    k = sc.num_classes
    items = list_items(dataset, split)
    cm = np.zeros((k, k), np.int64)
    it = items
    if progress:
        from rich.progress import track

        it = track(items, description=f"evaluating {Path(engine).name}", transient=True)
    for item in it:
        th, mask = load_thermal(dataset, item)
        pred = stage.process(th).class_ids
        cm += confusion(mask, pred, k, sc.ignore_ids)
    return iou_from_confusion(cm, [c.name for c in sc.classes], sc.ignore_ids, sc.object_ids, len(items))

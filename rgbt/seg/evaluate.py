"""``rgbt seg eval``: a model on a CART-layout dataset -> per-class IoU, stuff/object/all mIoU."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rgbt.errors import ImageError
from rgbt.progress import Progress
from rgbt.seg.dataset import list_items, load_rgb, load_thermal
from rgbt.seg.fusion import FusionStage
from rgbt.seg.metrics import IoUResult, confusion, iou_from_confusion
from rgbt.seg.preprocess import prepare, unfit_ids
from rgbt.seg.stage import SegmentationStage, SegStageOptions


def evaluate(dataset: str | Path, engine: str | Path, split: str | None = None, backend: str = "onnxruntime",
             progress: Progress | None = None, resize_first: bool = False) -> IoUResult:
    """Per-class IoU of ``engine`` on the dataset's ``split``; ``progress`` is told of each frame;
    ``resize_first``: the stage's option of that name (frames resized to the input, then normalized)."""
    stage = SegmentationStage(SegStageOptions(str(engine), backend, color=False, resize_first=resize_first))
    sc = stage.model.sidecar
    k = sc.num_classes
    items = list_items(dataset, split)
    cm = np.zeros((k, k), np.int64)
    for i, item in enumerate(items):
        th, mask = load_thermal(dataset, item)
        pred = stage.process(th).class_ids
        cm += confusion(mask, pred, k, sc.ignore_ids)
        if progress is not None:
            progress(f"evaluating {Path(engine).name}", i + 1, len(items))
    return iou_from_confusion(cm, [c.name for c in sc.classes], sc.ignore_ids, sc.object_ids, len(items))


def evaluate_fusion(dataset: str | Path, stages: dict, split: str | None = None,
                    progress: Progress | None = None) -> dict:
    """Evaluate several fusion stages (name -> FusionStage or SegmentationStage of one modality) on
    aligned pairs (``thermal16`` + ``rgb``, ground truth ``masks``); returns name -> IoUResult.

    A :class:`SegmentationStage` whose model is an RGB model gets the colour frame; a thermal one
    the thermal frame; a :class:`FusionStage` gets both.
    """
    items = list_items(dataset, split)
    first = next(iter(stages.values()))
    sc = (
        first.t_model.sidecar
        if isinstance(first, FusionStage) and first.options.mode == "late"
        else first.model.sidecar
    )
    k = sc.num_classes
    cms = {name: np.zeros((k, k), np.int64) for name in stages}
    for i, item in enumerate(items):
        th, mask = load_thermal(dataset, item)
        pair = load_rgb(dataset, item)
        if pair is None or pair[0].shape[:2] != th.shape:
            raise ImageError(f"{dataset}/{item}: fusion evaluation needs an rgb frame aligned with thermal16")
        rgb = pair[0]
        for name, stage in stages.items():
            if isinstance(stage, FusionStage):
                pred = stage.process(th, rgb).class_ids
            elif stage.spec.modality == "rgb":
                pred = _rgb_only(stage, rgb)
            else:
                pred = stage.process(th).class_ids
            cms[name] += confusion(mask, pred, k, sc.ignore_ids)
        if progress is not None:
            progress("evaluating fusion", i + 1, len(items))
    return {name: iou_from_confusion(cm, [c.name for c in sc.classes], sc.ignore_ids, sc.object_ids, len(items))
            for name, cm in cms.items()}


def _rgb_only(stage: SegmentationStage, rgb: np.ndarray) -> np.ndarray:
    x, fit = prepare({"rgb": rgb}, stage.spec, stage.model.sidecar.fit)
    return unfit_ids(stage.model.backend.infer(x, stage.model.class_output)[0], fit)

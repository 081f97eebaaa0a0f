"""The segmentation nodes' view of ``rgbt.seg`` (C6): build a stage from a model path + options."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rgbt.paths import REPO_ROOT

if TYPE_CHECKING:
    from rgbt.seg.fusion import FusionStage
    from rgbt.seg.stage import SegmentationStage


def _resolve(path: str | None) -> str | None:
    if not path:
        return path
    p = Path(path)
    return str(p if p.is_absolute() else REPO_ROOT / p)


def make_stage(model: str, backend: str, options: dict[str, Any]) -> SegmentationStage:
    """A ``SegmentationStage`` for ``model`` (relative paths are from the repository root)."""
    from rgbt.seg.stage import SegmentationStage, SegStageOptions

    return SegmentationStage(SegStageOptions(engine=_resolve(model) or model, backend=backend, **options))


def make_fusion(options: dict[str, Any]) -> FusionStage:
    """A ``FusionStage`` from ``rgbt.seg.fusion.FusionOptions`` fields (model paths from the repository root)."""
    from rgbt.seg.fusion import FusionOptions, FusionStage

    opts = dict(options)
    for key in ("thermal", "rgb", "model"):
        if opts.get(key):
            opts[key] = _resolve(opts[key])
    return FusionStage(FusionOptions(**opts))

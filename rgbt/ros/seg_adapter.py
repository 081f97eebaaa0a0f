"""The segmentation node's view of ``rgbt.seg`` (C6): build a stage from a model path + options."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rgbt.paths import REPO_ROOT


def make_stage(model: str, backend: str, options: dict[str, Any]):  # type: ignore[no-untyped-def]
    """A ``SegmentationStage`` for ``model`` (relative paths are from the repository root)."""
    from rgbt.seg.stage import SegmentationStage, StageOptions

    path = Path(model)
    if not path.is_absolute():
        path = REPO_ROOT / path
    return SegmentationStage(StageOptions(model=str(path), backend=backend, **options))

"""Options of one training run (saved as ``RUN/config.json``; ``--resume`` reads them back)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

#: ``rgbt seg train --model`` names (the CART paper's Table 2 families + the demo model) -> zoo architecture
MODEL_NAMES = {
    "fastscnn": "fastscnn",
    "lraspp_mbv3l": "lraspp_mobilenetv3_large",
    "deeplabv3plus_r18": "deeplabv3plus_resnet18",
    "efficientvit_b0": "efficientvit_b0",
    "tinyseg": "tinyseg",
}
#: input sides must be multiples of the model's output stride (TinySeg: stride 8; the others 32)
SIZE_MULTIPLE = {name: 8 if name == "tinyseg" else 32 for name in MODEL_NAMES}


class AugmentOptions(BaseModel):
    """Augmentations, each switchable; all act on the raw 16-bit counts before the runtime's
    normalization (``rgbt.seg.preprocess.prepare``), so they model the sensor, not the tensor."""

    model_config = ConfigDict(extra="forbid")

    flip: bool = Field(default=True, description="horizontal flip (p = 0.5)")
    scale_crop: bool = Field(default=True, description="random zoom 1-1.5x: crop a window, resized to the model")
    gain_noise: bool = Field(default=True, description="gain 0.8-1.25, offset +-5 K, Gaussian noise up to 0.15 K")
    banding: bool = Field(default=True, description="FFC-like column/row offsets and a slow gradient (p = 0.5)")
    inversion: bool = Field(
        default=False, description="thermal inversion: counts mirrored in the frame's range (p = 0.5)"
    )


class TrainOptions(BaseModel):
    """One ``rgbt seg train`` run. Sizes are model input pixels; ``lr`` is AdamW's peak rate."""

    model_config = ConfigDict(extra="forbid")

    dataset: str
    split: str | None = "train"
    val: str | None = "val"
    model: str
    out: str
    run_dir: str
    height: int = Field(
        default=512, ge=32, description="model input height (multiple of the model's stride: SIZE_MULTIPLE)"
    )
    width: int = Field(
        default=640, ge=32, description="model input width (multiple of the model's stride: SIZE_MULTIPLE)"
    )
    fit: Literal["resize", "pad"] = "resize"
    epochs: int = Field(default=30, ge=1)
    batch: int = Field(default=8, ge=1)
    lr: float = Field(default=2e-3, gt=0)
    weight_decay: float = Field(default=1e-4, ge=0)
    schedule: Literal["cosine", "poly"] = "cosine"
    class_weights: Literal["sqrt_inverse", "none"] = "sqrt_inverse"
    seed: int = Field(default=0, ge=0)
    device: Literal["cpu", "cuda"] = "cpu"
    amp: bool = Field(default=True, description="mixed precision where available (CUDA)")
    workers: int = Field(default=0, ge=0, description="DataLoader worker processes")
    threads: int | None = Field(default=None, ge=1, description="torch CPU threads")
    pretrained: str | None = Field(default=None, description="local weights file (never downloaded)")
    augment: AugmentOptions = Field(default_factory=AugmentOptions)
    stop_after: int | None = Field(default=None, ge=1,
                                      description="stop after this many epochs in this invocation (as if interrupted)")


def command_line(opts: TrainOptions) -> str:
    """The ``rgbt seg train`` command that reproduces ``opts`` (recorded in the sidecar)."""
    a = opts.augment
    parts = ["rgbt seg train", f"--dataset {opts.dataset}", f"--model {opts.model}", f"--out {opts.out}",
             f"--size {opts.height}x{opts.width}", f"--fit {opts.fit}", f"--epochs {opts.epochs}",
             f"--batch {opts.batch}", f"--lr {opts.lr:g}", f"--weight-decay {opts.weight_decay:g}",
             f"--schedule {opts.schedule}", f"--class-weights {opts.class_weights}", f"--seed {opts.seed}",
             f"--device {opts.device}"]
    parts += [f"--split {opts.split}"] if opts.split else []
    parts += [f"--val {opts.val}"] if opts.val else []
    parts += [f"--pretrained {opts.pretrained}"] if opts.pretrained else []
    parts += ["--no-amp"] if not opts.amp else []
    parts += [f"--no-{k.replace('_', '-')}" for k in ("flip", "scale_crop", "gain_noise", "banding")
              if not getattr(a, k)]
    parts += ["--inversion"] if a.inversion else []
    return " ".join(parts)

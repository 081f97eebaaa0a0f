"""Initial weights for ``rgbt seg train --pretrained FILE|imagenet``. Nothing is ever downloaded.

Two kinds of file:

- **rgbt's own** (a state dict or a run checkpoint of the same architecture): tensors copied by name
  and shape (fine-tuning from an earlier run, e.g. simulator -> real frames).
- **A model library's ImageNet classifier** whose backbone is our model's encoder: torchvision
  ``resnet18`` (DeepLabV3+ R18), torchvision ``mobilenet_v3_large`` (LR-ASPP MobileNetV3-L) and timm
  ``efficientvit_b0`` (EfficientViT-B0). Our models are our own definitions (no torchvision here), so
  each library's parameter names are translated to ours by one table of rules per family below; every
  translated tensor's shape is checked, the classifier head is left out, and a file whose layout does
  not correspond 1:1 to our encoder loads nothing (one error naming the first tensor that differs).

``--pretrained imagenet`` finds the library's own cached file on this machine (torch hub cache for
torchvision, Hugging Face cache for timm) without importing either library. In both kinds a
3-channel (RGB) first convolution is summed over its input channels to our 1 thermal channel.
This module imports torch only when it loads weights, so bad input is reported before torch loads.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rgbt.errors import MissingCapability, ModelError

if TYPE_CHECKING:
    import torch

IMAGENET = "imagenet"


class _NoCounterpart(Exception):
    """A library parameter name with no place in our encoder (a different block layout)."""


# ---------------------------------------------------------------- name translation, one table per family
#: what a named group of a rule's pattern becomes in our name (groups not listed are copied as they are)
_PARTS = {
    "rn": {"conv1": "c1.0", "bn1": "c1.1", "conv2": "c2.0", "bn2": "c2.1", "downsample.0": "down.0",
           "downsample.1": "down.1"},  # torchvision BasicBlock -> ours
    "cna": {"conv": "0", "norm": "1"},  # timm ConvNormAct -> our Sequential(conv, BN, act)
    "mb": {"inverted_conv": "0", "depth_conv": "1", "point_conv": "2"},  # timm MBConv -> our mb_conv
    "ds": {"depth_conv": "0", "point_conv": "1"},  # timm DSConv -> our ds_conv
    "res": {"0": "1"},  # timm Stem.res0 -> our stem.1 (stem.0 is the first conv; B0 has one stem block)
}

#: torchvision ``resnet18`` -> our ``DeepLabV3PlusResNet18`` encoder. Our layer4 uses dilation 2 instead of
#: stride 2 (output stride 16): same weights.
RESNET18 = [
    (r"conv1\.weight", "stem.0.0.weight"),
    (r"bn1\.(?P<p>\w+)", "stem.0.1.{p}"),
    (r"(?P<block>layer[1-4]\.\d+)\.(?P<rn>conv1|bn1|conv2|bn2|downsample\.[01])\.(?P<p>\w+)", "{block}.{rn}.{p}"),
]

#: torchvision ``mobilenet_v3_large`` -> our ``LRASPPMobileNetV3Large`` encoder. Our ``features`` repeat
#: torchvision's nesting (``features.0`` stem conv; ``features.1``-``15`` inverted residuals ``block.J``:
#: expand conv when the width grows, depthwise conv, squeeze-excite ``fc1``/``fc2``, projection;
#: ``features.16`` the 1x1 conv to 960), so names carry over. Our blocks 13-15 are dilated (output
#: stride 16) as torchvision's LR-ASPP does: same weights.
MOBILENET_V3_LARGE = [
    (r"(?P<name>features\.\d+\.[\w.]+)", "{name}"),
]

_MB = r"(?P<mb>inverted_conv|depth_conv|point_conv)\.(?P<cna>conv|norm)\.(?P<p>\w+)"
_ATTN = r"stages\.(?P<s>[23])\.blocks\.(?P<b>\d+)\.context_module\.main"
#: timm ``efficientvit_b0`` (MIT EfficientViT) -> our ``EfficientViTB0Seg`` backbone. timm wraps convs in
#: ``ConvNormAct`` (``.conv``, ``.norm``) and residuals in ``ResidualBlock(.main)``; ours are plain
#: ``Sequential`` (``.0`` conv, ``.1`` BN) and ``Residual(.block)``. ``stages.S.blocks.0`` is the stride-2
#: MBConv; then MBConvs (stages 0-1) or EfficientViT blocks (stages 2-3: LiteMLA ``context_module``,
#: MBConv ``local_module``).
EFFICIENTVIT_B0 = [
    (r"stem\.in_conv\.(?P<cna>conv|norm)\.(?P<p>\w+)", "stem.0.{cna}.{p}"),
    (r"stem\.res(?P<res>\d+)\.main\.(?P<ds>depth_conv|point_conv)\.(?P<cna>conv|norm)\.(?P<p>\w+)",
     "stem.{res}.block.{ds}.{cna}.{p}"),
    (rf"stages\.(?P<s>\d+)\.blocks\.0\.main\.{_MB}", "stages.{s}.0.{mb}.{cna}.{p}"),
    (rf"stages\.(?P<s>[01])\.blocks\.(?P<b>\d+)\.main\.{_MB}", "stages.{s}.{b}.block.{mb}.{cna}.{p}"),
    (rf"stages\.(?P<s>[23])\.blocks\.(?P<b>\d+)\.local_module\.main\.{_MB}",
     "stages.{s}.{b}.local.block.{mb}.{cna}.{p}"),
    (rf"{_ATTN}\.qkv\.conv\.weight", "stages.{s}.{b}.context.block.qkv.weight"),
    (rf"{_ATTN}\.aggreg\.(?P<agg>\d+\.\d+\.weight)", "stages.{s}.{b}.context.block.aggreg.{agg}"),
    (rf"{_ATTN}\.proj\.(?P<cna>conv|norm)\.(?P<p>\w+)", "stages.{s}.{b}.context.block.proj.{cna}.{p}"),
]


def translate(rules: list[tuple[str, str]], head: str, key: str) -> str | None:
    """Our name for the library parameter ``key`` by the first rule whose pattern matches all of it;
    ``None`` for the classifier (names starting with ``head``). _NoCounterpart when no rule matches."""
    if key.startswith(head):
        return None
    for pattern, ours in rules:
        if m := re.fullmatch(pattern, key):
            try:
                return ours.format(**{g: _PARTS[g][v] if g in _PARTS else v for g, v in m.groupdict().items()})
            except KeyError:
                break
    raise _NoCounterpart(key)


# ---------------------------------------------------------------- where the libraries cache their files
def torch_hub_checkpoints() -> Path:
    """torchvision's download folder: ``$TORCH_HOME`` (else ``$XDG_CACHE_HOME/torch``, ``~/.cache/torch``)
    ``/hub/checkpoints``."""
    home = os.environ.get("TORCH_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "torch")
    return Path(home) / "hub" / "checkpoints"


def hf_hub_cache() -> Path:
    """The Hugging Face hub cache timm downloads into: ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else
    ``$XDG_CACHE_HOME/huggingface/hub`` (``~/.cache/huggingface/hub``)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface")
    return Path(home) / "hub"


@dataclass(frozen=True)
class Family:
    """A library's ImageNet classifier whose backbone is one of our encoders."""

    name: str  # the library's model name
    library: str
    encoder: tuple[str, ...]  # our state-dict prefixes that make the encoder
    signature: str  # a parameter only the library's file has (tells it from an rgbt checkpoint)
    rules: list[tuple[str, str]]  # library name pattern -> our name (see :func:`translate`)
    head: str  # the library's classifier prefix (left out)
    cached: Callable[[], list[str]]  # the library's cache paths (glob patterns), in order of preference
    obtain: str  # the command that caches the file on a networked machine

    def name_of(self, key: str) -> str | None:
        """Our parameter name for the library's ``key`` (``None``: classifier head)."""
        return translate(self.rules, self.head, key)


def _snapshots(repo: str, files: tuple[str, ...]) -> list[str]:
    snap = hf_hub_cache() / f"models--{repo.replace('/', '--')}" / "snapshots" / "*"
    return [str(snap / f) for f in files]


#: ``rgbt seg train --model`` name -> the ImageNet family of its encoder (the other models have none)
FAMILIES = {
    "deeplabv3plus_r18": Family(
        "resnet18", "torchvision", ("stem.", "layer1.", "layer2.", "layer3.", "layer4."), "layer1.0.conv1.weight",
        RESNET18, "fc.", lambda: [str(torch_hub_checkpoints() / "resnet18-f37072fd.pth")],
        "python -c \"import torchvision; torchvision.models.resnet18(weights='IMAGENET1K_V1')\""),
    "lraspp_mbv3l": Family(
        "mobilenet_v3_large", "torchvision", ("features.",), "classifier.3.weight", MOBILENET_V3_LARGE,
        "classifier.",
        lambda: [str(torch_hub_checkpoints() / f) for f in ("mobilenet_v3_large-8738ca79.pth",  # IMAGENET1K_V1
                                                            "mobilenet_v3_large-5c1a4163.pth")],  # IMAGENET1K_V2
        "python -c \"import torchvision; torchvision.models.mobilenet_v3_large(weights='IMAGENET1K_V1')\""),
    "efficientvit_b0": Family(
        "efficientvit_b0", "timm", ("stem.", "stages."), "stem.in_conv.conv.weight", EFFICIENTVIT_B0, "head.",
        lambda: _snapshots("timm/efficientvit_b0.r224_in1k", ("pytorch_model.bin", "model.safetensors")),
        "python -c \"import timm; timm.create_model('efficientvit_b0.r224_in1k', pretrained=True)\""),
}


def _need_safetensors(path: Path) -> None:
    if importlib.util.find_spec("safetensors") is None:
        raise MissingCapability(f"the safetensors package (to read {path})",
                                hint="pip install safetensors, or use the library's .bin / .pth file")


def resolve_pretrained(value: str, model: str) -> Path:
    """The weights file ``--pretrained VALUE`` names for ``--model MODEL``: VALUE itself, or for
    ``imagenet`` the library's cached ImageNet file. ModelError (exit 2) when there is none; never
    downloads. Imports no torch."""
    if value != IMAGENET:
        path = Path(value)
        if not path.is_file():
            raise ModelError(f"{path}: --pretrained weights file not found (only local files are used; "
                             f"or --pretrained {IMAGENET})")
        if path.suffix == ".safetensors":
            _need_safetensors(path)
        return path
    fam = FAMILIES.get(model)
    if fam is None:
        raise ModelError(f"--pretrained {IMAGENET}: model {model!r} has no ImageNet encoder (only "
                         f"{', '.join(FAMILIES)} have); train it from scratch or from an rgbt checkpoint FILE")
    patterns = fam.cached()
    for pattern in patterns:
        found = sorted(Path(p) for p in glob.glob(pattern) if Path(p).is_file())
        if found:
            if found[-1].suffix == ".safetensors":
                _need_safetensors(found[-1])
            return found[-1]
    raise ModelError(f"--pretrained {IMAGENET}: no {fam.library} {fam.name} ImageNet weights on this machine "
                     f"(searched {', '.join(patterns)}); nothing is downloaded: cache them on a networked machine "
                     f"with {fam.obtain} and copy the file to the same path here, or pass --pretrained FILE")


def _read_state(path: Path) -> dict:
    """name -> tensor from a ``.pth`` / ``.bin`` / ``.pt`` (torch) or ``.safetensors`` file; an rgbt run
    checkpoint gives its ``model``."""
    import torch

    try:
        if path.suffix == ".safetensors":
            _need_safetensors(path)
            from safetensors.torch import load_file

            state = load_file(str(path))
        else:
            state = torch.load(path, map_location="cpu", weights_only=True)
    except MissingCapability:
        raise
    except Exception as exc:  # noqa: BLE001 - any unreadable file is bad input
        raise ModelError(f"{path}: not a torch weights file: {exc}") from None
    if isinstance(state, dict) and isinstance(state.get("model"), dict):
        state = state["model"]
    if not isinstance(state, dict):
        raise ModelError(f"{path}: expected a state dict (name -> tensor), got {type(state).__name__}")
    return {k.removeprefix("module."): t for k, t in state.items() if isinstance(t, torch.Tensor)}


def _to_thermal(t: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """An RGB first conv (out, 3, k, k) summed to our thermal (out, 1, k, k); other tensors unchanged."""
    if t.ndim == 4 and t.shape[1] == 3 and len(shape) == 4 and shape[1] == 1 and t.shape[0] == shape[0]:
        return t.sum(1, keepdim=True)
    return t


def load_pretrained(net: torch.nn.Module, value: str, model: str | None = None) -> str:
    """Initialize ``net`` (the ``--model MODEL`` network) from ``--pretrained VALUE``; returns a one-line
    summary. A file of ``MODEL``'s ImageNet family (or ``imagenet``) loads the encoder through the name
    translation; any other file is matched by name and shape. ModelError when nothing matches or the
    library's layout differs from ours (then nothing is loaded)."""
    path = resolve_pretrained(value, model or "")
    state = _read_state(path)
    fam = FAMILIES.get(model or "")
    if fam is not None and (value == IMAGENET or fam.signature in state):
        return _load_family(net, state, fam, path, model or "")
    own = net.state_dict()
    loaded = {}
    for name, t in state.items():
        if name in own and (t := _to_thermal(t, own[name].shape)).shape == own[name].shape:
            loaded[name] = t
    if not loaded:
        raise ModelError(f"{path}: no tensor matches the model by name and shape (expected weights of this "
                         f"architecture{', or the ' + fam.library + ' ' + fam.name + ' ImageNet file' if fam else ''})")
    net.load_state_dict(loaded, strict=False)
    return f"pretrained: {len(loaded)}/{len(own)} tensors from {path.name}"


def _load_family(net: torch.nn.Module, state: dict, fam: Family, path: Path, model: str) -> str:
    """Copy a library ImageNet state dict into our encoder through ``fam.name_of``: all or nothing.
    BatchNorm's batch counters (``num_batches_tracked``) are neither copied nor counted."""
    own = net.state_dict()
    encoder = [k for k in own if k.startswith(fam.encoder) and not k.endswith("num_batches_tracked")]
    where = f"{path}: {fam.library} {fam.name} ImageNet weights do not correspond 1:1 to our {model} encoder"
    loaded = {}
    for key, t in state.items():
        if key.endswith("num_batches_tracked"):
            continue
        try:
            ours = fam.name_of(key)
        except _NoCounterpart:
            raise ModelError(f"{where}: {key} has no counterpart (a different block layout); nothing loaded") from None
        if ours is None:
            continue
        if ours not in own:
            raise ModelError(f"{where}: {key} -> {ours}, which our model does not have; nothing loaded")
        t = _to_thermal(t, own[ours].shape)
        if t.shape != own[ours].shape:
            raise ModelError(f"{where}: {key} has shape {tuple(t.shape)}, our {ours} {tuple(own[ours].shape)}; "
                             "nothing loaded")
        loaded[ours] = t
    missing = [k for k in encoder if k not in loaded]
    if missing:
        raise ModelError(f"{where}: the file has no tensor for our {missing[0]} ({len(missing)} of {len(encoder)} "
                         "missing: not the complete classifier state dict); nothing loaded")
    net.load_state_dict(loaded, strict=False)
    return f"pretrained: {len(loaded)}/{len(encoder)} encoder tensors loaded from {path.name} ({fam.name} ImageNet)"

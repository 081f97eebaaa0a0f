"""EfficientViT-B0 segmentation (Cai et al., ICCV 2023, "EfficientViT: Lightweight Multi-Scale Attention
for High-Resolution Dense Prediction"), written from the paper's architecture description.

Why not ``timm``: timm 1.0.x lists ``efficientvit_b0`` but imports torchvision at package import, and
no torchvision wheel loads beside the CPU torch wheel these machines install (the registry's
torchvision 0.28.0 is built against CUDA torch: ``operator torchvision::nms does not exist``).

Backbone B0: widths 8/16/32/64/128, depths 1/2/2/2/2, attention head dim 16, MBConv expansion 4,
BatchNorm + Hardswish. Stages 1-2 are MBConv blocks; stages 3-4 start with a stride-2 MBConv and
then EfficientViT blocks (lightweight multi-scale linear attention with a 5x5 aggregation branch,
followed by an MBConv). Head: stage 4/3/2 features projected to 32 channels, upsampled to stride 8
(bicubic, as the reference), summed, one MBConv, 1x1 expansion to 128 and a 1x1 classifier; the
stride-8 logits are upsampled bilinearly to the input size (what the reference does at evaluation).
Static-shape friendly (no adaptive pooling); exports to ONNX opset 17. Dev-only: needs torch.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def conv(cin: int, cout: int, k: int = 1, s: int = 1, groups: int = 1, bias: bool = False, norm: bool = True,
         act: bool = True) -> nn.Sequential:
    """Conv (same padding) + optional BatchNorm + optional Hardswish (the reference's ConvLayer)."""
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=bias)]
    if norm:
        layers.append(nn.BatchNorm2d(cout))
    if act:
        layers.append(nn.Hardswish())
    return nn.Sequential(*layers)


class Residual(nn.Module):
    def __init__(self, block: nn.Module) -> None:
        super().__init__()
        self.block = block

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.block(x)


def ds_conv(cin: int, cout: int, s: int = 1) -> nn.Sequential:
    """Depthwise 3x3 (BN, Hardswish) + pointwise 1x1 (BN)."""
    return nn.Sequential(conv(cin, cin, 3, s, groups=cin), conv(cin, cout, 1, act=False))


def mb_conv(cin: int, cout: int, s: int = 1, expand: int = 4, fewer_norm: bool = False) -> nn.Sequential:
    """Inverted bottleneck: 1x1 expand, depthwise 3x3, 1x1 project (``fewer_norm``: BN on the last
    conv only, biases on the first two: the reference's choice inside attention stages)."""
    mid = round(cin * expand)
    return nn.Sequential(conv(cin, mid, 1, bias=fewer_norm, norm=not fewer_norm),
                         conv(mid, mid, 3, s, groups=mid, bias=fewer_norm, norm=not fewer_norm),
                         conv(mid, cout, 1, act=False))


class LiteMLA(nn.Module):
    """Lightweight multi-scale linear attention: ReLU kernel, Q/K/V from a 1x1 conv plus a 5x5
    depthwise-aggregated copy (multi-scale tokens), out = (V K^T) Q / (1^T K^T Q)."""

    def __init__(self, ch: int, dim: int = 16, scales: tuple[int, ...] = (5,), eps: float = 1e-15) -> None:
        super().__init__()
        heads = ch // dim
        total = heads * dim
        self.dim, self.eps = dim, eps
        self.qkv = nn.Conv2d(ch, 3 * total, 1, bias=False)
        self.aggreg = nn.ModuleList(
            nn.Sequential(nn.Conv2d(3 * total, 3 * total, k, padding=k // 2, groups=3 * total, bias=False),
                          nn.Conv2d(3 * total, 3 * total, 1, groups=3 * heads, bias=False)) for k in scales)
        self.proj = conv(total * (1 + len(scales)), ch, 1, act=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        qkv = self.qkv(x)
        qkv = torch.cat([qkv] + [op(qkv) for op in self.aggreg], 1)
        b, _, h, w = qkv.shape
        with torch.autocast(device_type=qkv.device.type, enabled=False):
            t = qkv.float().reshape(b, -1, 3 * self.dim, h * w)
            q, k, v = F.relu(t[:, :, :self.dim]), F.relu(t[:, :, self.dim:2 * self.dim]), t[:, :, 2 * self.dim:]
            v = F.pad(v, (0, 0, 0, 1), mode="constant", value=1.0)  # a row of ones gives the normalizer
            out = torch.matmul(torch.matmul(v, k.transpose(-1, -2)), q)
            out = out[:, :, :-1] / (out[:, :, -1:] + self.eps)
        return self.proj(out.reshape(b, -1, h, w).to(x.dtype))


class EfficientViTBlock(nn.Module):
    def __init__(self, ch: int, dim: int = 16, expand: int = 4) -> None:
        super().__init__()
        self.context = Residual(LiteMLA(ch, dim))
        self.local = Residual(mb_conv(ch, ch, 1, expand, fewer_norm=True))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.local(self.context(x))


class EfficientViTB0Seg(nn.Module):
    """EfficientViT-B0 backbone + the reference segmentation head (output stride 8, head width 32)."""

    WIDTHS = (8, 16, 32, 64, 128)
    DEPTHS = (1, 2, 2, 2, 2)

    def __init__(self, in_ch: int = 1, num_classes: int = 12, dim: int = 16, expand: int = 4,
                 head_width: int = 32, final_expand: int = 4) -> None:
        super().__init__()
        w, d = self.WIDTHS, self.DEPTHS
        self.stem = nn.Sequential(conv(in_ch, w[0], 3, 2), *[Residual(ds_conv(w[0], w[0])) for _ in range(d[0])])
        stages: list[nn.Module] = []
        cin = w[0]
        for cout, n in zip(w[1:3], d[1:3], strict=False):
            blocks: list[nn.Module] = [mb_conv(cin, cout, 2, expand)]
            blocks += [Residual(mb_conv(cout, cout, 1, expand)) for _ in range(n - 1)]
            stages.append(nn.Sequential(*blocks))
            cin = cout
        for cout, n in zip(w[3:], d[3:], strict=False):
            blocks = [mb_conv(cin, cout, 2, expand, fewer_norm=True)]
            blocks += [EfficientViTBlock(cout, dim, expand) for _ in range(n)]
            stages.append(nn.Sequential(*blocks))
            cin = cout
        self.stages = nn.ModuleList(stages)  # strides 4, 8, 16, 32
        self.proj = nn.ModuleList(conv(c, head_width, 1, act=False) for c in (w[4], w[3], w[2]))
        self.middle = Residual(nn.Sequential(conv(head_width, head_width * expand, 1),
                                             conv(head_width * expand, head_width * expand, 3,
                                                  groups=head_width * expand),
                                             conv(head_width * expand, head_width, 1, act=False)))
        self.out = nn.Sequential(conv(head_width, head_width * final_expand, 1),
                                 nn.Conv2d(head_width * final_expand, num_classes, 1, bias=True))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size = x.shape[2:]
        feats = []
        y = self.stem(x)
        for stage in self.stages:
            y = stage(y)
            feats.append(y)
        s8, s16, s32 = feats[1], feats[2], feats[3]
        size8 = s8.shape[2:]
        h = self.proj[2](s8)
        for f, p in ((s32, self.proj[0]), (s16, self.proj[1])):
            h = h + F.interpolate(p(f), size=size8, mode="bicubic", align_corners=False)
        return F.interpolate(self.out(self.middle(h)), size=size, mode="bilinear", align_corners=False)

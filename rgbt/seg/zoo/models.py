"""Small segmentation architectures written in plain PyTorch (torchvision has no CPU wheel here).

FastSCNN (Poudel et al. 2019), LR-ASPP MobileNetV3-Large (Howard et al. 2019), DeepLabV3+ with
a ResNet18 backbone (Chen et al. 2018), EfficientViT-B0 (Cai et al. 2023, in
:mod:`rgbt.seg.zoo.efficientvit`), and TinySeg (a ~60 k-parameter net we train on the
simulator in minutes). All are static-shape friendly: pyramid pooling uses fixed kernels computed
from the traced feature size (adaptive pooling to 3 or 6 bins does not export at 512x640).
Dev-only: needs torch.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from rgbt.seg.zoo.efficientvit import EfficientViTB0Seg


def cbr(cin: int, cout: int, k: int = 3, s: int = 1, d: int = 1, groups: int = 1, act: str = "relu") -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, k, s, padding=d * (k // 2), dilation=d, groups=groups, bias=False),
                               nn.BatchNorm2d(cout)]
    if act == "relu":
        layers.append(nn.ReLU(inplace=True))
    elif act == "hs":
        layers.append(nn.Hardswish(inplace=True))
    return nn.Sequential(*layers)


def up(x: torch.Tensor, size: tuple[int, int] | torch.Size) -> torch.Tensor:
    return F.interpolate(x, size=size, mode="bilinear", align_corners=False)


def fixed_pool(x: torch.Tensor, bins: int) -> torch.Tensor:
    """Average pool to ``bins`` x ``bins`` with a fixed kernel (floor of size/bins): exports as AveragePool."""
    h, w = int(x.shape[2]), int(x.shape[3])
    kh, kw = max(h // bins, 1), max(w // bins, 1)
    return F.avg_pool2d(x, kernel_size=(kh, kw), stride=(kh, kw))


# ---------------------------------------------------------------- FastSCNN
class DSConv(nn.Sequential):
    def __init__(self, cin: int, cout: int, s: int = 1) -> None:
        super().__init__(cbr(cin, cin, 3, s, groups=cin), cbr(cin, cout, 1))


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, s: int, t: int = 6) -> None:
        super().__init__()
        mid = cin * t
        self.use_res = s == 1 and cin == cout
        self.block = nn.Sequential(cbr(cin, mid, 1), cbr(mid, mid, 3, s, groups=mid), cbr(mid, cout, 1, act="none"))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block(x)
        return x + y if self.use_res else y


class PyramidPooling(nn.Module):
    def __init__(self, cin: int, cout: int, bins: tuple[int, ...] = (1, 2, 3, 6)) -> None:
        super().__init__()
        self.bins = bins
        self.convs = nn.ModuleList(cbr(cin, cin // 4, 1) for _ in bins)
        self.out = cbr(cin * 2, cout, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size = x.shape[2:]
        feats = [x] + [up(conv(fixed_pool(x, b)), size) for b, conv in zip(self.bins, self.convs, strict=False)]
        return self.out(torch.cat(feats, 1))


class FastSCNN(nn.Module):
    def __init__(self, in_ch: int = 1, num_classes: int = 12) -> None:
        super().__init__()
        self.ltd = nn.Sequential(cbr(in_ch, 32, 3, 2), DSConv(32, 48, 2), DSConv(48, 64, 2))
        blocks = []
        for cin, cout, n, s in ((64, 64, 3, 2), (64, 96, 3, 2), (96, 128, 3, 1)):
            for i in range(n):
                blocks.append(InvertedResidual(cin if i == 0 else cout, cout, s if i == 0 else 1))
        self.gfe = nn.Sequential(*blocks)
        self.ppm = PyramidPooling(128, 128)
        self.ff_low = nn.Sequential(cbr(128, 128, 3, groups=128), cbr(128, 128, 1, act="none"))
        self.ff_high = cbr(64, 128, 1, act="none")
        self.classifier = nn.Sequential(
            DSConv(128, 128), DSConv(128, 128), nn.Dropout(0.1), nn.Conv2d(128, num_classes, 1)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size = x.shape[2:]
        high = self.ltd(x)
        low = self.ppm(self.gfe(high))
        fused = F.relu(self.ff_high(high) + self.ff_low(up(low, high.shape[2:])))
        return up(self.classifier(fused), size)


# ---------------------------------------------------------------- LR-ASPP MobileNetV3-Large
class SqueezeExcite(nn.Module):
    def __init__(self, ch: int) -> None:
        super().__init__()
        sq = _make_div(ch // 4)
        self.fc1, self.fc2 = nn.Conv2d(ch, sq, 1), nn.Conv2d(sq, ch, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = F.adaptive_avg_pool2d(x, 1)
        return x * F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))


def _make_div(v: float, d: int = 8) -> int:
    n = max(d, int(v + d / 2) // d * d)
    return n + d if n < 0.9 * v else n


class MBv3Block(nn.Module):
    def __init__(self, cin: int, k: int, exp: int, cout: int, se: bool, act: str, s: int, d: int = 1) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        if exp != cin:
            layers.append(cbr(cin, exp, 1, act=act))
        layers.append(cbr(exp, exp, k, 1 if d > 1 else s, d=d, groups=exp, act=act))
        if se:
            layers.append(SqueezeExcite(exp))
        layers.append(cbr(exp, cout, 1, act="none"))
        self.block = nn.Sequential(*layers)
        self.use_res = s == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block(x)
        return x + y if self.use_res else y


_MBV3_L = [  # cin, k, exp, cout, se, act, stride
    (16, 3, 16, 16, False, "relu", 1), (16, 3, 64, 24, False, "relu", 2), (24, 3, 72, 24, False, "relu", 1),
    (24, 5, 72, 40, True, "relu", 2), (40, 5, 120, 40, True, "relu", 1), (40, 5, 120, 40, True, "relu", 1),
    (40, 3, 240, 80, False, "hs", 2), (80, 3, 200, 80, False, "hs", 1), (80, 3, 184, 80, False, "hs", 1),
    (80, 3, 184, 80, False, "hs", 1), (80, 3, 480, 112, True, "hs", 1), (112, 3, 672, 112, True, "hs", 1),
    (112, 5, 672, 160, True, "hs", 2), (160, 5, 960, 160, True, "hs", 1), (160, 5, 960, 160, True, "hs", 1),
]


class LRASPPMobileNetV3Large(nn.Module):
    """LR-ASPP head on a MobileNetV3-Large backbone, last stage dilated (output stride 16)."""

    def __init__(self, in_ch: int = 1, num_classes: int = 12) -> None:
        super().__init__()
        layers: list[nn.Module] = [cbr(in_ch, 16, 3, 2, act="hs")]
        for i, (cin, k, exp, cout, se, act, s) in enumerate(_MBV3_L):
            d = 2 if i >= 12 else 1
            layers.append(MBv3Block(cin, k, exp, cout, se, act, s, d))
        layers.append(cbr(160, 960, 1, act="hs"))
        self.features = nn.Sequential(*layers)
        self.low_idx = 6  # output of the last stride-8 block (40 channels)
        self.cbr = cbr(960, 128, 1)
        self.scale = nn.Conv2d(960, 128, 1, bias=False)
        self.low_cls = nn.Conv2d(40, num_classes, 1)
        self.high_cls = nn.Conv2d(128, num_classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size = x.shape[2:]
        low = x
        for i, layer in enumerate(self.features):
            low = layer(low) if i <= self.low_idx else low
        high = low
        for i, layer in enumerate(self.features):
            if i > self.low_idx:
                high = layer(high)
        y = self.cbr(high) * torch.sigmoid(self.scale(F.adaptive_avg_pool2d(high, 1)))
        y = up(y, low.shape[2:])
        return up(self.low_cls(low) + self.high_cls(y), size)


# ---------------------------------------------------------------- DeepLabV3+ ResNet18
class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, s: int = 1, d: int = 1) -> None:
        super().__init__()
        self.c1 = cbr(cin, cout, 3, s, d=d)
        self.c2 = cbr(cout, cout, 3, 1, d=d, act="none")
        self.down = cbr(cin, cout, 1, s, act="none") if (s != 1 or cin != cout) else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idt = x if self.down is None else self.down(x)
        return F.relu(self.c2(self.c1(x)) + idt)


class DeepLabV3PlusResNet18(nn.Module):
    """DeepLabV3+ (ASPP rates 6/12/18, output stride 16) on ResNet18."""

    def __init__(self, in_ch: int = 1, num_classes: int = 12) -> None:
        super().__init__()
        self.stem = nn.Sequential(cbr(in_ch, 64, 7, 2), nn.MaxPool2d(3, 2, 1))
        self.layer1 = nn.Sequential(BasicBlock(64, 64), BasicBlock(64, 64))
        self.layer2 = nn.Sequential(BasicBlock(64, 128, 2), BasicBlock(128, 128))
        self.layer3 = nn.Sequential(BasicBlock(128, 256, 2), BasicBlock(256, 256))
        self.layer4 = nn.Sequential(BasicBlock(256, 512, 1, 2), BasicBlock(512, 512, 1, 2))
        self.aspp = nn.ModuleList([cbr(512, 256, 1)] + [cbr(512, 256, 3, d=r) for r in (6, 12, 18)])
        self.aspp_pool = cbr(512, 256, 1)
        self.aspp_out = cbr(256 * 5, 256, 1)
        self.low = cbr(64, 48, 1)
        self.decoder = nn.Sequential(cbr(304, 256, 3), cbr(256, 256, 3), nn.Conv2d(256, num_classes, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size = x.shape[2:]
        l1 = self.layer1(self.stem(x))
        f = self.layer4(self.layer3(self.layer2(l1)))
        pooled = up(self.aspp_pool(F.adaptive_avg_pool2d(f, 1)), f.shape[2:])
        a = self.aspp_out(torch.cat([m(f) for m in self.aspp] + [pooled], 1))
        y = self.decoder(torch.cat([up(a, l1.shape[2:]), self.low(l1)], 1))
        return up(y, size)


# ---------------------------------------------------------------- TinySeg (trained on the simulator)
class TinySeg(nn.Module):
    """~60 k parameters: stride-8 encoder with dilated context, a stride-2 skip, bilinear upsampling."""

    def __init__(self, in_ch: int = 1, num_classes: int = 12, width: int = 24) -> None:
        super().__init__()
        w = width
        self.s2 = cbr(in_ch, w, 3, 2)
        self.s4 = nn.Sequential(DSConv(w, 2 * w, 2), DSConv(2 * w, 2 * w))
        self.s8 = nn.Sequential(DSConv(2 * w, 3 * w, 2), cbr(3 * w, 3 * w, 3, d=2, groups=3 * w), cbr(3 * w, 3 * w, 1),
                                cbr(3 * w, 3 * w, 3, d=4, groups=3 * w), cbr(3 * w, 3 * w, 1))
        self.ctx = cbr(3 * w, 3 * w, 1)
        self.skip = cbr(w, 3 * w, 1, act="none")
        self.head = nn.Sequential(DSConv(3 * w, 3 * w), nn.Conv2d(3 * w, num_classes, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size = x.shape[2:]
        a = self.s2(x)
        b = self.s8(self.s4(a))
        b = b + self.ctx(F.adaptive_avg_pool2d(b, 1))
        y = F.relu(up(b, a.shape[2:]) + self.skip(a))
        return up(self.head(y), size)


ARCHITECTURES = {
    "fastscnn": FastSCNN,
    "lraspp_mobilenetv3_large": LRASPPMobileNetV3Large,
    "deeplabv3plus_resnet18": DeepLabV3PlusResNet18,
    "efficientvit_b0": EfficientViTB0Seg,
    "tinyseg": TinySeg,
}



class WithArgmax(nn.Module):
    """Export wrapper: outputs ``logits`` (1xKxHxW float32) and ``class_ids`` (1xHxW uint8, in-graph argmax)."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.net(x)
        return logits, torch.argmax(logits, dim=1).to(torch.uint8)


class LateFusion(nn.Module):
    """Two-input model: thermal + RGB nets, per-pixel confidence-weighted probabilities (see rgbt.seg.fusion).

    p_m = softmax(logits_m / T_m) (temperatures calibrated on a validation split);
    w_m = 1 - H(p_m)/log K (normalized entropy), thermal's times ``thermal_weight``, RGB's times the
    darkness weight of the mean RGB intensity m: m / (m + dark_half), 0 below dark_min;
    p = softmax((w_t log p_t + w_r log p_r) / (w_t + w_r)) (log-linear pooling).
    """

    def __init__(self, thermal: nn.Module, rgb: nn.Module, t_thermal: float = 1.0, t_rgb: float = 1.0,
                 thermal_weight: float = 1.0, dark_half: float = 0.01, dark_min: float = 0.002) -> None:
        super().__init__()
        self.thermal, self.rgb = thermal, rgb
        self.t_thermal, self.t_rgb, self.thermal_weight = t_thermal, t_rgb, thermal_weight
        self.dark_half, self.dark_min = dark_half, dark_min

    def forward(self, thermal: torch.Tensor, rgb: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        pt = torch.softmax(self.thermal(thermal) / self.t_thermal, 1)
        pr = torch.softmax(self.rgb(rgb) / self.t_rgb, 1)
        k = float(pt.shape[1])
        wt = 1.0 - (-(pt * torch.log(pt.clamp_min(1e-8))).sum(1, keepdim=True)) / math.log(k)
        wr = 1.0 - (-(pr * torch.log(pr.clamp_min(1e-8))).sum(1, keepdim=True)) / math.log(k)
        m = rgb.mean()
        gate = (m / (m + self.dark_half)) * (m >= self.dark_min).to(m.dtype)
        wt = wt * self.thermal_weight
        wr = wr * gate
        z = (wt * torch.log(pt.clamp_min(1e-8)) + wr * torch.log(pr.clamp_min(1e-8))) / (wt + wr + 1e-6)
        p = torch.softmax(z, 1)
        return p, torch.argmax(p, dim=1).to(torch.uint8)

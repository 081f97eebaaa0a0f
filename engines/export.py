#!/usr/bin/env python3
"""Export the random-init zoo models (dev-only: needs torch==2.13.0, CPU).

    python engines/export.py                 # the committed set
    python engines/export.py --model deeplabv3plus_resnet18   # 66 MB: built locally, git-ignored

Weights are random-init (seeded): these models are for speed work only, their masks mean nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from rgbt.seg.zoo.export import export_model, make_sidecar  # noqa: E402
from rgbt.seg.zoo.models import ARCHITECTURES, WithArgmax  # noqa: E402

RANDOM = "random-init (torch.manual_seed({seed})): for speed work only, predictions are meaningless"
PAPER = {  # CART paper Table 2: FPS at batch 1 on Jetson AGX Orin (TensorRT) / NUC CPU
    "fastscnn": {"model": "FastSCNN", "fps_orin": 124.2, "fps_nuc": 85.6},
    "lraspp_mobilenetv3_large": {"model": "MobileNetV3-L", "fps_orin": 59.0, "fps_nuc": 15.5},
    "deeplabv3plus_resnet18": {"model": "ResNet18", "fps_orin": 69.3, "fps_nuc": 12.4},
}
# name: (architecture, channels, height, width, fit, modality, committed)
MODELS = {
    "fastscnn_thermal": ("fastscnn", 1, 512, 640, "pad", "thermal", True),
    "lraspp_mbv3l_thermal": ("lraspp_mobilenetv3_large", 1, 512, 640, "pad", "thermal", True),
    "deeplabv3plus_r18_thermal": ("deeplabv3plus_resnet18", 1, 512, 640, "pad", "thermal", False),
    "fastscnn_rgbt_early": ("fastscnn", 4, 608, 960, "pad", "rgbt", True),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", action="append", choices=sorted(MODELS), help="default: the committed set")
    ap.add_argument("--out-dir", default=str(Path(__file__).resolve().parent))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    names = args.model or [n for n, m in MODELS.items() if m[6]]
    for name in names:
        arch, ch, h, w, fit, modality, _ = MODELS[name]
        torch.manual_seed(args.seed)
        net = WithArgmax(ARCHITECTURES[arch](ch, 12))
        sc = make_sidecar(name, arch, ch, h, w, RANDOM.format(seed=args.seed), modality=modality, fit=fit,
                          paper=PAPER.get(arch))
        if modality == "rgbt":
            sc.inputs[0].normalization.method = "thermal_percentile"  # channel 3; RGB channels are /255
        sc = export_model(net, sc, Path(args.out_dir) / f"{name}.onnx")
        print(f"{name}: {sc.params} params, {sc.gflops} GFLOP, -> {Path(args.out_dir) / sc.onnx}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

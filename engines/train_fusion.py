#!/usr/bin/env python3
"""Train the tiny RGB-T fusion set on aligned SYNTHETIC pairs and export it (dev-only: needs torch).

    python engines/train_fusion.py            # procedural stand-in pairs (rgbt.seg.synthetic), day + night
    python engines/train_fusion.py --dataset DIR   # any CART-layout set with aligned rgb/ + masks

Writes engines/fusion_{thermal,rgb,early,late}_tiny.onnx (+ sidecars, references); the late model
is a two-input ONNX (inputs ``thermal`` and ``rgb``) with confidence-weighted fusion in-graph.
Then evaluates thermal-only, RGB-only, early, late and late-in-graph on the day and night test splits.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from rgbt.seg.sidecar import InputSpec, Normalization  # noqa: E402
from rgbt.seg.zoo.export import export_model, make_sidecar  # noqa: E402
from rgbt.seg.zoo.models import LateFusion, TinySeg, WithArgmax  # noqa: E402
from rgbt.seg.zoo.train import load_arrays, train  # noqa: E402

H, W = 120, 192  # model input: the 960x600 rectified pair resized by 0.2
WEIGHTS = "trained on synthetic data ({src}); {kind} RGB-T fusion demo model, not for real imagery"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", help="CART-layout dataset with aligned rgb/ (default: generate procedural pairs)")
    ap.add_argument("--sim", action="store_true", help="aligned pairs from rgbt.sim flights (thermal projected "
                    "into the colour frame with calib's RgbtRectifier.thermal_to_color) instead of procedural scenes")
    ap.add_argument("--seconds", type=float, default=8.0, help="--sim: seconds per training flight")
    ap.add_argument("--keep-data", help="write the generated dataset here")
    ap.add_argument("--n", type=int, default=80, help="procedural frames per condition (day, night)")
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out-dir", default=str(Path(__file__).resolve().parent))
    args = ap.parse_args()
    torch.set_num_threads(2)
    tmp = None
    if args.dataset:
        root, src = Path(args.dataset), f"dataset {Path(args.dataset).name}"
    elif args.sim:
        tmp = tempfile.TemporaryDirectory()
        root = sim_pairs(Path(args.keep_data or tmp.name), args.seconds)
        src = (f"rgbt.sim flights (seeds 1-4 train, 101/102 test, {args.seconds:g} s), thermal projected into the "
               "colour frame (RgbtRectifier.thermal_to_color), colour labels")
    else:
        from rgbt.seg.synthetic import write_dataset

        tmp = tempfile.TemporaryDirectory()
        root = write_dataset(tmp.name, args.n, 600, 960, seed=args.seed)
        src = f"rgbt.seg.synthetic procedural pairs, {args.n} day + {args.n} night at 960x600, seed {args.seed}"
    from rgbt.seg.dataset import list_items

    items = list_items(root, "train")
    out = Path(args.out_dir)
    nets = {}
    specs = {
        "thermal": InputSpec(name="input", modality="thermal", channels=1, height=H, width=W),
        "rgb": InputSpec(name="input", modality="rgb", channels=3, height=H, width=W,
                         normalization=Normalization(method="rgb_unit")),
        "early": InputSpec(name="input", modality="rgbt", channels=4, height=H, width=W),
    }
    for kind, spec in specs.items():
        x, y = load_arrays(root, items, spec, "resize")
        torch.manual_seed(args.seed)
        net = TinySeg(spec.channels, 12)
        log = train(net, x, y, epochs=args.epochs, seed=args.seed, log=lambda m, k=kind: print(f"[{k}] {m}"))
        nets[kind] = net
        name = f"fusion_{kind}_tiny"
        sc = make_sidecar(name, "tinyseg", spec.channels, H, W, WEIGHTS.format(src=src, kind=kind),
                          modality=spec.modality, fit="resize", synthetic=True, training=log | {"command": "python engines/train_fusion.py"})
        sc.inputs = [spec]
        export_model(WithArgmax(net), sc, out / f"{name}.onnx")
    late = LateFusion(nets["thermal"], nets["rgb"], dark_lo=0.04, dark_hi=0.15).eval()
    sc = make_sidecar("fusion_late_tiny", "tinyseg x2 + entropy-weighted late fusion", 1, H, W,
                      WEIGHTS.format(src=src, kind="late (two-input)"), fit="resize", synthetic=True,
                      training={"thermal": "fusion_thermal_tiny", "rgb": "fusion_rgb_tiny", "dark_lo": 0.04, "dark_hi": 0.15})
    sc.inputs = [specs["thermal"].model_copy(update={"name": "thermal"}),
                 specs["rgb"].model_copy(update={"name": "rgb"})]
    export_model(late, sc, out / "fusion_late_tiny.onnx", output_names=("probs", "class_ids"))
    print(json.dumps(evaluate(root, out), indent=2))
    return 0


def sim_pairs(root: Path, seconds: float, stride: int = 12) -> Path:
    """Simulated flights -> CART layout of pixel-aligned 960x600 pairs: ``thermal16`` = the thermal frame
    projected into the colour camera, ``rgb`` = colour, ``masks`` = the colour labels."""
    from rgbt.image.rectify import RgbtRectifier
    from rgbt.seg.dataset import list_items, load_rgb, load_thermal, write_item
    from rgbt.sim import SimOptions
    from rgbt.sim.dataset import write_cart_dataset
    from rgbt.stack import load_stack

    raw = root / "raw"
    runs = [("lawnmower", 1, False, "train"), ("circle", 2, False, "train"), ("lawnmower", 3, True, "train"),
            ("circle", 4, True, "train"), ("lawnmower", 101, False, "test"), ("circle", 102, True, "test")]
    opts = [SimOptions(trajectory=t, seed=sd, night=n, duration_s=seconds if sp == "train" else seconds / 2,
                       cameras=["thermal", "color"]) for t, sd, n, sp in runs]
    write_cart_dataset(raw, opts, stride, splits=[r[3] for r in runs], with_rgb=True)
    rect = RgbtRectifier.from_stack(load_stack(), "color_thermal")
    out = root / "pairs"
    for split in ("train", "test"):
        items = []
        for item in list_items(raw, split):
            pair = load_rgb(raw, item)
            if pair is None:
                continue
            th, _ = load_thermal(raw, item)
            write_item(out, item, rect.thermal_to_color(th), pair[1], pair[0], pair[1])
            items.append(item)
        (out / f"{split}.txt").write_text("\n".join(items) + "\n")
        if split == "test":
            for tod in ("day", "night"):
                (out / f"test_{tod}.txt").write_text("\n".join(i for i in items if f"_{tod}_" in i) + "\n")
    (out / "SYNTHETIC.txt").write_text("rgbt.sim output: synthetic data.\n")
    return out


def evaluate(root: Path, out: Path) -> dict:
    from rgbt.seg.evaluate import evaluate_fusion
    from rgbt.seg.fusion import FusionOptions, FusionStage
    from rgbt.seg.stage import SegmentationStage, SegStageOptions

    stages = {
        "thermal": SegmentationStage(SegStageOptions(str(out / "fusion_thermal_tiny.onnx"), color=False)),
        "rgb": SegmentationStage(SegStageOptions(str(out / "fusion_rgb_tiny.onnx"), color=False)),
        "early": FusionStage(FusionOptions(mode="early", model=str(out / "fusion_early_tiny.onnx"))),
        "late": FusionStage(FusionOptions(mode="late", thermal=str(out / "fusion_thermal_tiny.onnx"),
                                          rgb=str(out / "fusion_rgb_tiny.onnx"))),
        "late_graph": FusionStage(FusionOptions(mode="graph", model=str(out / "fusion_late_tiny.onnx"))),
    }
    res = {}
    for cond in ("day", "night"):
        r = evaluate_fusion(root, stages, f"test_{cond}")
        res[cond] = {name: v.miou["all"] for name, v in r.items()}
    return res


if __name__ == "__main__":
    raise SystemExit(main())

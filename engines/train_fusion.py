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
    ap.add_argument("--dataset", help="CART-layout dataset with aligned rgb/ (default: generate procedural pairs; "
                    "with --sim: the pairs/ folder a previous --sim --keep-data run wrote)")
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
    sim_src = (f"rgbt.sim flights (seeds 1-4 train, 5/6 val, 101/102 test, {args.seconds:g} s), thermal projected "
               "into the colour frame (RgbtRectifier.thermal_to_color), colour labels")
    if args.dataset:
        root = Path(args.dataset)
        src = sim_src if args.sim else f"dataset {root.name}"
    elif args.sim:
        tmp = tempfile.TemporaryDirectory()
        root = sim_pairs(Path(args.keep_data or tmp.name), args.seconds)
        src = sim_src
    else:
        from rgbt.seg.synthetic import write_dataset

        tmp = tempfile.TemporaryDirectory()
        root = write_dataset(tmp.name, args.n, 600, 960, seed=args.seed)
        src = f"rgbt.seg.synthetic procedural pairs, {args.n} day + {args.n} night at 960x600, seed {args.seed}"
    from rgbt.seg.dataset import list_items

    items = list_items(root, "train")
    val_items = list_items(root, "val") if (Path(root) / "val.txt").exists() else []
    temps = {"thermal": 1.0, "rgb": 1.0}
    out = Path(args.out_dir)
    nets = {}
    specs = {
        "thermal": InputSpec(name="input", modality="thermal", channels=1, height=H, width=W),
        "rgb": InputSpec(name="input", modality="rgb", channels=3, height=H, width=W,
                         normalization=Normalization(method="rgb_unit")),
        "early": InputSpec(name="input", modality="rgbt", channels=4, height=H, width=W),
    }
    val_arrays, scs = {}, {}
    for kind, spec in specs.items():
        x, y = load_arrays(root, items, spec, "resize")
        torch.manual_seed(args.seed)
        net = TinySeg(spec.channels, 12)
        log = train(net, x, y, epochs=args.epochs, seed=args.seed, log=lambda m, k=kind: print(f"[{k}] {m}"))
        nets[kind] = net
        if val_items:
            xv, yv = load_arrays(root, val_items, spec, "resize")
            temps[kind] = fit_temperature(net, xv, yv)
            val_arrays[kind] = (xv, yv)
            print(f"[{kind}] temperature {temps[kind]:.2f} (val NLL, {len(val_items)} frames)")
        name = f"fusion_{kind}_tiny"
        cmd = "python engines/train_fusion.py" + (" --sim" if args.sim else "")
        sc = make_sidecar(name, "tinyseg", spec.channels, H, W, WEIGHTS.format(src=src, kind=kind),
                          modality=spec.modality, fit="resize", synthetic=True, training=log | {"command": cmd})
        sc.inputs = [spec]
        sc.temperature = temps.get(kind, 1.0)
        scs[kind] = sc
    fit = {"thermal_weight": 1.0, "dark_half": 0.01}
    if val_arrays:
        fit = fit_late_fusion(nets, val_arrays, temps, ["_night_" in i for i in val_items])
        print(f"[late] fitted on val: {fit}")
    scs["thermal"].fusion_weight = fit["thermal_weight"]
    scs["rgb"].fusion = {"dark_half": fit["dark_half"]}
    for kind, net in nets.items():
        export_model(WithArgmax(net), scs[kind], out / f"fusion_{kind}_tiny.onnx")
    late = LateFusion(nets["thermal"], nets["rgb"], temps["thermal"], temps["rgb"], fit["thermal_weight"],
                      fit["dark_half"]).eval()
    sc = make_sidecar("fusion_late_tiny", "tinyseg x2 + entropy-weighted late fusion", 1, H, W,
                      WEIGHTS.format(src=src, kind="late (two-input)"), fit="resize", synthetic=True,
                      training={"thermal": "fusion_thermal_tiny", "rgb": "fusion_rgb_tiny"})
    sc.fusion = {"temperature_thermal": temps["thermal"], "temperature_rgb": temps["rgb"],
                 "thermal_weight": late.thermal_weight, "dark_half": late.dark_half, "dark_min": late.dark_min,
                 "pooling": "log-linear, per-pixel weights 1 - H/log K"}
    sc.inputs = [specs["thermal"].model_copy(update={"name": "thermal"}),
                 specs["rgb"].model_copy(update={"name": "rgb"})]
    export_model(late, sc, out / "fusion_late_tiny.onnx", output_names=("probs", "class_ids"))
    print(json.dumps(evaluate(root, out), indent=2))
    return 0


def fit_temperature(net: torch.nn.Module, x, y) -> float:  # type: ignore[no-untyped-def]
    """Temperature T minimizing the validation NLL of softmax(logits / T) (grid 0.25..8, log-spaced)."""
    import numpy as np
    import torch.nn.functional as F

    from rgbt.seg.zoo.train import IGNORE

    net.eval()
    with torch.no_grad():
        logits = torch.cat([net(torch.from_numpy(x[i:i + 8])) for i in range(0, len(x), 8)])
        target = torch.from_numpy(y)
        grid = np.exp(np.linspace(np.log(0.25), np.log(8.0), 41))
        nll = [float(F.cross_entropy(logits / t, target, ignore_index=IGNORE)) for t in grid]
    return round(float(grid[int(np.argmin(nll))]), 3)


def fit_late_fusion(nets: dict, val: dict, temps: dict, night: list[bool]) -> dict:
    """Grid search of late fusion's thermal reliability and RGB darkness half-point on the val split:
    the pair maximizing the mean of day and night mIoU (at model resolution)."""
    import numpy as np

    from rgbt.seg.fusion import darkness_weight, late_fuse, softmax
    from rgbt.seg.metrics import confusion, iou_from_confusion
    from rgbt.seg.zoo.train import IGNORE

    with torch.no_grad():
        lt = nets["thermal"](torch.from_numpy(val["thermal"][0])).numpy()
        lr = nets["rgb"](torch.from_numpy(val["rgb"][0])).numpy()
    xr, y = val["rgb"]
    y = np.where(y == IGNORE, 0, y)  # back to "unknown" (ignored by the metric)
    pts = [softmax(v / temps["thermal"]) for v in lt]
    prs = [softmax(v / temps["rgb"]) for v in lr]
    rgb_u8 = [np.clip(np.rint(v.transpose(1, 2, 0) * 255), 0, 255).astype(np.uint8) for v in xr]
    best = None
    for a in (1.0, 0.5, 0.25):
        for half in (0.003, 0.01, 0.03):
            score = []
            for cond in (False, True):
                cm = sum(confusion(y[i], np.argmax(late_fuse(pts[i], prs[i], darkness_weight(rgb_u8[i], half, 0.002), a), 0), 12)
                         for i in range(len(y)) if night[i] == cond)
                score.append(iou_from_confusion(cm).miou["all"])
            m = float(np.mean(score))
            if best is None or m > best[0]:
                best = (m, {"thermal_weight": a, "dark_half": half, "val_miou_day": round(score[0], 4),
                            "val_miou_night": round(score[1], 4)})
    return best[1]


def sim_pairs(root: Path, seconds: float, stride: int = 12) -> Path:
    """Simulated flights -> CART layout of pixel-aligned 960x600 pairs: ``thermal16`` = the thermal frame
    projected into the colour camera, ``rgb`` = colour, ``masks`` = the colour labels. Splits: train
    (seeds 1-4, day + night), val (5 day, 6 night: temperature calibration), test (101 day, 102 night)."""
    from rgbt.sim import SimOptions

    runs = [("lawnmower", 1, False, "train"), ("circle", 2, False, "train"), ("lawnmower", 3, True, "train"),
            ("circle", 4, True, "train"), ("circle", 5, False, "val"), ("lawnmower", 6, True, "val"),
            ("lawnmower", 101, False, "test"), ("circle", 102, True, "test")]
    opts = [SimOptions(trajectory=t, seed=sd, night=n, duration_s=seconds if sp == "train" else seconds / 2,
                       cameras=["thermal", "color"]) for t, sd, n, sp in runs]
    from rgbt.sim.seg_pairs import write_sim_pairs

    return write_sim_pairs(root, opts, [r[3] for r in runs], stride)


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

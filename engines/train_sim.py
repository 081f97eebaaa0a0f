#!/usr/bin/env python3
"""Train the demo thermal model on the simulator's labelled frames with `rgbt seg train` (dev-only:
needs the 'train' extra; ~6 min per variant on 2 CPU cores).

    python engines/train_sim.py --out engines/sim_thermal_seg.onnx [--runs runs/sim_thermal_seg]

Renders a CART-layout dataset with ``rgbt.sim.dataset.write_cart_dataset`` (640x512 thermal, exact
labels, SYNTHETIC): training flights seeds 1-4 (2 day, 2 night), validation flights seeds 51 (day)
and 52 (night), held-out test flights seeds 101 (day) and 102 (night): other seeds, other worlds.
Trains TinySeg at 192x240 through ``rgbt.seg.train.loop.train`` (the verb's code path, the
runtime's preprocessing) once per recipe of :data:`VARIANTS` (every augmentation without and with
thermal inversion - the day -> night study in BENCHMARKS.md - and flips only) and ships the
variant with the highest validation mIoU (day + night flights; the test flights only report). A
variant whose run folder already holds its model is reused. Prints the table of the variants on
the held-out day and night flights and writes it to RUNS/table.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rgbt.seg.evaluate import evaluate  # noqa: E402
from rgbt.seg.train.data import check_inputs  # noqa: E402
from rgbt.seg.train.loop import train  # noqa: E402
from rgbt.seg.train.options import AugmentOptions, TrainOptions  # noqa: E402

H, W = 192, 240  # model input: the 640x512 Boson frame resized by 0.375
#: the recipes compared (the day -> night study's two, and flips only: the simulator has no sensor
#: gain drift or FFC banding to be robust to, and a 35 k-parameter model has little capacity to spare)
VARIANTS = {
    "flip_only": AugmentOptions(scale_crop=False, gain_noise=False, banding=False),
    "no_inversion": AugmentOptions(),
    "inversion": AugmentOptions(inversion=True),
}
#: (trajectory, seed, night, split); seconds per split below
FLIGHTS = [("lawnmower", 1, False, "train"), ("circle", 2, False, "train"),
           ("lawnmower", 3, True, "train"), ("circle", 4, True, "train"),
           ("circle", 51, False, "val"), ("lawnmower", 52, True, "val"),
           ("lawnmower", 101, False, "test"), ("circle", 102, True, "test")]


def sim_dataset(root: Path, seconds: dict[str, float], stride: int) -> Path:
    """The flights of :data:`FLIGHTS` in CART layout (split files train/val/test, test_day, test_night)."""
    from rgbt.sim import SimOptions
    from rgbt.sim.dataset import write_cart_dataset

    opts = [SimOptions(trajectory=t, seed=s, night=n, duration_s=seconds[sp], cameras=["thermal"])
            for t, s, n, sp in FLIGHTS]
    write_cart_dataset(root, opts, stride, splits=[f[3] for f in FLIGHTS], with_rgb=False)
    test = (root / "test.txt").read_text().split()
    for tod in ("day", "night"):
        (root / f"test_{tod}.txt").write_text("".join(i + "\n" for i in test if f"_{tod}_" in i))
    return root


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "sim_thermal_seg.onnx"))
    ap.add_argument("--runs", default="runs/sim_thermal_seg", help="run folders of the variants + table.md")
    ap.add_argument("--keep-data", help="write the generated dataset here instead of a temporary folder")
    ap.add_argument("--seconds", type=float, default=12.0, help="simulated seconds per training flight")
    ap.add_argument("--eval-seconds", type=float, default=6.0, help="simulated seconds per val / test flight")
    ap.add_argument("--stride", type=int, default=12, help="keep every Nth thermal frame (60 Hz)")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory()
    root = Path(args.keep_data) if args.keep_data else Path(tmp.name) / "sim"
    if not (root / "train.txt").is_file():
        sim_dataset(root, {"train": args.seconds, "val": args.eval_seconds, "test": args.eval_seconds}, args.stride)
    runs = Path(args.runs)
    results = {}
    for name, augment in VARIANTS.items():
        opts = TrainOptions(dataset=str(root), model="tinyseg", out=str(runs / name / "sim_thermal_seg.onnx"),
                            run_dir=str(runs / name), height=H, width=W, epochs=args.epochs, batch=args.batch, lr=5e-3,
                            seed=args.seed, threads=args.threads, augment=augment)
        onnx = Path(opts.out)
        if onnx.is_file():  # trained by an earlier invocation (same folder): reused
            val = json.loads(onnx.with_suffix(".json").read_text())["training"]["val_miou"]["all"]
        else:
            r = train(opts, scans=check_inputs(opts, False))
            onnx, val = Path(r.onnx), r.val.miou["all"]
        test = {tod: evaluate(root, onnx, f"test_{tod}").miou["all"] for tod in ("day", "night")}
        results[name] = {"onnx": str(onnx), "val": val, "test": test}
    winner = max(results, key=lambda k: results[k]["val"])
    lines = ["| variant | augmentations | val mIoU (day + night flights) | test day mIoU | test night mIoU | shipped |",
             "|---|---|---|---|---|---|"]
    for name, r in results.items():
        on = [k for k, v in VARIANTS[name].model_dump().items() if v]
        lines.append(f"| {name} | {', '.join(on)} | {r['val']:.3f} | {r['test']['day']:.3f} | "
                     f"{r['test']['night']:.3f} | {'**yes**' if name == winner else 'no'} |")
    table = "\n".join(lines) + "\n"
    runs.mkdir(parents=True, exist_ok=True)
    (runs / "table.md").write_text(table)
    (runs / "results.json").write_text(json.dumps(results, indent=1, default=str) + "\n")
    print(table)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    src = Path(results[winner]["onnx"])
    for suffix in (".onnx", ".json", ".ref.npz"):
        shutil.copyfile(src.with_suffix(suffix), out.with_suffix(suffix))
    # the shipped sidecar names itself by its file and says which recipe made it
    sc_path = out.with_suffix(".json")
    sc = json.loads(sc_path.read_text())
    sc["name"], sc["onnx"], sc["reference"] = out.stem, out.name, out.with_suffix(".ref.npz").name
    sc["weights"] += (f". Demo model; not validated on real imagery. Made by `python engines/train_sim.py` "
                      f"(variant '{winner}' of {len(results)}, chosen by val mIoU; table in BENCHMARKS.md)")
    sc["training"]["recipe"] = (f"python engines/train_sim.py --seconds {args.seconds:g} --eval-seconds "
                                f"{args.eval_seconds:g} --stride {args.stride} --epochs {args.epochs} --batch "
                                f"{args.batch} --seed {args.seed}")
    # no paths of the machine that trained it: the generated dataset and run folders by role
    sc["training"]["command"] = sc["training"]["command"].replace(str(root), "SIM_DATA").replace(str(runs), "RUNS")
    sc["training"]["variants"] = {k: {"val_miou": v["val"], "test_miou": v["test"]} for k, v in results.items()}
    sc_path.write_text(json.dumps(sc, indent=2) + "\n")
    print(f"shipped {winner} -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python3
"""Day -> night study on the simulator: train on day flights, test on night flights, with and without
the thermal-inversion augmentation, over several seeds (needs the 'train' extra; synthetic data).

    python scripts/seg_day_night.py --out runs/day_night [--model tinyseg --size 64x96 --epochs 6 --seeds 0 1 2]

Renders a small CART-layout dataset (thermal 160x128, rgbt.sim.small_dataset): training = two day
flights, val = one day flight, test = two night flights and one day flight (other seeds, so other
worlds). Each (augmentation, seed) is one `rgbt seg train` run (the same code path as the verb);
each exported model is scored by `rgbt seg eval`'s function on test_night and test_day. Writes
OUT/table.md and OUT/results.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rgbt.seg.evaluate import evaluate  # noqa: E402
from rgbt.seg.train.data import check_inputs  # noqa: E402
from rgbt.seg.train.options import AugmentOptions, TrainOptions, command_line  # noqa: E402
from rgbt.sim.small_dataset import small_sim_dataset  # noqa: E402

RUNS = [("lawnmower", 1, False, 6.0, "train"), ("circle", 2, False, 6.0, "train"),
        ("lawnmower", 3, False, 3.0, "val"),
        ("lawnmower", 11, True, 3.0, "test"), ("circle", 12, True, 3.0, "test"), ("circle", 13, False, 3.0, "test")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="runs/day_night")
    ap.add_argument("--model", default="tinyseg")
    ap.add_argument("--size", default="64x96")
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=5e-3)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    out = Path(args.out)
    data = out / "data"
    if not (data / "runs.json").is_file():
        small_sim_dataset(data, RUNS)
    h, w = (int(v) for v in args.size.split("x"))
    rows = []
    for inversion in (False, True):
        for seed in args.seeds:
            name = f"{args.model}_{'inv' if inversion else 'noinv'}_s{seed}"
            opts = TrainOptions(dataset=str(data), model=args.model, out=str(out / "models" / f"{name}.onnx"),
                                run_dir=str(out / "runs" / name), height=h, width=w, epochs=args.epochs,
                                batch=args.batch, lr=args.lr, seed=seed, threads=args.threads,
                                augment=AugmentOptions(inversion=inversion))
            res_path = out / "runs" / name / "result.json"
            if not res_path.is_file():
                from rgbt.seg.train.loop import train

                resume = (out / "runs" / name / "last.pt").is_file()
                r = train(opts, resume=resume, scans=check_inputs(opts, resume))
                scores = {tod: evaluate(data, r.onnx, f"test_{tod}").miou for tod in ("night", "day")}
                res_path.write_text(json.dumps({"name": name, "inversion": inversion, "seed": seed,
                                                "val": r.val.miou, "test": scores,
                                                "command": command_line(opts)}, indent=1))
            rows.append(json.loads(res_path.read_text()))
    lines = ["| inversion aug. | seed | val (day) mIoU | test day mIoU | test night mIoU |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {'yes' if r['inversion'] else 'no'} | {r['seed']} | {r['val']['all']:.3f} | "
                     f"{r['test']['day']['all']:.3f} | {r['test']['night']['all']:.3f} |")
    for inv in (False, True):
        sel = [r for r in rows if r["inversion"] == inv]
        mean = {k: statistics.mean(r["test"][k]["all"] for r in sel) for k in ("day", "night")}
        lines.append(f"| {'yes' if inv else 'no'} | mean of {len(sel)} | {statistics.mean(r['val']['all'] for r in sel):.3f} "
                     f"| {mean['day']:.3f} | {mean['night']:.3f} |")
    table = "\n".join(lines) + "\n"
    (out / "table.md").write_text(table)
    (out / "results.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python3
"""Train the demo thermal model on the simulator's labelled frames (dev-only: needs torch; minutes on CPU).

    python engines/train_sim.py --out engines/sim_thermal_seg.onnx

Generates a CART-layout dataset with ``rgbt.sim.dataset.write_cart_dataset`` (day and night
flights, different seeds for training and held-out test), trains TinySeg on the training flights
at the model input size (frames normalized by ``rgbt.seg.preprocess.prepare``, the runtime's own
function), exports ONNX + sidecar ("trained on synthetic data") + PyTorch reference, and prints
``rgbt seg eval`` of the held-out day and night flights. ``--dataset DIR`` trains on an existing
CART-layout set instead (its ``train`` split). ``--procedural`` uses rgbt.seg.synthetic scenes.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from rgbt.seg.sidecar import InputSpec  # noqa: E402
from rgbt.seg.zoo.export import export_model, make_sidecar  # noqa: E402
from rgbt.seg.zoo.models import TinySeg, WithArgmax  # noqa: E402
from rgbt.seg.zoo.train import load_arrays, train  # noqa: E402

H, W = 256, 320  # model input: the 640x512 Boson frame resized by 0.5


def sim_dataset(root: Path, seconds: float, stride: int, seeds: dict[str, list[int]]) -> Path:
    """Write train/test flights (day + night) with the simulator; split files train.txt / test_{day,night}.txt."""
    from rgbt.seg.dataset import list_items
    from rgbt.sim import SimOptions
    from rgbt.sim.dataset import write_cart_dataset

    splits: dict[str, list[str]] = {}
    for split, seed_list in seeds.items():
        for night in (False, True):
            opts = [SimOptions(duration_s=seconds, seed=s, night=night) for s in seed_list]
            sub = root / f"{split}_{'night' if night else 'day'}"
            write_cart_dataset(sub, opts, stride)
            items = [f"{sub.name}/{i}" for i in list_items(sub)]
            splits.setdefault(split, []).extend(items)
            splits[f"{split}_{'night' if night else 'day'}"] = items
    # one CART root: move PLACE/TRAJ under root via symlinks-free layout: sub-roots are PLACE dirs
    for name, items in splits.items():
        (root / f"{name}.txt").write_text("\n".join(_flatten(root, i) for i in items) + "\n")
    return root


def _flatten(root: Path, item: str) -> str:
    """``sub/PLACE/TRAJ/N`` -> move ``sub/PLACE`` to ``root/sub__PLACE`` once; return the CART item."""
    sub, place, traj, n = item.split("/")
    dst = root / f"{sub}__{place}"
    if not dst.exists():
        (root / sub / place).rename(dst)
    return f"{sub}__{place}/{traj}/{n}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "sim_thermal_seg.onnx"))
    ap.add_argument("--dataset", help="existing CART-layout dataset (uses its train split; test_day/test_night if present)")
    ap.add_argument("--procedural", action="store_true", help="use rgbt.seg.synthetic scenes instead of rgbt.sim")
    ap.add_argument("--seconds", type=float, default=20.0, help="simulated seconds per flight")
    ap.add_argument("--stride", type=int, default=6, help="keep every Nth thermal frame")
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep-data", help="write the generated dataset here instead of a temporary folder")
    args = ap.parse_args()
    torch.set_num_threads(2)
    tmp = tempfile.TemporaryDirectory()
    root = Path(args.keep_data) if args.keep_data else Path(tmp.name)
    if args.dataset:
        root, src = Path(args.dataset), f"CART-layout dataset {Path(args.dataset).name}"
    elif args.procedural:
        from rgbt.seg.synthetic import write_dataset

        write_dataset(root, 120, 512, 640, seed=args.seed)
        src = "rgbt.seg.synthetic procedural scenes (stand-in), 120 day + 120 night at 640x512"
    else:
        sim_dataset(root, args.seconds, args.stride, {"train": [1, 2, 3], "test": [101]})
        src = (f"rgbt.sim flights, {args.seconds:g} s each, every {args.stride}th thermal frame; "
               "train seeds 1-3, held-out test seed 101; day + night")
    from rgbt.seg.dataset import list_items

    spec = InputSpec(name="input", modality="thermal", channels=1, height=H, width=W)
    x, y = load_arrays(root, list_items(root, "train"), spec, "resize")
    torch.manual_seed(args.seed)
    net = TinySeg(1, 12)
    log = train(net, x, y, epochs=args.epochs, seed=args.seed)
    out = Path(args.out)
    sc = make_sidecar(out.stem, "tinyseg", 1, H, W,
                      f"trained on synthetic data: {src}. Demo model; not validated on real imagery",
                      fit="resize", synthetic=True,
                      training=log | {"command": "python engines/train_sim.py " + " ".join(sys.argv[1:]), "data": src})
    sc.inputs = [spec]
    export_model(WithArgmax(net), sc, out)
    from rgbt.seg.evaluate import evaluate

    res = {}
    for split in ("test_day", "test_night", "test"):
        if (root / f"{split}.txt").is_file():
            r = evaluate(root, out, split)
            res[split] = {"miou": r.miou, "per_class": r.per_class, "n_images": r.n_images}
    print(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

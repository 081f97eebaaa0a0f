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

H, W = 192, 240  # model input: the 640x512 Boson frame resized by 0.375


def sim_dataset(root: Path, seconds: float, test_seconds: float, stride: int) -> Path:
    """Simulated flights in CART layout: training runs and held-out test runs (other seeds, so other
    worlds), day and night; split files train.txt, test.txt, test_day.txt, test_night.txt."""
    from rgbt.sim import SimOptions
    from rgbt.sim.dataset import write_cart_dataset

    runs = [  # (trajectory, seed, night, split)
        ("lawnmower", 1, False, "train"), ("circle", 2, False, "train"),
        ("lawnmower", 3, True, "train"), ("circle", 4, True, "train"),
        ("lawnmower", 101, False, "test"), ("circle", 102, True, "test"),
    ]
    opts = [SimOptions(trajectory=t, seed=s, night=n, duration_s=seconds if sp == "train" else test_seconds,
                       cameras=["thermal"]) for t, s, n, sp in runs]
    write_cart_dataset(root, opts, stride, splits=[r[3] for r in runs], with_rgb=False)
    test = (root / "test.txt").read_text().split()
    for tod in ("day", "night"):
        (root / f"test_{tod}.txt").write_text("\n".join(i for i in test if f"_{tod}_" in i) + "\n")
    return root


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "sim_thermal_seg.onnx"))
    ap.add_argument("--dataset", help="existing CART-layout dataset (uses its train split; test_day/test_night if present)")
    ap.add_argument("--procedural", action="store_true", help="use rgbt.seg.synthetic scenes instead of rgbt.sim")
    ap.add_argument("--n", type=int, default=60, help="--procedural: frames per condition")
    ap.add_argument("--seconds", type=float, default=12.0, help="simulated seconds per training flight")
    ap.add_argument("--test-seconds", type=float, default=6.0, help="simulated seconds per held-out flight")
    ap.add_argument("--stride", type=int, default=12, help="keep every Nth thermal frame (60 Hz)")
    ap.add_argument("--epochs", type=int, default=10)
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

        write_dataset(root, args.n, 512, 640, seed=args.seed)
        src = f"rgbt.seg.synthetic procedural scenes (stand-in), {args.n} day + {args.n} night at 640x512"
    else:
        sim_dataset(root, args.seconds, args.test_seconds, args.stride)
        src = (f"rgbt.sim flights (thermal, CART layout via rgbt.sim.dataset.write_cart_dataset): training "
               f"lawnmower/circle seeds 1-4 (2 day, 2 night, {args.seconds:g} s each), held-out test seeds "
               f"101 (day) and 102 (night), {args.test_seconds:g} s each; every {args.stride}th thermal frame")
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

"""``rgbt seg``: segmentation of 16-bit thermal frames and evaluation on CART-layout datasets."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rgbt.seg.metrics import IoUResult
    from rgbt.seg.train.options import TrainOptions
from rgbt.progress import ProgressBars


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("seg", help="thermal segmentation: run a model on a frame, evaluate mIoU on a dataset")
    s = p.add_subparsers(dest="seg_cmd", metavar="CMD")

    ev = s.add_parser("eval", help="per-class IoU and stuff/object/all mIoU on a CART-layout dataset")
    ev.add_argument("--dataset", required=True, help="CART-layout root (PLACE/TRAJ/{thermal16,masks})")
    ev.add_argument("--engine", required=True, help="ONNX model (sidecar NAME.json beside it)")
    ev.add_argument("--split", help="split file (lines PLACE/TRAJ/NNNNNN) or its name in the dataset root")
    ev.add_argument("--backend", default="onnxruntime", help="onnxruntime | ort-cuda | ort-tensorrt | tensorrt")
    ev.add_argument("--resize-first", action="store_true",
                    help="resize each frame to the model's input before normalizing it (the stage option)")
    ev.add_argument("--json", action="store_true", help="print JSON")
    ev.add_argument("--confusion", action="store_true", help="also print the confusion matrix (table mode)")
    ev.set_defaults(func=_eval)

    run = s.add_parser("run", help="class-id PNG (uint8, CART ids) for one 16-bit thermal frame")
    run.add_argument("--engine", required=True)
    run.add_argument("--backend", default="onnxruntime")
    run.add_argument("--color", help="also write the coloured mask (RGB PNG) here")
    run.add_argument("--overlay", help="also write an overlay on the normalized frame here")
    run.add_argument("input", help="16-bit thermal PNG")
    run.add_argument("output", help="class-id PNG to write")
    run.set_defaults(func=_run)
    fe = s.add_parser("eval-fusion", help="thermal-only vs RGB-only vs fused mIoU on aligned RGB-T pairs")
    fe.add_argument("--dataset", required=True, help="CART-layout root with aligned rgb/ frames")
    fe.add_argument("--split", help="split file or name")
    fe.add_argument("--thermal", required=True, help="thermal ONNX (logits output)")
    fe.add_argument("--rgb", required=True, help="RGB ONNX (logits output)")
    fe.add_argument("--early", help="4-channel early-fusion ONNX")
    fe.add_argument("--graph", help="two-input fusion ONNX")
    fe.add_argument("--json", action="store_true")
    fe.set_defaults(func=_eval_fusion)
    register_train(s)


def register_train(s: argparse._SubParsersAction) -> None:
    from rgbt.seg.train.options import MODEL_NAMES

    tr = s.add_parser(
        "train", help="train a thermal model on a CART-layout dataset, export ONNX + sidecar (needs rgbt[train])",
        description="Train a thermal segmentation model on a CART-layout dataset (PLACE/TRAJ/{thermal16,masks}) "
                    "with the runtime's own preprocessing, validate mIoU every epoch, and export the best epoch "
                    "to ONNX (opset 17, in-graph argmax) with its sidecar. Needs the 'train' extra (torch); "
                    "nothing is downloaded: --pretrained only reads weights already on this machine (tests and CI "
                    "never fetch any).")
    tr.add_argument("--dataset", help="CART-layout root")
    tr.add_argument("--split", default="train", help="training split file (lines PLACE/TRAJ/NNNNNN; CART's "
                    "splits/... files work) or its name in the dataset root (default: train)")
    tr.add_argument("--val", default="val", help="validation split file or name (default: val)")
    tr.add_argument("--model", help=f"one of: {', '.join(MODEL_NAMES)}")
    tr.add_argument(
        "--out", help="ONNX to write (sidecar NAME.json and NAME.ref.npz beside it), e.g. engines/NAME.onnx"
    )
    tr.add_argument("--run-dir", help="run folder: config, log, history, curves.png, last/best checkpoints, "
                    "the exported model (default: runs/seg/NAME)")
    tr.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR from its last checkpoint "
                    "(its config.json gives every other option)")
    tr.add_argument("--size", default="512x640", help="model input HxW, multiples of 32 (tinyseg: 8) (default 512x640)")
    tr.add_argument("--fit", choices=["resize", "pad"], default="resize", help="how frames fit the input")
    tr.add_argument("--epochs", type=int, default=30)
    tr.add_argument("--batch", type=int, default=8)
    tr.add_argument("--lr", type=float, default=2e-3, help="AdamW peak learning rate")
    tr.add_argument("--weight-decay", type=float, default=1e-4)
    tr.add_argument("--schedule", choices=["cosine", "poly"], default="cosine")
    tr.add_argument("--class-weights", choices=["sqrt_inverse", "none"], default="sqrt_inverse",
                    help="cross-entropy class weights from the training labels (default: 1/sqrt(pixel frequency))")
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    tr.add_argument("--no-amp", action="store_true", help="no mixed precision (AMP is used on CUDA only)")
    tr.add_argument("--workers", type=int, default=0, help="data loader processes (default 0: in-process)")
    tr.add_argument("--threads", type=int, help="torch CPU threads")
    tr.add_argument("--pretrained", metavar="FILE|imagenet",
                    help="initial weights, never downloaded: 'imagenet' takes the ImageNet encoder the model library "
                    "already cached on this machine (deeplabv3plus_r18: torchvision resnet18, lraspp_mbv3l: "
                    "torchvision mobilenet_v3_large, both in $TORCH_HOME/hub/checkpoints; efficientvit_b0: timm "
                    "efficientvit_b0.r224_in1k in the Hugging Face cache; fastscnn and tinyseg have none); FILE: "
                    "such a library file, or an rgbt state dict / run checkpoint (matched by name and shape)")
    for name, what in (("flip", "horizontal flips"), ("scale-crop", "random zoom/crop"),
                       ("gain-noise", "thermal gain/offset and noise"), ("banding", "FFC-like banding")):
        tr.add_argument(f"--no-{name}", action="store_true", help=f"no {what} augmentation")
    tr.add_argument("--inversion", action="store_true", help="thermal-inversion augmentation (day -> night)")
    tr.add_argument("--stop-after", type=int, metavar="N", help="stop after N epochs of this invocation, as if "
                    "interrupted (continue with --resume)")
    tr.add_argument("--json", action="store_true", help="print the result as JSON")
    tr.set_defaults(func=_train)


def train_options(args: argparse.Namespace) -> TrainOptions:
    """The TrainOptions of the command line (``--resume``: the run's saved config)."""
    import json

    from rgbt.errors import ConfigError, ModelError
    from rgbt.seg.train.options import AugmentOptions, TrainOptions

    if args.resume:
        cfg = Path(args.resume) / "config.json"
        if not cfg.is_file():
            raise ModelError(f"{cfg}: not found (--resume needs a run folder of rgbt seg train)")
        data = json.loads(cfg.read_text())
        data["stop_after"] = args.stop_after
        return TrainOptions.model_validate(data)
    for flag in ("dataset", "model", "out"):
        if not getattr(args, flag):
            raise ModelError(f"--{flag} is required (or --resume RUN_DIR)")
    try:
        h, w = (int(v) for v in args.size.lower().split("x"))
    except ValueError:
        raise ConfigError("--size", "size", args.size, "HxW, e.g. 512x640") from None
    out = Path(args.out)
    aug = AugmentOptions(flip=not args.no_flip, scale_crop=not args.no_scale_crop, gain_noise=not args.no_gain_noise,
                         banding=not args.no_banding, inversion=args.inversion)
    return TrainOptions(dataset=args.dataset, split=args.split, val=args.val, model=args.model, out=str(out),
                        run_dir=args.run_dir or str(Path("runs") / "seg" / out.stem), height=h, width=w, fit=args.fit,
                        epochs=args.epochs, batch=args.batch, lr=args.lr, weight_decay=args.weight_decay,
                        schedule=args.schedule, class_weights=args.class_weights, seed=args.seed, device=args.device,
                        amp=not args.no_amp, workers=args.workers, threads=args.threads, pretrained=args.pretrained,
                        augment=aug, stop_after=args.stop_after)


def _train(args: argparse.Namespace) -> int:
    import sys

    from pydantic import ValidationError

    from rgbt.errors import ModelError

    try:
        opts = train_options(args)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ModelError(
            f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']} (got {first.get('input')!r})"
        ) from None
    from rgbt.seg.train.data import check_inputs

    scans = check_inputs(opts, bool(args.resume))  # bad data is reported before torch loads
    from rgbt.seg.train.loop import train

    log = (lambda line: print(line, file=sys.stderr)) if args.json else print
    with ProgressBars(enabled=not args.json) as bars:
        res = train(opts, resume=bool(args.resume), log=log, progress=bars, scans=scans)
    if args.json:
        from rgbt.output import print_json

        print_json({"run_dir": str(res.run_dir), "onnx": str(res.onnx) if res.onnx else None,
                    "best_epoch": res.best_epoch, "epochs_done": len(res.history),
                    "val": res.val.to_json() if res.val else None, "history": res.history})
    elif res.val is not None:
        print_eval_table(res.val, f"{Path(opts.out).stem} (val, epoch {res.best_epoch})")
    return 0


def _eval_fusion(args: argparse.Namespace) -> int:
    from rgbt.output import print_json, print_table
    from rgbt.seg.evaluate import evaluate_fusion
    from rgbt.seg.fusion import FusionOptions, FusionStage
    from rgbt.seg.stage import SegmentationStage, SegStageOptions

    stages: dict = {"thermal": SegmentationStage(SegStageOptions(args.thermal, color=False)),
                    "rgb": SegmentationStage(SegStageOptions(args.rgb, color=False)),
                    "late": FusionStage(FusionOptions(mode="late", thermal=args.thermal, rgb=args.rgb))}
    if args.early:
        stages["early"] = FusionStage(FusionOptions(mode="early", model=args.early))
    if args.graph:
        stages["late_graph"] = FusionStage(FusionOptions(mode="graph", model=args.graph))
    with ProgressBars(enabled=not args.json) as bars:
        res = evaluate_fusion(args.dataset, stages, args.split, progress=bars)
    if args.json:
        print_json({k: {"per_class": v.per_class, "miou": v.miou, "n_images": v.n_images} for k, v in res.items()})
    else:
        print_table("RGB-T fusion mIoU (%)", ["mode", "stuff", "object", "all"],
                    [[k, *["-" if v.miou[m] is None else f"{100 * v.miou[m]:.1f}" for m in ("stuff", "object", "all")]]
                     for k, v in res.items()])
    return 0


def _eval(args: argparse.Namespace) -> int:
    from rgbt.seg.evaluate import evaluate

    with ProgressBars(enabled=not args.json) as bars:
        res = evaluate(args.dataset, args.engine, args.split, args.backend, progress=bars,
                       resize_first=args.resize_first)
    if args.json:
        from rgbt.output import print_json

        print_json(res.to_json())
        return 0
    print_eval_table(res, Path(args.engine).stem, args.confusion)
    return 0


def print_eval_table(res: IoUResult, model_name: str, show_confusion: bool = False) -> None:
    """The CART paper's Table 2 layout: one row per model, per-class IoU columns, then mIoU."""
    from rgbt.output import print_table

    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{100 * v:.1f}"

    names = list(res.per_class)
    cols = ["model", *names, "mIoU stuff", "mIoU object", "mIoU all"]
    row = [model_name, *[fmt(res.per_class[n]) for n in names], fmt(res.miou["stuff"]), fmt(res.miou["object"]),
           fmt(res.miou["all"])]
    print_table(f"IoU (%) on {res.n_images} images (unknown/background ignored)", cols, [row])
    if show_confusion:
        cm = res.confusion
        print_table("confusion (rows: ground truth, columns: prediction; pixels)", ["gt \\ pred", *res.class_names],
                    [[res.class_names[i], *[str(v) for v in cm[i]]] for i in range(cm.shape[0])])


def _run(args: argparse.Namespace) -> int:
    import cv2

    from rgbt.seg.dataset import read_png
    from rgbt.seg.stage import SegmentationStage, SegStageOptions

    # The model first: a bad --engine is named even when the frame is bad or missing too.
    stage = SegmentationStage(SegStageOptions(args.engine, args.backend, color=bool(args.color),
                                              overlay=bool(args.overlay)))
    frame = read_png(Path(args.input), __import__("numpy").uint16)
    res = stage.process(frame)
    from rgbt.image.io import write_image

    for path, img in ((args.output, res.class_ids), (args.color, res.color), (args.overlay, res.overlay)):
        if path and img is not None:  # colour and overlay are made when their path is given
            out = cv2.cvtColor(img, cv2.COLOR_RGB2BGR) if img.ndim == 3 else img
            write_image(path, out)
    return 0

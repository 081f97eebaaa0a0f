"""``rgbt seg``: segmentation of 16-bit thermal frames and evaluation on CART-layout datasets."""

from __future__ import annotations

import argparse
from pathlib import Path



def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("seg", help="thermal segmentation: run a model on a frame, evaluate mIoU on a dataset")
    s = p.add_subparsers(dest="seg_cmd", metavar="CMD")

    ev = s.add_parser("eval", help="per-class IoU and stuff/object/all mIoU on a CART-layout dataset")
    ev.add_argument("--dataset", required=True, help="CART-layout root (PLACE/TRAJ/{thermal16,masks})")
    ev.add_argument("--engine", required=True, help="ONNX model (sidecar NAME.json beside it)")
    ev.add_argument("--split", help="split file (lines PLACE/TRAJ/NNNNNN) or its name in the dataset root")
    ev.add_argument("--backend", default="onnxruntime", help="onnxruntime | ort-cuda | ort-tensorrt | tensorrt")
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


def _eval_fusion(args: argparse.Namespace) -> int:
    from rgbt.cli.output import print_json, print_table
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
    res = evaluate_fusion(args.dataset, stages, args.split, progress=not args.json)
    if args.json:
        print_json({k: {"per_class": v.per_class, "miou": v.miou, "n_images": v.n_images} for k, v in res.items()})
    else:
        print_table("RGB-T fusion mIoU (%)", ["mode", "stuff", "object", "all"],
                    [[k, *["-" if v.miou[m] is None else f"{100 * v.miou[m]:.1f}" for m in ("stuff", "object", "all")]]
                     for k, v in res.items()])
    return 0


def _eval(args: argparse.Namespace) -> int:
    from rgbt.seg.evaluate import evaluate

    res = evaluate(args.dataset, args.engine, args.split, args.backend, progress=not args.json)
    if args.json:
        from rgbt.cli.output import print_json

        print_json(res.to_json())
        return 0
    print_eval_table(res, Path(args.engine).stem, args.confusion)
    return 0


def print_eval_table(res, model_name: str, show_confusion: bool = False) -> None:  # type: ignore[no-untyped-def]
    """The CART paper's Table 2 layout: one row per model, per-class IoU columns, then mIoU."""
    from rgbt.cli.output import print_table

    def fmt(v):  # type: ignore[no-untyped-def]
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

    frame = read_png(Path(args.input), __import__("numpy").uint16)
    stage = SegmentationStage(SegStageOptions(args.engine, args.backend, color=bool(args.color),
                                              overlay=bool(args.overlay)))
    res = stage.process(frame)
    from rgbt.image.io import write_image

    for path, img in ((args.output, res.class_ids), (args.color, res.color), (args.overlay, res.overlay)):
        if path:
            out = cv2.cvtColor(img, cv2.COLOR_RGB2BGR) if img.ndim == 3 else img
            write_image(path, out)
    return 0

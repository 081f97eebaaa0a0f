"""``rgbt engine``: prebuild and inspect TensorRT engines (nodes never build unless told to)."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("engine", help="TensorRT engines: build ahead of flight, list the cache")
    s = p.add_subparsers(dest="engine_cmd", metavar="CMD")
    b = s.add_parser("build", help="build (or reuse) the TensorRT engine of ONNX models for this GPU")
    b.add_argument("models", nargs="*", help="ONNX files (default: every model in engines/)")
    b.add_argument("--precision", default="fp16", choices=["fp16", "fp32"])
    b.add_argument("--backend", default="tensorrt", choices=["tensorrt", "ort-tensorrt"])
    b.add_argument("--cache-dir", help="engine cache (default: $RGBT_CACHE/engines)")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=_build)
    ls = s.add_parser("list", help="list cached engines and their keys")
    ls.add_argument("--cache-dir")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=_list)


def _models(args: argparse.Namespace) -> list[Path]:
    from rgbt.paths import ENGINES_DIR

    return [Path(m) for m in args.models] if args.models else sorted(ENGINES_DIR.glob("*.onnx"))


def _build(args: argparse.Namespace) -> int:
    from rgbt.output import print_json, print_table
    from rgbt.seg.backend import load_backend

    out = []
    for m in _models(args):
        if args.backend == "tensorrt":
            be = load_backend(m, "tensorrt", precision=args.precision, allow_build=True, cache_dir=args.cache_dir)
        else:
            be = load_backend(m, "ort-tensorrt", fp16=args.precision == "fp16", cache_dir=args.cache_dir)
            be.warmup(1)  # the TensorRT EP builds on the first run
        out.append(be.describe())
    if args.json:
        print_json(out)
    else:
        print_table(
            "engines",
            ["model", "backend", "precision", "engine / providers"],
            [
                [Path(d["model"]).name, d["backend"], d.get("precision"), d.get("engine") or d.get("providers_active")]
                for d in out
            ],
        )
    return 0


def _list(args: argparse.Namespace) -> int:
    import json

    from rgbt.output import print_json, print_table
    from rgbt.paths import cache_dir

    root = Path(args.cache_dir) if args.cache_dir else cache_dir() / "engines"
    rows = []
    for meta in sorted(root.glob("*.json")):
        try:
            d = json.loads(meta.read_text())
        except json.JSONDecodeError:
            continue
        d["engine"] = str(meta.with_suffix(".engine"))
        rows.append(d)
    if args.json:
        print_json(rows)
    else:
        print_table(f"engine cache {root}", ["engine", "trt", "gpu", "cc", "precision", "shapes"],
                    [[Path(r["engine"]).name, r.get("trt_version"), r.get("gpu_name"), r.get("compute_capability"),
                      r.get("precision"), r.get("input_shapes")] for r in rows])
    return 0

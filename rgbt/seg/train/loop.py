"""The training loop of ``rgbt seg train`` (needs torch: the ``train`` extra).

AdamW, class-weighted cross-entropy (CART's unknown / background ignored), a per-step cosine or
poly schedule, AMP on CUDA, validation mIoU after every epoch computed exactly as ``rgbt seg eval``
does (model-size argmax mapped back to the frame, confusion over the full-size label), a
checkpoint after every epoch (``last.pt``; ``best.pt`` at the best val mIoU), a loss / mIoU
curve, and at the end the best checkpoint exported to ONNX with its sidecar.

Run folder: ``config.json`` (options), ``log.txt``, ``history.json`` (one row per epoch),
``curves.png``, ``last.pt``, ``best.pt``, ``NAME.onnx`` + ``NAME.json`` + ``NAME.ref.npz``.
"""

from __future__ import annotations

import json
import math
import shutil
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from rgbt.errors import MissingCapability
from rgbt.progress import Progress
from rgbt.seg.classes import CART_CLASSES, IGNORE_IDS, OBJECT_IDS
from rgbt.seg.metrics import IoUResult, confusion, iou_from_confusion
from rgbt.seg.preprocess import fit_mode, unfit_ids
from rgbt.seg.sidecar import InputSpec
from rgbt.seg.train.data import CLASS_NAMES, IGNORE, SplitScan, TrainSamples, ValSamples, check_inputs, class_weights
from rgbt.seg.train.options import MODEL_NAMES, TrainOptions, command_line
from rgbt.seg.train.pretrained import load_pretrained
from rgbt.seg.zoo.models import ARCHITECTURES, WithArgmax


@dataclass
class TrainResult:
    run_dir: Path
    history: list[dict]
    best_epoch: int
    val: IoUResult | None  # best epoch's validation result
    onnx: Path | None = None  # None when stopped early (``stop_after``)
    ort_val_miou: float | None = None
    extra: dict = field(default_factory=dict)


def build_net(model: str, channels: int = 1, num_classes: int = len(CART_CLASSES)) -> torch.nn.Module:
    return ARCHITECTURES[MODEL_NAMES[model]](channels, num_classes)


def lr_factor(step: int, total: int, schedule: str) -> float:
    """Learning-rate multiplier at ``step`` of ``total`` (cosine to 0, or poly with power 0.9)."""
    t = min(step / max(total, 1), 1.0)
    return 0.5 * (1.0 + math.cos(math.pi * t)) if schedule == "cosine" else (1.0 - t) ** 0.9


def _collate_val(batch: list[tuple[np.ndarray, np.ndarray]]) -> tuple[torch.Tensor, list[np.ndarray]]:
    return torch.from_numpy(np.stack([x for x, _ in batch])), [m for _, m in batch]


def validate(net: torch.nn.Module, loader: Iterable[tuple[torch.Tensor, list[np.ndarray]]], spec: InputSpec,
             fit_kind: str, device: torch.device,
             amp: bool) -> IoUResult:
    """Per-class IoU / mIoU as ``rgbt seg eval`` computes it (argmax at model size, back to the frame)."""
    k = len(CART_CLASSES)
    cm = np.zeros((k, k), np.int64)
    n = 0
    net.eval()
    with torch.no_grad(), torch.autocast(device_type=device.type, enabled=amp):
        for x, masks in loader:
            ids = torch.argmax(net(x.to(device)), 1).to(torch.uint8).cpu().numpy()
            for pred, mask in zip(ids, masks, strict=False):
                fit = fit_mode(fit_kind, mask.shape, (spec.height, spec.width))
                cm += confusion(mask, unfit_ids(pred, fit), k, IGNORE_IDS)
                n += 1
    return iou_from_confusion(cm, CLASS_NAMES, IGNORE_IDS, OBJECT_IDS, n)


def _resolve_device(name: str) -> torch.device:
    if name == "cuda" and not torch.cuda.is_available():
        raise MissingCapability("CUDA (torch.cuda.is_available() is False)", hint="train with --device cpu")
    return torch.device(name)


def train(opts: TrainOptions, resume: bool = False, log: Callable[[str], None] = print,
          progress: Progress | None = None, scans: tuple[SplitScan, SplitScan] | None = None) -> TrainResult:
    """Run (or resume) training per ``opts``; writes the run folder and, when all epochs are done,
    the exported ONNX (to ``RUN/NAME.onnx`` and ``opts.out``). ``scans``: :func:`check_inputs` already done.
    ``progress`` is told of the epochs and of each epoch's batches (with the running loss)."""
    train_scan, val_scan = scans or check_inputs(opts, resume)
    run = Path(opts.run_dir)
    ckpt_path = run / "last.pt"
    run.mkdir(parents=True, exist_ok=True)
    (run / "config.json").write_text(json.dumps(opts.model_dump(), indent=2) + "\n")
    logfile = open(run / "log.txt", "a")

    def say(line: str) -> None:
        logfile.write(line + "\n")
        logfile.flush()
        log(line)

    if opts.threads:
        torch.set_num_threads(opts.threads)
    device = _resolve_device(opts.device)
    amp = opts.amp and device.type == "cuda"
    spec = InputSpec(name="input", modality="thermal", channels=1, height=opts.height, width=opts.width)
    train_ds = TrainSamples(opts.dataset, train_scan.items, spec, opts.fit, IGNORE_IDS, opts.augment, opts.seed)
    val_ds = ValSamples(opts.dataset, val_scan.items, spec, opts.fit)
    # the samples are map-style datasets (__len__, __getitem__) without torch's Dataset base class
    val_loader: torch.utils.data.DataLoader = torch.utils.data.DataLoader(
        val_ds, batch_size=opts.batch, shuffle=False,  # type: ignore[arg-type]
        num_workers=opts.workers, collate_fn=_collate_val)
    torch.manual_seed(opts.seed)
    net = build_net(opts.model).to(device)
    weights = class_weights(train_scan.counts, IGNORE_IDS) if opts.class_weights == "sqrt_inverse" else None
    wt = torch.from_numpy(weights).to(device) if weights is not None else None
    opt = torch.optim.AdamW(net.parameters(), lr=opts.lr, weight_decay=opts.weight_decay)
    steps_per_epoch = math.ceil(len(train_ds) / opts.batch)
    total = steps_per_epoch * opts.epochs
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, total, opts.schedule))
    scaler = torch.amp.GradScaler(device.type, enabled=amp)
    history: list[dict] = []
    best: dict[str, Any] = {"epoch": 0, "miou": -1.0}
    start = 0
    if resume:
        ck = torch.load(ckpt_path, map_location=device, weights_only=False)
        net.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        sched.load_state_dict(ck["scheduler"])
        scaler.load_state_dict(ck["scaler"])
        history, best, start = ck["history"], ck["best"], ck["epoch"]
        say(f"resumed from {ckpt_path.name}: epoch {start}/{opts.epochs} done")
    elif opts.pretrained:
        say(load_pretrained(net, opts.pretrained, opts.model))
    say(f"{opts.model}: {sum(p.numel() for p in net.parameters())} params, {len(train_ds)} train / "
        f"{len(val_ds)} val frames, input {opts.height}x{opts.width} ({opts.fit}), device {device.type}"
        f"{' (AMP)' if amp else ''}")
    report = progress or (lambda task, done, total, note="": None)
    t_run = time.time()
    done_here = 0
    report("epochs", start, opts.epochs)
    for epoch in range(start, opts.epochs):
        t0 = time.time()
        torch.manual_seed(opts.seed * 100003 + epoch)  # dropout etc.: a resumed run repeats it exactly
        train_ds.set_epoch(epoch)
        order = torch.Generator().manual_seed(opts.seed * 100003 + epoch)
        loader: torch.utils.data.DataLoader = torch.utils.data.DataLoader(
            train_ds, batch_size=opts.batch, shuffle=True, generator=order,  # type: ignore[arg-type]
            num_workers=opts.workers, drop_last=len(train_ds) > opts.batch)
        net.train()
        tot, n = 0.0, 0
        task = f"epoch {epoch + 1}/{opts.epochs}"
        report(task, 0, len(loader))
        for i, (x, y) in enumerate(loader):
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            with torch.autocast(device_type=device.type, enabled=amp):
                loss = F.cross_entropy(net(x), y, weight=wt, ignore_index=IGNORE)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            sched.step()
            tot += float(loss.item()) * len(x)
            n += len(x)
            report(task, i + 1, len(loader), f"loss {tot / n:.3f}")
        res = validate(net, val_loader, spec, opts.fit, device, amp)
        row = {"epoch": epoch + 1, "loss": round(tot / max(n, 1), 6), "lr": opt.param_groups[0]["lr"],
               "val_miou": res.miou, "val_per_class": res.per_class, "seconds": round(time.time() - t0, 2)}
        history.append(row)
        miou = res.miou["all"] if res.miou["all"] is not None else 0.0
        if miou > best["miou"]:
            best = {"epoch": epoch + 1, "miou": miou}
            torch.save({"model": net.state_dict(), "epoch": epoch + 1, "val": res.to_json()}, run / "best.pt")
        torch.save({"model": net.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                    "scaler": scaler.state_dict(), "epoch": epoch + 1, "history": history, "best": best,
                    "options": opts.model_dump()}, ckpt_path)
        write_history(run, history)
        say(f"epoch {epoch + 1}/{opts.epochs}: loss {row['loss']:.4f}, val mIoU all {_pct(res.miou['all'])} "
            f"stuff {_pct(res.miou['stuff'])} object {_pct(res.miou['object'])} ({row['seconds']:.1f} s)")
        report("epochs", epoch + 1, opts.epochs)
        done_here += 1
        if opts.stop_after is not None and done_here >= opts.stop_after and epoch + 1 < opts.epochs:
            say(f"stopped after epoch {epoch + 1} (--stop-after {opts.stop_after}); continue with --resume")
            logfile.close()
            return TrainResult(run, history, best["epoch"], None)
    best_ck = torch.load(run / "best.pt", map_location="cpu", weights_only=False)
    net = build_net(opts.model)
    net.load_state_dict(best_ck["model"])
    val = _result_from_json(best_ck["val"])
    onnx = export(net, opts, spec, train_scan, val_scan, best_ck["epoch"], val, history, command_line(opts),
                  round(time.time() - t_run, 1))
    say(f"best epoch {best_ck['epoch']}: val mIoU all {val.miou['all']:.4f}; exported {onnx}")
    logfile.close()
    return TrainResult(run, history, best_ck["epoch"], val, onnx)


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}"


def _result_from_json(d: dict) -> IoUResult:
    cm = np.array(d["confusion"]["matrix"], np.int64)
    return iou_from_confusion(cm, d["confusion"]["classes"], IGNORE_IDS, OBJECT_IDS, d["n_images"])


def synthetic_note(root: Path) -> str:
    """``synthetic: <first line of ROOT/SYNTHETIC.md's text>`` (how the data was made, e.g. rgbt.sim)."""
    lines = [ln.strip() for ln in (root / "SYNTHETIC.md").read_text(errors="replace").splitlines()]
    text = next((ln for ln in lines if ln and not ln.startswith("#")), "")
    return f"synthetic: {text}" if text else "synthetic"


def write_history(run: Path, history: list[dict]) -> None:
    """``history.json`` and ``curves.png`` (training loss and val mIoU per epoch; the plot needs matplotlib)."""
    (run / "history.json").write_text(json.dumps(history, indent=1) + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    ep = [h["epoch"] for h in history]
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.2))
    ax[0].plot(ep, [h["loss"] for h in history], "o-")
    ax[0].set(xlabel="epoch", ylabel="training loss (weighted CE)")
    for key in ("all", "stuff", "object"):
        ax[1].plot(ep, [h["val_miou"][key] if h["val_miou"][key] is not None else np.nan for h in history], "o-",
                   label=key)
    ax[1].set(xlabel="epoch", ylabel="val mIoU")
    ax[1].legend()
    fig.tight_layout()
    fig.savefig(run / "curves.png", dpi=80)
    plt.close(fig)


def export(net: torch.nn.Module, opts: TrainOptions, spec: InputSpec, train_scan: SplitScan, val_scan: SplitScan,
           best_epoch: int, val: IoUResult, history: list[dict], command: str, seconds: float) -> Path:
    """Export ``net`` (ONNX opset 17, in-graph argmax, parity 1e-4) with a sidecar naming the data, the
    command and the val mIoU, into the run folder and to ``opts.out``."""
    from rgbt.seg.zoo.export import export_model, make_sidecar

    out = Path(opts.out)
    root = Path(opts.dataset)
    synthetic = (root / "SYNTHETIC.md").is_file()
    made = synthetic_note(root) if synthetic else "not marked synthetic"
    data = (f"CART-layout dataset '{root.name}' ({made}), "
            f"train split {opts.split or 'all frames'} ({len(train_scan.items)} frames), "
            f"val split {opts.val or 'all frames'} ({len(val_scan.items)} frames)")
    weights = (f"trained on {'synthetic data' if synthetic else 'labelled thermal data'}: {data}, "
               f"best of {opts.epochs} epochs (epoch {best_epoch}), val mIoU {val.miou['all']:.4f}")
    import onnx

    training = {"command": command, "data": data, "dataset": root.name, "split": opts.split, "val": opts.val,
                "train_items_sha256": train_scan.items_sha256, "val_items_sha256": val_scan.items_sha256,
                "n_train": len(train_scan.items), "n_val": len(val_scan.items), "epochs": opts.epochs,
                "best_epoch": best_epoch, "val_miou": val.miou, "val_per_class": val.per_class,
                "final_loss": history[-1]["loss"], "seconds": seconds,
                "options": opts.model_dump(exclude={"dataset", "out", "run_dir", "stop_after"}),
                "versions": {"torch": torch.__version__, "onnx": onnx.__version__, "python": sys.version.split()[0]}}
    sc = make_sidecar(out.stem, MODEL_NAMES[opts.model], 1, spec.height, spec.width, weights, fit=opts.fit,
                      synthetic=synthetic, training=training)
    sc.inputs = [spec]
    run_onnx = Path(opts.run_dir) / out.name
    export_model(WithArgmax(net.eval()), sc, run_onnx)
    if out.resolve() != run_onnx.resolve():
        out.parent.mkdir(parents=True, exist_ok=True)
        for suffix in (".onnx", ".json", ".ref.npz"):
            shutil.copyfile(run_onnx.with_suffix(suffix), out.with_suffix(suffix))
    return out

"""The demo's PNG plots (matplotlib, Agg): segmentation sample, rates, latency/sync, and the VIO
trajectory overlay + error vs time (drawn by ``rgbt.vio.report.plot_run``)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from rgbt.eval.tracking import RunFrame
from rgbt.image.colormap import apply_colormap
from rgbt.image.normalize import normalize
from rgbt.seg.classes import CART_CLASSES, colorize, overlay
from rgbt.vio.report import plot_run


def _plt() -> ModuleType:  # matplotlib.pyplot with the Agg backend
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def segmentation_sample(frame: Any, path: Path, title: str) -> Path:
    """Thermal frame (ironbow, 1-99 % + CLAHE), its predicted mask, the simulator's label, overlay."""
    plt = _plt()
    img01 = normalize(frame.thermal)
    panels = [("thermal (synthetic, ironbow)", apply_colormap(img01))]
    if frame.mask is not None:
        panels.append(("segmentation", colorize(frame.mask)))
    if frame.label is not None:
        panels.append(("simulator label", colorize(frame.label)))
    if frame.mask is not None:
        panels.append(("overlay", overlay(apply_colormap(img01, "gray"), colorize(frame.mask), 0.5)))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.0))
    for ax, (name, img) in zip(np.atleast_1d(axes), panels, strict=False):
        ax.imshow(img)
        ax.set_title(name, fontsize=10)
        ax.axis("off")
    present = set(np.unique(frame.mask)) if frame.mask is not None else set()
    if frame.label is not None:
        present |= set(np.unique(frame.label))
    handles = [plt.Rectangle((0, 0), 1, 1, color=np.array(c.rgb()) / 255.0) for c in CART_CLASSES if c.id in present]
    names = [c.name for c in CART_CLASSES if c.id in present]
    if handles:
        fig.legend(handles, names, loc="lower center", ncol=min(len(names), 6), fontsize=8)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0.08, 1, 0.95))
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def rates(health: dict, path: Path) -> Path:
    """Recorded rate vs the stack's nominal rate per topic (and the segmentation output rate)."""
    plt = _plt()
    rows = [(name, t["rate_hz"], t["nominal_hz"]) for name, t in health["topics"].items() if t["count"]]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.5))
    y = np.arange(len(rows))
    ax.barh(y, [r[1] for r in rows], color="tab:blue", label="recorded")
    nominal = [(i, r[2]) for i, r in enumerate(rows) if r[2]]
    if nominal:
        ax.scatter([n for _, n in nominal], [i for i, _ in nominal], color="k", marker="|", s=300, label="nominal")
    ax.set_yticks(y, [r[0] for r in rows], fontsize=8)
    ax.set_xlabel("rate (Hz, recorder arrival)")
    ax.set_xscale("symlog", linthresh=1.0)
    ax.legend(loc="lower right")
    ax.set_title("topic rates in the recording")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def latency(seg_latency_ms: np.ndarray, restamp_err_ms: np.ndarray | None, path: Path) -> Path:
    """Histogram of the segmentation latency, and of the restamping error against the truth."""
    plt = _plt()
    n = 2 if restamp_err_ms is not None and restamp_err_ms.size else 1
    fig, axes = plt.subplots(1, n, figsize=(5.5 * n, 3.5))
    axes = np.atleast_1d(axes)
    if seg_latency_ms.size:
        axes[0].hist(seg_latency_ms, bins=40, color="tab:green")
        for q, ls in ((50, "--"), (99, ":")):
            axes[0].axvline(np.percentile(seg_latency_ms, q), color="k", ls=ls, label=f"p{q}")
        axes[0].legend()
    axes[0].set_xlabel("segmentation latency (ms)")
    axes[0].set_ylabel("frames")
    axes[0].set_title("segmentation latency")
    if n == 2:
        axes[1].hist(restamp_err_ms, bins=40, color="tab:purple")
        axes[1].set_xlabel("header stamp - true trigger time (ms)")
        axes[1].set_title("restamping error vs simulator truth")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def vio(result: Any, seq: Any, out_dir: Path) -> list[Path]:
    """Trajectory overlay (top view) and position error vs time of the first run (FFC-frozen frames
    marked), as ``rgbt vio eval --out`` draws them."""
    if not result.frames_per_run or not result.frames_per_run[0]:
        return []
    frames = [RunFrame(f.t_ns, f.tracked, f.pose, f.map, ffc=f.ffc_truth or f.state == "SKIPPED_FROZEN")
              for f in result.frames_per_run[0]]
    return plot_run(frames, seq.ground_truth_camera(), out_dir, align=result.options["align"],
                    title=f"ORB-SLAM3 {result.to_dict()['sensor']} on the recorded thermal (synthetic)")

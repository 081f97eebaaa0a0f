"""Train TinySeg on a CART-layout dataset (dev-only: needs torch; minutes on a CPU).

Inputs go through :func:`rgbt.seg.preprocess.prepare` with the model's own sidecar input spec,
the very function the runtime stage calls, so training and inference normalize identically.
Unknown (0) and background (1) pixels are ignored in the loss.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
import torch
import torch.nn.functional as F

from rgbt.seg.dataset import load_rgb, load_thermal
from rgbt.seg.preprocess import prepare
from rgbt.seg.sidecar import InputSpec
from rgbt.seg.train.data import IGNORE
from rgbt.seg.train.data import class_weights as class_weights_from_counts


def load_arrays(root: str | Path, items: list[str], spec: InputSpec, fit: str) -> tuple[np.ndarray, np.ndarray]:
    """(N x C x H x W float32 model inputs, N x H x W int64 targets with 0/1 -> ignore)."""
    xs, ys = [], []
    for item in items:
        th, mask = load_thermal(root, item)
        frames = {"thermal": th}
        if spec.modality in ("rgb", "rgbt"):
            pair = load_rgb(root, item)
            if pair is None:
                raise FileNotFoundError(f"{root}/{item}: no rgb frame")
            frames["rgb"] = pair[0]
            if spec.modality == "rgb":
                mask = pair[1]
        x, _ = prepare(frames, spec, fit)
        y = cv2.resize(mask, (spec.width, spec.height), interpolation=cv2.INTER_NEAREST).astype(np.int64)
        y[(y == 0) | (y == 1)] = IGNORE
        xs.append(x[0])
        ys.append(y)
    return np.stack(xs), np.stack(ys)


def class_weights(y: np.ndarray, k: int) -> np.ndarray:
    """Inverse square-root frequency weights of targets ``y`` (see :func:`rgbt.seg.train.data.class_weights`)."""
    return class_weights_from_counts(np.bincount(y[y != IGNORE].ravel(), minlength=k), ())


def train(net: torch.nn.Module, x: np.ndarray, y: np.ndarray, *, epochs: int, batch: int = 8, lr: float = 4e-3,
          seed: int = 0, num_classes: int = 12,
          log: Callable[[str], None] = print) -> dict:
    """Adam + cosine schedule, horizontal flips; returns a small training log."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    w = torch.from_numpy(class_weights(y, num_classes))
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    steps = epochs * int(np.ceil(len(x) / batch))
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.15)
    t0 = time.time()
    net.train()
    losses = []
    for ep in range(epochs):
        order = rng.permutation(len(x))
        tot = 0.0
        for i in range(0, len(x), batch):
            idx = torch.from_numpy(order[i:i + batch])
            xb, yb = xt[idx], yt[idx]
            if rng.random() < 0.5:
                xb, yb = xb.flip(-1), yb.flip(-1)
            loss = F.cross_entropy(net(xb), yb, weight=w, ignore_index=IGNORE)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            tot += loss.item() * len(idx)
        losses.append(tot / len(x))
        log(f"epoch {ep + 1}/{epochs}: loss {losses[-1]:.4f} ({time.time() - t0:.0f} s)")
    net.eval()
    return {"epochs": epochs, "batch": batch, "lr": lr, "seed": seed, "n_train": int(len(x)),
            "final_loss": round(losses[-1], 4), "seconds": round(time.time() - t0, 1)}

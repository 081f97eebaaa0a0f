"""Reports of ``rgbt vio eval``: a Markdown table in the layout of the paper's Table 6 and plots
(trajectory overlay; position error vs time with FFC and track-loss marks), matplotlib Agg."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rgbt.eval.align import align as fit_alignment
from rgbt.eval.tracking import interpolate

if TYPE_CHECKING:
    from rgbt.eval.tracking import RunFrame
    from rgbt.eval.trajectory import Trajectory


def _cell(summary: dict, tracked: dict | None = None, full: dict | None = None,
          initialised: list[bool] | None = None) -> str:
    if summary.get("mean") is None:
        # "—" only where the estimator ran and never initialised; "failed" where no run finished.
        if not initialised:
            return "failed"
        return "— (never initialised)" if not any(initialised) else "— (too few tracked poses to score)"
    text = f"{summary['mean']:.3f} ± {summary['std']:.3f}"
    if full and full.get("mean") is not None:
        text += f" (full {full['mean']:.3f})"
    if tracked and tracked.get("mean") is not None:
        text += f" [{100 * tracked['mean']:.0f} %]"
    return text


def markdown_table(results: list[dict]) -> str:
    """Rows: sequences; column groups: estimator x modality (the paper's Table 6 layout), each cell
    ``ATE mean ± std over runs (full-sequence score) [tracked %]`` in metres with the result's
    headline alignment; a last column gives the estimator FPS."""
    cols: list[tuple[str, str]] = []
    for r in results:
        key = (f"{r['estimator']} {r['sensor']}", r.get("modality", "thermal"))
        if key not in cols:
            cols.append(key)
    seqs = list(dict.fromkeys(r["sequence"] for r in results))
    head = "| Sequence | " + " | ".join(f"{e} {m} ATE (m)" for e, m in cols) + " | FPS |"
    sep = "|---|" + "---|" * len(cols) + "---|"
    lines = [head, sep]
    for s in seqs:
        cells, fps = [], []
        for e, m in cols:
            match = [r for r in results if r["sequence"] == s and f"{r['estimator']} {r['sensor']}" == e
                     and r.get("modality", "thermal") == m]
            if match and match[0].get("status", "ran") != "ran":
                cells.append(match[0]["status"].split(":")[0])  # e.g. "not installed" (reason in the JSON)
            elif match:
                r = match[0]
                cells.append(
                    _cell(
                        r["ate_rmse"],
                        r["tracked_fraction_stats"],
                        r["ate_full_rmse"],
                        [
                            ok
                            for ok, run in zip(r.get("initialised", []), r["runs"], strict=False)
                            if "error" not in run
                        ],
                    )
                )
                if r.get("fps"):
                    fps.append(r["fps"])
            else:
                cells.append("—")
        label = s + (" (synthetic)" if any(r["synthetic"] for r in results if r["sequence"] == s) else "")
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {np.mean(fps):.1f} |" if fps else
                     f"| {label} | " + " | ".join(cells) + " | — |")
    align = ", ".join(sorted({r["align"] for r in results}))
    lines.append("")
    for est, status in sorted({(r["estimator"], r["status"]) for r in results if r.get("status", "ran") != "ran"}):
        lines.append(f"{est}: {status}.")
    lines.append(f"ATE: RMSE in metres, {align} alignment per map segment, mean ± std over runs; "
                 "full: the full-sequence score (untracked frames hold the last estimate); [tracked fraction].")
    return "\n".join(lines)


def plot_run(frames: list[RunFrame], gt_camera: Trajectory, out_dir: str | Path, align: str = "sim3",
             title: str = "") -> list[Path]:
    """Trajectory overlay (top view) and position error vs time for one run; returns the PNG paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t = np.array([f.t_ns for f in frames], dtype=np.int64)
    inside = (t >= gt_camera.t_ns[0]) & (t <= gt_camera.t_ns[-1])
    frames = [f for f, ok in zip(frames, inside, strict=False) if ok]
    t = t[inside]
    gt = interpolate(gt_camera, t)
    ts = (t - t[0]) / 1e9
    est = np.full((len(frames), 3), np.nan)
    for m in sorted({f.map for f in frames}):
        posed = [(i, f.pose) for i, f in enumerate(frames) if f.map == m and f.tracked and f.pose is not None]
        idx = [i for i, _ in posed]  # a tracked frame has a pose
        if len(idx) >= 3:
            xyz = np.stack([pose[:3, 3] for _, pose in posed])
            rot, tr, s = fit_alignment(gt.positions[idx], xyz, align)
            est[idx] = s * xyz @ rot.T + tr
    paths = []
    fig, ax = plt.subplots(figsize=(6, 6))
    ax.plot(gt.positions[:, 0], gt.positions[:, 1], "k-", lw=1, label="ground truth")
    ax.plot(est[:, 0], est[:, 1], "r.", ms=2, label=f"estimate ({align} per map)")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.axis("equal")
    ax.legend()
    ax.set_title(title or "trajectory")
    paths.append(out / "trajectory.png")
    fig.savefig(paths[-1], dpi=100)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(8, 3.5))
    err = np.linalg.norm(est - gt.positions, axis=1)
    ax.plot(ts, err, "b-", lw=1, label="position error")
    lost = np.array([not f.tracked for f in frames])
    ffc = np.array([f.ffc for f in frames])
    ymax = np.nanmax(err) if np.isfinite(err).any() else 1.0
    if lost.any():
        ax.fill_between(ts, 0, ymax, where=lost, color="orange", alpha=0.3, step="mid", label="not tracked")
    for x in ts[ffc]:
        ax.axvline(x, color="purple", lw=0.8, alpha=0.6)
    if ffc.any():
        ax.plot([], [], color="purple", label="FFC frame")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("error (m)")
    ax.legend(loc="upper left")
    ax.set_title(title or "error vs time")
    fig.tight_layout()
    paths.append(out / "error_vs_time.png")
    fig.savefig(paths[-1], dpi=100)
    plt.close(fig)
    return paths


def csv_rows(results: list[dict]) -> str:
    """One CSV row per (sequence, estimator, sensor, modality): ATE over runs, tracked fraction,
    runs initialised / failed, FPS, status (ran / not installed ...) and the command that reproduces
    the cell (the same numbers as the Markdown table, for spreadsheets)."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["sequence", "synthetic", "estimator", "sensor", "modality", "align", "ate_rmse_mean_m",
                "ate_rmse_std_m", "ate_full_rmse_mean_m", "tracked_fraction", "runs", "runs_initialised",
                "runs_failed", "fps", "status", "command"])
    for r in results:
        w.writerow([r["sequence"], r["synthetic"], r["estimator"], r["sensor"], r.get("modality", "thermal"),
                    r["align"], r["ate_rmse"]["mean"], r["ate_rmse"]["std"], r["ate_full_rmse"]["mean"],
                    r["tracked_fraction"], len(r["runs"]), sum(r.get("initialised", [])), r["failed_runs"],
                    r.get("fps"), r.get("status", "ran"), r.get("command", "")])
    return buf.getvalue()

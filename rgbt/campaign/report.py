"""``rgbt campaign report``: a campaign folder -> Table 6 (VIO) or Table 2 (segmentation) layouts.

Markdown + CSV + JSON + PNG under ``DIR/report/``. VIO cells merge the runs of one (input,
estimator, mode, modality) into one :class:`rgbt.vio.eval.VioEvalResult`, so mean ± std, tracked
fractions and the Table-6 Markdown / CSV are the very code of ``rgbt vio eval``; a job that failed
every attempt is a failed run of its cell (never dropped), a job not run yet is counted as pending.
Each cell carries its provenance: hosts, CPUs, versions and the commands that produced it.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np

from rgbt.campaign.worker import FAILED, RESULT
from rgbt.errors import RgbtError
from rgbt.vio.eval import VioEvalResult
from rgbt.vio.report import csv_rows, markdown_table

VIO_CELL = ("input", "estimator", "mode", "modality")
SEG_CELL = ("model", "dataset", "split", "backend")


def _read(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def collect(root: str | Path) -> tuple[str, list[dict]]:
    """(kind, records): one record per job of the campaign's latest expansion: ``job``, ``result``
    (or None), ``failed`` (or None)."""
    root = Path(root)
    index = _read(root / "jobs.json")
    if index is None:
        raise RgbtError(f"{root}: not a campaign folder (no jobs.json): expected the --out of `rgbt campaign run`")
    records = []
    for key in index["keys"]:
        d = root / "jobs" / key
        job = _read(d / "job.json")
        if job is None:
            continue
        records.append({"job": job, "result": _read(d / RESULT), "failed": _read(d / FAILED)})
    return index["kind"], records


def _provenance(records: list[dict]) -> dict:
    done = [r["result"] for r in records if r["result"]]
    prov = [d["provenance"] for d in done]
    versions = records[0]["job"]["params"].get("versions", {}) if records else {}
    return {"hosts": sorted({p["host"] for p in prov}), "cpus": sorted({p["cpu"] for p in prov}),
            "versions": versions, "commands": sorted({" ".join(d["job"]["params"].get("command") or []) for d in done}
                                                     - {""}),
            "wall_s": round(sum(p["wall_s"] for p in prov), 3)}


def _groups(records: list[dict], fields: tuple[str, ...]) -> dict[tuple, list[dict]]:
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault(tuple(r["job"]["cell"][f] for f in fields), []).append(r)
    return groups


def vio_cells(records: list[dict]) -> tuple[list[dict], list[dict]]:
    """(cells for the JSON contract, merged ``VioEvalResult.to_dict()`` per cell for the tables)."""
    cells, merged = [], []
    for key, recs in _groups(records, VIO_CELL).items():
        runs = [r["result"]["result"]["runs"][0] for r in recs if r["result"]]
        runs += [{"run": r["job"]["params"]["run"], "error": r["failed"]["error"]} for r in recs
                 if r["failed"] and not r["result"]]
        runs.sort(key=lambda run: run["run"])
        first = next((r["result"]["result"] for r in recs if r["result"]), None)
        opts = recs[0]["job"]["params"]["options"]
        options = first["options"] if first else {**opts, "runs": 0, "align": "se3" if opts["inertial"] else "sim3"}
        kind = recs[0]["job"]["params"]["input"]["kind"]
        data = VioEvalResult(key[0], first["synthetic"] if first else kind in ("synthetic", "trajectory"), options,
                             runs=runs, meta=first["meta"] if first else {}).to_dict()
        data["modality"] = key[3]
        merged.append(data)
        pending = sum(1 for r in recs if not r["result"] and not r["failed"])
        cells.append({**dict(zip(VIO_CELL, key, strict=False)), "ate_rmse_mean": data["ate_rmse"]["mean"],
                      "ate_rmse_std": data["ate_rmse"]["std"], "tracked_fraction_mean": data["tracked_fraction"],
                      "runs": len(runs) - data["failed_runs"], "runs_failed": data["failed_runs"],
                      "runs_pending": pending, "runs_scored": data["ate_rmse"]["n"],
                      "ate_full_rmse_mean": data["ate_full_rmse"]["mean"], "align": data["align"], "fps": data["fps"],
                      "synthetic": data["synthetic"], "normalization": data["normalization"],
                      "errors": [run["error"] for run in runs if "error" in run],
                      "provenance": _provenance(recs)})
    return cells, merged


def seg_cells(records: list[dict]) -> list[dict]:
    cells = []
    for key, recs in _groups(records, SEG_CELL).items():
        r = recs[0]
        res = r["result"]["result"] if r["result"] else None
        cells.append({**dict(zip(SEG_CELL, key, strict=False)),
                      "status": "done" if res else "failed" if r["failed"] else "pending",
                      "miou": res["miou"] if res else None, "per_class": res["per_class"] if res else None,
                      "n_images": res["n_images"] if res else None,
                      "fps": res["bench"]["fps"] if res else None,
                      "stage_fps": res["bench"]["stage_fps"] if res else None,
                      "p50_ms": res["bench"]["p50_ms"] if res else None,
                      "error": r["failed"]["error"] if r["failed"] and not res else None,
                      "provenance": _provenance(recs)})
    return cells


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}"


def seg_markdown(cells: list[dict]) -> str:
    """The CART paper's Table 2 layout: one row per model (x dataset/split x backend), per-class IoU
    (%), stuff / object / all mIoU (%), FPS at batch 1 (bare backend, a measurement)."""
    names = next((list(c["per_class"]) for c in cells if c["per_class"]), [])
    head = ["Model", "Dataset/split", "Backend", *names, "mIoU stuff", "mIoU object", "mIoU all", "FPS", "images"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in cells:
        if c["status"] != "done":
            row = [c["model"], f"{c['dataset']}/{c['split']}", c["backend"], *([c["status"]] * (len(head) - 3))]
        else:
            row = [c["model"], f"{c['dataset']}/{c['split']}", c["backend"],
                   *[_pct(c["per_class"].get(n)) for n in names],
                   _pct(c["miou"]["stuff"]), _pct(c["miou"]["object"]), _pct(c["miou"]["all"]), f"{c['fps']:.1f}",
                   str(c["n_images"])]
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "IoU in %, unknown/background ignored; FPS: bare backend, batch 1 (`rgbt bench seg`), measured on "
              "the machine in the provenance column of report.json."]
    return "\n".join(lines)


def seg_csv(cells: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    names = next((list(c["per_class"]) for c in cells if c["per_class"]), [])
    w.writerow(["model", "dataset", "split", "backend", "status", *[f"iou_{n}" for n in names], "miou_stuff",
                "miou_object", "miou_all", "fps", "stage_fps", "n_images"])
    for c in cells:
        m = c["miou"] or {}
        w.writerow([c["model"], c["dataset"], c["split"], c["backend"], c["status"],
                    *[(c["per_class"] or {}).get(n) for n in names], m.get("stuff"), m.get("object"), m.get("all"),
                    c["fps"], c["stage_fps"], c["n_images"]])
    return buf.getvalue()


def _failure_notes(cells: list[dict]) -> list[str]:
    lines = []
    for c in cells:
        if c["runs_failed"] or c["runs_pending"]:
            what = [f"{c['runs_failed']} failed" * bool(c["runs_failed"]), f"{c['runs_pending']} pending" * bool(
                c["runs_pending"])]
            first = f": {c['errors'][0]}" if c["errors"] else ""
            lines.append(f"- {c['input']} / {c['estimator']} {c['mode']} {c['modality']}: "
                         f"{', '.join(w for w in what if w)} of {c['runs'] + c['runs_failed'] + c['runs_pending']} "
                         f"runs{first}")
    return (["", "Failed / pending runs (failures count as failures, never dropped):", *lines]) if lines else []


def _provenance_md(cells: list[dict], keys: tuple[str, ...]) -> list[str]:
    lines = ["", "Provenance:", "", "| Cell | Hosts | CPU | Versions | Command |", "|---|---|---|---|---|"]
    for c in cells:
        p = c["provenance"]
        versions = ", ".join(f"{k} {v}" for k, v in p["versions"].items() if v)
        commands = "; ".join(f"`{x}`" for x in p["commands"]) or "-"
        lines.append(f"| {' / '.join(str(c[k]) for k in keys)} | {', '.join(p['hosts']) or '-'} | "
                     f"{', '.join(p['cpus']) or '-'} | {versions} | {commands} |")
    return lines


def _plot(cells: list[dict], kind: str, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if kind == "vio":
        labels = [f"{c['input']}\n{c['mode']} {c['modality']}" for c in cells]
        left = [np.nan if c["ate_rmse_mean"] is None else c["ate_rmse_mean"] for c in cells]
        err = [0 if c["ate_rmse_std"] is None else c["ate_rmse_std"] for c in cells]
        right = [100 * (c["tracked_fraction_mean"] or 0) for c in cells]
        titles = ("ATE RMSE (m), mean ± std over runs", "tracked (%)")
    else:
        labels = [f"{c['model']}\n{c['backend']}" for c in cells]
        left = [np.nan if not c["miou"] or c["miou"]["all"] is None else 100 * c["miou"]["all"] for c in cells]
        err = [0] * len(cells)
        right = [c["fps"] or 0 for c in cells]
        titles = ("mIoU all (%)", "FPS (batch 1)")
    x = np.arange(len(cells))
    fig, axes = plt.subplots(1, 2, figsize=(max(8, 1.4 * len(cells)), 4))
    axes[0].bar(x, left, yerr=err, color="tab:blue", capsize=3)
    axes[1].bar(x, right, color="tab:green")
    for ax, title in zip(axes, titles, strict=False):
        ax.set_title(title)
        ax.set_xticks(x, labels, rotation=60, ha="right", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_report(root: str | Path, plots: bool = True) -> dict:
    """Write ``report/`` of a campaign folder; returns the ``--json`` summary (``cells``, ``table_md``, ...)."""
    from rgbt.fileio import to_json

    root = Path(root)
    kind, records = collect(root)
    out = root / "report"
    out.mkdir(exist_ok=True)
    if kind == "vio":
        cells, merged = vio_cells(records)
        name = "table6"
        md = "\n".join([markdown_table(merged), *_failure_notes(cells), *_provenance_md(cells, VIO_CELL)])
        csv_text = csv_rows(merged)
    else:
        cells = seg_cells(records)
        name = "table2"
        md = "\n".join([seg_markdown(cells), *_provenance_md(cells, SEG_CELL)])
        csv_text = seg_csv(cells)
    (out / f"{name}.md").write_text(md + "\n")
    (out / f"{name}.csv").write_text(csv_text)
    status = {"jobs": len(records), "done": sum(bool(r["result"]) for r in records),
              "failed": sum(bool(r["failed"]) and not r["result"] for r in records)}
    status["pending"] = status["jobs"] - status["done"] - status["failed"]
    summary = {"kind": kind, "cells": cells, "table_md": str(out / f"{name}.md"), "table_csv": str(out / f"{name}.csv"),
               "json": str(out / "report.json"), "plots": [], "status": status}
    if plots and cells:
        summary["plots"] = [str(_plot(cells, kind, out / f"{name}.png"))]
    (out / "report.json").write_text(to_json(summary) + "\n")
    return summary

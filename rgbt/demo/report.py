"""The demo's Markdown report and JSON summary; every number with the command that reproduces it."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

SIMULATED_NOTE = (
    "**What is simulated.** Everything the sensors saw in this run is synthetic: the thermal "
    "frames, IMU, GNSS, autopilot pose and armed state come from `rgbt.sim` (a procedural world with "
    "CART's classes rendered through the CART calibration), flown along {path}. "
    "The ROS 2 graph, trigger restamping, "
    "segmentation model, recorder, bag and ORB-SLAM3 are the real code paths. The segmentation "
    "labels and the VIO ground truth are the simulator's own, exact by construction. Numbers here "
    "say the pipeline works end to end; they are not accuracy claims about real thermal imagery."
)
HARDWARE_NOTE = ("**Data.** This run used recorded or live hardware data: no simulator truth, so mIoU "
                 "and VIO error appear only where the bag carries labels / a ground-truth file.")


def rel(path: str | Path) -> str:
    """A path as the user typed it best: relative to the current folder when inside it."""
    p = Path(path).resolve()
    try:
        return os.path.relpath(p) if p.is_relative_to(Path.cwd()) else str(p)
    except ValueError:
        return str(p)


def rgbt_cmd(*args: Any) -> str:
    return "rgbt " + " ".join(shlex.quote(str(a)) for a in args)


def reproduce_commands(summary: dict) -> dict[str, str]:
    """Number -> command that reproduces it on the same recording."""
    bag = rel(summary["bag"])
    cmds = {"health (counts, rates)": rgbt_cmd("bag", "info", bag, "--json")}
    seg = summary.get("segmentation") or {}
    if seg.get("labels_dir"):
        cmds["segmentation.miou"] = rgbt_cmd("seg", "eval", "--dataset", rel(seg["labels_dir"]), "--engine",
                                             rel(seg["engine"]), "--split", "test", "--json") + "  # .miou.all"
    n = (summary.get("run") or {}).get("eval_frames", 150)
    cmds["segmentation.fps / p50_ms / p99_ms (and miou)"] = (
        rgbt_cmd("demo", "--replay", bag, "--no-vio", *(["--eval-frames", n] if n != 150 else []), "--json")
        + "  # recomputed from the bag's stamps")
    cmds["bare model FPS (reference, not the graph's)"] = rgbt_cmd(
        "bench", "seg", "--models", rel(seg.get("engine", "")), "--json"
    )
    vio = summary.get("vio") or {}
    if vio.get("ate_rmse") is not None or vio.get("tracked_fraction") is not None:
        cmds["vio.ate_rmse / tracked_fraction"] = (rgbt_cmd("vio", "eval", "--bag", bag, "--estimator", "orbslam3",
                                                           "--runs", vio.get("runs", 1), "--json")
                                                   + "  # .ate_rmse.mean, .tracked_fraction")
    return cmds


def _fmt(v: Any, nd: int = 3) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def write_report(summary: dict, path: Path) -> Path:
    """``report.md`` from the JSON summary (see :func:`rgbt.demo.run.run_demo`)."""
    h, seg, vio = summary["health"], summary["segmentation"], summary.get("vio") or {}
    run = summary["run"]
    L: list[str] = [f"# rgbt demo report — {Path(summary['run_dir']).name}", ""]
    traj = str(run.get("trajectory") or "")
    path_text = (f"the real CART ground-truth trajectory `{Path(traj).stem}` (position only; attitude derived from "
                 "motion)" if traj.endswith(".txt") else f"the parametric path `{traj or '-'}`")
    L += [SIMULATED_NOTE.format(path=path_text) if summary["synthetic"] else HARDWARE_NOTE, ""]
    for note in run.get("notes", []):
        L.append(f"> Note: {note}")
    if run.get("notes"):
        L.append("")
    L += ["## Run", "", "| item | value |", "|---|---|"]
    for k in ("command", "mode", "profile", "trajectory", "start_s", "flight_s", "seed", "engine", "bag", "machine"):
        if run.get(k) is not None:
            L.append(
                f"| {k} | `{run[k]}` |" if k in ("command", "bag", "engine", "trajectory") else f"| {k} | {run[k]} |"
            )
    for k, v in run.get("wall_s", {}).items():
        L.append(f"| wall time: {k} | {v:.1f} s |")
    L += ["", "## Health", ""]
    L += [f"Recording: {h['duration_s']:.1f} s (bag log time), stop reason: {h.get('stop_reason') or '-'}; "
          f"middleware-reported losses at the recorder: {h['lost_total']}; frame-counter gaps: {h['drops_total']}.", ""]
    L += ["| topic | count | rate (Hz) | nominal (Hz) | published | lost | gaps |", "|---|---|---|---|---|---|---|"]
    pub = h.get("published_total", {})
    empty = [name for name, t in h["topics"].items() if not t["count"]]
    for name, t in h["topics"].items():
        if not t["count"]:
            continue
        L.append(f"| `{name}` | {t['count']} | {_fmt(t['rate_hz'], 2)} | {_fmt(t['nominal_hz'], 0)} | "
                 f"{_fmt(pub.get(name))} | {_fmt(t['lost'])} | {_fmt(t['drops'])} |")
    L.append("")
    if empty:
        L += [
            "",
            "Recorded but empty (not simulated or not produced in this run): "
            + ", ".join(f"`{e}`" for e in empty)
            + ".",
        ]
    L.append("")
    L.append(
        "Rates are recorder-arrival rates over the bag. `published` counts the whole simulated run (lead-in and "
        "lead-out included); the recorder "
        "keeps the armed part. Simulated frame drops before the host (by design): "
        f"{h.get('sim_dropped', {}) or '-'}."
    )
    L.append("")
    sync = h.get("sync", {})
    if sync:
        L.append("Trigger sync (sync node diagnostics at the end of the flight): " +
                 ", ".join(f"{k}={v}" for k, v in sync.items()) + ".")
    if "restamp_error_ms" in h:
        e = h["restamp_error_ms"]
        L.append(f"Restamping error |header stamp - true trigger time| of the recorded thermal frames: p50 "
                 f"{e['p50']:.3f} ms, p99 {e['p99']:.3f} ms, max {e['max']:.3f} ms; {e.get('within_1ms', '-')} of "
                 f"{e['n']} frames within 1 ms (frames recorded before the sync node locks carry their host "
                 "arrival stamp, ~10-20 ms late).")
    if h.get("clock_warped"):
        L.append(f"The simulator ran at {h['sim_realtime_factor']:.2f}x real time on this machine, so the "
                 "virtual stack stamped frames when it published them (later than planned): the bag's clock runs "
                 "slower than the simulated one. The ground truth was mapped onto the bag's clock through the "
                 "recorded frames' true trigger times; monocular VIO is unaffected, IMU-based VIO would not be, "
                 "and the restamping error against truth cannot be separated from that lag here.")
    L += ["", "## Segmentation", ""]
    L += [f"Model `{rel(seg['engine'])}` ({seg.get('model_weights', '-')}); source: {seg['source']}.", ""]
    L += ["| metric | value |", "|---|---|"]
    for k, label in (("fps", "FPS"), ("p50_ms", "latency p50 (ms)"), ("p99_ms", "latency p99 (ms)"),
                     ("frames_segmented", "frames segmented"), ("thermal_frames", "thermal frames recorded"),
                     ("miou", "mIoU (all)"), ("miou_stuff", "mIoU (stuff)"), ("miou_object", "mIoU (object)"),
                     ("n_eval_frames", "frames scored for mIoU")):
        if k in seg:
            L.append(f"| {label} | {_fmt(seg[k])} |")
    L.append("")
    L.append(f"Latency: {seg.get('latency_kind', '-')}. mIoU: CART ids, unknown and background ignored, "
             "against the simulator's label maps of the same frames.")
    if seg.get("per_class"):
        L += ["", "| class | IoU |", "|---|---|"]
        L += [f"| {k} | {_fmt(v)} |" for k, v in seg["per_class"].items()]
    fused = summary.get("fusion")
    if fused:
        L += ["", "## RGB-T fusion beside thermal-only", ""]
        L += [f"Fusion model `{rel(fused['model'])}` ({fused.get('model_weights', '-')}); {fused['source']}. "
              "Thermal-only: the segmentation above, scored on thermal frames; fusion: scored on the rectified "
              "colour canvas against the colour camera's label maps at the same trigger.", ""]
        L += ["| | FPS | latency p50 (ms) | latency p99 (ms) | frames | mIoU (all) | mIoU (stuff) | mIoU (object) |",
              "|---|---|---|---|---|---|---|---|"]
        for name, r, n_key in (("thermal-only", seg, "frames_segmented"), ("RGB-T fusion", fused, "frames_fused")):
            L.append(f"| {name} | {_fmt(r.get('fps'))} | {_fmt(r.get('p50_ms'))} | {_fmt(r.get('p99_ms'))} | "
                     f"{_fmt(r.get(n_key))} | {_fmt(r.get('miou'))} | {_fmt(r.get('miou_stuff'))} | "
                     f"{_fmt(r.get('miou_object'))} |")
        if fused.get("miou_reason"):
            L += ["", f"Fusion mIoU: {fused['miou_reason']}."]
    L += ["", "## VIO", ""]
    if vio.get("skipped"):
        L.append(f"Not run: {vio['skipped']}")
    elif vio.get("error"):
        L.append(f"Failed: {vio['error']}")
    else:
        L += [f"ORB-SLAM3 {vio['sensor']} on the recorded thermal stream ({vio['normalization']} normalization, "
              f"{vio['rate_hz']:g} Hz feed, {vio['runs']} run(s)), scored against the simulator's ground truth "
              f"without clipping; ATE with {vio['align']} alignment per map segment.", ""]
        L += ["| metric | value |", "|---|---|"]
        rpe = vio.get("rpe") or {}
        for label, v in (
            ("ATE RMSE, tracked frames (m)", vio["ate_rmse"]),
            ("ATE RMSE, full sequence (m)", vio["ate_full_rmse"]),
            ("tracked fraction", vio["tracked_fraction"]),
            ("time to initialise (s)", vio["time_to_init_s"]),
            ("resets", vio["resets"]),
            ("final drift (% of path)", vio["final_drift_percent"]),
            (f"RPE per {rpe.get('delta_m', '-')} m of travel (RMSE, m)", rpe.get("rmse")),
            ("estimator FPS", vio["fps"]),
            ("frames fed", vio["feed_frames"]),
        ):
            L.append(f"| {label} | {_fmt(v)} |")
        L.append("")
        L.append("Run-to-run tolerance: ORB-SLAM3 is multithreaded, so repeated runs on the same bag differ; "
                 "four runs on one 15 s demo bag gave ATE 0.35-1.07 m (std 0.28 m) and tracked fraction "
                 "0.96-0.98; the demo's test accepts |ΔATE| <= 1.0 m and |Δtracked fraction| <= 0.15 between "
                 "the demo and `rgbt vio eval`.")
    L += ["", "## Plots", ""]
    for p in summary.get("plots", []):
        L.append(f"![{Path(p).stem}]({os.path.relpath(p, path.parent)})")
    L += ["", "## Reproduce each number", "", "| number | command |", "|---|---|"]
    for k, v in reproduce_commands(summary).items():
        L.append(f"| {k} | `{v}` |")
    L.append("")
    path.write_text("\n".join(L) + "\n")
    return path


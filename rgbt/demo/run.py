"""``run_demo``: fly (or take a bag), recover the truth, evaluate, plot, report. Returns the summary."""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rgbt.bench.machine import describe_machine
from rgbt.demo import evaluate, plots
from rgbt.demo.fly import BAG_MANIFEST, VS_MANIFEST, FlightResult, flight_overrides, fly, hardware_overrides
from rgbt.demo.options import DemoOptions, flight_start_s, resolve_engine, resolve_trajectory
from rgbt.demo.report import rel, write_report
from rgbt.demo.scan import EvalFrame, Scan, scan_bag
from rgbt.demo.truth import GT_FILE, SimTruth
from rgbt.errors import BagError, EvaluationError, RgbtError
from rgbt.fileio import to_json
from rgbt.graph.profile import node_specs
from rgbt.paths import REPO_ROOT
from rgbt.progress import Progress, no_progress
from rgbt.sim.cache import render_for_virtual_stack
from rgbt.stack import load_stack

if TYPE_CHECKING:
    from rich.console import Console

PLOTS_DIR = "plots"
REPORT = "report.md"
SUMMARY = "summary.json"


def run_demo(options: DemoOptions, console: Any = None, progress: Progress | None = None) -> dict:
    """The whole demo (see :mod:`rgbt.demo`). ``console``: a rich Console for status lines (stderr);
    ``progress``: reports the flight (task ``flight``, no total until it stops) and the VIO runs."""
    from rich.console import Console

    con = console or Console(stderr=True)
    t_start = time.perf_counter()
    wall: dict[str, float] = {}
    notes = options.notes
    if options.replay and not Path(options.replay).exists():  # before anything is written
        raise BagError(
            f"{options.replay}: bag not found (--replay takes a ROS 1 .bag, a ROS 2 bag folder or an .mcap file)"
        )
    run_dir = options.run_dir()
    run_dir.mkdir(parents=True, exist_ok=True)
    engine = resolve_engine(options.engine, notes)
    stack = load_stack()
    thermal_topic = stack.cameras["thermal"].topic
    run: dict[str, Any] = {"command": " ".join(["rgbt", *sys.argv[1:]]) if sys.argv[0].endswith(("rgbt", "__main__.py"))
                           else "rgbt demo", "profile": options.profile, "seed": options.seed,
                           "engine": rel(engine), "eval_frames": options.max_eval_frames, "notes": notes}
    vs_path: Path | None = None
    if options.replay:
        bag = Path(options.replay)
        run["mode"] = "replay"
        candidate = (bag if bag.is_dir() else bag.parent).parent / VS_MANIFEST
        vs_path = candidate if candidate.is_file() else None
        con.print(f"[bold]rgbt demo[/] --replay {bag}: evaluating an existing recording")
    else:
        run["mode"] = "flight"
        trajectory = resolve_trajectory(options.trajectory, options.sim_duration_s(), notes)
        run.update(trajectory=rel(trajectory) if Path(trajectory).is_file() else trajectory,
                   start_s=round(flight_start_s(trajectory, options.sim_duration_s()), 2), flight_s=options.duration_s)
        for note in notes:
            con.print(f"[yellow]note:[/] {note}")
        simulated = options.profile != "flight"
        overrides = (flight_overrides(options, run_dir, engine, trajectory) if simulated
                     else hardware_overrides(run_dir, engine))
        con.print(f"[bold]rgbt demo[/]: {'simulated' if simulated else 'hardware'} stack ({options.profile}), "
                  f"{options.duration_s:g} s flight over {Path(trajectory).stem}, output {rel(run_dir)}")
        cache = (_prerender(con, options.profile, overrides, run_dir, notes)
                 if simulated and options.prerender_flight() else None)
        run["prerendered"] = cache is not None  # played from a rendering made before the flight
        try:
            flight = _fly_with_progress(progress or no_progress, options, overrides, run_dir)
        finally:
            if cache is not None:
                shutil.rmtree(cache, ignore_errors=True)
        wall.update({f"flight {k}": v for k, v in flight.wall_s.items()})
        for p in flight.problems:
            notes.append(p)
            con.print(f"[yellow]warning:[/] {p}")
        if flight.bag is None:
            raise EvaluationError(
                f"no recording was made ({'; '.join(flight.problems) or 'the recorder never armed'}); "
                f"see {rel(flight.log)}"
            )
        bag, vs_path = flight.bag, flight.vs_manifest
    run["bag"] = rel(bag)

    t0 = time.perf_counter()
    with con.status("reading the recording"):
        scan = scan_bag(bag, thermal_topic, options.max_eval_frames)
    if not scan.thermal_stamp.size:
        raise EvaluationError(f"{bag}: no thermal frames on {thermal_topic} (topics: {sorted(scan.topics)})")
    truth = clock = restamp_err = None
    by_stamp: dict[int, int] = {}  # recorded thermal stamp -> simulator frame
    vs_manifest = None
    if vs_path is not None:
        with con.status("recovering the simulator's truth (ground truth, labels)"):
            truth = SimTruth.from_manifest(vs_path)
            vs_manifest = truth.manifest
            seq = truth.frame_index(thermal_topic, scan.thermal_crc, scan.thermal_stamp)
            if (seq >= 0).sum() >= 2:
                clock = truth.clock("thermal", seq, scan.thermal_stamp)
                if not clock.warped:
                    restamp_err = (scan.thermal_stamp[seq >= 0] - truth.true_stamp_ns("thermal", seq[seq >= 0])) / 1e6
                truth.write_ground_truth(bag if bag.is_dir() else bag.parent, clock)
                by_stamp = dict(zip(scan.thermal_stamp.tolist(), seq.tolist(), strict=False))
                for f in scan.frames:
                    f.seq = by_stamp.get(f.stamp_ns, -1)
                    if f.seq >= 0 and f.label is None:
                        f.label = truth.label("thermal", f.seq)
            else:
                notes.append(f"the recorded frames do not match {rel(vs_path)}: no simulator truth for this bag")
    bag_manifest_path = (bag if bag.is_dir() else bag.parent) / BAG_MANIFEST
    bag_manifest = json.loads(bag_manifest_path.read_text()) if bag_manifest_path.is_file() else None
    health = evaluate.health(scan, stack, bag_manifest, vs_manifest, restamp_err, clock)
    if run["mode"] == "flight" and scan.duration_s < 0.8 * options.duration_s:
        notes.append(f"the bag spans {scan.duration_s:.1f} s of the {options.duration_s:g} s flight: the recorder "
                     "stopped receiving early (see the health table and graph.log)")

    with con.status("scoring segmentation"):
        labels_root = run_dir / evaluate.LABELS_DIR
        _, items = evaluate.write_labels(scan, labels_root, bag.stem)
        seg = evaluate.segmentation(scan, engine)
        seg["labels_dir"] = str(labels_root) if items else None
    fused = None
    if scan.fusion_stamp.size or "color" in options.cameras:
        with con.status("scoring RGB-T fusion"):
            fused = evaluate.fusion(scan, truth, by_stamp, stack, _fusion_model(options.profile))
    wall["evaluation: health + segmentation"] = time.perf_counter() - t0

    plots_dir = run_dir / PLOTS_DIR
    plots_dir.mkdir(exist_ok=True)
    vio_summary: dict[str, Any]
    vio_plots: list[Path] = []
    gt_file = (bag if bag.is_dir() else bag.parent) / GT_FILE
    if not options.vio:
        vio_summary = {"skipped": "--no-vio", "ate_rmse": None, "tracked_fraction": None}
    elif not gt_file.is_file():
        vio_summary = {"skipped": f"no ground truth beside the bag ({GT_FILE}): VIO error needs one",
                       "ate_rmse": None, "tracked_fraction": None}
    else:
        t0 = time.perf_counter()
        con.print(f"ORB-SLAM3 on the recorded thermal stream ({options.runs} run(s))")
        try:
            vio_summary, result, seq_obj = evaluate.vio(bag, options.runs, progress=progress)
            vio_plots = plots.vio(result, seq_obj, plots_dir)
        except RgbtError as exc:
            vio_summary = {"error": str(exc), "ate_rmse": None, "tracked_fraction": None}
        wall["evaluation: VIO"] = time.perf_counter() - t0

    with con.status("plots and report"):
        plot_paths = list(vio_plots)
        sample = _sample_frame(scan)
        if sample is not None:
            plot_paths.append(plots.segmentation_sample(sample, plots_dir / "segmentation.png",
                                                        f"{'synthetic ' if scan.synthetic else ''}thermal frame, "
                                                        f"t = {(sample.stamp_ns - scan.start_ns) / 1e9:.1f} s"))
        plot_paths.append(plots.rates(health, plots_dir / "rates.png"))
        plot_paths.append(plots.latency(scan.mask_latency_ms() if scan.has_masks else np.zeros(0), restamp_err,
                                        plots_dir / "latency.png"))
    wall["total"] = time.perf_counter() - t_start
    run.update(wall_s=wall, machine=_machine(describe_machine))
    summary = {
        "synthetic": bool(scan.synthetic),
        "run_dir": str(run_dir),
        "bag": str(bag),
        "health": health,
        "segmentation": seg,
        "fusion": fused,
        "vio": vio_summary,
        "plots": [str(p) for p in plot_paths],
        "run": run,
    }
    report = write_report(summary, run_dir / REPORT)
    summary["report"] = str(report)
    (run_dir / SUMMARY).write_text(to_json(summary))
    return summary


def _machine(describe: Callable[[], object]) -> str:
    """One line about the machine (``rgbt.bench.machine.describe_machine``)."""
    try:
        m = describe()
    except Exception:  # noqa: BLE001 - the description is informative only
        return "-"
    if isinstance(m, dict):
        keys = ("cpu", "logical_cores", "memory_gib", "gpu")
        return ", ".join(f"{k}={m[k]}" for k in keys if k in m) or json.dumps(m)[:200]
    return str(m)


def _sample_frame(scan: Scan) -> EvalFrame | None:
    """A frame from the middle of the evaluation set, preferring one with mask and label."""
    full = [f for f in scan.frames if f.mask is not None and f.label is not None] or scan.frames
    return full[len(full) // 2] if full else None


def _prerender(con: Console, profile: str, overrides: dict, run_dir: Path, notes: list[str]) -> Path | None:
    """Render the simulated flight of ``profile`` with ``overrides`` into ``run_dir/sim_cache`` and
    have its virtual stack play it (``overrides`` updated); the folder to remove after the flight
    (None: the profile has no virtual stack). Where it cannot be written (a full disk) the flight
    renders live instead, said in ``notes``."""
    vs = next((s.parameters for s in node_specs(profile, overrides) if s.executable == "virtual_stack"), None)
    if vs is None:
        return None
    root = run_dir / "sim_cache"
    t0 = time.perf_counter()
    try:
        with con.status("rendering the simulated flight ahead (SYNTHETIC)") as status:
            folder = render_for_virtual_stack(vs, root, log=lambda line: status.update(f"{line} (SYNTHETIC)"))
    except OSError as exc:
        shutil.rmtree(root, ignore_errors=True)
        notes.append(f"the simulated flight could not be rendered ahead into {rel(root)} ({exc.strerror or exc}): "
                     "rendered live while flying, which a slow machine may not keep up with")
        con.print(f"[yellow]note:[/] {notes[-1]}")
        return None
    con.print(
        f"rendered the simulated flight ahead in {time.perf_counter() - t0:.0f} s; the stack plays it at the real rate"
    )
    overrides["virtual_stack"]["sim_cache"] = str(folder)
    return root


def _fly_with_progress(progress: Progress, options: DemoOptions, overrides: dict, run_dir: Path) -> FlightResult:
    """Fly, reporting task ``flight``: its phase as the note (the recording's size so far while
    armed), no total until the graph stops."""
    progress("flight", 0, None, "starting the graph (virtual stack, sync, preprocess, segmentation, recorder)")
    state = {"phase": ""}

    def on_status(phase: str, seconds: float) -> None:
        if phase != state["phase"]:
            state["phase"] = phase
            if phase == "recording":
                progress("flight", 0, None, "armed: recording the flight (disarm ends it)")
            elif phase == "stopping":
                progress("flight", 0, None, "disarmed: stopping the graph")
        if phase == "recording":
            mb = sum(f.stat().st_size for f in run_dir.glob("rgbt_*/*.mcap")) / 1e6
            progress("flight", 0, None, f"armed: recording ({mb:,.0f} MB so far)")

    try:
        return fly(options.profile, overrides, run_dir, options.sim_duration_s(), on_status=on_status)
    finally:
        progress("flight", 1, 1)


def _fusion_model(profile: str) -> Path:
    """The ONNX the profile's fusion node runs (its default when the profile has none)."""
    from rgbt.graph.options import FusionNodeOptions
    from rgbt.graph.profile import node_specs

    fusion = next((s.parameters["fusion"] for s in node_specs(profile) if s.executable == "fusion"),
                  FusionNodeOptions().fusion)
    model = Path(fusion.get("model") or fusion.get("thermal") or FusionNodeOptions().fusion["model"])
    return model if model.is_absolute() else REPO_ROOT / model

"""The evaluation half of the demo: health, segmentation and VIO numbers of one recording.

Each function takes what :mod:`rgbt.demo.scan` read (and the simulator's truth when there is one)
and returns a JSON-able dict. The segmentation score is computed on a CART-layout folder the demo
writes (the recorded thermal frames + the simulator's label maps), so ``rgbt seg eval`` on that
folder reproduces it; the VIO score is ``rgbt.vio.eval`` on the bag, as ``rgbt vio eval`` runs it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from rgbt.demo.scan import Scan
from rgbt.fileio import to_json
from rgbt.image.rectify import RectifyOptions, RgbtRectifier
from rgbt.progress import Progress
from rgbt.seg.dataset import write_item
from rgbt.seg.metrics import confusion, iou_from_confusion
from rgbt.seg.sidecar import load_sidecar
from rgbt.seg.stage import SegmentationStage, SegStageOptions
from rgbt.timing import summarize_ms
from rgbt.topics import TRIGGER_TOPIC
from rgbt.vio.eval import EvalOptions, evaluate_sequence
from rgbt.vio.sequence import bag_sequence
from rgbt.vio.vocab import VocabOptions, ensure_vocabulary, vocabulary_file

#: where the demo writes the labelled frames of a recording (CART layout: PLACE/TRAJ/{thermal16,masks})
LABELS_DIR = "labels"
LABELS_PLACE = "demo"


def health(scan: Scan, stack: Any, bag_manifest: dict | None, vs_manifest: dict | None,
           restamp_err_ms: np.ndarray | None, clock: Any | None) -> dict:
    """Rates, counts and losses per stack topic; sync state; restamping error against the truth.

    ``published`` is what the virtual stack sent for the topic while the recorder ran (from its
    manifest; None on hardware); ``lost`` / ``drops`` are the recorder's middleware-reported losses
    and the sync node's frame-counter gaps; ``sim_dropped`` frames lost "before the host" by the
    simulator's design (``drop_prob``), never published.
    """
    nominal = {cam.topic: cam.rate_hz for cam in stack.cameras.values()}
    nominal[stack.imu.topic] = stack.imu.rate_hz
    nominal[stack.gnss.topic] = stack.gnss.rate_hz
    nominal[stack.autopilot.pose_topic] = stack.autopilot.pose_rate_hz
    nominal[TRIGGER_TOPIC] = stack.trigger.rate_hz
    rec_topics = (bag_manifest or {}).get("topics", {})
    topics: dict[str, dict] = {}
    for name, info in sorted(scan.topics.items()):
        m = rec_topics.get(name, {})
        count = info["count"]
        rate = m.get("rate_hz")
        if rate is None:
            rate = count / scan.duration_s if scan.duration_s > 0 else 0.0
        topics[name] = {"type": info["type"], "count": count, "rate_hz": round(float(rate), 3),
                        "nominal_hz": nominal.get(name), "lost": m.get("lost"), "drops": m.get("drops")}
    out: dict[str, Any] = {
        "duration_s": round(scan.duration_s, 3),
        "synthetic": scan.synthetic,
        "topics": topics,
        "lost_total": int(sum(t["lost"] or 0 for t in topics.values())),
        "drops_total": int(sum(t["drops"] or 0 for t in topics.values())),
        "stop_reason": (bag_manifest or {}).get("stop_reason"),
    }
    sync = {}
    for values in (bag_manifest or {}).get("sync", {}).values():
        sync.update({k.removeprefix("sync."): v for k, v in values.items()})
    out["sync"] = sync
    if vs_manifest is not None:
        out["sim_dropped"] = vs_manifest.get("dropped", {})
        out["published_total"] = vs_manifest.get("stack_topics", {})
    if restamp_err_ms is not None and restamp_err_ms.size:
        e = np.abs(restamp_err_ms)
        out["restamp_error_ms"] = {"p50": float(np.percentile(e, 50)), "p99": float(np.percentile(e, 99)),
                                   "max": float(e.max()), "n": int(e.size),
                                   "within_1ms": int((e <= 1.0 + 1e-6).sum())}
    if clock is not None:
        out["sim_realtime_factor"] = round(clock.realtime_factor, 3)
        out["clock_warped"] = bool(clock.warped)
    return out


def write_labels(scan: Scan, out_root: Path, traj: str) -> tuple[Path, list[str]]:
    """CART-layout folder of the evaluation frames that have a label: ``thermal16/`` (the recorded
    raw frame), ``masks/`` (the simulator's labels), ``pred_live/`` (the recorded segmentation,
    when recorded) and ``test.txt`` listing them. Returns (root, items)."""

    items = []
    for i, f in enumerate(x for x in scan.frames if x.label is not None):
        item = f"{LABELS_PLACE}/{traj}/{i:06d}"
        write_item(out_root, item, f.thermal, f.label)
        if f.mask is not None:
            p = out_root / LABELS_PLACE / traj / "pred_live" / f"{i:06d}.png"
            p.parent.mkdir(parents=True, exist_ok=True)
            cv2.imwrite(str(p), f.mask)
        items.append(item)
    if items:
        (out_root / "test.txt").write_text("\n".join(items) + "\n")
        (out_root / "README.md").write_text(
            "# Synthetic data\n\nThermal frames recorded by `rgbt demo` from the simulated stack, with the "
            "simulator's label maps (CART class ids) in `masks/` and the live segmentation in `pred_live/`.\n")
    return out_root, items


def segmentation(scan: Scan, engine: Path, wall_s: float | None = None) -> dict:
    """FPS, latency percentiles and mIoU of the segmentation.

    Recorded masks (live graph): FPS = masks / their recorder-arrival span; latency = recorder
    arrival of the mask minus its header stamp (the thermal frame's restamped trigger time). No recorded masks (a bag
    from elsewhere): the stage runs here on the evaluation frames; FPS and latency are its own timing.
    mIoU: the masks against the simulator's labels on the evaluation frames (unknown and
    background ignored), stuff / object / all as ``rgbt seg eval`` reports them.
    """
    stage = None
    out: dict[str, Any] = {"engine": str(engine)}
    if scan.has_masks:
        out["source"] = "live graph (recorded /rgbt/seg/class_ids)"
        n = scan.mask_stamp.size
        span = (scan.mask_log.max() - scan.mask_log.min()) / 1e9 if n > 1 else 0.0
        out["fps"] = float((n - 1) / span) if span > 0 else None
        out["frames_segmented"] = int(n)
        out["thermal_frames"] = int(scan.thermal_stamp.size)
        lat = scan.mask_latency_ms()
        out["latency_kind"] = ("trigger to mask: recorder arrival of the mask - its header stamp (the thermal "
                               "frame's restamped trigger time)")
    else:
        out["source"] = "offline stage on the recorded thermal frames (no recorded masks)"
        stage = SegmentationStage(SegStageOptions(str(engine), color=False))
        lat_ns = []
        for f in scan.frames:
            t0 = time.perf_counter_ns()
            f.mask = stage.process(f.thermal).class_ids
            lat_ns.append(time.perf_counter_ns() - t0)
        lat = np.array(lat_ns, np.float64) / 1e6
        out["fps"] = float(1000.0 / lat.mean()) if lat.size else None
        out["frames_segmented"] = len(scan.frames)
        out["latency_kind"] = "stage.process wall time per frame (this machine)"
    if lat.size:
        s = summarize_ms(lat * 1e6)
        out.update(p50_ms=s["median_ms"], p90_ms=s["p90_ms"], p99_ms=s["p99_ms"], max_ms=s["max_ms"],
                   latency_n=s["n"])
    else:
        out.update(p50_ms=None, p99_ms=None, latency_n=0)
    scored = [f for f in scan.frames if f.label is not None and f.mask is not None]
    if scored:
        sc = load_sidecar(engine)
        k = sc.num_classes
        cm = np.zeros((k, k), np.int64)
        for f in scored:
            assert f.label is not None and f.mask is not None  # scored: both present
            cm += confusion(f.label, f.mask, k, sc.ignore_ids)
        res = iou_from_confusion(cm, [c.name for c in sc.classes], sc.ignore_ids, sc.object_ids, len(scored))
        out["miou"] = res.miou["all"]
        out["miou_stuff"] = res.miou["stuff"]
        out["miou_object"] = res.miou["object"]
        out["per_class"] = res.per_class
        out["n_eval_frames"] = len(scored)
        out["model_weights"] = sc.weights
        out["model_synthetic"] = bool(sc.synthetic)
    else:
        out["miou"] = None
        out["miou_reason"] = "no simulator labels for this recording (real data or no truth)"
    return out


def vio(bag: Path, runs: int, stack_path: str | None = None,
        progress: Progress | None = None) -> tuple[dict, Any, Any]:
    """ORB-SLAM3 (monocular, thermal, temporally stable normalization, 20 Hz feed: the defaults of
    ``rgbt vio eval``) on the bag; returns (summary, VioEvalResult, Sequence) - the last two for plots."""
    if progress is not None and not vocabulary_file(VocabOptions()).is_file():
        from rich.console import Console

        Console(stderr=True).print("building the ORB vocabulary (first run only, cached; ~30-60 s)")
    vocab = ensure_vocabulary(progress=progress)  # what `rgbt vio eval` uses by default
    seq = bag_sequence(bag, stack_path=stack_path, camera="thermal")
    result = evaluate_sequence(seq, EvalOptions(estimator="orbslam3", runs=runs, vocab=str(vocab)),
                               progress=progress)
    d = result.to_dict()
    run0 = result.runs[0]["metrics"] if result.runs else {}
    rpe = run0.get("rpe") if isinstance(run0.get("rpe"), dict) else None
    summary = {
        "estimator": d["estimator"], "sensor": d["sensor"], "normalization": d["normalization"],
        "rate_hz": d["rate_hz"], "align": d["align"], "runs": len(result.runs),
        "ate_rmse": d["ate_rmse"]["mean"], "ate_rmse_stats": d["ate_rmse"],
        "ate_full_rmse": d["ate_full_rmse"]["mean"],
        "tracked_fraction": d["tracked_fraction"], "time_to_init_s": d["time_to_init_s"]["mean"],
        "resets": d["resets"]["mean"], "final_drift_percent": d["final_drift_percent"]["mean"],
        "rpe": rpe, "fps": d["fps"], "feed_frames": d["meta"].get("feed_frames"),
    }
    return json.loads(to_json(summary, indent=None)), result, seq


def fusion(scan: Scan, truth: Any | None, thermal_seq: dict[int, int], stack: Any, model: Path) -> dict:
    """FPS, latency percentiles and mIoU of the live RGB-T fusion (recorded ``/rgbt/fusion/class_ids``).

    FPS and latency as for :func:`segmentation` (recorder arrival span; arrival - header stamp, the
    trigger time). mIoU: each sampled fused map against the simulator's label map of the colour
    frame taken at the same trigger, rectified onto the fusion canvas with nearest-neighbour
    interpolation (pixels outside the colour image become Unknown and are ignored); ``thermal_seq``
    maps a recorded thermal stamp to its simulator frame (pairs share the trigger stamp).
    """
    out: dict[str, Any] = {"model": str(model), "source": "live graph (recorded /rgbt/fusion/class_ids)"}
    n = int(scan.fusion_stamp.size)
    if n == 0:
        return {**out, "fps": None, "miou": None, "frames_fused": 0,
                "miou_reason": "no fused class maps in the bag (fly with --cameras thermal,color)"}
    span = (scan.fusion_log.max() - scan.fusion_log.min()) / 1e9 if n > 1 else 0.0
    out["fps"] = float((n - 1) / span) if span > 0 else None
    out["frames_fused"] = n
    s = summarize_ms((scan.fusion_log - scan.fusion_stamp).astype(np.float64))
    out.update(p50_ms=s["median_ms"], p90_ms=s["p90_ms"], p99_ms=s["p99_ms"], max_ms=s["max_ms"], latency_n=s["n"])
    if truth is None:
        return {**out, "miou": None, "miou_reason": "no simulator truth for this recording"}
    sc = load_sidecar(model)
    k = sc.num_classes
    rectifier = RgbtRectifier.from_stack(stack, "color_thermal", RectifyOptions(interpolation="nearest"))
    color_t, thermal_t = truth.sim.frame_times("color"), truth.sim.frame_times("thermal")
    cm, scored = np.zeros((k, k), np.int64), 0
    for stamp, fused in sorted(scan.fusion_masks.items()):
        seq = thermal_seq.get(stamp, -1)
        if seq < 0:
            continue
        cseq = int(np.argmin(np.abs(color_t - thermal_t[seq])))
        if abs(int(color_t[cseq]) - int(thermal_t[seq])) > 1_000_000:  # no colour frame at this trigger
            continue
        label = rectifier.rectify_image(truth.label("color", cseq), side=0)
        cm += confusion(label, fused, k, sc.ignore_ids)
        scored += 1
    if not scored:
        return {**out, "miou": None, "miou_reason": "no fused map matched a simulator frame"}
    res = iou_from_confusion(cm, [c.name for c in sc.classes], sc.ignore_ids, sc.object_ids, scored)
    out.update(miou=res.miou["all"], miou_stuff=res.miou["stuff"], miou_object=res.miou["object"],
               per_class=res.per_class, n_eval_frames=scored, model_weights=sc.weights,
               model_synthetic=bool(sc.synthetic))
    return out

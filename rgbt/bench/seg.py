"""``rgbt bench seg``: FPS at batch 1 and latency tiers per zoo model, bare backend vs stage.

For every model: the bare backend (``run`` on a prepared 1xCxHxW array, class-id output only),
the stage run serially (``process``: raw 16-bit frame -> normalization -> infer -> class ids at
input resolution -> colour mask) and the stage as the segmentation node runs it (a
``SegPipeline``, lossless here: normalization on an idle-priority thread overlapped with
inference), all in one process, interleaved in rounds so load changes hit all three alike. Beside each row: the CART
paper's FPS (Orin TensorRT / NUC CPU).
"""

from __future__ import annotations

import argparse
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rgbt.output import print_table
from rgbt.progress import Progress
from rgbt.timing import summarize_ms

if TYPE_CHECKING:
    from rgbt.seg.stage import SegmentationStage

PAPER_TABLE2 = {  # CART paper Table 2: FPS at batch 1, Jetson AGX Orin (TensorRT) / NUC (CPU)
    "FastSCNN": (124.2, 85.6), "MobileNetV3-L": (59.0, 15.5), "EfficientViT-B0": (51.2, 5.5), "ResNet18": (69.3, 12.4),
}


@dataclass(frozen=True)
class SegBenchOptions:
    """What ``rgbt bench seg`` measures (also one campaign job: ``rgbt.campaign.worker``)."""

    models: tuple[str, ...] = ()  #: ONNX files (empty: the thermal zoo models in engines/ and sim_thermal_seg)
    backend: str = "onnxruntime"
    threads: int = 0  #: ONNX Runtime intra-op threads (0: all cores)
    calls_per_round: int = 20  #: timed calls per round and mode
    rounds: int = 6  #: interleaved rounds (bare backend, serial stage, streamed stage)


def options_from_args(args: argparse.Namespace) -> SegBenchOptions:
    """The options of the command line :func:`add_arguments` defines."""
    return SegBenchOptions(models=tuple(args.models or ()), backend=args.backend, threads=args.threads,
                           calls_per_round=args.n, rounds=args.rounds)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--models", nargs="*", help="ONNX files (default: the thermal zoo models in engines/ and sim_thermal_seg)"
    )
    p.add_argument("--backend", default="onnxruntime")
    p.add_argument("--threads", type=int, default=0, help="ORT intra-op threads (0 = all cores)")
    p.add_argument("-n", type=int, default=20, help="timed calls per round and mode")
    p.add_argument("--rounds", type=int, default=6, help="interleaved rounds (bare, serial, stream)")


def _models(options: SegBenchOptions) -> list[Path]:
    from rgbt.paths import ENGINES_DIR
    from rgbt.seg.sidecar import load_sidecar

    if options.models:
        return [Path(m) for m in options.models]
    out = []
    for p in sorted(ENGINES_DIR.glob("*.onnx")):
        try:
            sc = load_sidecar(p)
        except Exception:
            continue
        if len(sc.inputs) == 1 and sc.inputs[0].modality == "thermal" and (sc.paper or p.stem == "sim_thermal_seg"):
            out.append(p)
    return out


def _frame(h: int, w: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:h, 0:w]
    return (21000 + 800 * np.sin(xx / 37.0) * np.cos(yy / 23.0) + rng.normal(0, 40, (h, w))).astype(np.uint16)


class _PipelineRounds:
    """One lossless ``SegPipeline`` for the whole run; ``round(n)`` submits ``n`` frames and
    returns frames per second from the first submit to the n-th result."""

    def __init__(self, stage: SegmentationStage, frame: np.ndarray) -> None:
        from rgbt.seg.pipeline import SegPipeline

        self.frame = frame
        self.errors: list[Exception] = []
        self._done = threading.Semaphore(0)
        self._pipe = SegPipeline(stage, lambda t, r: self._done.release(), lossless=True,
                                 on_error=self._on_error)

    def _on_error(self, _t_ns: int, exc: Exception) -> None:
        self.errors.append(exc)
        self._done.release()

    def round(self, n: int) -> float:
        t0 = time.perf_counter_ns()
        for i in range(n):
            self._pipe.submit(i, self.frame)
        for _ in range(n):
            self._done.acquire()
        if self.errors:
            raise self.errors[0]
        return n / ((time.perf_counter_ns() - t0) / 1e9)

    def close(self) -> dict:
        self._pipe.close()
        return self._pipe.stats()


def bench_model(path: Path, options: SegBenchOptions) -> dict:
    from rgbt.seg.stage import SegmentationStage, SegStageOptions

    opts = {"threads": options.threads} if options.backend == "onnxruntime" else {}
    stage = SegmentationStage(SegStageOptions(str(path), options.backend, opts, color=True))
    sc = stage.model.sidecar
    spec = sc.inputs[0]
    frame = _frame(512, 640)  # a Boson frame; the stage fits it to the model
    x, _ = stage.prepare(frame, stage.new_buffer())
    output = stage.model.class_output or stage.model.float_output
    assert output is not None  # a loaded model has one or the other
    be, out = stage.model.backend, [output]
    feeds = {spec.name: x}
    be.warmup(3)
    for _ in range(3):
        stage.process(frame)
    pipe = _PipelineRounds(stage, frame)  # kept for the whole run, as a node keeps it
    pipe.round(10)
    bare, serial, streamed_fps = [], [], []
    tiers: dict[str, list[int]] = {"copy_in": [], "compute": [], "copy_out": []}
    for _ in range(options.rounds):
        be.timing.reset()
        for _ in range(options.calls_per_round):
            t0 = time.perf_counter_ns()
            be.run(feeds, out)
            bare.append(time.perf_counter_ns() - t0)
        tiers["copy_in"] += be.timing.copy_in_ns
        tiers["compute"] += be.timing.compute_ns
        tiers["copy_out"] += be.timing.copy_out_ns
        for _ in range(options.calls_per_round):
            t0 = time.perf_counter_ns()
            stage.process(frame)
            serial.append(time.perf_counter_ns() - t0)
        streamed_fps.append(pipe.round(options.calls_per_round))
    pipeline_stats = pipe.close()
    b, s = summarize_ms(bare), summarize_ms(serial)
    backend_fps = 1000.0 / b["mean_ms"]
    stream_fps = float(np.mean(streamed_fps))
    paper = sc.paper or {}
    return {
        "model": path.stem, "architecture": sc.architecture, "input": [spec.channels, spec.height, spec.width],
        "params": sc.params, "gflops": sc.gflops, "weights": sc.weights,
        "fps": backend_fps, "p50_ms": b["median_ms"], "p90_ms": b["p90_ms"], "p99_ms": b["p99_ms"],
        "backend_fps": backend_fps, "stage_fps": stream_fps, "stage_serial_fps": 1000.0 / s["mean_ms"],
        "stage_ratio": stream_fps / backend_fps, "pipeline": pipeline_stats,
        "stage_ratio_p50": b["median_ms"] / s["median_ms"],  # serial stage vs bare, medians: robust to load spikes
        "stage_p50_ms": s["median_ms"], "stage_p90_ms": s["p90_ms"], "stage_p99_ms": s["p99_ms"],
        "tiers": {k: summarize_ms(v) for k, v in tiers.items()},
        "backend": be.describe(),
        "paper": {"model": paper.get("model"), "fps_orin": paper.get("fps_orin"), "fps_nuc": paper.get("fps_nuc")},
    }


def run(options: SegBenchOptions, progress: Progress | None = None) -> dict:
    """The benchmark; ``progress``: reports one task, ``bench seg``, a step per model."""
    models = _models(options)
    results = []
    for i, path in enumerate(models):
        if progress is not None:
            progress("bench seg", i, len(models))
        results.append(bench_model(path, options))
    if progress is not None:
        progress("bench seg", len(models), len(models))
    return {"benchmark": "seg", "backend": options.backend, "n": options.calls_per_round, "rounds": options.rounds,
            "note": "stage_fps = the stage as the segmentation node runs it (SegPipeline: normalization on an "
                    "idle-priority thread overlapped with inference), fed without gaps; stage_serial_fps = "
                    "process() one frame at a time; fps/p*_ms = bare backend, batch 1, class-id output",
            "models": {r["model"]: r for r in results}}


def print_result(result: dict) -> None:
    rows = []
    for r in result["models"].values():
        p = r["paper"]
        rows.append([r["model"], f"{r['params'] / 1e6:.2f} M" if r["params"] else "-", r["gflops"] or "-",
                     f"{r['backend_fps']:.1f}", f"{r['p50_ms']:.1f}/{r['p90_ms']:.1f}/{r['p99_ms']:.1f}",
                     f"{r['stage_fps']:.1f}", f"{r['stage_serial_fps']:.1f}",
                     f"{r['stage_ratio']:.2f} (p50 {r['stage_ratio_p50']:.2f})",
                     p.get("model") or "-", p.get("fps_orin") or "-", p.get("fps_nuc") or "-"])
    print_table(f"segmentation, batch 1, backend {result['backend']} (paper: CART Table 2)",
                ["model", "params", "GFLOP", "backend FPS", "p50/p90/p99 ms", "stage FPS", "serial FPS",
                 "stage/backend", "paper model", "paper Orin FPS", "paper NUC FPS"], rows)

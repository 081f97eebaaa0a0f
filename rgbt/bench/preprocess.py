"""``rgbt bench preprocess``: per-stage latency of thermal / RGB-T preprocessing vs the CART reference.

Stages (median / p90 / p99 ms over ``--frames`` calls, cycling through distinct frames):
``percentile`` (exact 1st/99th from a histogram), ``normalize_clahe`` (percentiles + CART-parity
CLAHE, float32 out), ``normalize_linear`` (percentiles + rescale only), ``temporal_vio``
(:class:`~rgbt.image.normalize.TemporalNormalizer`, 5/95, smoothed), ``rectify_pair`` (colour
960x600 + thermal 640x512 through ``RgbtRectifier``). References measured in the same run:
``reference_percentile`` (``np.percentile``) and ``reference_cart`` (``np.percentile`` + rescale +
``skimage.exposure.equalize_adapthist(clip_limit=0.01)``, CART's code path). Also reports
parity (mean / max absolute difference to the CART reference, [0,1] scale) on the real FLIR
frame (when the shared data is present), crops / resizes of it, and SYNTHETIC frames.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass

import cv2
import numpy as np

from rgbt.output import print_table
from rgbt.progress import Progress, no_progress
from rgbt.timing import summarize_ms

BUDGET_MS = {"percentile": 0.8, "normalize_clahe": 2.5, "rectify_pair": 3.0}


@dataclass(frozen=True)
class PreprocessBenchOptions:
    """What ``rgbt bench preprocess`` measures."""

    frames: int = 200  #: timed calls per stage
    ref_frames: int | None = None  #: timed calls of the slow CART reference (None: ``frames``)
    parity: bool = True  #: also measure the output's difference to the CART reference


def options_from_args(args: argparse.Namespace) -> PreprocessBenchOptions:
    """The options of the command line :func:`add_arguments` defines."""
    return PreprocessBenchOptions(frames=args.frames, ref_frames=args.ref_frames, parity=not args.no_parity)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--frames", type=int, default=200, help="timed calls per stage (default 200)")
    parser.add_argument("--ref-frames", type=int, default=None,
                        help="timed calls of the slow CART reference (default: same as --frames)")
    parser.add_argument("--no-parity", action="store_true", help="skip the parity measurement")


def cart_reference(frame: np.ndarray, low: float = 1.0, high: float = 99.0) -> np.ndarray:
    """CART's normalization: np.percentile rescale, clip, skimage equalize_adapthist(clip_limit=0.01)."""
    from skimage.exposure import equalize_adapthist  # test / bench-only dependency

    p_lo, p_hi = np.percentile(frame, [low, high])
    x = np.clip((frame.astype(np.float64) - p_lo) / (p_hi - p_lo), 0.0, 1.0)
    return equalize_adapthist(x, clip_limit=0.01)


def _thermal_frames(n_synthetic: int = 16) -> tuple[list[np.ndarray], str]:
    from rgbt.image.synthetic import SyntheticSceneOptions, SyntheticThermal

    frames = []
    source = f"{n_synthetic} SYNTHETIC 640x512 frames (rgbt.image.synthetic)"
    real = _real_frame()
    if real is not None:
        frames.append(real)
        source += " + the real FLIR Duo Pro R 640x512 frame"
    scene = SyntheticThermal(SyntheticSceneOptions(seed=1))
    for i in range(n_synthetic):
        frames.append(scene.frame(i, (40.0 * i, 256.0)))
    return frames, source


def _real_frame() -> np.ndarray | None:
    from rgbt.paths import data_dir

    path = data_dir() / "fixtures" / "thermal" / "flir_duo_pro_r_frame_000000.fff"
    if not path.is_file():
        return None
    from rgbt.image.radiometry import read_fff

    return read_fff(path).counts


def _time_cycle(fn: Callable[[np.ndarray], object], frames: list, n: int, warmup: int = 5) -> dict:
    for i in range(warmup):
        fn(frames[i % len(frames)])
    samples = []
    for i in range(n):
        frame = frames[i % len(frames)]
        t0 = time.perf_counter_ns()
        fn(frame)
        samples.append(time.perf_counter_ns() - t0)
    return summarize_ms(samples)


def _rectify_stage(n: int, thermal: list[np.ndarray]) -> dict:
    try:
        from rgbt.image.rectify import RgbtRectifier
        from rgbt.stack import load_stack
    except ImportError as exc:
        return {"n": 0, "median_ms": None, "p90_ms": None, "p99_ms": None,
                "missing": f"rectification not available in this checkout: {exc}"}
    try:
        rectifier = RgbtRectifier.from_stack(load_stack(), pair="color_thermal")
    except Exception as exc:  # report, never crash the whole benchmark
        return {"n": 0, "median_ms": None, "p90_ms": None, "p99_ms": None,
                "missing": f"RgbtRectifier.from_stack failed: {type(exc).__name__}: {exc}"}
    rng = np.random.default_rng(0)
    colors = [rng.integers(0, 256, (600, 960, 3), dtype=np.uint8) for _ in range(4)]
    pairs = [(colors[i % len(colors)], thermal[i % len(thermal)]) for i in range(8)]
    return _time_cycle(lambda pair: rectifier.rectify(pair[0], pair[1]), pairs, n)


def parity_cases() -> list[tuple[str, np.ndarray]]:
    """Frames for the parity check: the real frame (if present), crops / resizes, SYNTHETIC frames."""
    from rgbt.image.synthetic import SyntheticSceneOptions, SyntheticThermal

    cases = []
    real = _real_frame()
    if real is not None:
        cases += [
            ("flir_duo_pro_r 640x512 (real)", real),
            ("flir crop 600x500 (real)", real[:500, :600]),
            ("flir crop 477x333 (real)", real[:333, :477]),
            ("flir resize 320x256 (real)", cv2.resize(real, (320, 256), interpolation=cv2.INTER_AREA)),
            ("flir resize 1280x1024 (real)", cv2.resize(real, (1280, 1024), interpolation=cv2.INTER_LINEAR)),
        ]
    scene = SyntheticThermal(SyntheticSceneOptions(seed=2))
    cases.append(("synthetic 640x512", scene.frame(0, (320.0, 200.0))))
    small = SyntheticThermal(SyntheticSceneOptions(height=300, width=410, object_radius=20, seed=3))
    cases.append(("synthetic 410x300", small.frame(0, (100.0, 100.0))))
    return cases


def measure_parity() -> list[dict]:
    from rgbt.image.normalize import normalize

    rows = []
    for name, frame in parity_cases():
        diff = np.abs(normalize(frame).astype(np.float64) - cart_reference(frame))
        rows.append({"case": name, "height": frame.shape[0], "width": frame.shape[1],
                     "mean_abs_diff": float(diff.mean()), "max_abs_diff": float(diff.max())})
    return rows


def run(options: PreprocessBenchOptions, progress: Progress | None = None) -> dict:
    """The benchmark; ``progress``: reports one task, ``bench preprocess``, a step per stage."""
    from rgbt.image.normalize import NormalizeOptions, Normalizer, TemporalNormalizer, percentile_bounds

    n = int(options.frames)
    n_ref = int(options.ref_frames or n)
    frames, source = _thermal_frames()
    clahe = Normalizer(NormalizeOptions())
    linear = Normalizer(NormalizeOptions(clahe=False))
    temporal = TemporalNormalizer()
    clock = {"t": 0}

    def temporal_call(frame: np.ndarray) -> object:
        clock["t"] += 16_666_667
        return temporal(frame, clock["t"])

    stages: dict[str, dict] = {}
    plan: list[tuple[str, Callable[[np.ndarray], object], int]] = [
        ("percentile", lambda f: percentile_bounds(f, 1.0, 99.0), n),
        ("normalize_clahe", clahe, n),
        ("normalize_linear", linear, n),
        ("temporal_vio", temporal_call, n),
        ("reference_percentile", lambda f: np.percentile(f, [1.0, 99.0]), n_ref),
        ("reference_cart", cart_reference, n_ref),
    ]
    report = progress or no_progress
    total = len(plan) + 2
    for i, (name, fn, count) in enumerate(plan):
        report("bench preprocess", i, total, name)
        stages[name] = _time_cycle(fn, frames, count)
    report("bench preprocess", total - 2, total, "rectify_pair")
    stages["rectify_pair"] = _rectify_stage(n, frames)
    report("bench preprocess", total - 1, total, "parity")
    parity = measure_parity() if options.parity else []
    report("bench preprocess", total, total)

    def speedup(ref: str, ours: str) -> float | None:
        a, b = stages[ref]["median_ms"], stages[ours]["median_ms"]
        return float(a / b) if a and b else None

    return {
        "benchmark": "preprocess",
        "frames": n,
        "thermal_source": source,
        "stages": stages,
        "budget_ms": BUDGET_MS,
        "within_budget": {k: (stages[k]["median_ms"] is not None and stages[k]["median_ms"] <= v)
                          for k, v in BUDGET_MS.items()},
        "speedup": {"percentile_vs_np_percentile": speedup("reference_percentile", "percentile"),
                    "normalize_clahe_vs_cart_reference": speedup("reference_cart", "normalize_clahe")},
        "parity": parity,
        "parity_tolerance": {"mean_abs_diff": 0.01, "max_abs_diff": 0.06},
        "note": "2-core machine shared with other work: timings are noisy",
    }


def print_result(result: dict) -> None:
    rows = []
    for name, s in result["stages"].items():
        budget = result["budget_ms"].get(name)
        rows.append((name, s.get("median_ms") if s.get("median_ms") is not None else "-",
                     s.get("p90_ms") if s.get("p90_ms") is not None else "-",
                     s.get("p99_ms") if s.get("p99_ms") is not None else "-",
                     budget if budget is not None else "", s.get("missing", "")))
    print_table(f"preprocess ({result['frames']} frames; {result['thermal_source']})",
                ["stage", "median ms", "p90 ms", "p99 ms", "budget ms", "note"], rows)
    print_table("speed-up (reference median / ours)", ["comparison", "x"],
                [(k, v if v is not None else "-") for k, v in result["speedup"].items()])
    if result["parity"]:
        print_table("parity vs CART reference ([0,1] scale)", ["case", "mean abs diff", "max abs diff"],
                    [(p["case"], f"{p['mean_abs_diff']:.2e}", f"{p['max_abs_diff']:.2e}") for p in result["parity"]])

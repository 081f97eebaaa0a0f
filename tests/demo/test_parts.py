"""The demo's parts that need no ROS graph: clocks, truth, options, replay of a simulated bag, errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from helpers import independent_miou, read_class_pngs, run_rgbt
from rgbt.demo.options import DemoOptions, flight_start_s, resolve_trajectory
from rgbt.demo.truth import BagClock
from rgbt.errors import ConfigError, EvaluationError


def test_bag_clock_constant_offset_keeps_restamp_errors_visible() -> None:
    t_sim = np.arange(0, 10_000_000_000, 16_666_667, dtype=np.int64)
    offset = 1_800_000_000_000_000_000 - 5_000_000_000
    jitter = (np.sin(np.arange(t_sim.size)) * 2e6).astype(np.int64)  # +-2 ms restamping error
    clock = BagClock.fit(t_sim, t_sim + offset + jitter, offset)
    assert not clock.warped
    assert clock.realtime_factor == pytest.approx(1.0, abs=1e-3)
    np.testing.assert_array_equal(clock.to_bag(t_sim), t_sim + offset)  # errors are not absorbed


def test_bag_clock_follows_a_lagging_simulator() -> None:
    t_sim = np.arange(0, 10_000_000_000, 16_666_667, dtype=np.int64)
    offset = 10**18
    t_bag = offset + (t_sim * 2)  # published at half the real rate: the bag's clock runs 2x slower
    clock = BagClock.fit(t_sim, t_bag, offset)
    assert clock.warped and clock.realtime_factor == pytest.approx(0.5, rel=1e-6)
    mid = t_sim[:-1] + 8_000_000
    np.testing.assert_allclose(clock.to_bag(mid), offset + 2 * mid, atol=2)
    assert np.all(np.diff(clock.to_bag(np.arange(-10**9, 11 * 10**9, 10**7))) > 0)  # monotonic, extrapolated
    with pytest.raises(EvaluationError):
        BagClock.fit(t_sim[:1], t_bag[:1], offset)


def test_flight_starts_where_the_vehicle_moves(tmp_path: Path) -> None:
    t = np.arange(0, 100, 0.5)
    x = np.where(t < 30, 0.01 * t, 0.3 + 2.0 * (t - 30))  # hovers 30 s, then flies at 2 m/s
    tum = tmp_path / "traj.txt"
    tum.write_text("# t x y z qx qy qz qw\n" + "".join(f"{a:.3f} {b:.3f} 0 5 0 0 0 1\n" for a, b in zip(t, x)))
    assert flight_start_s(str(tum), 20.0) == pytest.approx(32.5, abs=0.51)  # 5 m from the start
    assert flight_start_s(str(tum), 90.0) == pytest.approx(99.5 - 90.5, abs=1e-6)  # pulled earlier to fit
    assert flight_start_s("lawnmower", 20.0) == 0.0


def test_default_trajectory_is_a_real_cart_one(cart_dir: Path) -> None:
    notes: list[str] = []
    traj = resolve_trajectory(None, 62.0, notes)
    assert Path(traj).parent == cart_dir / "ground_truth" and not notes


def test_trajectory_fallback_without_shared_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RGBT_DATA", str(tmp_path / "nowhere"))
    notes: list[str] = []
    assert resolve_trajectory(None, 62.0, notes) == "lawnmower"
    assert "shared data not found" in notes[0]


def test_bad_options() -> None:
    with pytest.raises(ConfigError):
        DemoOptions(duration_s=0)
    with pytest.raises(ConfigError):
        DemoOptions(cameras=["color"])
    with pytest.raises(ConfigError):
        resolve_trajectory("no/such/file.txt", 10.0, [])


def test_flight_profile_fails_fast_without_hardware(tmp_path: Path) -> None:
    if Path("/dev/ttyACM0").exists() or Path("/dev/ttyUSB0").exists():
        pytest.skip("serial devices present on this machine")
    proc = run_rgbt("demo", "--profile", "flight", "--out", tmp_path / "run", check=False, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "/dev/ttyACM0" in proc.stderr and "CART hardware" in proc.stderr
    assert not list((tmp_path / "run").glob("rgbt_*"))  # nothing was started or recorded


def test_replay_missing_bag_is_a_clear_error(tmp_path: Path) -> None:
    proc = run_rgbt("demo", "--replay", tmp_path / "missing_bag", "--out", tmp_path / "run", check=False)
    assert proc.returncode == 2 and "missing_bag" in proc.stderr and "bag not found" in proc.stderr
    assert not (tmp_path / "run").exists()  # refused before anything was written


@pytest.mark.slow
def test_ffc_frames_get_the_label_of_the_frame_they_repeat() -> None:
    """Against the simulator itself: a frozen frame's pixels equal those of ``content_index``'s frame."""
    from rgbt.demo.truth import SimTruth
    from rgbt.sim import SimOptions, SimStack

    sim = SimStack(SimOptions(trajectory="hover", duration_s=1.6, seed=3, cameras=["thermal"], ffc_first_s=0.6,
                              ffc_duration_s=0.3, drop_prob=0.0, world_size_px=512))
    truth = SimTruth(sim, 0, {})
    frames = {s.seq: s for s in sim.samples(kinds=["thermal"])}
    frozen = [n for n, s in frames.items() if s.ffc]
    assert frozen, "the options must produce an FFC"
    for n, s in frames.items():
        k = truth.content_index("thermal", n)
        assert (k != n) == s.ffc
        np.testing.assert_array_equal(s.data, frames[k].data)
        np.testing.assert_array_equal(s.label, frames[k].label)


@pytest.mark.slow
def test_replay_of_a_simulated_bag(tmp_path: Path) -> None:
    """``--replay`` on a bag written by the simulator (labels topic + ground truth beside it): the
    stage runs offline, mIoU against the bag's labels, reproduced by ``rgbt seg eval``."""
    from rgbt.sim import SimOptions, SimStack
    from rgbt.sim.record import write_sim_bag

    bag = tmp_path / "sim_bag"
    write_sim_bag(SimStack(SimOptions(trajectory="lawnmower", duration_s=1.0, seed=1, cameras=["thermal"],
                                      world_size_px=1024)), bag, label_stride=6)
    proc = run_rgbt("demo", "--replay", bag, "--no-vio", "--out", tmp_path / "run", "--json")
    s = json.loads(proc.stdout)
    seg = s["segmentation"]
    assert s["synthetic"] is True and seg["source"].startswith("offline")
    assert seg["n_eval_frames"] == 10 and 0 <= seg["miou"] <= 1 and seg["fps"] > 0
    assert Path(s["report"]).is_file()
    res = json.loads(run_rgbt("seg", "eval", "--dataset", seg["labels_dir"], "--engine", seg["engine"],
                              "--split", "test", "--json").stdout)
    assert res["miou"]["all"] == pytest.approx(seg["miou"], abs=1e-9)
    # and by a path that shares neither the demo's evaluation nor rgbt.seg.metrics: the stage on the
    # written thermal PNGs, IoU from its definition against the written label PNGs
    import cv2

    from rgbt.seg.stage import SegmentationStage, SegStageOptions

    stage = SegmentationStage(SegStageOptions(seg["engine"], color=False))
    root = Path(seg["labels_dir"])
    pairs = []
    for (gt, _), item in zip(read_class_pngs(root, "masks"), (root / "test.txt").read_text().split()):
        place_traj, name = item.rsplit("/", 1)
        thermal = cv2.imread(str(root / place_traj / "thermal16" / f"{name}.png"), cv2.IMREAD_UNCHANGED)
        assert thermal.dtype == np.uint16
        pairs.append((gt, stage.process(thermal).class_ids))
    assert len(pairs) == 10
    assert independent_miou(pairs)[0] == pytest.approx(seg["miou"], abs=1e-6)


def test_fusion_score_pairs_fused_maps_with_the_colour_labels_of_their_trigger() -> None:
    """``rgbt.demo.evaluate.fusion``: a fused map is scored against the colour camera's label map at
    the same trigger, rectified onto the fusion canvas. SYNTHETIC labels: random class blocks."""
    from types import SimpleNamespace

    from rgbt.demo.evaluate import fusion
    from rgbt.demo.scan import Scan
    from rgbt.image.rectify import RectifyOptions, RgbtRectifier
    from rgbt.paths import REPO_ROOT
    from rgbt.stack import load_stack

    stack = load_stack()
    color = stack.cameras["color"]
    thermal_t = np.arange(0, 20, dtype=np.int64) * 16_666_667  # 60 Hz triggers
    color_t = thermal_t[::2]  # colour at every second trigger

    def label(camera: str, seq: int) -> np.ndarray:  # blocks of classes 2..9, different per frame
        assert camera == "color"
        blocks = np.random.default_rng(seq).integers(2, 10, (6, 10), dtype=np.uint8)
        return np.kron(blocks, np.ones((color.height // 6, color.width // 10), np.uint8))

    truth = SimpleNamespace(sim=SimpleNamespace(frame_times=lambda cam: color_t if cam == "color" else thermal_t),
                            label=label)
    rect = RgbtRectifier.from_stack(stack, "color_thermal", RectifyOptions(interpolation="nearest"))
    offset = 10**18
    stamps = [offset + int(t) for t in color_t[:5]]  # fused at colour triggers
    thermal_seq = {offset + int(t): k for k, t in enumerate(thermal_t)}
    perfect = {s: rect.rectify_image(label("color", k), 0) for k, s in enumerate(stamps)}
    scan = Scan(Path("x"), True, offset, 1.0, {}, stack.cameras["thermal"].topic)
    scan.fusion_stamp = np.array(stamps, np.int64)
    scan.fusion_log = scan.fusion_stamp + 30_000_000  # 30 ms trigger -> recorder
    scan.fusion_masks = perfect
    model = REPO_ROOT / "engines" / "fusion_late_tiny.onnx"
    good = fusion(scan, truth, thermal_seq, stack, model)
    assert good["miou"] == pytest.approx(1.0) and good["n_eval_frames"] == 5 and good["frames_fused"] == 5
    assert good["p50_ms"] == pytest.approx(30.0) and good["fps"] == pytest.approx(30.0, rel=1e-3)
    # the maps of the wrong trigger (shifted by one colour frame) score lower
    scan.fusion_masks = {s: perfect[stamps[(i + 1) % 5]] for i, s in enumerate(stamps)}
    assert fusion(scan, truth, thermal_seq, stack, model)["miou"] < 0.5
    empty = Scan(Path("x"), True, offset, 1.0, {}, stack.cameras["thermal"].topic)
    assert fusion(empty, truth, thermal_seq, stack, model)["fps"] is None


def test_prerender_by_default_only_beyond_the_thermal_camera() -> None:
    """The renderer keeps up with the thermal camera alone on 2 cores, not with colour too: a flight
    with more cameras is rendered ahead unless told otherwise."""
    from rgbt.demo.options import DemoOptions

    assert not DemoOptions().prerender_flight()
    assert DemoOptions(cameras=["thermal", "color"]).prerender_flight()
    assert not DemoOptions(cameras=["thermal", "color"], prerender=False).prerender_flight()
    assert DemoOptions(prerender=True).prerender_flight()


def test_the_summary_shows_fusion_beside_thermal_only_when_it_flew(capsys: pytest.CaptureFixture) -> None:
    """``rgbt demo --cameras thermal,color``: the console table and ``--json`` carry the fusion FPS,
    latency and mIoU beside the thermal-only segmentation; a thermal-only flight shows none."""
    from rgbt.cli.demo import compact, print_summary

    base = {"synthetic": True, "health": {"duration_s": 60.9, "lost_total": 0, "drops_total": 0, "topics": {}},
            "segmentation": {"fps": 58.9, "p50_ms": 30.5, "p99_ms": 59.5, "miou": 0.257, "per_class": {}},
            "vio": {"ate_rmse": 0.54, "tracked_fraction": 0.66}, "report": "report.md", "bag": "bag",
            "plots": [], "run": {}, "fusion": None}
    print_summary(base)
    assert "fusion" not in capsys.readouterr().out and "fusion" not in compact(base)
    fused = dict(base, fusion={"fps": 9.98, "p50_ms": 62.9, "p99_ms": 152.8, "miou": 0.485, "per_class": {"Road": 0.6}})
    print_summary(fused)
    out = capsys.readouterr().out
    assert "RGB-T fusion FPS" in out and "9.98" in out and "0.485" in out and "62.9 / 152.8" in out
    assert compact(fused)["fusion"] == {"fps": 9.98, "p50_ms": 62.9, "p99_ms": 152.8, "miou": 0.485}

"""`rgbt bag extract` on simulated recordings (synthetic data): an MCAP of the simulator and the same run as
a ROS 1 bag in CART's layout give the same files; GNSS / pose / trigger columns against the simulator's
truth; rectified pairs line up; a truncated bag yields everything before the damage; bad messages are
counted; a rerun skips what is already written; ``--sample cart`` on a flight with a hover, a transit and
a hover picks exactly the frames CART's rule implies (computed here independently from the bag)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml
from rosbags.highlevel import AnyReader

from rgbt.bag.extract import ExtractOptions, extract_bags, read_frames_csv
from rgbt.paths import DEFAULT_STACK

SIM_S = 0.6
CAMERAS = {"thermal": "/boson/thermal/image_raw", "color": "/eo/color/image_raw", "mono": "/eo/mono/image_raw"}


def consistent_stack(path: Path, **changes: float) -> Path:
    """The default stack made self-consistent for rectification checks: the ``color_thermal`` pair takes
    the cameras' own intrinsics (what the simulator renders with; thermal shifted by CART's canvas offset)
    and the thermal camera's mounting follows the pair's Kalibr extrinsics (``T_imu_thermal = T_imu_color
    T_thermal_color^-1``), so the simulated geometry is the pair's. ``changes``: ``{"trigger.rate_hz": 4}``."""
    from rgbt.stack import load_stack

    stack = load_stack()
    data = yaml.safe_load(DEFAULT_STACK.read_text())
    col, th = stack.cameras["color"], stack.cameras["thermal"]
    pair = stack.pairs["color_thermal"]
    ox, oy = pair.cam1_offset
    T_imu_thermal = col.T_imu_cam_matrix() @ np.linalg.inv(pair.T_cam1_cam0_matrix())
    data["cameras"]["thermal"]["T_imu_cam"] = T_imu_thermal.tolist()
    data["pairs"]["color_thermal"].update({
        "cam0_intrinsics": col.intrinsics.model_dump(), "cam0_distortion": col.distortion.model_dump(),
        "cam0_offset": [0.0, 0.0],
        "cam1_intrinsics": {**th.intrinsics.model_dump(), "cx": th.intrinsics.cx + ox, "cy": th.intrinsics.cy + oy},
        "cam1_distortion": th.distortion.model_dump(), "cam1_offset": [ox, oy]})
    for key, value in changes.items():
        node = data
        *parents, leaf = key.split(".")
        for part in parents:
            node = node[part]
        node[leaf] = value
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def flight(tmp_path_factory: pytest.TempPathFactory):
    """A simulated 0.6 s run (circle at 40 m, all cameras, labels) as MCAP and as a CART-layout ROS 1 bag."""
    from rgbt.bag.convert import ConvertOptions, convert_bag
    from rgbt.bag.renames import CART_ROS1_NAMES
    from rgbt.sim import SimOptions, SimStack
    from rgbt.sim.record import write_sim_bag

    root = tmp_path_factory.mktemp("extract")
    stack_path = consistent_stack(root / "stack.yaml")
    sim = SimStack(SimOptions(stack_path=str(stack_path), trajectory="circle", duration_s=SIM_S, seed=5,
                              altitude_m=40.0, world_size_px=512, apply_td=False, lead_in_s=0.2, lead_out_s=0.2, drop_prob=0.03))
    summary = write_sim_bag(sim, root / "sim", label_stride=4)  # class labels at every 4th pulse: pairs with both
    convert_bag(root / "sim", root / "cart.bag", ConvertOptions(to="ros1", renames=dict(CART_ROS1_NAMES)))
    opts = ExtractOptions(stack_path=str(stack_path))
    mcap = extract_bags([root / "sim"], root / "out_mcap", opts)
    ros1 = extract_bags([root / "cart.bag"], root / "out_ros1", opts)
    yield sim, summary, root, stack_path, mcap, ros1
    shutil.rmtree(root, ignore_errors=True)


def _bag_images(path: Path) -> dict[str, dict[int, np.ndarray]]:
    """camera -> stamp -> pixels, read with rosbags directly (not through rgbt's reader)."""
    from rgbt.image.codec import image_to_numpy
    from rgbt.bag.renames import CART_ROS1_NAMES

    back = {v: k for k, v in CART_ROS1_NAMES.items()}
    names = {t: c for c, t in CAMERAS.items()}
    out: dict[str, dict[int, np.ndarray]] = {c: {} for c in CAMERAS}
    with AnyReader([path]) as reader:
        conns = [c for c in reader.connections if back.get(c.topic, c.topic) in names]
        for conn, _, raw in reader.messages(connections=conns):
            msg = reader.deserialize(raw, conn.msgtype)
            stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
            out[names[back.get(conn.topic, conn.topic)]][stamp] = image_to_numpy(msg).copy()
    return out


def rgbt(*argv: str) -> None:
    """Run the ``rgbt`` CLI in this process (same code path as the command, without a Python start-up)."""
    from rgbt.cli import main

    assert main([str(a) for a in argv]) == 0, argv


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for d in ("images", "topics") for p in (root / d).rglob("*") if p.is_file()}


@pytest.mark.slow
def test_mcap_and_cart_ros1_bag_extract_to_the_same_files(flight) -> None:
    sim, summary, root, _, mcap, ros1 = flight
    assert _files(mcap.out) == _files(ros1.out)
    for cam in CAMERAS:
        assert mcap.summary["frames"][cam] == summary["counts"][CAMERAS[cam]] == ros1.summary["frames"][cam]
    assert (mcap.out / "frames.csv").read_text() == (ros1.out / "frames.csv").read_text()
    truth = _bag_images(root / "sim")
    assert {c: len(v) for c, v in truth.items()} == {c: summary["counts"][t] for c, t in CAMERAS.items()}
    for out in (mcap.out, ros1.out):
        for cam, frames in truth.items():
            names = sorted(p.name for p in (out / "images" / cam).iterdir())
            assert names == sorted(f"{t}.png" for t in frames)  # stamps to the nanosecond
            for stamp in list(frames)[::7]:
                img = cv2.imread(str(out / "images" / cam / f"{stamp}.png"), cv2.IMREAD_UNCHANGED)
                want = frames[stamp] if frames[stamp].ndim == 2 else frames[stamp][..., ::-1]  # RGB -> BGR
                assert img.dtype == want.dtype and np.array_equal(img, want), (cam, stamp)
    assert cv2.imread(str(next((mcap.out / "images/thermal").iterdir())), cv2.IMREAD_UNCHANGED).dtype == np.uint16
    assert mcap.summary["bad_messages"] == {} and mcap.summary["stopped"] == [] and mcap.summary["synthetic"]
    assert (mcap.out / "topics/gps__fix.csv").is_file() and mcap.summary["table_rows"]["/imu/imu"] == \
        summary["counts"]["/imu/imu"]


@pytest.mark.slow
def test_frame_index_against_the_simulators_truth(flight) -> None:
    from rgbt.geo import enu_to_lla, lla_to_enu

    sim, _, root, _, mcap, _ = flight
    rows = read_frames_csv(mcap.out / "frames.csv")
    thermal = [r for r in rows if r["camera"] == "thermal"]
    # trigger slot: the pulse of the frame (SyncIn count = pulse index + 1); restamped frames sit on it exactly
    pulse_index = {int(t): k for k, t in enumerate(sim.pulse_ns)}
    assert all(int(r["trigger_slot"]) == pulse_index[r["stamp_ns"]] + 1 for r in rows)
    assert all(r["sync_residual_ns"] == "0" for r in rows)
    assert all(r["ffc"] == "" for r in rows)  # the simulator's bag has no driver frame_info: left empty
    # GNSS: linear interpolation of the /gps/fix fixes (recomputed here), near the truth within the u-blox noise
    with AnyReader([root / "sim"]) as reader:
        conns = [c for c in reader.connections if c.topic == "/gps/fix"]
        fixes = [(m.header.stamp.sec * 10**9 + m.header.stamp.nanosec, m.latitude, m.longitude, m.altitude)
                 for m in (reader.deserialize(raw, c.msgtype) for c, _, raw in reader.messages(connections=conns))]
    f = np.array(fixes)
    t_fix = np.array([x[0] for x in fixes], dtype=np.int64)
    inside = [r for r in thermal if t_fix[0] <= r["stamp_ns"] <= t_fix[-1]]
    assert len(inside) > 15 and all(r["gnss_lat"] != "" for r in inside)
    t = (np.array([r["stamp_ns"] for r in inside], dtype=np.int64) - t_fix[0]).astype(np.float64)
    got = np.array([[float(r["gnss_lat"]), float(r["gnss_lon"]), float(r["gnss_alt"])] for r in inside])
    for i in range(3):
        np.testing.assert_allclose(got[:, i], np.interp(t, (t_fix - t_fix[0]).astype(np.float64), f[:, 1 + i]), rtol=0, atol=1e-9)
    truth = enu_to_lla(sim.trajectory.position(sim.trajectory.tau(np.array([r["stamp_ns"] for r in inside]))),
                       sim.origin_lla)
    err = lla_to_enu(got, sim.origin_lla) - lla_to_enu(truth, sim.origin_lla)
    assert np.abs(err[:, :2]).max() < 4 * 0.8 and np.abs(err[:, 2]).max() < 4 * 1.6  # u-blox sigma 0.8 / 1.6 m
    # autopilot pose (EKF noise 1 cm) interpolated to the frame times; moving at 5 m/s
    posed = [r for r in thermal if r["pose_x"] != ""]
    pos = np.array([[float(r[k]) for k in ("pose_x", "pose_y", "pose_z")] for r in posed])
    want = sim.trajectory.position(sim.trajectory.tau(np.array([r["stamp_ns"] for r in posed])))
    assert len(posed) > 20 and np.abs(pos - want).max() < 0.05
    assert {r["moving"] for r in thermal if r["stamp_ns"] - fixes[0][0] >= 2e9} <= {"1"}  # < 2 s of GNSS: unknown
    assert all(r["moving"] == "" for r in thermal if r["stamp_ns"] - fixes[0][0] < 2e9)


@pytest.mark.slow
def test_rectified_pairs_line_up_ground_points(flight) -> None:
    from rgbt.bag.pairs import match_pairs, rectifier_for, write_pairs
    from rgbt.bag.extract import read_image, stack_for
    from rgbt.image.rectify import RectifyOptions, RgbtRectifier

    sim, _, root, stack_path, mcap, _ = flight
    stack = stack_for(str(stack_path))
    rect = rectifier_for(stack)
    res = write_pairs(mcap.out, mcap.rows, mcap.summary["slot_tolerance_ns"], rect)
    pairs = list(csv.DictReader((mcap.out / "pairs/pairs.csv").open()))
    assert res["pairs"] == len(pairs) == len(match_pairs(mcap.rows, mcap.summary["slot_tolerance_ns"]))
    assert len(pairs) >= mcap.summary["frames"]["color"] - 3 and all(p["dt_ns"] == "0" for p in pairs)
    labelled = {r["stamp_ns"] for r in mcap.rows if r["camera"] == "labels_color"} & \
        {r["stamp_ns"] for r in mcap.rows if r["camera"] == "labels_thermal"}
    p = next(p for p in pairs[len(pairs) // 2:] if int(p["stamp_color"]) in labelled)
    stamp = int(p["stamp_color"])
    color_r, thermal_r = read_image(mcap.out / p["color"]), read_image(mcap.out / p["thermal"])
    assert color_r.shape == (600, 960, 3) and thermal_r.shape == (600, 960) and thermal_r.dtype == np.uint16
    raw_c, raw_t = (read_image(mcap.out / f"images/{c}/{stamp}.png") for c in ("color", "thermal"))
    want_c, want_t = rect.rectify(raw_c, raw_t)
    assert np.array_equal(color_r, want_c) and np.array_equal(thermal_r, want_t)
    # geometry: ground points (z = 0) seen by the thermal camera, projected by the simulator's cameras
    th, col = stack.cameras["thermal"], stack.cameras["color"]
    u, v = np.meshgrid(np.linspace(40, 600, 15), np.linspace(40, 470, 12))
    px_t = np.column_stack([u.ravel(), v.ravel()])
    rays = cv2.undistortPoints(px_t.reshape(-1, 1, 2), th.K(), th.dist_coeffs(), criteria=(3, 50, 1e-12)).reshape(-1, 2)
    Tt, Tc = sim.T_world_camera("thermal", stamp)[0], sim.T_world_camera("color", stamp)[0]
    d = np.column_stack([rays, np.ones(len(rays))]) @ Tt[:3, :3].T
    s = -Tt[2, 3] / d[:, 2]
    ground = Tt[:3, 3] + s[:, None] * d
    ok = s > 0
    Xc = (ground[ok] - Tc[:3, 3]) @ Tc[:3, :3]
    px_c = cv2.projectPoints(Xc.reshape(-1, 1, 3), np.zeros(3), np.zeros(3), col.K(), col.dist_coeffs())[0].reshape(-1, 2)
    inside = (px_c > 5).all(1) & (px_c[:, 0] < 955) & (px_c[:, 1] < 595)
    assert inside.sum() > 50
    diff = rect.rectify_points(px_t[ok][inside], 1) - rect.rectify_points(px_c[inside], 0)
    assert np.sqrt((diff ** 2).sum(1).mean()) < 1.0, diff
    # pixels: the simulator's class labels of both cameras, rectified, agree where both see the ground
    nearest = RgbtRectifier.from_stack(stack, options=RectifyOptions(interpolation="nearest"))
    lab_c, lab_t = nearest.rectify(read_image(mcap.out / f"images/labels_color/{stamp}.png"),
                                   read_image(mcap.out / f"images/labels_thermal/{stamp}.png"))
    a = lab_c[20:-20, 20:-20]

    def agreement(dx: int, dy: int) -> float:
        return float((a == lab_t[20 + dy:580 + dy, 20 + dx:940 + dx]).mean())

    scores = {(dx, dy): agreement(dx, dy) for dx in range(-4, 5) for dy in range(-4, 5)}
    best = max(scores, key=scores.get)
    assert abs(best[0]) <= 1 and abs(best[1]) <= 1, (best, scores[best], scores[(0, 0)])
    far = max(v for (dx, dy), v in scores.items() if max(abs(dx), abs(dy)) >= 3)
    assert scores[(0, 0)] > far + 0.01  # a peak, not a plateau


def test_image_rectify_cli_matches_pairs(flight, tmp_path: Path) -> None:
    _, _, _, stack_path, mcap, _ = flight
    stamp = next(r["stamp_ns"] for r in mcap.rows if r["camera"] == "color" and r["trigger_slot"] != "")
    rgbt("image", "rectify", str(mcap.out / f"images/thermal/{stamp}.png"),
             str(mcap.out / f"images/color/{stamp}.png"), "--out", str(tmp_path / "r"), "--stack", str(stack_path))
    from rgbt.bag.extract import read_image, stack_for
    from rgbt.bag.pairs import rectifier_for

    want_c, want_t = rectifier_for(stack_for(str(stack_path))).rectify(
        read_image(mcap.out / f"images/color/{stamp}.png"), read_image(mcap.out / f"images/thermal/{stamp}.png"))
    assert np.array_equal(read_image(tmp_path / "r/thermal.png"), want_t)
    assert np.array_equal(read_image(tmp_path / "r/color.png"), want_c)


def test_rerun_skips_unchanged_images(flight) -> None:
    _, _, root, stack_path, mcap, _ = flight
    again = extract_bags([root / "sim"], mcap.out, ExtractOptions(stack_path=str(stack_path)))
    assert again.summary["written"] == 0 and again.summary["skipped_unchanged"] == mcap.summary["frames_total"]
    victim = next((mcap.out / "images/thermal").iterdir())
    victim.unlink()
    third = extract_bags([root / "sim"], mcap.out, ExtractOptions(stack_path=str(stack_path), thermal8="linear"))
    assert third.summary["written"] == 1 and victim.is_file()
    eight = sorted((mcap.out / "images/thermal_8bit_linear").iterdir())
    assert [p.name for p in eight] == sorted(p.name for p in (mcap.out / "images/thermal").iterdir())
    from rgbt.image.normalize import NormalizeOptions, Normalizer, to_uint8

    img8 = cv2.imread(str(eight[3]), cv2.IMREAD_UNCHANGED)
    raw = cv2.imread(str(mcap.out / "images/thermal" / eight[3].name), cv2.IMREAD_UNCHANGED)
    assert img8.dtype == np.uint8 and np.array_equal(img8, to_uint8(Normalizer(NormalizeOptions(clahe=False))(raw)))


@pytest.mark.parametrize("kind", ["mcap", "ros1"])
def test_truncated_bag_extracts_everything_before_the_damage(flight, kind: str, tmp_path: Path, capsys) -> None:
    _, _, root, stack_path, mcap, ros1 = flight
    src = next((root / "sim").glob("*.mcap")) if kind == "mcap" else root / "cart.bag"
    full = mcap if kind == "mcap" else ros1
    data = src.read_bytes()
    cut = tmp_path / ("cut.mcap" if kind == "mcap" else "cut.bag")
    cut.write_bytes(data[: int(len(data) * 0.6)])
    rgbt("bag", "extract", cut, "--out", tmp_path / "out", "--stack", stack_path)
    text = capsys.readouterr().out
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    assert len(summary["salvaged"]) == 1
    s = summary["salvaged"][0]
    assert 0 < s["kept_bytes"] < s["size"] == cut.stat().st_size
    assert f"kept the first {s['kept_bytes']} of {s['size']} bytes" in text
    rows = read_frames_csv(tmp_path / "out/frames.csv")
    last = max(int(r["log_ns"]) for r in rows)
    before = [(r["stamp_ns"], r["camera"]) for r in full.rows if int(r["log_ns"]) <= last]
    assert [(r["stamp_ns"], r["camera"]) for r in rows] == before  # everything up to the damage, nothing skipped
    assert 0.3 * len(full.rows) < len(rows) < 0.7 * len(full.rows)
    one = rows[len(rows) // 2]
    assert (tmp_path / "out" / one["file"]).read_bytes() == (full.out / one["file"]).read_bytes()


def test_bad_messages_are_counted_not_fatal(tmp_path: Path) -> None:
    from rgbt.bag.images import numpy_to_image_msg
    from rgbt.bag.types import ros2_typestore
    from rgbt.bag.writer import BagWriter

    store = ros2_typestore()
    writer = BagWriter(tmp_path / "bag", typestore=store, fsync=False)
    writer.add_topic("/boson/thermal/image_raw", "sensor_msgs/msg/Image")
    for k in range(4):
        msg = numpy_to_image_msg(np.full((8, 10), 1000 + k, np.uint16), 10**9 + k * 10**7, "thermal", "mono16")
        if k == 1:
            msg.encoding = "yuv422"  # not an encoding rgbt decodes
        writer.write("/boson/thermal/image_raw", 10**9 + k * 10**7 + 5, store.serialize_cdr(msg, msg.__msgtype__))
    writer.close()
    res = extract_bags([tmp_path / "bag"], tmp_path / "out")
    assert res.summary["frames"] == {"thermal": 3} and res.summary["bad_messages"] == {"/boson/thermal/image_raw": 1}
    assert "yuv422" in res.summary["bad_examples"][0]
    assert sorted(p.name for p in (tmp_path / "out/images/thermal").iterdir()) == \
        [f"{10**9 + k * 10**7}.png" for k in (0, 2, 3)]


# -- --sample cart on a simulated hover / transit / hover flight ---------------------------------------

T0 = 1_700_000_000


def _tum(path: Path) -> Path:
    """Hover 21 s, 16 m along x in 8 s (smoothstep), hover: positions at 10 Hz."""
    t = np.arange(0.0, 40.0, 0.1)
    u = np.clip((t - 21.0) / 8.0, 0.0, 1.0)
    x = 16.0 * (3 * u**2 - 2 * u**3)
    path.write_text("".join(f"{T0 + ti:.3f} {xi:.6f} 0 0 0 0 0 1\n" for ti, xi in zip(t, x)))
    return path


def _expected(bag: Path) -> list[int]:
    """CART's rule from the bag's own thermal stamps and GPS fixes (flat-earth metres, np.interp)."""
    stamps, fixes = [], []
    with AnyReader([bag]) as reader:
        for conn, _, raw in reader.messages():
            if conn.topic not in ("/boson/thermal/image_raw", "/gps/fix"):
                continue
            m = reader.deserialize(raw, conn.msgtype)
            t = m.header.stamp.sec * 10**9 + m.header.stamp.nanosec
            if conn.topic == "/gps/fix":
                fixes.append((t, m.latitude, m.longitude, m.altitude))
            else:
                stamps.append(t)
    f = np.array(fixes, dtype=np.float64)
    tf = np.array([x[0] for x in fixes], dtype=np.int64)
    lat0 = np.deg2rad(f[0, 1])
    east = np.deg2rad(f[:, 2] - f[0, 2]) * 6378137.0 * np.cos(lat0)
    north = np.deg2rad(f[:, 1] - f[0, 1]) * 6378137.0
    up = f[:, 3] - f[0, 3]

    def at(t: int) -> np.ndarray | None:
        if not tf[0] <= t <= tf[-1]:
            return None
        x = float(t - tf[0])
        xs = (tf - tf[0]).astype(np.float64)
        return np.array([np.interp(x, xs, east), np.interp(x, xs, north), np.interp(x, xs, up)])

    picked, last = [], None
    for t in sorted(stamps):
        now, before = at(t), at(t - 2 * 10**9)
        moving = now is not None and before is not None and np.linalg.norm(now - before) > 0.5
        if last is None or t - last >= (3 if moving else 20) * 10**9:
            picked.append(t)
            last = t
    return picked


@pytest.fixture(scope="module")
def hover_bag(tmp_path_factory: pytest.TempPathFactory):
    from rgbt.sim import SimOptions, SimStack
    from rgbt.sim.record import write_sim_bag

    root = tmp_path_factory.mktemp("sample")
    stack = consistent_stack(root / "stack.yaml", **{"trigger.rate_hz": 2.0, "cameras.thermal.rate_hz": 2.0,
                                                     "imu.rate_hz": 10.0, "autopilot.pose_rate_hz": 5.0})
    sim = SimStack(SimOptions(stack_path=str(stack), trajectory=str(_tum(root / "path.tum")), duration_s=34.0,
                              seed=2, noise=False, cameras=["thermal"], world_size_px=512, altitude_m=20.0,
                              drop_prob=0.0))
    write_sim_bag(sim, root / "bag", label_stride=0)
    yield root, stack
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
def test_sample_cart_picks_the_frames_the_rule_implies(hover_bag) -> None:
    root, stack = hover_bag
    want = _expected(root / "bag")
    gaps = np.diff(want) / 1e9
    assert (np.abs(gaps - 20) < 0.6).sum() >= 1 and (np.abs(gaps - 3) < 0.6).sum() >= 2  # both regimes occur
    rgbt("bag", "extract", root / "bag", "--out", root / "out", "--stack", stack, "--sample", "cart",
         "--place", "SimField", "--traj", "hover_transit")
    with (root / "out/dataset/samples.csv").open() as fh:
        got = [int(r["stamp_ns"]) for r in csv.DictReader(fh)]
    assert got == want
    from rgbt.seg.dataset import list_items, read_png

    items = list_items(root / "out/dataset")
    assert len(items) == len(want) and all(i.startswith("SimField/hover_transit/") for i in items)
    splits = [list_items(root / "out/dataset", s) for s in ("train", "val", "test") if
              (root / "out/dataset" / f"{s}.txt").read_text().strip()]
    assert sorted(sum(splits, [])) == sorted(items)
    first = read_png(root / "out/dataset" / (items[0].rsplit("/", 1)[0]) / "thermal16" / f"{items[0].rsplit('/', 1)[1]}.png",
                     np.uint16)
    assert first.shape == (512, 640)
    # --every 5 over the same extraction's index
    from rgbt.bag.annotate import write_sampled_dataset
    from rgbt.bag.extract import read_frames_csv, stack_for

    rows = read_frames_csv(root / "out/frames.csv")
    res = write_sampled_dataset(root / "out", rows, stack_for(str(stack)), method="every", every_s=5.0)
    assert np.all(np.diff(res["picked"]) == 5 * 10**9) and len(res["picked"]) == 7


# -- preview video ------------------------------------------------------------------------------------

def test_preview_video_and_contact_sheet(flight, tmp_path: Path) -> None:
    from rgbt.bag.video import VideoOptions, write_video
    from rgbt.paths import ENGINES_DIR

    _, _, root, stack_path, _, _ = flight
    model = ENGINES_DIR / "sim_thermal_seg.onnx"
    if not model.is_file():
        pytest.skip(f"segmentation model not found at {model}")
    pytest.importorskip("onnxruntime", reason="the overlay runs the model with onnxruntime (the 'cpu' extra)")
    res = write_video(root / "cart.bag", tmp_path / "preview.mp4",
                      VideoOptions(rate_hz=10, scale=0.25, stack_path=str(stack_path), model=str(model),
                                   sheet_every_s=0.2))
    cap = cv2.VideoCapture(str(tmp_path / "preview.mp4"))
    frames = []
    while True:
        ok, img = cap.read()
        if not ok:
            break
        frames.append(img)
    cap.release()
    assert len(frames) == res["frames"] and 4 <= len(frames) <= 7  # 0.6 s at 10 Hz from the first camera frame
    h, w = frames[0].shape[:2]
    assert (w, h) == tuple(res["size"]) and h == 150 and w == 240 + 188 + 240  # colour | thermal | mono
    thermal = frames[-1][:, 240:428]
    assert thermal.std() > 10  # a colormapped scene with the overlay, not a blank panel
    sheet = cv2.imread(res["sheet"])
    assert sheet is not None and res["sheet_frames"] >= 2 and sheet.shape[1] == min(4, res["sheet_frames"]) * w


@pytest.mark.parametrize("argv, needle", [
    (["bag", "extract", "{BAG}", "--out", "{OUT}", "--rectify"], "--rectify works on pairs"),
    (["bag", "extract", "{BAG}", "--out", "{OUT}", "--every", "-1"], "--every -1"),
    (["bag", "extract", "{BAG}", "--out", "{OUT}", "--sample", "cart", "--every", "3"], "not both"),
    (["bag", "extract", "{BAG}", "--out", "{FILE}"], "a directory"),
    (["bag", "video", "{BAG}", "--out", "{OUT}.gif"], ".mp4 or .avi"),
    (["image", "rectify", "{BAG}", "{BAG}", "--out", "{OUT}"], "is a directory"),
])
def test_bad_arguments_exit_2_with_one_line(argv: list[str], needle: str, tmp_path: Path, capsys) -> None:
    from rgbt.cli import main

    (tmp_path / "bag").mkdir()
    (tmp_path / "file").write_text("x")
    args = [a.replace("{BAG}", str(tmp_path / "bag")).replace("{OUT}", str(tmp_path / "out"))
            .replace("{FILE}", str(tmp_path / "file")) for a in argv]
    assert main(args) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and needle in err[0], err

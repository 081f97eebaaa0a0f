"""Every CLI verb that reads a file answers bad input with exit 2 and one line naming the file.

Each verb gets an empty file, a truncated real file, random bytes and a directory in place of the
file it reads (issue 12, acceptance). Never a traceback; the line names the file it could not use.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from helpers import need, run_rgbt, tiny_seg_dataset
from rgbt.paths import DEFAULT_STACK, ENGINES_DIR, REPO_ROOT, data_dir

DATA = data_dir()
FIX = DATA / "fixtures"

# (case id, argv with {F} for the bad file and {OUT} for a fresh output path, real file to truncate,
#  bytes to keep of it (None: half))
VERBS: list[tuple[str, list[str], Path, int | None]] = [
    ("image-normalize", ["image", "normalize", "{F}", "{OUT}.npy"], FIX / "thermal/flir_duo_pro_r_frame_000000.fff", None),
    ("image-temperature", ["image", "temperature", "{F}", "--x", "1", "--y", "1"],
     FIX / "thermal/flir_duo_pro_r_frame_000000.fff", None),
    ("image-colorize", ["image", "colorize", "{F}", "{OUT}.png"], FIX / "thermal/flir_duo_pro_r_frame_000000.fff", None),
    ("calib-show", ["calib", "show", "--stack", "{F}"], DEFAULT_STACK, None),
    ("calib-check", ["calib", "check", "--stack", "{F}"], DEFAULT_STACK, None),
    ("calib-export", ["calib", "export", "camera-info", "--stack", "{F}", "--out", "{OUT}"], DEFAULT_STACK, None),
    ("calib-import-kalibr", ["calib", "import-kalibr", "{F}", "--out", "{OUT}.yaml"],
     FIX / "kalibr/openvins_uzhfpv_kalibr_imucam_chain.yaml", None),
    ("sensors-blackfly-params", ["sensors", "blackfly-params", "--stack", "{F}"], DEFAULT_STACK, None),
    ("vio-export", ["vio", "export", "vins", "--stack", "{F}", "--out", "{OUT}"], DEFAULT_STACK, None),
    ("seg-run-engine", ["seg", "run", "--engine", "{F}", "{FRAME}", "{OUT}.png"],
     ENGINES_DIR / "sim_thermal_seg.onnx", None),
    ("seg-run-input", ["seg", "run", "--engine", str(ENGINES_DIR / "sim_thermal_seg.onnx"), "{F}", "{OUT}.png"],
     Path("{FRAME}"), None),
    ("sensors-decode-vn100", ["sensors", "decode", "vn100", "{F}"], FIX / "vectornav/F00294.bin", 60),
    ("sensors-decode-mavlink", ["sensors", "decode", "mavlink", "{F}"], FIX / "mavlink/ardusub_small.tlog", 12),
    ("sensors-decode-ubx", ["sensors", "decode", "ubx", "{F}"], FIX / "gnss/pygpsdata-NAV.ubx", 20),
    ("sensors-decode-nmea", ["sensors", "decode", "nmea", "{F}"], FIX / "gnss/pygpsdata-NMEA.log", 20),
    ("bag-info", ["bag", "info", "{F}"], FIX / "bags/ros1/robot_localization_test1.bag", None),
    ("bag-convert", ["bag", "convert", "{F}", "{OUT}"], FIX / "bags/ros1/robot_localization_test1.bag", None),
    ("bag-reindex", ["bag", "reindex", "{F}", "{OUT}.bag"], FIX / "bags/ros1/robot_localization_test1.bag", 3000),
    ("replay", ["replay", "{F}"], FIX / "bags/ros1/robot_localization_test1.bag", None),
    # extract salvages a truncated bag's whole chunks: keep too little for one (as for reindex)
    ("bag-extract", ["bag", "extract", "{F}", "--out", "{OUT}"], FIX / "bags/ros1/robot_localization_test1.bag", 3000),
    ("bag-video", ["bag", "video", "{F}", "--out", "{OUT}.mp4"], FIX / "bags/ros1/robot_localization_test1.bag", None),
    ("image-rectify", ["image", "rectify", "{F}", "{FRAME}", "--out", "{OUT}"], Path("{FRAME}"), None),
    ("vio-ate-ref", ["vio", "ate", "--ref", "{F}", "--est", str(FIX / "trajectories/fr2_desk_ORB.tum")],
     FIX / "trajectories/fr2_desk_groundtruth.tum", 30),
    ("vio-ate-est", ["vio", "ate", "--ref", str(FIX / "trajectories/fr2_desk_groundtruth.tum"), "--est", "{F}"],
     FIX / "trajectories/fr2_desk_ORB.tum", 30),
    ("vio-eval-bag", ["vio", "eval", "--bag", "{F}", "--runs", "1"], FIX / "bags/ros1/robot_localization_test1.bag",
     None),
    ("simulate-trajectory", ["simulate", "--trajectory", "{F}", "--duration", "1", "--out", "{OUT}"],
     DATA / "cart/ground_truth/CastaicLake_2022-12-20-11-40-28.txt", 40),
    # truncated right after "inputs:" (a shorter cut could still be a valid campaign and run ORB-SLAM3)
    ("campaign-run", ["campaign", "run", "{F}", "--out", "{OUT}"], REPO_ROOT / "campaigns/smoke.yaml", 267),
    ("campaign-report", ["campaign", "report", "{F}"], REPO_ROOT / "campaigns/smoke.yaml", None),
]

#: the fast tier (``-m "not slow"``) feeds every verb an empty and a truncated file; random bytes and a
#: directory (the same error paths, ~0.5 s of CLI start-up each) run in the whole suite
KINDS = ("empty", "truncated", pytest.param("random", marks=pytest.mark.slow),
         pytest.param("directory", marks=pytest.mark.slow))


def _thermal_png(tmp_path: Path) -> Path:
    """SYNTHETIC: a 16-bit thermal PNG (a 512x640 gradient of raw counts), for verbs that read PNG only."""
    import cv2

    path = tmp_path / "frame16.png"
    counts = (20000 + np.add.outer(np.arange(512) * 4, np.arange(640) * 3)).astype(np.uint16)
    assert cv2.imwrite(str(path), counts)
    return path


def _bad_input(kind: str, tmp_path: Path, real: Path, keep: int | None) -> Path:
    suffix = "".join(real.suffixes[-1:]) if real.suffix else ""
    path = tmp_path / f"bad_{kind}{suffix}"
    if kind == "directory":
        path.mkdir()
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "random":
        path.write_bytes(os.urandom(4096))
    else:
        data = real.read_bytes()
        path.write_bytes(data[: keep if keep is not None else len(data) // 2])
    if real.suffix == ".onnx":  # the model's sidecar is good: the model file itself is what is bad
        path.with_suffix(".json").write_bytes(real.with_suffix(".json").read_bytes())
    return path


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", VERBS, ids=[v[0] for v in VERBS])
def test_bad_file_exits_2_with_one_line_naming_it(case, kind: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    name, argv, real, keep = case
    frame = _thermal_png(tmp_path)
    if str(real) == "{FRAME}":
        real = frame
    need(real, "reference file")
    bad = _bad_input(kind, tmp_path, real, keep)
    out = tmp_path / "out"
    args = [a.replace("{F}", str(bad)).replace("{OUT}", str(out)).replace("{FRAME}", str(frame)) for a in argv]
    proc = run_rgbt(*args, check=False, timeout=120, env={"ROS_DOMAIN_ID": "97"})
    text = proc.stdout + proc.stderr
    assert "Traceback" not in text, text
    assert proc.returncode == 2, f"rgbt {' '.join(args)} exited {proc.returncode}, expected 2:\n{text}"
    # Start-up lines (a component's options) may come first; the error is the one last line.
    errors = [line for line in proc.stderr.splitlines() if line.startswith("rgbt ")]
    assert len(errors) == 1 and proc.stderr.strip().splitlines()[-1] == errors[0], \
        f"expected one error line, last, got:\n{proc.stderr}"
    assert bad.name in errors[0], f"the error line does not name {bad.name}: {errors[0]}"


@pytest.mark.parametrize("argv", [["image", "normalize", "{IN}", "/nonexistent-folder/x.npy"],
                                  ["image", "normalize", "{IN}", "{TMP}/x.unknown-suffix"]])
def test_unusable_output_path_exits_2_naming_it(argv: list[str], tmp_path: Path) -> None:
    frame = _thermal_png(tmp_path)
    args = [a.replace("{IN}", str(frame)).replace("{TMP}", str(tmp_path)) for a in argv]
    proc = run_rgbt(*args, check=False)
    assert "Traceback" not in proc.stderr and proc.returncode == 2, proc.stderr
    assert Path(args[-1]).name in proc.stderr


def test_internal_error_is_one_line_and_debug_shows_the_traceback(tmp_path: Path) -> None:
    """Exit 1 for an error that is not the user's; ``--debug`` adds the traceback."""
    script = tmp_path / "boom.py"
    script.write_text(
        "import sys\nimport rgbt.cli as cli\n"
        "def boom(args):\n    raise ZeroDivisionError('boom')\n"
        "parser = cli.build_parser\n"
        "def build():\n    p = parser()\n    p.set_defaults(func=boom, verb='x')\n    return p\n"
        "cli.build_parser = build\nsys.exit(cli.main(sys.argv[1:]))\n")
    import subprocess
    import sys

    from rgbt.paths import REPO_ROOT

    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env)
    assert plain.returncode == 1 and "Traceback" not in plain.stderr
    assert "internal error: ZeroDivisionError: boom" in plain.stderr
    debug = subprocess.run([sys.executable, str(script), "--debug"], capture_output=True, text=True, env=env)
    assert debug.returncode == 1 and "Traceback" in debug.stderr


# --- rgbt vio eval: sequences that cannot be scored (issue 14) -----------------------------------------

@pytest.fixture(scope="module")
def vio_inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """SYNTHETIC: a small MCAP bag whose thermal topic carries mono8 frames (+ IMU, ground truth
    beside it), a ground truth an hour later, one with two poses swapped, and an EuRoC folder."""
    from rgbt.bag import BagWriter, numpy_to_image_msg
    from rgbt.vio.datasets import write_asl
    from rgbt.vio.sequence import synthetic_sequence

    root = tmp_path_factory.mktemp("vio_bad")
    seq = synthetic_sequence(duration_s=1.0, rate_hz=10.0, width=48, height=40, fx=40.0)
    bag = root / "mono8_thermal"
    from rgbt.bag.types import ros2_typestore

    T = ros2_typestore().types
    with BagWriter(bag, custom_data={"rgbt.synthetic": "true"}) as w:
        w.add_topic("/boson/thermal/image_raw", "sensor_msgs/msg/Image")
        w.add_topic("/imu/imu", "sensor_msgs/msg/Imu")
        for t, img, _ in seq.frames():
            w.write_msg("/boson/thermal/image_raw", t, numpy_to_image_msg((img >> 8).astype(np.uint8), t, "thermal",
                                                                          "mono8"))
        for t, g, a in zip(seq.imu.t_ns, seq.imu.gyro, seq.imu.accel):
            sec, nsec = divmod(int(t), 1_000_000_000)
            v3 = T["geometry_msgs/msg/Vector3"]
            w.write_msg("/imu/imu", int(t), T["sensor_msgs/msg/Imu"](
                T["std_msgs/msg/Header"](T["builtin_interfaces/msg/Time"](sec, nsec), "imu"),
                T["geometry_msgs/msg/Quaternion"](0.0, 0.0, 0.0, 1.0), np.zeros(9), v3(*g), np.zeros(9), v3(*a),
                np.zeros(9)))
    seq.ground_truth.save_tum(bag / "ground_truth_imu.tum")
    later = root / "gt_an_hour_later.tum"
    gt = seq.ground_truth
    type(gt)(gt.t_ns + 3600 * 10**9, gt.positions, gt.quat_wxyz).save_tum(later)
    lines = (bag / "ground_truth_imu.tum").read_text().splitlines()
    lines[3], lines[4] = lines[4], lines[3]
    (root / "gt_unsorted.tum").write_text("\n".join(lines) + "\n")
    euroc = write_asl(seq, root / "euroc_dup")
    csv = euroc / "mav0" / "cam0" / "data.csv"
    rows = csv.read_text().splitlines()
    csv.write_text("\n".join(rows[:3] + [rows[2]] + rows[3:]) + "\n")
    nocal = write_asl(seq, root / "euroc_nocal")
    (nocal / "mav0" / "cam0" / "sensor.yaml").unlink()
    return {"bag": bag, "later": later, "unsorted": root / "gt_unsorted.tum", "dup": euroc, "nocal": nocal}


VIO_CASES = [  # (case id, argv after `vio eval`, key of the file the error must name, text it must contain)
    ("gt-no-overlap", ["--bag", "{bag}", "--camera-topic", "/boson/thermal/image_raw", "--ground-truth", "{later}"],
     "later", "but the camera frames cover"),
    ("gt-unsorted", ["--bag", "{bag}", "--ground-truth", "{unsorted}"], "unsorted", "not strictly increasing"),
    ("frames-duplicate", ["--dataset", "{dup}"], "dup", "duplicate frame stamps"),
    ("dataset-no-calibration", ["--dataset", "{nocal}"], "nocal", "sensor.yaml"),
    ("bag-no-such-topic", ["--bag", "{bag}", "--camera-topic", "/flir/image"], "bag", "no topic /flir/image"),
    ("thermal-declared-16-bit-is-8-bit", ["--bag", "{bag}"], "bag", "carries mono8 frames but camera 'thermal' is "
                                                                    "declared mono16"),
    ("normalization-on-8-bit", ["--bag", "{bag}", "--camera-topic", "/boson/thermal/image_raw", "--normalization",
                                "temporal"], "bag", "frames are 8-bit"),
]


def _vio_eval(argv: list[str], inputs: dict[str, Path], tmp_path: Path, capsys, subprocess: bool) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    args = ["vio", "eval", *[a.format(**{k: str(v) for k, v in inputs.items()}) for a in argv], "--runs", "1",
            "--pace", "0", "--no-progress", "--vocab", str(tmp_path / "unused_vocab.txt")]
    if subprocess:  # the real command, once
        proc = run_rgbt(*args, check=False, timeout=120)
        return proc.returncode, proc.stderr
    from rgbt.cli import main  # the same entry point in-process: no interpreter start per case

    code = main(args)
    return code, capsys.readouterr().err


@pytest.mark.parametrize("case", VIO_CASES, ids=[c[0] for c in VIO_CASES])
def test_vio_eval_bad_sequence_exits_2_naming_the_file(case, vio_inputs: dict[str, Path], tmp_path: Path,  # type: ignore[no-untyped-def]
                                                       capsys) -> None:
    name, argv, key, text = case
    # every case fails before the estimator starts: the vocabulary is never read
    code, err = _vio_eval(argv, vio_inputs, tmp_path, capsys, subprocess=name == "gt-no-overlap")
    assert "Traceback" not in err and code == 2, err
    line = err.strip().splitlines()[-1]
    assert line.startswith("rgbt vio: error: ") and vio_inputs[key].name in line and text in line, line


# --- rgbt seg train: bad datasets, model names and --pretrained files (issue 17) ------------------------------

SEG_TRAIN_CASES = {  # case id -> text the one error line must contain ({tmp}: the test's folder)
    "missing-label": "000001.png: label not found",
    "bad-ids": "label ids [12, 200] outside the class table",
    "empty-split": "split file lists no frames",
    "unknown-model": "unknown model, expected one of",
    "pretrained-missing-file": "{tmp}/nowhere.pth: --pretrained weights file not found",
    "pretrained-imagenet-not-cached": "no torchvision resnet18 ImageNet weights on this machine (searched "
                                      "{tmp}/torch/hub/checkpoints/resnet18-f37072fd.pth)",
    "pretrained-imagenet-no-encoder": "model 'tinyseg' has no ImageNet encoder",
}


@pytest.mark.parametrize("case", list(SEG_TRAIN_CASES))
def test_seg_train_bad_input_exits_2_one_line(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Every case fails in the argument / data checks, before torch loads: no run folder is made."""
    good = np.full((8, 10), 5, np.uint8)
    root = tiny_seg_dataset(tmp_path, [good, good])
    model, split, extra = "tinyseg", "train", []
    if case == "missing-label":
        (root / "place/traj/masks/000001.png").unlink()
    elif case == "bad-ids":
        bad = good.copy()
        bad[0, :2] = (12, 200)
        tiny_seg_dataset(tmp_path, [good, bad])
    elif case == "empty-split":
        split = str(tmp_path / "empty.txt")
        Path(split).write_text("\n")
    elif case == "unknown-model":
        model = "resnet50"
    elif case == "pretrained-missing-file":
        extra = ["--pretrained", str(tmp_path / "nowhere.pth")]
    else:  # an empty torch hub cache; tinyseg has no ImageNet encoder at all
        monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
        model = "deeplabv3plus_r18" if case == "pretrained-imagenet-not-cached" else "tinyseg"
        extra = ["--pretrained", "imagenet"]
    args = ["seg", "train", "--dataset", str(root), "--split", split, "--model", model, "--out",
            str(tmp_path / "m.onnx"), "--run-dir", str(tmp_path / "run"), *extra]
    if case == "missing-label":  # the real command, once
        proc = run_rgbt(*args, check=False, timeout=120)
        code, err = proc.returncode, proc.stderr
    else:  # the same entry point in-process: no interpreter start per case
        from rgbt.cli import main

        code, err = main(args), capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("rgbt seg: error: ") and SEG_TRAIN_CASES[case].format(tmp=tmp_path) in lines[0], lines[0]
    assert not (tmp_path / "run").exists()

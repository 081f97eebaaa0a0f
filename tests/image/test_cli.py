"""The ``rgbt image`` command-line contract, run as a subprocess (``python -m rgbt``)."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest

from helpers import run_rgbt
from rgbt.image.synthetic import SyntheticSceneOptions, SyntheticThermal


@pytest.fixture(scope="module")
def synthetic_png(tmp_path_factory):
    """A SYNTHETIC 16-bit PNG of an odd size."""
    frame = SyntheticThermal(SyntheticSceneOptions(height=210, width=300, object_radius=20)).frame(0, (150, 100))
    path = tmp_path_factory.mktemp("cli") / "synthetic_thermal16.png"
    assert cv2.imwrite(str(path), frame)
    return path, frame


@pytest.mark.slow
def test_normalize_png_to_npy_matches_library(synthetic_png, tmp_path):
    from rgbt.image.normalize import normalize

    src, frame = synthetic_png
    out = tmp_path / "out.npy"
    proc = run_rgbt("image", "normalize", src, out, "--json")
    info = json.loads(proc.stdout)
    img = np.load(out)
    assert img.dtype == np.float32 and img.shape == frame.shape
    assert img.min() >= 0 and img.max() <= 1
    assert np.array_equal(img, normalize(frame))
    assert info["shape"] == [210, 300] and info["bounds"] == list(np.percentile(frame, [1, 99]))


def test_normalize_options_and_tiff(synthetic_png, tmp_path):
    from rgbt.image.normalize import normalize

    src, frame = synthetic_png
    out = tmp_path / "out.tiff"
    run_rgbt("image", "normalize", src, out, "--low", "5", "--high", "95", "--no-clahe")
    img = cv2.imread(str(out), cv2.IMREAD_UNCHANGED)
    assert img.dtype == np.float32 and img.shape == frame.shape
    assert np.allclose(img, normalize(frame, 5, 95, clahe=False))


@pytest.mark.slow
def test_normalize_fff_and_npy_inputs(fff_path, flir_counts, tmp_path):
    out = tmp_path / "flir.npy"
    run_rgbt("image", "normalize", fff_path, out, "--clahe")
    img = np.load(out)
    assert img.shape == (512, 640) and img.dtype == np.float32
    npy_in = tmp_path / "counts.npy"
    np.save(npy_in, flir_counts)
    out2 = tmp_path / "flir2.npy"
    run_rgbt("image", "normalize", npy_in, out2)
    assert np.array_equal(np.load(out2), img)
    tiff_in = tmp_path / "counts16.tiff"
    assert cv2.imwrite(str(tiff_in), flir_counts)
    out3 = tmp_path / "flir3.npy"
    run_rgbt("image", "normalize", tiff_in, out3)
    assert np.array_equal(np.load(out3), img)


@pytest.mark.slow
def test_temperature_json(fff_path, flir_counts):
    from rgbt.image.radiometry import read_fff

    temps = read_fff(fff_path).celsius()
    pix = json.loads(run_rgbt("image", "temperature", fff_path, "--x", "5", "--y", "7", "--json").stdout)
    assert pix["unit"] == "degC" and pix["pixel"]["counts"] == int(flir_counts[7, 5])
    assert pix["pixel"]["temperature_c"] == pytest.approx(temps[7, 5])
    reg = json.loads(run_rgbt("image", "temperature", fff_path, "--region", "10", "20", "110", "70", "--json").stdout)
    assert reg["region"]["mean"] == pytest.approx(temps[20:70, 10:110].mean())
    assert reg["region"]["max"] == pytest.approx(temps[20:70, 10:110].max())
    whole = json.loads(run_rgbt("image", "temperature", fff_path, "--json").stdout)
    assert whole["image"]["min"] == pytest.approx(temps.min()) and whole["params"]["planck_r1"] == 364058.0


@pytest.mark.slow
def test_colorize(fff_path, synthetic_png, tmp_path):
    out = tmp_path / "c.png"
    run_rgbt("image", "colorize", fff_path, out, "--cmap", "inferno", "--colorbar")
    img = cv2.imread(str(out))
    assert img.shape == (512, 640 + 90, 3)
    out2 = tmp_path / "d.png"
    run_rgbt("image", "colorize", synthetic_png[0], out2)
    assert cv2.imread(str(out2)).shape == (210, 300, 3)


@pytest.mark.parametrize("case", ["missing", "rgb_png", "text_npy", "bad_suffix", "not_radiometric",
                                  "bad_percentiles", "xy_half", "bad_out_type", "bad_out"])
def test_bad_inputs_exit_2_with_message(case, tmp_path, synthetic_png):
    rgb = tmp_path / "rgb.png"
    cv2.imwrite(str(rgb), np.zeros((20, 20, 3), np.uint8))
    txt = tmp_path / "x.npy"
    txt.write_text("not numpy")
    args = {
        "missing": ("image", "normalize", tmp_path / "nope.png", tmp_path / "o.npy"),
        "rgb_png": ("image", "normalize", rgb, tmp_path / "o.npy"),
        "text_npy": ("image", "normalize", txt, tmp_path / "o.npy"),
        "bad_suffix": ("image", "normalize", tmp_path / "a.jpg", tmp_path / "o.npy"),
        "not_radiometric": ("image", "temperature", synthetic_png[0], "--json"),
        "bad_percentiles": ("image", "normalize", synthetic_png[0], tmp_path / "o.npy", "--low", "99", "--high", "1"),
        "xy_half": ("image", "temperature", synthetic_png[0], "--x", "3"),
        "bad_out_type": ("image", "normalize", synthetic_png[0], tmp_path / "o.png"),
        "bad_out": ("image", "colorize", synthetic_png[0], tmp_path / "o.jpg"),
    }[case]
    if case == "bad_suffix":
        (tmp_path / "a.jpg").write_bytes(b"x")
    proc = run_rgbt(*args, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "error:" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_bench_preprocess_json():
    proc = run_rgbt("bench", "preprocess", "--frames", "3", "--ref-frames", "2", "--json")
    result = json.loads(proc.stdout)
    for stage in ("percentile", "normalize_clahe", "rectify_pair", "reference_cart", "reference_percentile"):
        assert set(result["stages"][stage]) >= {"median_ms", "p90_ms", "p99_ms"}
    assert result["stages"]["percentile"]["n"] == 3
    assert "cpu" in result["machine"]
    assert result["parity"] and all(p["mean_abs_diff"] <= 0.01 and p["max_abs_diff"] <= 0.06
                                    for p in result["parity"])
    rect = result["stages"]["rectify_pair"]  # calib's RgbtRectifier on the CART colour-thermal pair
    assert rect["median_ms"] is not None and rect["n"] == 3, rect

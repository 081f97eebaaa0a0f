"""Trajectory loaders keep every data row or reject the file, naming the line (issue 12, item 3)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rgbt.errors import EvaluationError
from rgbt.eval.trajectory import load_trajectory

TUM_ROWS = ["1.0 0 0 0 0 0 0 1", "1.1 1 0 0 0 0 0 1", "1.2 2 0 0 0 0 0 1"]


def _write(tmp_path: Path, name: str, lines: list[str]) -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_tum_comments_blank_lines_and_one_header_are_not_poses(tmp_path: Path) -> None:
    path = _write(tmp_path, "t.tum", ["# comment", "timestamp tx ty tz qx qy qz qw", "", *TUM_ROWS])
    traj = load_trajectory(path, "tum")
    assert len(traj) == 3
    np.testing.assert_array_equal(traj.t_ns, [1_000_000_000, 1_100_000_000, 1_200_000_000])
    np.testing.assert_allclose(traj.positions[:, 0], [0, 1, 2])


@pytest.mark.parametrize("bad", ["nan 3 0 0 0 0 0 1", "1.3 nan 0 0 0 0 0 1", "1.3 inf 0 0 0 0 0 1",
                                 "1.3 x 0 0 0 0 0 1", "one 3 0 0 0 0 0 1", "1.3 3 0 0"])
def test_tum_bad_data_row_is_an_error_naming_its_line(tmp_path: Path, bad: str) -> None:
    path = _write(tmp_path, "t.tum", ["# header", *TUM_ROWS[:2], bad, TUM_ROWS[2]])
    with pytest.raises(EvaluationError, match=r"line 4\b") as info:
        load_trajectory(path, "tum")
    assert str(path) in str(info.value)


def test_a_second_header_like_line_is_data_not_skipped(tmp_path: Path) -> None:
    path = _write(tmp_path, "t.tum", ["t x y z qx qy qz qw", TUM_ROWS[0], "t x y z qx qy qz qw", TUM_ROWS[1]])
    with pytest.raises(EvaluationError, match="line 3"):
        load_trajectory(path, "tum")


def test_euroc_csv_with_header_and_bad_row(tmp_path: Path) -> None:
    header = "#timestamp [ns], p_RS_R_x [m], p_RS_R_y [m], p_RS_R_z [m], q_RS_w [], q_RS_x [], q_RS_y [], q_RS_z []"
    rows = ["1403636579758555392,4.6,-1.8,0.78,0.53,-0.15,-0.82,-0.08",
            "1403636579763555584,4.7,-1.8,0.78,0.53,-0.15,-0.82,-0.08"]
    traj = load_trajectory(_write(tmp_path, "gt.csv", [header, *rows]), "euroc")
    np.testing.assert_array_equal(traj.t_ns, [1403636579758555392, 1403636579763555584])
    with pytest.raises(EvaluationError, match="line 3"):
        load_trajectory(_write(tmp_path, "bad.csv", [header, rows[0], "nan,4.7,-1.8,0.78,0.53,-0.15,-0.82,-0.08"]),
                        "euroc")


def test_kitti_times_file_gives_real_stamps(tmp_path: Path) -> None:
    poses = _write(tmp_path, "00.txt", ["1 0 0 0 0 1 0 0 0 0 1 0", "1 0 0 1 0 1 0 0 0 0 1 0",
                                        "1 0 0 2 0 1 0 0 0 0 1 0"])
    times = _write(tmp_path, "times.txt", ["0.000000e+00", "1.036623e-01", "2.073246e-01"])
    traj = load_trajectory(poses, "kitti", kitti_times=times)
    np.testing.assert_array_equal(traj.t_ns, [0, 103_662_300, 207_324_600])
    assert load_trajectory(poses, "kitti", kitti_rate_hz=20.0).t_ns[-1] == 100_000_000
    short = _write(tmp_path, "short.txt", ["0.0", "0.1"])
    with pytest.raises(EvaluationError, match="2 stamps for 3 poses"):
        load_trajectory(poses, "kitti", kitti_times=short)


@pytest.mark.parametrize("content", [b"", b"\x00\xff\xfe binary \x89PNG", b"# only a comment\n"])
def test_empty_or_binary_file_is_rejected(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "x.tum"
    path.write_bytes(content)
    with pytest.raises(EvaluationError, match=str(path)):
        load_trajectory(path, "tum")


def test_a_directory_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(EvaluationError, match="not a file"):
        load_trajectory(tmp_path, "tum")


@pytest.mark.slow
def test_vio_ate_cli_takes_kitti_times(tmp_path: Path, rgbt_cli) -> None:  # type: ignore[no-untyped-def]
    path = [(i, (i % 2) * 0.7, 0.1 * i * i) for i in range(5)]  # not collinear: Sim3 is defined
    poses = _write(tmp_path, "00.txt", [f"1 0 0 {x} 0 1 0 {y} 0 0 1 {z}" for x, y, z in path])
    est = _write(tmp_path, "est.txt", [f"1 0 0 {1.5 * x} 0 1 0 {1.5 * y} 0 0 1 {1.5 * z}" for x, y, z in path])
    times = _write(tmp_path, "times.txt", [f"{i * 0.25}" for i in range(5)])
    out = rgbt_cli("vio", "ate", "--ref", poses, "--est", est, "--format", "kitti", "--times", times,
                   "--align", "sim3", "--json")
    assert '"n_pairs": 5' in out.stdout
    bad = rgbt_cli("vio", "ate", "--ref", poses, "--est", est, "--format", "kitti", "--times", poses, check=False)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr

"""Fuzzing of the trajectory loaders (TUM, EuRoC, KITTI; ``rgbt.eval.trajectory.load_trajectory``).

Seeds: the first 150 poses of the real TUM fr2/desk ground truth and ORB-SLAM estimate, and the
same poses written as EuRoC CSV and KITTI 3x4 rows (with a KITTI ``times.txt``). Mutations:
truncation at every line and at arbitrary offsets, bit flips, random bytes, and cell edits
(``nan``, ``inf``, ``1e999``, text, a huge integer stamp, a deleted or repeated line). Property:
only ``RgbtError`` escapes, no hang, bounded memory; and a file that loads keeps every data row
(the loader never drops a row it cannot read).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzz.harness import FUZZ, check
from fuzz.test_fuzz_files import _line_boundaries, _write, mutated
from helpers import need

CELLS = ["nan", "inf", "-inf", "1e999", "abc", "", "0x10", "1_000", "9" * 40, "1e-320", "+", "--1", ",", "#"]


def _quat_to_matrix(qx: float, qy: float, qz: float, qw: float) -> np.ndarray:
    q = np.array([qw, qx, qy, qz]) / np.linalg.norm([qw, qx, qy, qz])
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


@pytest.fixture(scope="module")
def seeds(fixtures_dir: Path) -> dict[str, list[bytes]]:
    tdir = need(fixtures_dir / "trajectories", "TUM trajectory fixtures")
    tum = []
    poses = None
    for name in ("fr2_desk_groundtruth.tum", "fr2_desk_ORB.tum"):
        lines = need(tdir / name, "TUM trajectory fixture").read_text().splitlines()
        head = [ln for ln in lines if ln.startswith("#")][:3]
        data = [ln for ln in lines if ln.strip() and not ln.startswith("#")][:150]
        tum.append(("\n".join(head + data) + "\n").encode())
        if poses is None:
            poses = [[float(v) for v in ln.split()] for ln in data]
    assert poses
    euroc = ["#timestamp [ns], p_x [m], p_y [m], p_z [m], q_w [], q_x [], q_y [], q_z []"]
    kitti, times = [], []
    for t, x, y, z, qx, qy, qz, qw in poses:
        euroc.append(f"{int(round(t * 1e9))},{x},{y},{z},{qw},{qx},{qy},{qz}")
        m = np.hstack([_quat_to_matrix(qx, qy, qz, qw), [[x], [y], [z]]])
        kitti.append(" ".join(f"{v:.9e}" for v in m.reshape(-1)))
        times.append(f"{t - poses[0][0]:.6f}")
    return {"tum": tum, "euroc": [("\n".join(euroc) + "\n").encode()],
            "kitti": [("\n".join(kitti) + "\n").encode()], "times": [("\n".join(times) + "\n").encode()]}


@st.composite
def cell_edit(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    lines = draw(st.sampled_from(seeds)).decode().split("\n")
    i = draw(st.integers(0, len(lines) - 1))
    kind = draw(st.sampled_from(["cell", "delete", "repeat", "swap"]))
    if kind == "cell":
        sep = "," if "," in lines[i] else " "
        cells = lines[i].split(sep)
        cells[draw(st.integers(0, len(cells) - 1))] = draw(st.one_of(st.sampled_from(CELLS), st.text(max_size=8)))
        lines[i] = sep.join(cells)
    elif kind == "delete":
        del lines[i]
    elif kind == "repeat":
        lines.insert(i, lines[i])
    else:
        j = draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines).encode(errors="surrogatepass")


def _cases(texts: list[bytes]) -> st.SearchStrategy[bytes]:
    return st.one_of(mutated([(t, _line_boundaries(t)) for t in texts]), cell_edit(texts))


def _data_rows(path: Path) -> int:
    """Data lines as the loaders define them: not blank, not a comment, not one leading header."""
    n, first = 0, True
    for raw in path.read_text(errors="replace").splitlines():
        line = raw.strip().lstrip("\ufeff")
        if not line or line[0] in "#%":
            continue
        cells = line.replace(",", " ").split()
        if first and cells and not any(_number(c) for c in cells):
            first = False
            continue
        first = False
        n += 1
    return n


def _number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["tum", "euroc", "kitti"])
def test_fuzz_trajectory(tmp_path: Path, seeds: dict, fmt: str) -> None:
    from rgbt.eval.trajectory import load_trajectory

    def load(path: Path) -> int:
        traj = load_trajectory(path, fmt)
        rows = _data_rows(path)
        kept = len(traj.t_ns) + int(getattr(traj, "duplicates_dropped", 0))
        assert kept == rows, f"{path.name}: {rows} data rows, loader kept {kept} (rows dropped silently)"
        return kept

    @FUZZ
    @given(_cases(seeds[fmt]))
    def run(case: bytes) -> None:
        check(f"trajectory {fmt}", load, _write(tmp_path, f"case.{fmt}", case))

    run()


@pytest.mark.slow
def test_fuzz_kitti_times(tmp_path: Path, seeds: dict) -> None:
    from rgbt.eval.trajectory import load_trajectory

    poses = _write(tmp_path, "poses.txt", seeds["kitti"][0])

    @FUZZ
    @given(_cases(seeds["times"]))
    def run(case: bytes) -> None:
        times = _write(tmp_path, "times.txt", case)
        check("trajectory kitti --times", lambda p: load_trajectory(poses, "kitti", kitti_times=p), times)

    run()

"""VIO campaigns (Table 6 layout) with ORB-SLAM3 on short SYNTHETIC loops: killed mid-way and resumed
(only the missing jobs run), then the same campaign on Ray (local instance, 2 CPUs, loopback only,
inside a private network namespace) gives the same table within the run-to-run spread.

CI size: 1 input x {mono, mono-inertial} x 2 runs (4 jobs per executor, CI budget). The issue's
3 inputs x 2 modes x 2 runs acceptance campaign was run by hand with both executors (numbers in
BENCHMARKS.md, "Campaigns").
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from helpers import run_rgbt
from rgbt.paths import REPO_ROOT

pytest.importorskip("pyorbslam3")

INPUTS = [{"synthetic": {"duration_s": 1.5, "seed": 1}}]
JOBS = 4


def _campaign(path: Path, vocab: Path, faults: list[dict] | None = None) -> Path:
    path.write_text(yaml.safe_dump({
        "name": "vio-test", "retries": 1, "faults": faults or [],
        "vio": {"inputs": INPUTS, "estimators": ["orbslam3"], "modes": ["mono", "mono-inertial"],
                "modalities": ["thermal"], "normalizations": ["percentile"], "runs": 2, "pace": 0,
                "vocab": str(vocab)}}))
    return path


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
            "RAY_USAGE_STATS_ENABLED": "0"}


def _results(out: Path) -> int:
    return len(list(out.glob("jobs/*/result.json")))


def _cells(report: dict) -> dict:
    return {(c["input"], c["estimator"], c["mode"], c["modality"]): c for c in report["cells"]}


def _ray_in_private_namespace() -> str | None:
    """Why the Ray run cannot happen here (an optional package, or no private network namespace), or None."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return "ray (the 'scale' extra) not installed"
    if not shutil.which("unshare") or not shutil.which("ip"):
        return "unshare / ip (util-linux, iproute2) not found: no private network namespace for Ray"
    probe = subprocess.run(["unshare", "-n", "sh", "-c", "ip link set lo up"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot create a private network namespace here (needs root): {probe.stderr.strip()}"
    return None


@pytest.mark.slow
@pytest.mark.timeout(900)  # ~1-2 min on 2 idle cores; far longer on a shared, loaded machine
def test_campaign_resumes_after_a_kill_and_ray_gives_the_same_table(small_vocab: Path, tmp_path: Path) -> None:
    path = _campaign(tmp_path / "c.yaml", small_vocab)
    out = tmp_path / "local"
    cmd = [sys.executable, "-m", "rgbt", "campaign", "run", str(path), "--out", str(out), "--workers", "1", "--json",
           "--no-progress"]
    proc = subprocess.Popen(cmd, env=_env(), start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while _results(out) < 1 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)  # the driver, its pool and ORB-SLAM3: the group we started
    proc.wait()
    done_before = _results(out)
    assert 1 <= done_before < JOBS, f"{done_before} jobs finished before the kill"

    resumed = json.loads(run_rgbt("campaign", "run", path, "--out", out, "--json", "--no-progress").stdout)
    assert resumed["jobs"] == JOBS and resumed["skipped"] == done_before
    assert resumed["executed"] == JOBS - done_before and resumed["failed"] == 0  # only the missing jobs ran
    again = json.loads(run_rgbt("campaign", "run", path, "--out", out, "--json", "--no-progress").stdout)
    assert (again["executed"], again["skipped"]) == (0, JOBS)
    local = json.loads(run_rgbt("campaign", "report", out, "--json").stdout)
    table = Path(local["table_md"]).read_text()
    assert table.startswith("| Sequence | orbslam3 mono thermal ATE (m) | orbslam3 mono-inertial thermal ATE (m) |")
    assert "synthetic-loop-1.5s-seed1 (synthetic)" in table and "Provenance:" in table

    why = _ray_in_private_namespace()
    if why:
        pytest.skip(f"Ray half not run: {why}")
    ray_out = tmp_path / "ray"
    # a crash fault on one job: Ray's max_retries runs it again on a new worker
    ray_path = _campaign(tmp_path / "r.yaml", small_vocab, [{"match": "seed1-orbslam3-mono-thermal-percentile-r1-",
                                                             "kind": "crash"}])
    ray_run = subprocess.run(["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$0" "$@"', sys.executable, "-m",
                              "rgbt", "campaign", "run", str(ray_path), "--executor", "ray", "--workers", "2",
                              "--out", str(ray_out), "--json", "--no-progress"],
                             env=_env(), capture_output=True, text=True, timeout=900)
    assert ray_run.returncode == 0, ray_run.stderr[-3000:]
    summary = json.loads(ray_run.stdout)
    assert (summary["jobs"], summary["executed"], summary["failed"]) == (JOBS, JOBS, 0)
    crashed = next(ray_out.glob("jobs/synthetic-loop-1.5s-seed1-orbslam3-mono-thermal-percentile-r1-*"))
    assert json.loads((crashed / "result.json").read_text())["provenance"]["attempt"] == 1
    ray = json.loads(run_rgbt("campaign", "report", ray_out, "--json").stdout)

    a, b = _cells(local), _cells(ray)
    assert a.keys() == b.keys() and len(a) == 2
    for key, ca in a.items():
        cb = b[key]
        assert ca["runs"] == cb["runs"] == 2 and ca["runs_failed"] == cb["runs_failed"] == 0
        assert abs(ca["tracked_fraction_mean"] - cb["tracked_fraction_mean"]) <= 0.15, (key, ca, cb)
        if ca["ate_rmse_mean"] is None or cb["ate_rmse_mean"] is None:
            assert ca["ate_rmse_mean"] == cb["ate_rmse_mean"], (key, ca, cb)
            continue
        # the same table within the run-to-run spread: 3 sigma of both, floor 7 cm + 10 % (2 runs estimate
        # sigma poorly: ORB-SLAM3 monocular on this 1.5 s loop gave cell means of 0.039 and 0.097 m, and
        # 0.040 and 0.079 m, for the same cell in two suite runs, its threads racing the frames fed at
        # pace 0); a broken run (no ATE, or metres off) still fails
        spread = max(3 * (ca["ate_rmse_std"] + cb["ate_rmse_std"]), 0.07 + 0.1 * ca["ate_rmse_mean"])
        assert abs(ca["ate_rmse_mean"] - cb["ate_rmse_mean"]) <= spread, (key, ca["ate_rmse_mean"], cb["ate_rmse_mean"])

"""Segmentation campaigns (Table 2 layout): cells equal `rgbt seg eval` run by hand; a job that raises is
retried, recorded as failed with its logs, and never holds up the rest; a dead worker is survived."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from helpers import need, run_rgbt
from rgbt.paths import ENGINES_DIR

pytest.importorskip("onnxruntime")
MODELS = [ENGINES_DIR / "sim_thermal_seg.onnx", ENGINES_DIR / "fastscnn_thermal.onnx"]


@pytest.fixture(scope="module")
def sim_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The simulator's SYNTHETIC CART-layout dataset: 0.4 s of the Duck flight, every 4th frame, one test split."""
    from rgbt.paths import data_dir
    from rgbt.sim import SimOptions
    from rgbt.sim.dataset import write_cart_dataset

    tum = need(data_dir() / "cart" / "ground_truth" / "Duck_2023-03-21-14-06-04.txt", "CART Duck ground truth")
    opts = SimOptions(trajectory=str(tum), duration_s=0.4, start_s=10.0, seed=1, cameras=["thermal"], drop_prob=0.0)
    return write_cart_dataset(tmp_path_factory.mktemp("simds") / "ds", [opts], stride=4, splits=["test"],
                              with_rgb=False)


def _campaign(path: Path, dataset: Path, models: list[Path], faults: list[dict] | None = None) -> Path:
    path.write_text(yaml.safe_dump({
        "name": "seg-test", "retries": 1,
        "seg": {"models": [str(m) for m in models], "datasets": [{"path": str(dataset), "split": "test"}],
                "backends": ["onnxruntime"], "bench_n": 2, "bench_rounds": 1},
        "faults": faults or []}))
    return path


@pytest.mark.slow
def test_seg_campaign_table2_matches_seg_eval_and_reports_a_failing_job(sim_dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    always = [{"match": "fastscnn", "kind": "raise", "attempts": 9}]
    failing = _campaign(tmp_path / "c.yaml", sim_dataset, MODELS, always)
    first = json.loads(run_rgbt("campaign", "run", failing, "--out", out, "--json", "--no-progress").stdout)
    assert (first["jobs"], first["executed"], first["failed"]) == (2, 2, 1)
    [failed] = first["failed_jobs"]
    assert "fastscnn_thermal" in failed["label"] and "injected fault" in failed["error"]
    assert failed["attempts"] == 2 and len(failed["logs"]) == 2  # retried once (retries: 1), then recorded
    assert "RuntimeError: injected fault" in (out / failed["logs"][-1]).read_text()  # the log holds the traceback
    report = json.loads(run_rgbt("campaign", "report", out, "--json").stdout)
    status = {c["model"]: c["status"] for c in report["cells"]}
    assert status == {"sim_thermal_seg": "done", "fastscnn_thermal": "failed"}  # the rest complete
    assert "| fastscnn_thermal | ds/test | onnxruntime | failed |" in Path(report["table_md"]).read_text()

    # the fault gone, failed jobs run again; the finished one is skipped
    fixed = _campaign(tmp_path / "c.yaml", sim_dataset, MODELS)
    second = json.loads(run_rgbt("campaign", "run", fixed, "--out", out, "--retry-failed", "--json",
                                 "--no-progress").stdout)
    assert (second["executed"], second["skipped"], second["failed"]) == (1, 1, 0)
    report = json.loads(run_rgbt("campaign", "report", out, "--json").stdout)
    assert [c["model"] for c in report["cells"]] == ["sim_thermal_seg", "fastscnn_thermal"]
    for cell, model in zip(report["cells"], MODELS):
        by_hand = json.loads(run_rgbt("seg", "eval", "--dataset", sim_dataset, "--engine", model, "--split", "test",
                                      "--json").stdout)
        assert cell["status"] == "done" and cell["n_images"] == by_hand["n_images"]
        assert cell["miou"] == by_hand["miou"] and cell["per_class"] == by_hand["per_class"]  # exact
        assert cell["fps"] > 0 and cell["provenance"]["versions"]["onnxruntime"]
    table = Path(report["table_md"]).read_text()
    assert table.startswith("| Model | Dataset/split | Backend |") and "mIoU all" in table
    assert Path(report["table_csv"]).read_text().startswith("model,dataset,split,backend,status")
    assert Path(report["plots"][0]).stat().st_size > 1000


@pytest.mark.slow
def test_local_pool_survives_a_dead_worker(sim_dataset: Path, tmp_path: Path) -> None:
    """The job's first attempt kills its pool process (as an OOM kill would): the pool is rebuilt, the
    job runs again and finishes."""
    path = _campaign(tmp_path / "c.yaml", sim_dataset, MODELS[:1], [{"match": "sim_thermal", "kind": "crash"}])
    out = tmp_path / "out"
    summary = json.loads(run_rgbt("campaign", "run", path, "--out", out, "--workers", "1", "--json",
                                  "--no-progress").stdout)
    assert (summary["executed"], summary["failed"], summary["worker_losses"]) == (1, 0, 1)
    [job] = list((out / "jobs").iterdir())
    assert json.loads((job / "result.json").read_text())["provenance"]["attempt"] == 1
    assert "injected fault: this worker process exits now" in (job / "attempt-0.log").read_text()

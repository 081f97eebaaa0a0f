"""Run one campaign job (in a pool process or a Ray task) and store its result.

Layout under the campaign's output folder::

    jobs/KEY/job.json          what the job is (written by the driver)
    jobs/KEY/attempt-N.log     everything attempt N wrote (fds 1 and 2, the traceback on failure)
    jobs/KEY/attempt-N/        estimator logs of attempt N (ORB-SLAM3's own log)
    jobs/KEY/result.json       the result, written atomically on success: the job is finished
    jobs/KEY/failed.json       written by the driver when the job failed every attempt

:func:`execute` never raises for a failing job: it returns ``{"ok": False, "error", "log"}`` so the
driver decides about retries. A worker process that dies (a crash, an OOM kill) is the executor's
to notice.
"""

from __future__ import annotations

import json
import os
import platform
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from rgbt.errors import EvaluationError
from rgbt.fileio import to_json, write_atomic

if TYPE_CHECKING:
    from rgbt.vio.sequence import Sequence

RESULT, FAILED = "result.json", "failed.json"


def job_dir(root: str | Path, key: str) -> Path:
    return Path(root) / "jobs" / key


def attempts_started(root: str | Path, key: str) -> int:
    """How many attempts of the job have started (their logs exist), over every invocation."""
    return len(list(job_dir(root, key).glob("attempt-*.log")))


def write_json_atomic(path: Path, data: dict) -> None:
    """A job's JSON record, written whole (workers and the executor may write it at once)."""
    write_atomic(path, to_json(data) + "\n", unique=True)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def provenance() -> dict:
    """Where and with what a job ran (host, CPU, Python, process)."""
    from rgbt.bench.machine import describe_machine

    m = describe_machine()
    return {"host": platform.node(), "cpu": m["cpu"], "logical_cores": m["logical_cores"],
            "python": m["python"], "pid": os.getpid()}


def execute(job: dict, root: str) -> dict:
    """Run ``job`` (a :meth:`Job.to_dict`) once; returns ``{"key", "ok", "wall_s", "error"?, "log"}``."""
    d = job_dir(root, job["key"])
    d.mkdir(parents=True, exist_ok=True)
    attempt = attempts_started(root, job["key"])
    log = d / f"attempt-{attempt}.log"
    started, t0 = _now(), time.perf_counter()
    log.write_text(f"job {job['label']}\nkey {job['key']}\nattempt {attempt}\nstarted {started} on "
                   f"{platform.node()} pid {os.getpid()}\n")
    try:
        from rgbt.vio.orbslam3 import native_stdout_to  # fds 1 and 2 into the log (estimators print from C++)

        with native_stdout_to(log):
            _inject_fault(job.get("fault"), attempt)
            result = run_vio(job, d / f"attempt-{attempt}") if job["kind"] == "vio" else run_seg(job)
    except Exception as exc:  # noqa: BLE001 - a failed job is data: logged, reported, retried by the driver
        with log.open("a") as fh:
            fh.write(traceback.format_exc())
        return {"key": job["key"], "ok": False, "error": f"{type(exc).__name__}: {exc}", "log": str(log),
                "wall_s": time.perf_counter() - t0}
    wall = time.perf_counter() - t0
    write_json_atomic(d / RESULT, {"job": job, "result": result, "provenance": {
        **provenance(), "attempt": attempt, "started": started, "finished": _now(), "wall_s": wall,
        "log": str(log.relative_to(Path(root)))}})
    with log.open("a") as fh:
        fh.write(f"finished {_now()} ({wall:.1f} s)\n")
    return {"key": job["key"], "ok": True, "wall_s": wall, "log": str(log)}


def _inject_fault(fault: dict | None, attempt: int) -> None:
    if not fault or attempt >= fault["attempts"]:
        return
    if fault["kind"] == "crash":
        print(f"injected fault: this worker process exits now (attempt {attempt})", flush=True)
        os._exit(70)
    raise RuntimeError(f"injected fault (attempt {attempt}): the campaign file's faults: entry")


def input_sequence(spec: dict, camera: str, rate_hz: float) -> Sequence:
    """The :class:`rgbt.vio.sequence.Sequence` of a campaign input (see :mod:`rgbt.campaign.spec`)."""
    from rgbt.vio import sequence as s

    kind = spec["kind"]
    if kind == "synthetic":
        seq = s.synthetic_sequence(spec["duration_s"], rate_hz=rate_hz, seed=spec["seed"],
                                   ffc_at_s=tuple(spec["ffc_at_s"]))
    elif kind == "trajectory":
        seq = s.cart_trajectory_sequence(spec["tum"], start_s=spec["start_s"], duration_s=spec["duration_s"],
                                         altitude_m=spec["altitude_m"], rate_hz=rate_hz, seed=spec["seed"])
    elif kind == "dataset":
        from rgbt.vio.datasets import dataset_sequence

        seq = dataset_sequence(spec["path"], spec["format"], ground_truth=spec["ground_truth"],
                               start_s=spec["start_s"], duration_s=spec["duration_s"])
    else:
        from rgbt.vio.datasets import clip_sequence

        seq = s.bag_sequence(spec["path"], stack_path=spec["stack"], camera=camera,
                             ground_truth=spec["ground_truth"], ground_truth_topic=spec["ground_truth_topic"])
        seq = clip_sequence(seq, spec["bag_start"], spec["bag_durr"])
    seq.name = spec["name"]
    return seq


def run_vio(job: dict, log_dir: Path) -> dict:
    """One estimator run: :func:`rgbt.vio.eval.evaluate_sequence` with ``runs=1``; the result is its
    ``to_dict()`` (the report merges the runs of a cell). A run that fails raises (retried)."""
    from rgbt.vio.eval import EvalOptions, evaluate_sequence

    p, o = job["params"], job["params"]["options"]
    seq = input_sequence(p["input"], o["camera"], o["rate_hz"])
    vocab = o["vocab"]
    if o["estimator"] == "orbslam3" and not vocab:
        from rgbt.vio.vocab import ensure_vocabulary

        vocab = str(ensure_vocabulary())
    opts = EvalOptions(estimator=o["estimator"], inertial=o["inertial"], runs=1, rate_hz=o["rate_hz"],
                       normalization=o["normalization"], features=o["features"], pace=o["pace"], vocab=vocab)
    data = evaluate_sequence(seq, opts, log_dir=log_dir).to_dict()
    run = data["runs"][0]
    if "error" in run:
        raise EvaluationError(run["error"])
    run["run"] = p["run"]
    data["modality"] = job["cell"]["modality"]
    return data


def run_seg(job: dict) -> dict:
    """mIoU of a model on a dataset split (:func:`rgbt.seg.evaluate.evaluate`, exact) and its FPS
    (:func:`rgbt.bench.seg.bench_model`, a measurement)."""
    from rgbt.bench.seg import SegBenchOptions, bench_model
    from rgbt.seg.evaluate import evaluate

    p, o = job["params"], job["params"]["options"]
    iou = evaluate(p["dataset"], p["model"], p["split"], o["backend"]).to_json()
    iou.pop("confusion", None)
    bench = bench_model(Path(p["model"]), SegBenchOptions(backend=o["backend"], threads=o["threads"],
                                                          calls_per_round=o["bench_n"], rounds=o["bench_rounds"]))
    keep = ("fps", "p50_ms", "p90_ms", "p99_ms", "stage_fps", "stage_serial_fps", "params", "gflops", "architecture",
            "backend", "paper")
    return {**iou, "bench": {k: bench[k] for k in keep}}


def load_result(root: str | Path, key: str) -> dict | None:
    path = job_dir(root, key) / RESULT
    return json.loads(path.read_text()) if path.is_file() else None

"""``rgbt campaign run``: expand a campaign, skip finished jobs, run the rest, record what happened.

The output folder holds ``campaign.json`` (the validated campaign), ``invocations.jsonl`` (one line
per run: command, executor, host, times, counts) and ``jobs/KEY/`` per job (see
:mod:`rgbt.campaign.worker`). Re-running the same campaign into the same folder runs only the jobs
without a ``result.json`` or ``failed.json`` (``retry_failed`` also runs the failed ones again).
"""

from __future__ import annotations

import json
import platform
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from rgbt.campaign.executors import drive, is_done, make_pool
from rgbt.campaign.jobs import Job, expand
from rgbt.campaign.spec import Campaign
from rgbt.campaign.worker import FAILED, job_dir, write_json_atomic
from rgbt.progress import Progress


def prepare(campaign: Campaign, out: str | Path, retry_failed: bool = False) -> tuple[list[Job], list[Job]]:
    """(all jobs, jobs still to run); writes ``campaign.json`` and each job's ``job.json``."""
    out = Path(out)
    jobs = expand(campaign)
    (out / "jobs").mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "campaign.json", campaign.model_dump(mode="json"))
    write_json_atomic(out / "jobs.json", {"kind": campaign.kind, "keys": [j.key for j in jobs]})
    if retry_failed:
        for j in jobs:
            (job_dir(out, j.key) / FAILED).unlink(missing_ok=True)
    todo = [j for j in jobs if not is_done(out, j)]
    for j in todo:
        job_dir(out, j.key).mkdir(parents=True, exist_ok=True)
        write_json_atomic(job_dir(out, j.key) / "job.json", j.to_dict())
    return jobs, todo


def run_campaign(campaign: Campaign, out: str | Path, executor: str = "local", workers: int = 2,
                 address: str | None = None, progress: Progress | None = None, retry_failed: bool = False,
                 command: list[str] | None = None,
                 on_progress: Callable[[int, int, int], None] | None = None) -> dict:
    """Run the jobs of ``campaign`` not finished in ``out``; returns the ``--json`` summary:
    ``jobs`` (all), ``executed`` (run to an end in this invocation, failures included), ``skipped``
    (finished or failed before), ``failed`` (jobs recorded as failed, all invocations), ``out``.
    ``progress`` is told of the jobs done (note: how many run and have failed); ``on_progress``
    gets (done, running, failed)."""
    out = Path(out)
    jobs, todo = prepare(campaign, out, retry_failed)
    command = command or sys.argv
    for j in todo:
        j.params["command"] = command  # provenance only: not part of the key
    started, t0 = datetime.now(timezone.utc).isoformat(timespec="seconds"), time.perf_counter()
    tally = None
    if todo:
        pool = make_pool(executor, workers, address, campaign.retries)
        task = f"campaign {campaign.name} ({executor})"

        def tell(done: int, running: int, failed: int) -> None:
            if progress is not None:
                shown = min(running, workers) if executor == "local" else running
                progress(task, done, len(todo), f"running {shown}  failed {failed}")
            if on_progress:
                on_progress(done, running, failed)

        if progress is not None:
            progress(task, 0, len(todo), "running 0  failed 0")
        try:
            tally = drive(pool, todo, str(out), campaign.retries, tell)
        finally:
            pool.close()
    failed_total = sum((job_dir(out, j.key) / FAILED).is_file() for j in jobs)
    summary = {"jobs": len(jobs), "executed": tally.executed if tally else 0, "skipped": len(jobs) - len(todo),
               "failed": failed_total, "out": str(out), "executor": executor, "workers": workers,
               "retried": tally.retried if tally else 0, "worker_losses": tally.worker_losses if tally else 0,
               "failed_jobs": tally.failed if tally else [], "wall_s": round(time.perf_counter() - t0, 3)}
    record = {"command": command, "executor": executor, "workers": workers, "address": address,
              "host": platform.node(), "started": started, **{k: summary[k] for k in
                                                              ("jobs", "executed", "skipped", "failed", "wall_s")}}
    with (out / "invocations.jsonl").open("a") as fh:
        fh.write(json.dumps(record) + "\n")
    return summary

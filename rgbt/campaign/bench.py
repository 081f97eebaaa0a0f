"""``rgbt bench campaign``: a fixed small VIO campaign with 1 worker, then 2, on this machine.

The campaign: ``--inputs`` SYNTHETIC loops of ``--duration`` s x ORB-SLAM3 monocular x ``--runs``
runs (percentile normalization, frames fed as fast as ORB-SLAM3 takes them), the cached DBoW2
vocabulary. Reported: wall time per worker count, the speed-up, per-job wall and CPU seconds (the
numbers to scale to N nodes: about one core per job), and the load average before and after (the machine
may be shared: say so beside the numbers).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rgbt.output import print_table
from rgbt.progress import Progress


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--inputs", type=int, default=2, help="synthetic loops (seeds 1..N)")
    p.add_argument("--duration", type=float, default=3.0, help="seconds of each loop")
    p.add_argument("--runs", type=int, default=2, help="runs per input")
    p.add_argument("--workers", default="1,2", help="comma-separated worker counts to time")
    p.add_argument("--vocab", default=None, help="DBoW2 vocabulary (default: the cached one, built if missing)")


def _cpu_seconds() -> float:
    t = os.times()
    return t.children_user + t.children_system


@dataclass(frozen=True)
class CampaignBenchOptions:
    """What ``rgbt bench campaign`` measures: the same small VIO campaign with each worker count."""

    inputs: int = 2  #: synthetic loops (seeds 1..inputs)
    duration_s: float = 3.0  #: seconds of each loop
    runs: int = 2  #: runs per input
    workers: tuple[int, ...] = (1, 2)  #: local worker counts to time
    vocab: str | None = None  #: DBoW2 vocabulary (None: the cached one, built if missing)


def options_from_args(args: argparse.Namespace) -> CampaignBenchOptions:
    """The options of the command line :func:`add_arguments` defines."""
    return CampaignBenchOptions(inputs=args.inputs, duration_s=args.duration, runs=args.runs,
                                workers=tuple(int(w) for w in args.workers.split(",")), vocab=args.vocab)


def run(options: CampaignBenchOptions, progress: Progress | None = None) -> dict:
    """Run the campaign with each worker count; ``progress`` reports the vocabulary build and the jobs."""
    from rgbt.campaign.jobs import expand
    from rgbt.campaign.run import run_campaign
    from rgbt.campaign.spec import Campaign
    from rgbt.campaign.worker import load_result
    from rgbt.vio.vocab import ensure_vocabulary

    if options.vocab:
        vocab = options.vocab
    else:
        vocab = str(ensure_vocabulary(progress=progress))
    campaign = Campaign.model_validate({"name": "bench", "retries": 0, "vio": {
        "inputs": [{"synthetic": {"duration_s": options.duration_s, "seed": s}} for s in range(1, options.inputs + 1)],
        "modes": ["mono"], "normalizations": ["percentile"], "runs": options.runs, "pace": 0, "vocab": vocab}})
    keys = [j.key for j in expand(campaign)]
    rows = []
    with tempfile.TemporaryDirectory(prefix="rgbt-bench-campaign-") as tmp:
        for workers in options.workers:
            out = Path(tmp) / f"w{workers}"
            load0, cpu0, t0 = os.getloadavg()[0], _cpu_seconds(), time.perf_counter()
            summary = run_campaign(campaign, out, "local", workers, progress=progress,
                                   command=["rgbt", "bench", "campaign"])
            wall = time.perf_counter() - t0
            job_walls = [r["provenance"]["wall_s"] for k in keys if (r := load_result(out, k))]
            rows.append({"workers": workers, "wall_s": wall, "jobs": summary["jobs"], "failed": summary["failed"],
                         "job_wall_s_mean": sum(job_walls) / max(len(job_walls), 1),
                         "cpu_s_per_job": (_cpu_seconds() - cpu0) / max(summary["jobs"], 1),
                         "jobs_per_hour": 3600 * summary["jobs"] / wall,
                         "loadavg_1min_before": load0, "loadavg_1min_after": os.getloadavg()[0]})
    base = rows[0]["wall_s"]
    for r in rows:
        r["speedup"] = base / r["wall_s"]
        r["efficiency"] = r["speedup"] / (r["workers"] / rows[0]["workers"])
    return {"benchmark": "campaign", "campaign": f"{options.inputs} synthetic loops x {options.duration_s:g} s x "
            f"ORB-SLAM3 mono x {options.runs} runs (local executor)", "jobs": len(keys), "rows": rows,
            "note": "SYNTHETIC inputs; wall includes pool start-up (spawned workers import rgbt) and the vocabulary "
                    "load of every job"}


def print_result(result: dict) -> None:
    print_table(f"campaign: {result['campaign']}, {result['jobs']} jobs",
                ["workers", "wall s", "speed-up", "efficiency", "job wall s", "CPU s/job", "jobs/h",
                 "load before/after"],
                [[r["workers"], f"{r['wall_s']:.1f}", f"{r['speedup']:.2f}", f"{r['efficiency']:.2f}",
                  f"{r['job_wall_s_mean']:.1f}", f"{r['cpu_s_per_job']:.1f}", f"{r['jobs_per_hour']:.0f}",
                  f"{r['loadavg_1min_before']:.1f}/{r['loadavg_1min_after']:.1f}"] for r in result["rows"]])

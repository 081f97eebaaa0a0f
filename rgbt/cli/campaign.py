"""``rgbt campaign``: run a campaign file (local process pool or Ray) and report it (Table 6 / Table 2)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator

from rgbt.output import print_json
from rgbt.progress import ProgressBars


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("campaign", help="dataset-scale campaigns: many runs as resumable jobs, local or on Ray")
    s = parser.add_subparsers(dest="campaign_cmd", metavar="CMD")

    p = s.add_parser("run", help="run the jobs of a campaign file not finished yet in --out",
                     epilog="--executor ray without --address starts a local Ray instance, loopback only, and only "
                            "inside a private network namespace (unshare -n; ip link set lo up); "
                            "RGBT_RAY_ALLOW_NETWORK=1 lifts that check")
    p.add_argument("file", help="campaign YAML (see campaigns/smoke.yaml)")
    p.add_argument("--executor", default="local", choices=["local", "ray"],
                   help="local: a process pool here; ray: one Ray task per job (the 'scale' extra)")
    p.add_argument("--address", default=None, help="ray: address of an existing Ray cluster (default: start one here)")
    p.add_argument("--workers", type=int, default=max(1, min(2, os.cpu_count() or 1)),
                   help="local: pool processes; ray without --address: CPUs of the local instance (default 2)")
    p.add_argument("--out", default=None, help="campaign folder (default: bags/campaigns/NAME)")
    p.add_argument("--retry-failed", action="store_true", help="also run again the jobs recorded as failed")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True, help="progress bar on stderr")
    p.add_argument("--json", action="store_true", help="print {jobs, executed, skipped, failed, out, ...} as JSON")
    p.set_defaults(func=_run)

    p = s.add_parser("report", help="Table 6 / Table 2 layouts (Markdown, CSV, JSON, PNG) of a campaign folder")
    p.add_argument("dir", help="the --out folder of `rgbt campaign run`")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG")
    p.add_argument("--json", action="store_true", help="print {cells, table_md, ...} as JSON")
    p.set_defaults(func=_report)


def _run(args: argparse.Namespace) -> int:
    from rgbt.campaign.run import run_campaign
    from rgbt.campaign.spec import load_campaign
    from rgbt.errors import RgbtError

    if args.workers < 1:
        raise RgbtError(f"--workers {args.workers}: expected >= 1")
    campaign = load_campaign(args.file)
    if args.out is None:
        from rgbt.paths import bags_dir

        args.out = str(bags_dir() / "campaigns" / campaign.name)
    # Ray prints its workers' deaths on stdout: keep the JSON clean
    with _stdout_to_stderr(args.json), ProgressBars(enabled=args.progress) as bars:
        summary = run_campaign(campaign, args.out, args.executor, args.workers, args.address,
                               progress=bars, retry_failed=args.retry_failed,
                               command=["rgbt", *sys.argv[1:]] if sys.argv[0].endswith(("rgbt", "__main__.py"))
                               else None)
    if args.json:
        print_json(summary)
    else:
        print(f"{summary['jobs']} jobs: {summary['executed']} executed, "
              f"{summary['skipped']} skipped (finished before), "
              f"{summary['failed']} failed -> {summary['out']}  (rgbt campaign report {summary['out']})")
        for f in summary["failed_jobs"]:
            print(f"  failed: {f['label']}: {f['error']} (logs: {', '.join(f['logs'])})")
    return 0


@contextlib.contextmanager
def _stdout_to_stderr(enabled: bool) -> Iterator[None]:
    """While running, everything written to stdout (fd 1 and ``sys.stdout``) goes to stderr."""
    if not enabled:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rgbt.campaign.report import write_report

    summary = write_report(args.dir, plots=not args.no_plots)
    if args.json:
        print_json(summary)
    else:
        print(Path(summary["table_md"]).read_text())
    return 0

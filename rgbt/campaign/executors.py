"""Run a campaign's jobs: a local process pool or Ray, one driver loop for both.

- ``local``: :class:`concurrent.futures.ProcessPoolExecutor` (spawned workers). A worker that dies
  breaks the pool: the pool is rebuilt and the jobs it held are submitted again.
- ``ray``: each job one Ray task declaring ``num_cpus`` (per estimator run) and ``num_gpus`` (1 for
  TensorRT / CUDA backends), ``max_retries`` for worker loss. Without ``--address`` a local Ray
  instance is started, loopback only (``_node_ip_address=127.0.0.1``, no dashboard, no usage
  stats) and only inside a private network namespace (see :func:`require_private_network`).

Retries: a job that raises is run again until it has had ``retries + 1`` attempts in this
invocation, then recorded as failed (``failed.json`` with the error and its logs); the other jobs
are never held up. A job that lost its worker counts that as an attempt.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor
from concurrent.futures import wait as futures_wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import psutil

from rgbt.campaign.jobs import Job
from rgbt.campaign.worker import FAILED, RESULT, attempts_started, execute, job_dir, write_json_atomic
from rgbt.errors import RgbtError

EXECUTORS = ("local", "ray")
ALLOW_NETWORK_ENV = "RGBT_RAY_ALLOW_NETWORK"


class WorkerLost(Exception):
    """The process running a job died before it returned."""


class Pool(Protocol):
    def submit(self, job: Job, root: str) -> Any: ...
    def ready(self, handles: list) -> list: ...
    def result(self, handle: Any) -> dict: ...
    def close(self) -> None: ...


class LocalPool:
    """A process pool of ``workers`` spawned processes, rebuilt when a worker dies."""

    def __init__(self, workers: int) -> None:
        self.workers, self._ctx = workers, mp.get_context("spawn")
        self._new()

    def _new(self) -> None:
        self._ex = ProcessPoolExecutor(self.workers, mp_context=self._ctx)

    def submit(self, job: Job, root: str) -> Future:
        fut = self._ex.submit(execute, job.to_dict(), root)
        fut.pool = self._ex  # type: ignore[attr-defined]
        return fut

    def ready(self, handles: list) -> list:
        done, _ = futures_wait(handles, timeout=0.5, return_when=FIRST_COMPLETED)
        return list(done)

    def result(self, handle: Future) -> dict:
        try:
            return handle.result()
        except BrokenProcessPool as exc:
            if handle.pool is self._ex:  # type: ignore[attr-defined]  # first notice of this breakage: rebuild
                self._ex.shutdown(wait=False, cancel_futures=True)
                self._new()
            raise WorkerLost(f"a worker process of the local pool died ({exc})") from None
        except Exception as exc:  # noqa: BLE001 - the job could not even be run (pickling, import): a failure
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}

    def close(self) -> None:
        self._ex.shutdown(wait=True, cancel_futures=True)


def require_private_network() -> None:
    """Refuse to start a local Ray instance where it would bind a network interface.

    A local Ray instance binds the machine's interface address and probes the network; rgbt starts
    one only where loopback is the only interface (a private network namespace: ``unshare -n``,
    then ``ip link set lo up``), unless ``RGBT_RAY_ALLOW_NETWORK=1`` says the machine may.
    """
    others = sorted(n for n in psutil.net_if_addrs() if n != "lo")
    if others and os.environ.get(ALLOW_NETWORK_ENV) != "1":
        raise RgbtError(f"--executor ray without --address would start a local Ray instance on a machine with "
                        f"network interfaces {others}: expected a private network namespace (unshare -n, then "
                        f"ip link set lo up), the --address of an existing Ray cluster, or "
                        f"{ALLOW_NETWORK_ENV}=1 to allow it")


class RayPool:
    """Jobs as Ray tasks; a local instance (``workers`` CPUs, loopback) unless ``address`` is given."""

    def __init__(self, workers: int, address: str | None, retries: int) -> None:
        os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
        try:
            import ray
        except ImportError:
            from rgbt.extras import missing_module

            raise missing_module("ray", needed_by="--executor ray") from None
        self._ray, self.retries = ray, retries
        if address:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        else:
            require_private_network()
            ray.init(num_cpus=workers, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
        self._task = ray.remote(execute)

    def submit(self, job: Job, root: str) -> Any:
        return self._task.options(num_cpus=job.num_cpus, num_gpus=job.num_gpus, max_retries=self.retries,
                                  name=job.label).remote(job.to_dict(), root)

    def ready(self, handles: list) -> list:
        done, _ = self._ray.wait(handles, num_returns=1, timeout=0.5)
        return done

    def result(self, handle: Any) -> dict:
        try:
            return self._ray.get(handle)
        except (self._ray.exceptions.WorkerCrashedError, self._ray.exceptions.NodeDiedError) as exc:
            raise WorkerLost(f"the Ray worker running the job died ({type(exc).__name__})") from None
        except self._ray.exceptions.RayError as exc:  # the task itself could not run: a failure of the job
            return {"ok": False, "error": " ".join(str(exc).split())[:500]}

    def close(self) -> None:
        self._ray.shutdown()


def make_pool(executor: str, workers: int, address: str | None, retries: int) -> Pool:
    if executor == "local":
        if address:
            raise RgbtError("--address is for --executor ray: expected no --address with --executor local")
        return LocalPool(workers)
    if executor == "ray":
        return RayPool(workers, address, retries)
    raise RgbtError(f"--executor {executor!r}: expected one of {EXECUTORS}")


@dataclass
class Tally:
    """What one invocation did; ``failed`` lists the jobs recorded as failed in it."""

    executed: int = 0
    retried: int = 0
    worker_losses: int = 0
    failed: list[dict] = field(default_factory=list)


def is_done(root: str | Path, job: Job) -> bool:
    d = job_dir(root, job.key)
    return (d / RESULT).is_file() or (d / FAILED).is_file()


def drive(pool: Pool, jobs: list[Job], root: str, retries: int, progress: Any = None) -> Tally:
    """Run ``jobs`` on ``pool`` to the end: retries, worker loss, failures recorded. ``progress(done,
    running, failed)`` is called as things change."""
    tally = Tally()
    base = {j.key: attempts_started(root, j.key) for j in jobs}
    inflight: dict[Any, Job] = {pool.submit(j, root): j for j in jobs}
    done = 0
    while inflight:
        if progress:
            progress(done, len(inflight), len(tally.failed))
        for handle in pool.ready(list(inflight)):
            job = inflight.pop(handle)
            try:
                out = pool.result(handle)
            except WorkerLost as exc:
                tally.worker_losses += 1
                out = {"ok": False, "error": str(exc), "lost": True}
            used = attempts_started(root, job.key) - base[job.key]
            if out["ok"]:
                tally.executed += 1
                done += 1
            elif (out.get("lost") and used == 0) or used <= retries:  # never started, or attempts left: again
                tally.retried += used > 0
                inflight[pool.submit(job, root)] = job
            else:
                tally.executed += 1
                done += 1
                logs = sorted(str(p.relative_to(root)) for p in job_dir(root, job.key).glob("attempt-*.log"))
                record = {"key": job.key, "label": job.label, "cell": job.cell, "error": out["error"],
                          "attempts": used, "logs": logs}
                write_json_atomic(job_dir(root, job.key) / FAILED, {"job": job.to_dict(), **record})
                tally.failed.append(record)
    if progress:
        progress(done, 0, len(tally.failed))
    return tally


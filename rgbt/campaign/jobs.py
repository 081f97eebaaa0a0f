"""A campaign's jobs and the key each result is stored under.

One job per (input, estimator, mode, modality, normalization, run) or per (model, dataset/split,
backend). A job's key is a hash of everything its result depends on, so a re-run finds finished
jobs and skips them, and a changed input or version makes a new key:

- the input's fingerprint: for a file its size, mtime (ns) and the SHA-256 of its first and last
  MiB; for a folder (a bag directory, a dataset) a manifest hash over every file's relative path,
  size and mtime (ns); for a synthetic input its parameters (rendered by this rgbt version);
- rgbt's version and the estimator's / backend's package version;
- the job's options (rate, normalization, features, pace, vocabulary fingerprint, bench sizes);
- the campaign seed and the run index (ORB-SLAM3 is not seeded: its threads make runs differ; the
  run index keeps repeats apart).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from rgbt import __version__
from rgbt.campaign.spec import GPU_BACKENDS, Campaign, Input

_CHUNK = 1 << 20


@dataclass
class Job:
    """One unit of work; ``params`` is everything the worker needs (JSON-able), ``cell`` the table
    cell it belongs to, ``label`` a readable name, ``key`` where its result is stored."""

    key: str
    kind: str
    label: str
    cell: dict
    params: dict
    num_cpus: float = 1.0
    num_gpus: float = 0.0
    fault: dict | None = field(default=None)

    def to_dict(self) -> dict:
        return asdict(self)


def file_fingerprint(path: str | Path) -> str:
    """size, mtime (ns) and SHA-256 of the first and last MiB of a file (cheap on multi-GB bags)."""
    p = Path(path)
    st = p.stat()
    h = hashlib.sha256(f"{st.st_size}:{st.st_mtime_ns}".encode())
    with p.open("rb") as fh:
        h.update(fh.read(_CHUNK))
        if st.st_size > 2 * _CHUNK:
            fh.seek(-_CHUNK, os.SEEK_END)
            h.update(fh.read(_CHUNK))
    return h.hexdigest()


def path_fingerprint(path: str | Path) -> str:
    """:func:`file_fingerprint` of a file; for a folder the manifest hash (relative path, size, mtime ns
    of every file below it)."""
    p = Path(path)
    if p.is_file():
        return file_fingerprint(p)
    h = hashlib.sha256()
    for f in sorted(q for q in p.rglob("*") if q.is_file()):
        st = f.stat()
        h.update(f"{f.relative_to(p)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def package_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _versions(*packages: str) -> dict:
    return {"rgbt": __version__, **{p: package_version(p) for p in packages}}


def _hash(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def input_name(item: Input) -> str:
    """The row label of an input: its ``name``, else derived from its source."""
    if item.name:
        return item.name
    if item.synthetic is not None:
        return f"synthetic-loop-{item.synthetic.duration_s:g}s-seed{item.synthetic.seed}"
    if item.trajectory is not None:
        tr = item.trajectory
        return f"{Path(tr.tum).stem}@{tr.start_s:g}+{tr.duration_s:g}s"
    src = item.bag or item.dataset  # an Input has exactly one source
    assert src is not None
    return Path(src.path).name


def input_fingerprint(item: Input) -> dict:
    src = item.source.model_dump()
    files = {k: path_fingerprint(v) for k, v in src.items() if k in ("path", "tum", "stack", "ground_truth") and v}
    return {"kind": item.kind, "params": src, "files": files}


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_.@+" else "_" for ch in text)[:60]


def expand(campaign: Campaign) -> list[Job]:
    """All jobs of ``campaign`` in a stable order (duplicates, same key, kept once)."""
    jobs = _vio_jobs(campaign) if campaign.kind == "vio" else _seg_jobs(campaign)
    unique = list({j.key: j for j in jobs}.values())
    for job in unique:
        for fault in campaign.faults:
            if fault.match in job.key or fault.match in job.label:
                job.fault = fault.model_dump()
    return unique


def _vio_jobs(c: Campaign) -> list[Job]:
    v = c.vio
    assert v is not None
    vocab_fp = path_fingerprint(v.vocab) if v.vocab else "default-cached"
    multi_norm = len(v.normalizations) > 1
    jobs = []
    for item in v.inputs:
        name, fp = input_name(item), input_fingerprint(item)
        for est in v.estimators:
            versions = _versions("pyorbslam3" if est == "orbslam3" else est)
            for mode in v.modes:
                for modality in v.modalities:
                    for norm in v.normalizations:
                        options = {"estimator": est, "inertial": mode == "mono-inertial", "rate_hz": v.rate_hz,
                                   "normalization": norm, "features": v.features, "pace": v.pace,
                                   "vocab": v.vocab, "camera": modality}
                        cell = {"input": name, "estimator": est, "mode": mode,
                                "modality": f"{modality}/{norm}" if multi_norm else modality}
                        for run in range(v.runs):
                            ident = {"input": fp, "options": {**options, "vocab": vocab_fp}, "versions": versions,
                                     "seed": c.seed, "run": run}
                            label = f"{name} {est} {mode} {modality} {norm} run{run}"
                            key = f"{_slug(name)}-{est}-{mode}-{modality}-{norm}-r{run}-{_hash(ident)}"
                            jobs.append(Job(key, "vio", label, cell, {
                                "input": {"kind": item.kind, "name": name, **item.source.model_dump()},
                                "options": options, "run": run, "seed": c.seed, "versions": versions},
                                num_cpus=v.cpus_per_job))
    return jobs


def _seg_jobs(c: Campaign) -> list[Job]:
    s = c.seg
    assert s is not None
    jobs = []
    for model in s.models:
        model_fp = {"onnx": path_fingerprint(model),
                    "sidecar": path_fingerprint(Path(model).with_suffix(".json"))
                    if Path(model).with_suffix(".json").is_file() else None}
        for ds in s.datasets:
            ds_fp = path_fingerprint(ds.path)
            for backend in s.backends:
                versions = _versions("onnxruntime" if backend.startswith("ort") or backend == "onnxruntime"
                                     else "tensorrt")
                options = {"backend": backend, "bench_n": s.bench_n, "bench_rounds": s.bench_rounds,
                           "threads": s.threads}
                ident = {"model": model_fp, "dataset": ds_fp, "split": ds.split, "options": options,
                         "versions": versions, "seed": c.seed}
                name = Path(model).stem
                split = Path(ds.split).stem if ds.split else "all"
                cell = {"model": name, "dataset": Path(ds.path).name, "split": split,
                        "backend": backend}
                label = f"{name} {cell['dataset']}/{cell['split']} {backend}"
                key = f"{_slug(name)}-{_slug(cell['dataset'])}-{_slug(cell['split'])}-{backend}-{_hash(ident)}"
                jobs.append(Job(key, "seg", label, cell, {
                    "model": model, "dataset": ds.path, "split": ds.split, "options": options, "versions": versions},
                    num_cpus=s.cpus_per_job, num_gpus=1.0 if backend in GPU_BACKENDS else 0.0))
    return jobs

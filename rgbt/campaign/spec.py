"""Campaign files: what to run, validated (pydantic) with errors naming file, key, value, expected.

A campaign is either a VIO campaign (inputs x estimators x modes x modalities x normalizations x
runs; the paper's Table 6) or a segmentation campaign (models x datasets/splits x backends; Table 2).
Relative paths are resolved against the campaign file's folder.

.. code-block:: yaml

    name: smoke
    retries: 1                # attempts after the first, per job
    vio:
      inputs:
        - synthetic: {duration_s: 3, seed: 1}        # SYNTHETIC plane loop (rgbt.vio.sequence)
        - trajectory: {tum: gt.txt, start_s: 25, duration_s: 8}   # SYNTHETIC along a real trajectory
        - bag: {path: run1, camera: thermal, bag_start: 0, bag_durr: -1}  # rgbt simulate / a recording
        - dataset: {path: MH_01, format: euroc}      # EuRoC / TUM-VI / KITTI folder
      estimators: [orbslam3]
      modes: [mono, mono-inertial]
      modalities: [thermal]
      normalizations: [percentile]
      runs: 2
    # or
    seg:
      models: [../engines/fastscnn_thermal.onnx]
      datasets: [{path: sim_dataset, split: test}]
      backends: [onnxruntime]
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rgbt.errors import ConfigError
from rgbt.stack import config_error
from rgbt.yamlio import load_yaml_text, read_text

MODES = ("mono", "mono-inertial")
MODALITIES = ("thermal", "color", "mono")
#: backends that need an accelerator: a Ray task running them declares one GPU
GPU_BACKENDS = ("ort-cuda", "ort-tensorrt", "tensorrt")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SyntheticInput(_Model):
    """The built-in SYNTHETIC loop (:func:`rgbt.vio.sequence.synthetic_sequence`)."""

    duration_s: float = Field(gt=0, le=600)
    seed: int = 0
    ffc_at_s: list[float] = []


class TrajectoryInput(_Model):
    """SYNTHETIC thermal flown along a real TUM trajectory (:func:`rgbt.vio.sequence.cart_trajectory_sequence`)."""

    tum: str
    start_s: float = Field(0.0, ge=0)
    duration_s: float = Field(45.0, gt=0)
    altitude_m: float = Field(35.0, gt=0)
    seed: int = 0


class BagInput(_Model):
    """A bag (``rgbt simulate`` output or a recording) clipped like ``rosbag play -s bag_start -u bag_durr``
    (CART's sequence table; ``bag_durr`` -1 = to the end)."""

    path: str
    stack: str | None = None
    ground_truth: str | None = None
    ground_truth_topic: str | None = None
    bag_start: float = Field(0.0, ge=0)
    bag_durr: float = -1.0


class DatasetInput(_Model):
    """A dataset folder: EuRoC / TUM-VI (mav0/) or KITTI odometry (:func:`rgbt.vio.datasets.dataset_sequence`)."""

    path: str
    format: Literal["euroc", "tumvi", "kitti"] | None = None
    ground_truth: str | None = None
    start_s: float = Field(0.0, ge=0)
    duration_s: float = -1.0


class Input(_Model):
    """One input: exactly one of ``synthetic``, ``trajectory``, ``bag``, ``dataset``; ``name`` labels
    its table row (default: derived from the source)."""

    name: str | None = None
    synthetic: SyntheticInput | None = None
    trajectory: TrajectoryInput | None = None
    bag: BagInput | None = None
    dataset: DatasetInput | None = None

    @model_validator(mode="after")
    def _one_source(self) -> Input:
        given = [k for k in ("synthetic", "trajectory", "bag", "dataset") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"exactly one of synthetic, trajectory, bag, dataset (got {given or 'none'})")
        return self

    @property
    def kind(self) -> str:
        return next(k for k in ("synthetic", "trajectory", "bag", "dataset") if getattr(self, k) is not None)

    @property
    def source(self) -> BaseModel:
        return getattr(self, self.kind)


class VioCampaign(_Model):
    """Table 6: every input x estimator x mode x modality x normalization, ``runs`` times each.
    ``pace`` 0 feeds frames as fast as the estimator takes them (1 = real time); ``vocab`` the DBoW2
    vocabulary (default: the cached one, built if missing)."""

    inputs: list[Input] = Field(min_length=1)
    estimators: list[Literal["orbslam3", "vins", "openvins"]] = Field(["orbslam3"], min_length=1)
    modes: list[Literal["mono", "mono-inertial"]] = Field(["mono"], min_length=1)
    modalities: list[Literal["thermal", "color", "mono"]] = Field(["thermal"], min_length=1)
    normalizations: list[Literal["percentile", "fixed", "temporal", "temporal_clahe"]] = Field(
        ["temporal"], min_length=1)
    runs: int = Field(3, ge=1, le=100)
    rate_hz: float = Field(20.0, gt=0)
    pace: float = Field(0.0, ge=0)
    features: int = Field(1500, ge=100)
    vocab: str | None = None
    cpus_per_job: float = Field(1.0, gt=0)


class SegDataset(_Model):
    """A CART-layout dataset root and a split (a name like ``test`` in the root, or a file; none = all frames)."""

    path: str
    split: str | None = None


class SegCampaign(_Model):
    """Table 2: every model x dataset/split x backend: mIoU (exact) and FPS (a measurement: ``bench_n``
    timed calls per round, ``bench_rounds`` rounds, as ``rgbt bench seg``)."""

    models: list[str] = Field(min_length=1)
    datasets: list[SegDataset] = Field(min_length=1)
    backends: list[Literal["onnxruntime", "ort-cuda", "ort-tensorrt", "tensorrt"]] = Field(
        ["onnxruntime"], min_length=1)
    bench_n: int = Field(20, ge=1)
    bench_rounds: int = Field(3, ge=1)
    threads: int = Field(1, ge=0)
    cpus_per_job: float = Field(1.0, gt=0)


class Fault(_Model):
    """Fault injection for testing the machinery: jobs whose key or label contains ``match`` fail their
    first ``attempts`` attempts, by raising (``raise``) or by killing their worker process (``crash``)."""

    match: str
    kind: Literal["raise", "crash"] = "raise"
    attempts: int = Field(1, ge=1)


class Campaign(_Model):
    """A campaign file; exactly one of ``vio`` / ``seg``. ``retries``: attempts after the first
    before a job is recorded as failed."""

    name: str = "campaign"
    seed: int = 0
    retries: int = Field(1, ge=0, le=10)
    vio: VioCampaign | None = None
    seg: SegCampaign | None = None
    faults: list[Fault] = []

    @model_validator(mode="after")
    def _one_kind(self) -> Campaign:
        if (self.vio is None) == (self.seg is None):
            raise ValueError("exactly one of vio (Table 6) or seg (Table 2)")
        return self

    @property
    def kind(self) -> str:
        return "vio" if self.vio is not None else "seg"


def load_campaign(path: str | Path) -> Campaign:
    """Read and validate a campaign YAML; relative paths in it are resolved against its folder and
    must exist (synthetic inputs excepted)."""
    path = Path(path)
    data = load_yaml_text(read_text(path, "campaign YAML file"), str(path))
    if not isinstance(data, dict):
        raise ConfigError(str(path), "<root>", type(data).__name__, "a mapping with vio: or seg:")
    try:
        campaign = Campaign.model_validate(data)
    except ValidationError as exc:
        raise config_error(str(path), exc) from None
    _resolve_paths(campaign, path)
    return campaign


def _resolve_paths(c: Campaign, path: Path) -> None:
    base = path.resolve().parent

    def resolve(key: str, value: str | None, optional_missing: bool = False) -> str | None:
        if value is None:
            return None
        p = Path(value).expanduser()
        p = p if p.is_absolute() else base / p
        if not p.exists() and not optional_missing:
            raise ConfigError(str(path), key, value, f"an existing path (relative to {base.name}/)")
        return str(p)

    if c.vio is not None:
        c.vio.vocab = resolve("vio.vocab", c.vio.vocab)
        for i, item in enumerate(c.vio.inputs):
            src, key = item.source, f"vio.inputs.{i}.{item.kind}"
            for field in ("path", "tum", "stack", "ground_truth"):
                if hasattr(src, field):
                    setattr(src, field, resolve(f"{key}.{field}", getattr(src, field)))
            if item.kind in ("synthetic", "trajectory"):
                bad = [m for m in c.vio.modalities if m != "thermal"]
                if bad:
                    raise ConfigError(str(path), "vio.modalities", bad,
                                      f"thermal only: input {i} ({item.kind}) is rendered thermal")
    else:
        assert c.seg is not None
        c.seg.models = [resolve(f"seg.models.{i}", m) for i, m in enumerate(c.seg.models)]  # type: ignore[misc]
        for i, d in enumerate(c.seg.datasets):
            d.path = resolve(f"seg.datasets.{i}.path", d.path)  # type: ignore[assignment]

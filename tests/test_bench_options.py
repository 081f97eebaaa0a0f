"""Each ``rgbt bench NAME`` verb maps its command line to that benchmark's typed options: the
command line's defaults are the options' defaults, and flags land in the fields they name."""

from __future__ import annotations

import dataclasses
import importlib

import pytest

from rgbt.bench.faults import FaultsBenchOptions
from rgbt.bench.graph import GraphBenchOptions
from rgbt.bench.preprocess import PreprocessBenchOptions
from rgbt.bench.seg import SegBenchOptions
from rgbt.bench.sim import SimBenchOptions
from rgbt.bench.sync import SyncBenchOptions
from rgbt.campaign.bench import CampaignBenchOptions
from rgbt.cli import build_parser
from rgbt.cli.bench import _MODULES, BENCHES

OPTIONS = {
    "preprocess": PreprocessBenchOptions,
    "sim": SimBenchOptions,
    "seg": SegBenchOptions,
    "sync": SyncBenchOptions,
    "graph": GraphBenchOptions,
    "campaign": CampaignBenchOptions,
    "faults": FaultsBenchOptions,
}


def _options(argv: list[str]) -> object:
    args = build_parser().parse_args(["bench", *argv])
    return importlib.import_module(_MODULES.get(argv[0], f"rgbt.bench.{argv[0]}")).options_from_args(args)


def test_every_bench_verb_has_an_options_type() -> None:
    assert set(OPTIONS) == set(BENCHES)


@pytest.mark.parametrize("verb", sorted(OPTIONS))
def test_defaults_are_the_options_defaults(verb: str) -> None:
    options = _options([verb])
    assert type(options) is OPTIONS[verb]
    assert dataclasses.is_dataclass(options)
    assert options == OPTIONS[verb]()


@pytest.mark.parametrize(("argv", "expected"), [
    (["preprocess", "--frames", "7", "--no-parity"], PreprocessBenchOptions(frames=7, parity=False)),
    (["sim", "--duration", "2.5", "--tmp", "x", "--skip-bag"],
     SimBenchOptions(duration_s=2.5, tmp_dir="x", skip_bag=True)),
    (["seg", "--models", "a.onnx", "b.onnx", "-n", "3", "--threads", "2"],
     SegBenchOptions(models=("a.onnx", "b.onnx"), calls_per_round=3, threads=2)),
    (["sync", "--source", "builtin", "--duration", "9", "--jitter-model", "symmetric"],
     SyncBenchOptions(source="builtin", duration_s=9.0, jitter_model="symmetric")),
    (["graph", "--duration", "4", "--no-segmentation", "--no-fusion", "--set", "recorder.a=1", "--set", "x.b=2"],
     GraphBenchOptions(duration_s=4.0, segmentation=False, fusion=False, overrides=("recorder.a=1", "x.b=2"))),
    (["campaign", "--workers", "1,4", "--duration", "1"], CampaignBenchOptions(workers=(1, 4), duration_s=1.0)),
    (["faults", "--quick", "--fault", "kill_thermal", "--no-isolate-drivers"],
     FaultsBenchOptions(quick=True, faults=("kill_thermal",), isolate_drivers=False)),
])
def test_flags_map_to_fields(argv: list[str], expected: object) -> None:
    assert _options(argv) == expected

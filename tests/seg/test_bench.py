"""`rgbt bench seg --json` contract (keys and sanity, never speed)."""

from __future__ import annotations

import json

import pytest

from rgbt.paths import ENGINES_DIR


@pytest.mark.slow
def test_bench_seg_json_contract(rgbt_cli):
    proc = rgbt_cli("bench", "seg", "--json", "--models", ENGINES_DIR / "sim_thermal_seg.onnx", "-n", "2",
                    "--rounds", "1")
    res = json.loads(proc.stdout)
    r = res["models"]["sim_thermal_seg"]
    for k in ("fps", "p50_ms", "p90_ms", "p99_ms", "stage_fps", "backend_fps"):
        assert isinstance(r[k], float) and r[k] > 0, k
    assert r["p50_ms"] <= r["p90_ms"] <= r["p99_ms"]
    assert set(r["tiers"]) == {"copy_in", "compute", "copy_out"} and r["tiers"]["compute"]["n"] == 2
    assert r["backend"]["providers_active"] == ["CPUExecutionProvider"]
    assert "machine" in res
    # the stage figure comes from the segmentation node's pipeline: every frame it was fed came out
    p = r["pipeline"]
    assert p["submitted"] == p["processed"] == 10 + 2 and p["errors"] == p["dropped_stale"] == 0
    assert p["prep_priority"] == "SCHED_IDLE"

"""``rgbt record --profile P --duration S --out DIR`` (the CLI contract) on a small real graph."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml


@pytest.mark.slow
@pytest.mark.ros
def test_record_cli_writes_a_bag_and_reports_it(ros_env: dict, tmp_path: Path, rgbt_cli, read_bag) -> None:
    profile = tmp_path / "small.yaml"
    profile.write_text(yaml.safe_dump({"description": "health monitor + recorder", "nodes": [
        {"name": "health", "parameters": {"period_s": 0.2, "disk_path": str(tmp_path)}},
        {"name": "recorder", "process": "health", "parameters": {
            "topics": ["/rgbt/health"], "min_free_mb": 10.0, "write_state": False}},
    ]}))
    out = tmp_path / "bags"
    proc = rgbt_cli("record", "--profile", str(profile), "--duration", "10", "--out", str(out), "--json", timeout=90)
    report = json.loads(proc.stdout)
    assert report["exit_code"] == 0 and len(report["bags"]) == 1
    manifest = report["bags"][0]
    assert manifest["start_reason"] == "always" and manifest["stop_reason"] == "shutdown"
    bag = Path(manifest["bag"])
    assert bag.parent == out.resolve()
    health = read_bag(bag)["/rgbt/health"]
    assert len(health) == manifest["topics"]["/rgbt/health"]["count"] > 3
    statuses = {s.name: {kv.key: kv.value for kv in s.values} for s in health[0][1].status}  # DiagnosticArray
    assert {"health/cpu", "health/memory", "health/disk", "health/temperatures"} <= set(statuses)
    assert 0 <= float(statuses["health/cpu"]["cpu_percent"]) <= 100  # of the whole machine
    assert float(statuses["health/disk"]["disk_free_mb"]) > 0
    assert "mem_used_percent" in statuses["health/memory"]


def test_record_cli_needs_a_recorder(tmp_path: Path, rgbt_cli) -> None:
    profile = tmp_path / "norec.yaml"
    profile.write_text(yaml.safe_dump({"nodes": [{"name": "health"}]}))
    proc = rgbt_cli("record", "--profile", str(profile), "--out", str(tmp_path / "b"), check=False)
    assert proc.returncode == 2 and "recorder" in proc.stderr

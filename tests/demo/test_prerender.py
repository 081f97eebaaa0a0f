"""``rgbt demo --prerender``: the simulated flight is rendered before the graph starts and played from
disk at the real rate (``rgbt.sim.cache``); the rendering is removed after the flight."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import run_rgbt

pytestmark = [pytest.mark.ros, pytest.mark.slow]


def test_a_prerendered_flight_is_played_and_cleaned_up(demo_env: dict, tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = run_rgbt("demo", "--duration", 3, "--prerender", "--no-vio", "--eval-frames", 10, "--out", out, "--json",
                    env=demo_env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["run"]["prerendered"] is True
    assert "rendered the simulated flight ahead" in proc.stderr
    assert "playing the pre-rendered run" in (out / "graph.log").read_text()  # the virtual stack took it
    assert not (out / "sim_cache").exists()  # removed after the flight
    # a short flight at the real rate: the recorder has the thermal camera's 60 Hz, give or take its ends
    # (arrivals bunch on a loaded 2-core host: 63.5-64.6 Hz measured over 3 s; twice the rate, or a
    # rendering that cannot keep up, falls far outside)
    full = json.loads((out / "summary.json").read_text())
    thermal = full["health"]["topics"]["/boson/thermal/image_raw"]
    assert thermal["lost"] == 0 and 50 <= thermal["rate_hz"] <= 66, thermal

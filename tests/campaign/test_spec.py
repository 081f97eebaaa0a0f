"""Campaign files: validation errors name file, key, value and expectation; jobs and their keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import run_rgbt
from rgbt.campaign.jobs import expand, path_fingerprint
from rgbt.campaign.spec import load_campaign
from rgbt.errors import ConfigError
from rgbt.paths import REPO_ROOT

SMOKE = REPO_ROOT / "campaigns" / "smoke.yaml"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return path


def test_smoke_campaign_expands_to_its_jobs() -> None:
    jobs = expand(load_campaign(SMOKE))
    assert len(jobs) == 4  # 2 synthetic inputs x ORB-SLAM3 mono x 2 runs
    assert {j.cell["input"] for j in jobs} == {"synthetic-loop-4s-seed1", "synthetic-loop-4s-seed2"}
    assert len({j.key for j in jobs}) == 4 and all(j.num_cpus == 1.0 and j.num_gpus == 0 for j in jobs)


@pytest.mark.parametrize("text, key, expected", [
    ("vio:\n  inputs: []\n", "vio.inputs", "at least 1 item"),
    ("vio:\n  inputs:\n    - synthetic: {duration_s: 2}\n  modes: [stereo]\n", "vio.modes.0",
     "'mono' or 'mono-inertial'"),
    ("vio:\n  inputs:\n    - synthetic: {duration_s: 2}\n  runs: 0\n", "vio.runs", "greater than or equal to 1"),
    ("vio:\n  inputs:\n    - synthetic: {duration_s: 2}\n      bag: {path: x}\n", "vio.inputs.0", "exactly one of"),
    ("vio:\n  inputs:\n    - synthetic: {duration_s: 2, speed: 3}\n", "vio.inputs.0.synthetic.speed", "unknown key"),
    ("name: x\n", "<root>", "exactly one of vio"),
    ("vio:\n  inputs:\n    - bag: {path: missing_bag}\n", "vio.inputs.0.bag.path", "an existing path"),
    ("vio:\n  inputs:\n    - synthetic: {duration_s: 2}\n  modalities: [color]\n", "vio.modalities",
     "thermal only"),
    ("seg:\n  models: [nope.onnx]\n  datasets: [{path: .}]\n", "seg.models.0", "an existing path"),
    ("seg:\n  models: []\n  datasets: [{path: .}]\n  backends: [cuda]\n", "seg.models", "at least 1 item"),
])
def test_bad_campaign_names_key_and_expectation(tmp_path: Path, text: str, key: str, expected: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_campaign(path)
    assert info.value.path == str(path) and info.value.key == key, str(info.value)
    assert expected in info.value.expected, str(info.value)


def test_bad_campaign_cli_exits_2_one_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "vio:\n  inputs:\n    - synthetic: {duration_s: -1}\n")
    proc = run_rgbt("campaign", "run", path, "--out", tmp_path / "out", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"rgbt campaign: error: {path}: vio.inputs.0.synthetic.duration_s")


def test_job_keys_follow_inputs_options_and_versions(tmp_path: Path) -> None:
    bag = tmp_path / "bag"
    bag.mkdir()
    (bag / "a.mcap").write_bytes(b"x" * 100)
    text = "vio:\n  inputs:\n    - bag: {path: bag}\n  runs: 2\n"
    first = [j.key for j in expand(load_campaign(_write(tmp_path, text)))]
    assert first == [j.key for j in expand(load_campaign(_write(tmp_path, text)))]  # stable
    assert len(set(first)) == 2  # one per run
    other_rate = text.replace("runs: 2", "runs: 2\n  rate_hz: 10")
    changed = [j.key for j in expand(load_campaign(_write(tmp_path, other_rate)))]
    assert not set(changed) & set(first)  # an option is part of the key
    fp = path_fingerprint(bag)
    (bag / "a.mcap").write_bytes(b"y" * 101)  # the input's content changed: new fingerprint, new keys
    assert path_fingerprint(bag) != fp
    assert not set(j.key for j in expand(load_campaign(_write(tmp_path, text)))) & set(first)


def test_ray_executor_without_ray_names_the_extra(tmp_path: Path) -> None:
    """Ray hidden (a package ``ray`` on the path that fails to import, as an absent one does): exit 3."""
    hide = tmp_path / "hide"
    (hide / "ray").mkdir(parents=True)
    (hide / "ray" / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'ray'\", name='ray')\n")
    path = _write(tmp_path, "seg:\n  models: [m.onnx]\n  datasets: [{path: .}]\n")
    (tmp_path / "m.onnx").write_bytes(b"")
    proc = run_rgbt("campaign", "run", path, "--executor", "ray", "--out", tmp_path / "o", check=False,
                    env={"PYTHONPATH": f"{REPO_ROOT}:{hide}"})
    assert proc.returncode == 3, proc.stderr
    assert "'scale' extra" in proc.stderr and "Traceback" not in proc.stderr


def test_local_ray_outside_a_private_namespace_is_refused(tmp_path: Path) -> None:
    """A local Ray instance would bind the machine's interfaces: refused, before Ray is started."""
    import psutil

    pytest.importorskip("ray")
    if set(psutil.net_if_addrs()) <= {"lo"}:
        pytest.skip("this process already runs in a private network namespace (loopback only)")
    from rgbt.campaign.executors import require_private_network
    from rgbt.errors import RgbtError

    with pytest.raises(RgbtError, match="private network namespace"):
        require_private_network()

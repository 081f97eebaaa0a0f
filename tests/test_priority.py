"""Process priority across process groups (``rgbt.ros.priority``): with autogroups, a process that leads
its own session (as ``rgbt up`` starts each group) carries its nice value into its autogroup's weight;
one that shares its session leaves the autogroup alone. Real child processes, no rclpy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rgbt.paths import REPO_ROOT

AUTOGROUP = Path("/proc/self/autogroup")
# The child prints what it applied and what its /proc/self/autogroup then reads, as JSON: the file is
# empty for a session in the kernel's default group (as on the CI machine).
CHILD = ("import json, sys; from rgbt.ros.priority import set_process_nice; "
         "applied = set_process_nice(int(sys.argv[1])); "
         "print(json.dumps([applied, open('/proc/self/autogroup').read().strip()]))")


def _child(nice: int, new_session: bool) -> tuple[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    out = subprocess.run([sys.executable, "-c", CHILD, str(nice)], env=env, capture_output=True, text=True,
                         timeout=60, start_new_session=new_session, check=True)
    applied, autogroup = json.loads(out.stdout)
    return applied, autogroup


@pytest.mark.skipif(not AUTOGROUP.exists() or Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip()
                    != "1", reason="this kernel has no autogroups enabled (CONFIG_SCHED_AUTOGROUP, "
                                   "kernel.sched_autogroup_enabled): nice values already compare across processes")
def test_a_session_leader_carries_its_nice_into_its_autogroup_and_a_member_does_not() -> None:
    applied, autogroup = _child(7, new_session=True)
    assert applied == "nice 7, autogroup nice 7"
    assert autogroup.endswith("nice 7")
    ours = AUTOGROUP.read_text().strip()
    applied, autogroup = _child(7, new_session=False)  # shares this test's session: leaves its weight
    assert applied == "nice 7"
    assert autogroup == ours


def test_set_autogroup_nice_reports_what_it_could_not_do(tmp_path: Path) -> None:
    from rgbt.ros.priority import set_autogroup_nice

    assert set_autogroup_nice(5, str(tmp_path / "missing")) == ""  # no autogroups: nothing to do
    if os.getsid(0) == os.getpid():
        pytest.skip("the test runner leads its session; the member case needs it not to")
    target = tmp_path / "autogroup"
    target.write_text("untouched")
    assert set_autogroup_nice(5, str(target)) == ""  # a session member never writes
    assert target.read_text() == "untouched"

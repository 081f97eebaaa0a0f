"""Process priority across process groups (``rgbt.graph.priority``): with autogroups, a process that leads
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
CHILD = ("import json, sys; from rgbt.graph.priority import set_process_nice; "
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
    from rgbt.graph.priority import set_autogroup_nice

    assert set_autogroup_nice(5, str(tmp_path / "missing")) == ""  # no autogroups: nothing to do
    if os.getsid(0) == os.getpid():
        pytest.skip("the test runner leads its session; the member case needs it not to")
    target = tmp_path / "autogroup"
    target.write_text("untouched")
    assert set_autogroup_nice(5, str(target)) == ""  # a session member never writes
    assert target.read_text() == "untouched"


# The child starts a thread before and one after asking for real time, lowers a third one as a mailbox
# worker does, and prints each thread's policy and priority.
RT_CHILD = """
import json, os, resource, sys, threading
from rgbt.graph.priority import realtime_priority, set_process_realtime
from rgbt.seg.pipeline import lower_thread_priority
if sys.argv[1] == "refused":  # no rtprio limit and no CAP_SYS_NICE: root gives up its rights first
    resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))
    if os.geteuid() == 0:
        os.setuid(65534)
seen, go = {}, threading.Event()
def look(name, lower=None):
    go.wait()
    applied = lower_thread_priority(lower) if lower else None
    seen[name] = [os.sched_getscheduler(0) == os.SCHED_RR, realtime_priority(), applied,
                  os.getpriority(os.PRIO_PROCESS, threading.get_native_id())]
before = threading.Thread(target=look, args=("before",)); before.start()
applied = set_process_realtime(7)
after = threading.Thread(target=look, args=("after",)); after.start()
worker = threading.Thread(target=look, args=("worker", "low")); worker.start()
go.set()
for t in (before, after, worker): t.join()
look("main")
print(json.dumps([applied, seen]))
"""


def _rt_child(mode: str) -> tuple[str, dict]:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    out = subprocess.run([sys.executable, "-c", RT_CHILD, mode], env=env, capture_output=True, text=True,
                         timeout=60, check=True)
    applied, seen = json.loads(out.stdout)
    return applied, seen


def test_realtime_reaches_every_thread_and_a_lowered_worker_leaves_it() -> None:
    import resource

    from rgbt.doctor import has_cap_sys_nice

    soft, _ = resource.getrlimit(resource.RLIMIT_RTPRIO)
    if not (has_cap_sys_nice() or soft == resource.RLIM_INFINITY or soft >= 7):
        pytest.skip("this runner may not use real-time priorities (no CAP_SYS_NICE, RLIMIT_RTPRIO < 7)")
    applied, seen = _rt_child("granted")
    if "not permitted" in applied:  # e.g. a container's cgroup without a real-time budget
        pytest.skip(f"real time refused here: {applied}")
    assert applied == "SCHED_RR 7"
    for name in ("before", "after", "main"):  # a thread started before it and one started after
        assert seen[name][:2] == [True, 7], (name, seen[name])
    rr, prio, lowered, nice = seen["worker"]
    assert (rr, prio, lowered, nice) == (False, 0, "nice 19", 19)


def test_realtime_refused_changes_nothing_and_says_how_to_allow_it() -> None:
    from rgbt.doctor import has_cap_sys_nice

    if os.geteuid() != 0 and has_cap_sys_nice():
        pytest.skip("a non-root runner with CAP_SYS_NICE cannot give it up here")
    applied, seen = _rt_child("refused")
    assert "SCHED_RR 7 not permitted" in applied and "LimitRTPRIO=7" in applied
    assert all(not rr and prio == 0 for rr, prio, *_ in seen.values()), seen

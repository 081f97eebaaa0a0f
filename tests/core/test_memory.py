"""rgbt.memory: a reserved heap serves later frame-sized allocations without page faults.

Each case runs in a fresh interpreter (the glibc settings are process-wide and cannot be undone)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")

PROBE = r"""
import json, resource, sys
from rgbt.memory import heap_reserved, reserve_heap, single_arena, tune_allocator

def anon_kb():
    return int(next(l for l in open("/proc/self/status") if l.startswith("RssAnon")).split()[1])

reserve = int(sys.argv[1])
out = {"single_arena": single_arena(), "tuned": tune_allocator()}
before = anon_kb()
out["reserved"] = reserve_heap(reserve << 20) if reserve else 0
out["heap_reserved"] = heap_reserved()
out["anon_reserve_mb"] = (anon_kb() - before) / 1024
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
# a recorder falling behind: 40 frames of 1.7 MB alive at once (68 MB), twice
for _ in range(2):
    frames = [bytearray(1_728_000) for _ in range(40)]
    del frames
out["faults"] = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
print(json.dumps(out))
"""


def probe(reserve_mb: int) -> dict:
    r = subprocess.run([sys.executable, "-c", PROBE, str(reserve_mb)], capture_output=True, text=True, timeout=120,
                       check=True)
    return json.loads(r.stdout)


def test_reserved_heap_is_kept_and_reused_without_page_faults():
    cold, warm = probe(0), probe(128)
    assert warm["tuned"] and warm["single_arena"]
    assert warm["reserved"] >= 128 << 20
    assert (cold["heap_reserved"], warm["heap_reserved"]) == (0, warm["reserved"])  # what a warm spare reports
    assert warm["anon_reserve_mb"] >= 120  # touched, and still resident after being freed
    # 68 MB of fresh frames: ~17 k pages to fault in without the reservation, next to none with it
    assert cold["faults"] > 10_000
    assert warm["faults"] < cold["faults"] / 10


def test_nothing_to_reserve():
    from rgbt.memory import reserve_heap

    assert reserve_heap(0) == 0


def test_a_paced_reservation_sleeps_after_each_chunk_and_reserves_as_much():
    """``pause_s`` (a take-over recorder's reservation beside live traffic): one sleep per chunk."""
    code = ("import json, time; from rgbt.memory import reserve_heap; t0 = time.monotonic(); "
            "n = reserve_heap(32 << 20, chunk=8 << 20, pause_s=0.1); print(json.dumps([n, time.monotonic() - t0]))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    reserved, took_s = json.loads(r.stdout)
    assert reserved == 32 << 20
    assert took_s >= 4 * 0.1  # 4 chunks, a pause after each


def test_a_stopped_reservation_ends_after_the_chunk_at_hand_and_keeps_it():
    """``stop`` (a warm spare taken over while it reserves): what was touched is kept and reported."""
    code = ("import json, threading; from rgbt.memory import heap_reserved, reserve_heap; stop = threading.Event(); "
            "stop.set(); n = reserve_heap(64 << 20, chunk=8 << 20, stop=stop); print(json.dumps([n, heap_reserved()]))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(r.stdout) == [8 << 20, 8 << 20]

"""Pre-rendered runs (``rgbt.sim.cache``): what is played is exactly what the simulator renders."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rgbt.errors import ConfigError
from rgbt.sim import SimOptions, SimStack
from rgbt.sim.cache import FRAMES_FILE, KEY_FILE, SAMPLES_FILE, open_cache, render_once, write_cache

OPTIONS = SimOptions(trajectory="hover", duration_s=0.4, cameras=["thermal", "color"], drop_prob=0.2,
                     world_size_px=256, seed=3)


def _same(a, b) -> bool:  # type: ignore[no-untyped-def]
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    if hasattr(a, "__dict__"):
        return type(a) is type(b) and all(_same(v, getattr(b, k)) for k, v in vars(a).items())
    return bool(a == b)


@pytest.mark.slow
def test_a_cache_plays_every_sample_of_the_run_bit_for_bit(tmp_path: Path) -> None:
    rendered = list(SimStack(OPTIONS).samples())
    cache, why = open_cache(write_cache(OPTIONS, tmp_path / "run"), OPTIONS)
    assert cache is not None, why
    played = list(cache.samples())
    assert len(played) == len(rendered) == len(cache)
    assert {s.kind for s in played} >= {"thermal", "color", "imu", "gnss", "trigger", "state"}
    assert any(s.dropped for s in played)  # dropped frames kept (flagged), as the simulator yields them
    for a, b in zip(rendered, played):
        assert (a.kind, a.t_ns, a.t_host_ns, a.seq, a.ffc, a.dropped, a.meta) == \
               (b.kind, b.t_ns, b.t_host_ns, b.seq, b.ffc, b.dropped, b.meta)
        assert _same(a.data, b.data), (a.kind, a.seq)
    frame = next(s.data for s in played if s.kind == "thermal")
    assert not frame.flags.writeable  # the memory-mapped file is read only
    # some kinds only (a virtual stack's `kinds`): the same samples as the simulator's of those kinds
    some = list(cache.samples(["thermal", "imu"]))
    assert [(s.kind, s.t_host_ns) for s in some] == [(s.kind, s.t_host_ns) for s in
                                                     SimStack(OPTIONS).samples(["thermal", "imu"])]


def test_a_cache_is_only_played_for_the_options_it_was_rendered_for(tmp_path: Path) -> None:
    directory = render_once(OPTIONS, tmp_path)
    assert open_cache(directory, OPTIONS)[0] is not None
    for other in (OPTIONS.model_copy(update={"seed": 4}), OPTIONS.model_copy(update={"cameras": ["thermal"]})):
        cache, why = open_cache(directory, other)
        assert cache is None and "other simulator options" in why
        assert render_once(other, tmp_path) != directory  # its own folder
    stamp = (directory / FRAMES_FILE).stat().st_mtime_ns
    assert render_once(OPTIONS, tmp_path) == directory
    assert (directory / FRAMES_FILE).stat().st_mtime_ns == stamp  # present: not rendered again


def test_an_incomplete_or_damaged_cache_is_refused_with_the_reason(tmp_path: Path) -> None:
    missing, why = open_cache(tmp_path / "nothing", OPTIONS)
    assert missing is None and KEY_FILE in why
    directory = write_cache(OPTIONS, tmp_path / "run")
    (directory / SAMPLES_FILE).write_bytes(b"not a pickle")
    with pytest.raises(ConfigError, match="sim_cache"):
        open_cache(directory, OPTIONS)
    (directory / KEY_FILE).write_text("{")
    damaged, why = open_cache(directory, OPTIONS)
    assert damaged is None and "unreadable" in why

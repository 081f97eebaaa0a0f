"""Fixtures of the VIO tests: one small DBoW2 vocabulary per session (built locally, never committed)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def small_vocab(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """k=10, L=6 over 40 synthetic frames (~40k descriptors, a few seconds). L >= 5 matters:
    ORB-SLAM3 groups features 4 levels above the words; a shallower tree degrades its matching."""
    from rgbt.vio.vocab import build_vocabulary, synthetic_training_frames, training_descriptors

    descs, ids = training_descriptors(synthetic_training_frames(40, seed=7), features=1000)
    vocab = build_vocabulary(descs, ids, k=10, L=6, seed=7)
    return vocab.save(tmp_path_factory.mktemp("vocab") / "small_orbvoc.txt")

"""DBoW2 vocabulary: clustering primitives, text format rules, ORB-SLAM3 loads it."""

from __future__ import annotations

import numpy as np
import pytest

from rgbt.errors import RgbtError
from rgbt.vio.vocab import build_vocabulary, hamming, load_vocabulary_text, majority


def test_hamming_and_majority_match_naive():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (7, 32), dtype=np.uint8)
    b = rng.integers(0, 256, (5, 32), dtype=np.uint8)
    naive = np.array([[sum(bin(x ^ y).count("1") for x, y in zip(r, s)) for s in b] for r in a])
    assert np.array_equal(hamming(a, b), naive)
    bits = np.unpackbits(a, axis=1)
    expected = np.packbits(bits.sum(axis=0) * 2 > len(a))
    assert np.array_equal(majority(a), expected)
    assert np.array_equal(majority(a[:1]), a[0])


def test_tree_structure_and_text_format(tmp_path):
    rng = np.random.default_rng(1)
    centres = rng.integers(0, 256, (30, 32), dtype=np.uint8)
    descs = np.repeat(centres, 40, axis=0)
    flips = rng.random(descs.shape) < 0.02  # noisy copies of 30 prototypes
    descs = descs ^ (flips * rng.integers(1, 256, descs.shape)).astype(np.uint8)
    ids = np.arange(len(descs)) % 12
    vocab = build_vocabulary(descs, ids, k=5, L=3, seed=0)
    path = vocab.save(tmp_path / "v.txt")
    text = path.read_text()
    assert not text.endswith("\n")
    assert text.split("\n", 1)[0].split() == ["5", "3", "0", "0"]
    back = load_vocabulary_text(path)
    assert len(back.parent) == len(vocab.parent) and back.n_words == vocab.n_words
    assert all(0 <= p < i for i, p in enumerate(back.parent) if i)  # parents precede children
    children = np.bincount(back.parent[1:], minlength=len(back.parent))
    assert children.max() <= 5
    assert all(children[i] == 0 for i in range(1, len(back.parent)) if back.is_leaf[i])
    assert all(children[i] > 0 for i in range(1, len(back.parent)) if not back.is_leaf[i])
    w = np.array(back.weight)
    leaves = np.array(back.is_leaf)
    assert np.all(w[leaves] >= 0) and np.all(w[leaves] <= np.log(12) + 1e-9) and np.all(w[~leaves] == 0)
    # depth never exceeds L
    depth = [0] * len(back.parent)
    for i in range(1, len(back.parent)):
        depth[i] = depth[back.parent[i]] + 1
    assert max(depth) <= 3


def test_trailing_newline_rejected(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("10 6  0 0\n0 1 " + " ".join(["0"] * 32) + " 0.5\n")
    with pytest.raises(RgbtError, match="newline"):
        load_vocabulary_text(bad)


def test_bad_parameters():
    with pytest.raises(RgbtError):
        build_vocabulary(np.zeros((3, 32), np.uint8), np.zeros(3), k=10, L=6)
    with pytest.raises(RgbtError):
        build_vocabulary(np.zeros((30, 32), np.uint8), np.zeros(30), k=10, L=11)


@pytest.mark.slow
def test_orbslam3_loads_our_vocabulary(small_vocab, tmp_path):
    pyorbslam3 = pytest.importorskip("pyorbslam3")
    from rgbt.vio.orbslam3 import OrbSlam3Options, native_stdout_to, write_settings
    from rgbt.vio.sequence import synthetic_sequence

    seq = synthetic_sequence(1.0)
    settings = write_settings(seq, OrbSlam3Options(), tmp_path / "s.yaml")
    with native_stdout_to(tmp_path / "log.txt"):
        slam = pyorbslam3.Slam(str(small_vocab), str(settings), pyorbslam3.Sensor.MONOCULAR)
        slam.shutdown()
    assert "Vocabulary loaded" in (tmp_path / "log.txt").read_text()

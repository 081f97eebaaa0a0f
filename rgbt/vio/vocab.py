"""DBoW2 vocabulary builder: hierarchical k-majority clustering of binary ORB descriptors.

Writes the DBoW2 text format ORB-SLAM3 loads (``TemplatedVocabulary::loadFromTextFile``):

    k L scoring weighting                         (scoring 0 = L1, weighting 0 = TF-IDF)
    parent is_leaf d0 d1 ... d31 weight           (one line per node except the root, parents first)

with no newline after the last node line (ORB-SLAM3's reader turns an empty last line into a bogus
node). Node weights: IDF ``log(N_images / n_images_with_word)`` on leaves, 0 on inner nodes.

Clustering follows DBoW2's ``HKmeansStep``: at each node, k-means++ seeding (Hamming distance),
assignment by Hamming distance, centres by bitwise majority; a node with <= k descriptors gets one
child per descriptor; recursion stops at depth L.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import cv2
import numpy as np

from rgbt.errors import RgbtError
from rgbt.fileio import write_atomic
from rgbt.paths import cache_dir
from rgbt.progress import Progress
from rgbt.vio.synthetic import PlaneScene, ground_texture


@dataclass
class VocabOptions:
    """``k`` branching, ``L`` depth, ``frames`` synthetic training frames, ``features`` ORB per frame,
    ``max_iters`` k-majority iterations per node, ``seed``."""

    k: int = 10
    L: int = 6
    frames: int = 300
    features: int = 1000
    max_iters: int = 10
    seed: int = 0

    def key(self) -> str:
        text = " ".join(f"{k}={v}" for k, v in asdict(self).items()) + " v1"
        return hashlib.sha1(text.encode()).hexdigest()[:10]

    def describe(self) -> str:
        return " ".join(f"{k}={v}" for k, v in asdict(self).items())


def hamming(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise Hamming distances between uint8 descriptor rows: (N, 32) x (M, 32) -> (N, M)."""
    return np.bitwise_count(a[:, None, :] ^ b[None, :, :]).sum(axis=2, dtype=np.int32)


def majority(descs: np.ndarray) -> np.ndarray:
    """Bitwise majority of uint8 descriptor rows (a bit is set when more than half the rows have it)."""
    bits = np.unpackbits(descs, axis=1)
    return np.packbits(bits.sum(axis=0, dtype=np.int64) * 2 > len(descs))


def _kmeanspp(descs: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    centres = [descs[rng.integers(len(descs))]]
    d = hamming(descs, centres[0][None])[:, 0].astype(np.float64)
    for _ in range(1, k):
        w = d ** 2
        if w.sum() == 0:
            break
        centres.append(descs[rng.choice(len(descs), p=w / w.sum())])
        d = np.minimum(d, hamming(descs, centres[-1][None])[:, 0])
    return np.stack(centres)


def _kmajority(descs: np.ndarray, k: int, rng: np.random.Generator, max_iters: int) -> list[np.ndarray]:
    """Cluster ``descs`` into at most k groups; returns the index arrays of non-empty clusters."""
    centres = _kmeanspp(descs, k, rng)
    labels = None
    for _ in range(max_iters):
        new = np.argmin(hamming(descs, centres), axis=1)
        if labels is not None and np.array_equal(new, labels):
            break
        labels = new
        centres = np.stack([majority(descs[labels == c]) if np.any(labels == c) else centres[c]
                            for c in range(len(centres))])
    return [np.flatnonzero(labels == c) for c in range(len(centres)) if np.any(labels == c)]


@dataclass
class Vocabulary:
    """A built tree: ``parent[i]``, ``descriptor[i]`` (32 bytes), ``is_leaf[i]``, ``weight[i]`` per node
    (node 0 the root)."""

    k: int
    L: int
    parent: list[int]
    descriptor: list[np.ndarray]
    is_leaf: list[bool]
    weight: list[float]

    @property
    def n_words(self) -> int:
        return sum(self.is_leaf)

    def to_text(self) -> str:
        lines = [f"{self.k} {self.L}  0 0"]
        for i in range(1, len(self.parent)):
            d = " ".join(str(int(b)) for b in self.descriptor[i])
            lines.append(f"{self.parent[i]} {int(self.is_leaf[i])} {d} {self.weight[i]:.10g}")
        return "\n".join(lines)  # no trailing newline: ORB-SLAM3 would read an extra empty node

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        write_atomic(path, self.to_text())
        return path


def build_vocabulary(descriptors: np.ndarray, image_ids: np.ndarray, k: int = 10, L: int = 6,
                     max_iters: int = 10, seed: int = 0,
                     progress: Callable[[int], None] | None = None) -> Vocabulary:
    """Hierarchical k-majority tree over ``descriptors`` (uint8 N x 32); ``image_ids`` (N) for IDF."""
    descriptors = np.ascontiguousarray(descriptors, dtype=np.uint8)
    if descriptors.ndim != 2 or descriptors.shape[1] != 32 or len(descriptors) < k:
        raise RgbtError(f"vocabulary needs >= {k} ORB descriptors of 32 bytes, got shape {descriptors.shape}")
    if not (2 <= k <= 20 and 1 <= L <= 10):
        raise RgbtError(f"vocabulary k={k}, L={L}: ORB-SLAM3 accepts 2 <= k <= 20 and 1 <= L <= 10")
    rng = np.random.default_rng(seed)
    parent, desc, leaf = [-1], [np.zeros(32, np.uint8)], [False]
    members: list[np.ndarray] = [np.arange(0)]  # the root's members are never read
    stack: list[tuple[int, np.ndarray, int]] = [(0, np.arange(len(descriptors)), 1)]
    while stack:  # depth-first like DBoW2; ids in creation order so parents precede children
        node, idx, level = stack.pop()
        sub = descriptors[idx]
        groups = [np.array([i]) for i in range(len(sub))] if len(sub) <= k else _kmajority(sub, k, rng, max_iters)
        children = []
        for g in groups:
            cid = len(parent)
            parent.append(node)
            desc.append(majority(sub[g]) if len(g) > 1 else sub[g[0]].copy())
            leaf.append(True)
            members.append(idx[g])
            children.append(cid)
        leaf[node] = False
        if progress:
            progress(len(children))
        if level < L:
            for cid in reversed(children):
                if len(members[cid]) > 1:  # a single descriptor stays a leaf (DBoW2 chains it down)
                    stack.append((cid, members[cid], level + 1))
    n_images = len(np.unique(image_ids))
    weight = [0.0] * len(parent)
    for i in range(1, len(parent)):
        if leaf[i]:
            n_i = len(np.unique(image_ids[members[i]]))
            weight[i] = math.log(n_images / n_i) if n_i else 0.0
    return Vocabulary(k, L, parent, desc, leaf, weight)


def load_vocabulary_text(path: str | Path) -> Vocabulary:
    """Read a DBoW2 text vocabulary back (the same rules as ORB-SLAM3's reader, stricter)."""
    text = Path(path).read_text()
    if text.endswith("\n"):
        raise RgbtError(f"{path}: ends with a newline (ORB-SLAM3 would read an empty extra node)")
    lines = text.split("\n")
    k, L, scoring, weighting = (int(x) for x in lines[0].split())
    parent, desc, leaf, weight = [-1], [np.zeros(32, np.uint8)], [False], [0.0]
    for n, line in enumerate(lines[1:], start=1):
        f = line.split()
        if len(f) != 35:
            raise RgbtError(f"{path}: node line {n} has {len(f)} fields, expected 35")
        p = int(f[0])
        if not 0 <= p < n:
            raise RgbtError(f"{path}: node {n} has parent {p}, expected an earlier node")
        parent.append(p)
        leaf.append(bool(int(f[1])))
        desc.append(np.array([int(x) for x in f[2:34]], np.uint8))
        weight.append(float(f[34]))
    return Vocabulary(k, L, parent, desc, leaf, weight)


def training_descriptors(frames: Iterable[np.ndarray], features: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    """ORB descriptors (OpenCV, ORB-SLAM-like pyramid: 8 levels, factor 1.2) of uint8 frames, with the
    frame index of each row."""
    orb = cv2.ORB.create(nfeatures=features, scaleFactor=1.2, nlevels=8, edgeThreshold=19, fastThreshold=12)
    out, ids = [], []
    for i, frame in enumerate(frames):
        _, d = orb.detectAndCompute(frame, None)
        if d is not None and len(d):
            out.append(d)
            ids.append(np.full(len(d), i))
    if not out:
        raise RgbtError("no ORB features found in the training frames")
    return np.concatenate(out), np.concatenate(ids)


def synthetic_training_frames(n: int, seed: int = 0, width: int = 640, height: int = 512) -> Iterable[np.ndarray]:
    """SYNTHETIC uint8 views of procedural thermal and grey ground textures from varied poses."""
    rng = np.random.default_rng(seed)
    scenes = [PlaneScene(ground_texture(2048, seed + 1, thermal=True), 0.08),
              PlaneScene(ground_texture(2048, seed + 2, thermal=False), 0.08)]
    K = np.array([[500.0, 0, width / 2], [0, 500.0, height / 2], [0, 0, 1]])
    for i in range(n):
        scene = scenes[i % 2]
        yaw, pitch = rng.uniform(-np.pi, np.pi), np.deg2rad(rng.uniform(30, 90))
        alt = rng.uniform(15, 60)
        cz, sz, cp, sp = np.cos(yaw), np.sin(yaw), np.cos(pitch), np.sin(pitch)
        fwd = np.array([cz * cp, sz * cp, -sp])
        right = np.array([sz, -cz, 0.0])
        down = np.cross(fwd, right)
        T = np.eye(4)
        T[:3, :3] = np.c_[right, down, fwd]
        T[:3, 3] = [rng.uniform(-40, 40), rng.uniform(-40, 40), alt]
        img = scene.render(K, T, width, height)
        if img.dtype == np.uint16:
            lo, hi = np.percentile(img, [5, 95])
            img = np.clip((img.astype(np.float32) - lo) / max(hi - lo, 1.0) * 255, 0, 255).astype(np.uint8)
        yield img


def vocabulary_file(opts: VocabOptions) -> Path:
    """Where the vocabulary of ``opts`` is cached (``rgbt.paths.cache_dir()/vocab``)."""
    d = cache_dir() / "vocab"
    d.mkdir(parents=True, exist_ok=True)
    return d / f"orbvoc_k{opts.k}_L{opts.L}_{opts.key()}.txt"


def ensure_vocabulary(opts: VocabOptions | None = None, force: bool = False,
                      progress: Progress | None = None) -> Path:
    """Build (or reuse from the cache) the vocabulary for ``opts``; returns its path. ``progress`` is
    told of the frames whose features are extracted and of the tree's clustering."""
    opts = opts or VocabOptions()
    path = vocabulary_file(opts)
    if path.is_file() and not force:
        return path
    frames = synthetic_training_frames(opts.frames, seed=opts.seed)
    if progress is None:
        descs, ids = training_descriptors(frames, opts.features)
        vocab = build_vocabulary(descs, ids, opts.k, opts.L, opts.max_iters, opts.seed)
        return vocab.save(path)

    def _frames():  # type: ignore[no-untyped-def]
        for i, f in enumerate(frames):
            yield f
            progress("ORB features", i + 1, opts.frames)

    descs, ids = training_descriptors(_frames(), opts.features)
    task, done = f"k-majority tree ({len(descs)} descriptors)", [0]

    def _clustered(n: int) -> None:
        done[0] += n
        progress(task, done[0], None)

    vocab = build_vocabulary(descs, ids, opts.k, opts.L, opts.max_iters, opts.seed, progress=_clustered)
    return vocab.save(path)


def build_report(opts: VocabOptions, force: bool = False, progress: Progress | None = None) -> dict:
    t0 = time.perf_counter()
    path = ensure_vocabulary(opts, force=force, progress=progress)
    elapsed = time.perf_counter() - t0
    v = load_vocabulary_text(path)
    return {"path": str(path), "k": v.k, "L": v.L, "nodes": len(v.parent) - 1, "words": v.n_words,
            "seconds": elapsed, "options": asdict(opts), "synthetic_training_data": True}

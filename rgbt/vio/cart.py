"""CART's layout for VIO: a ROS 1 bag plus its ground-truth file, clipped as CART's table says.

CART (Caltech Aerial RGB-Thermal) ships ROS 1 bags whose topics carry the names of its VINS-Fusion
configs (:data:`rgbt.bag.renames.CART_ROS1_NAMES`), and for each bag a ground-truth file in TUM format
with positions only (identity quaternions, stamps in the bag's header clock, ``%.8f`` seconds) in a
``ground_truth/`` folder whose ``SEQUENCES.md`` gives each bag's ``bag_start`` / ``bag_durr`` (as
``rosbag play -s START -u DURATION``; ``-1`` = to the end).

Layout read (``--format cart``; a folder is detected by its ``ground_truth/`` folder and bag)::

    DIR/NAME.bag                     (or DIR/SUBDIR/NAME.bag, as CART's 2022-12-20_CastaicLake/...)
    DIR/ground_truth/NAME.txt        (or ground_truth/*NAME.txt, as CastaicLake_2022-12-20-11-40-28.txt)
    DIR/ground_truth/SEQUENCES.md    (optional: clip window per bag)

:func:`write_cart_ros1` writes a simulated MCAP bag in that layout (SYNTHETIC, labelled in the bag's
metadata topic and a ``SYNTHETIC`` file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from rgbt.bag.convert import ConvertOptions, convert_bag
from rgbt.bag.reader import open_bag
from rgbt.bag.renames import CART_ROS1_NAMES, cart_sequences
from rgbt.errors import EvaluationError
from rgbt.eval.trajectory import load_trajectory, ns_to_seconds_str
from rgbt.vio.datasets import clip_sequence
from rgbt.vio.sequence import Sequence, bag_sequence

#: CART's ground-truth header line
CART_GT_HEADER = "# timestamp tx ty tz qx qy qz qw"


def find_cart_bag(root: Path) -> Path:
    """The one ROS 1 bag of a CART-layout folder ``root`` (in it or one level down)."""
    bags = sorted(root.glob("*.bag")) or sorted(root.glob("*/*.bag"))
    if len(bags) != 1:
        raise EvaluationError(f"{root}: {len(bags)} ROS 1 bags: expected one NAME.bag beside ground_truth/ "
                              "(for a folder of several, give each with --bag FILE --format cart)")
    return bags[0]


def cart_ground_truth(bag: Path) -> Path:
    """``ground_truth/NAME.txt`` (or ``*NAME.txt``) beside the bag or one folder up."""
    for gt_dir in (bag.parent / "ground_truth", bag.parent.parent / "ground_truth"):
        for cand in [gt_dir / f"{bag.stem}.txt", *sorted(gt_dir.glob(f"*{bag.stem}.txt"))]:
            if cand.is_file():
                return cand
    raise EvaluationError(f"{bag}: no CART ground truth: expected ground_truth/{bag.stem}.txt (TUM, positions only) "
                          "beside the bag or one folder up, or --ground-truth FILE")


def cart_clip(bag: Path) -> tuple[float, float] | None:
    """``(bag_start, bag_durr)`` of ``bag`` from ``ground_truth/SEQUENCES.md``, if listed there."""
    for gt_dir in (bag.parent / "ground_truth", bag.parent.parent / "ground_truth"):
        table = gt_dir / "SEQUENCES.md"
        if table.is_file():
            for name, window in cart_sequences(table).items():
                if name == bag.stem or name.endswith("/" + bag.stem):
                    return window
    return None


def cart_sequence(path: str | Path, *, ground_truth: str | Path | None = None, start_s: float | None = None,
                  duration_s: float | None = None, **bag_options: Any) -> Sequence:
    """The sequence of a CART ROS 1 bag (``path`` the ``.bag`` or its CART-layout folder): ground
    truth from ``ground_truth/``, clip from ``SEQUENCES.md`` unless ``start_s`` / ``duration_s`` are
    given (offsets from the bag's first message, like ``rosbag play -s -u``). ``bag_options`` go to
    :func:`rgbt.vio.sequence.bag_sequence` (stack, camera, topics, offset)."""
    path = Path(path)
    bag = find_cart_bag(path) if path.is_dir() else path
    gt = Path(ground_truth) if ground_truth else cart_ground_truth(bag)
    seq = bag_sequence(bag, ground_truth=gt, **bag_options)
    window = cart_clip(bag)
    start = start_s if start_s is not None else (window[0] if window else 0.0)
    duration = duration_s if duration_s is not None else (window[1] if window else -1.0)
    seq.meta.update(format="cart", dataset=str(path), clip_source="SEQUENCES.md" if window and start_s is None
                    and duration_s is None else "command line")
    return clip_sequence(seq, start, duration)


def write_cart_ground_truth(positions_t_ns: np.ndarray, positions: np.ndarray, path: str | Path) -> Path:
    """CART's ground-truth file: TUM, positions only, identity quaternions, ``%.8f`` seconds (``%.9f``
    where a stamp is not a whole number of 10 ns, so nothing is lost)."""
    t = np.asarray(positions_t_ns, dtype=np.int64)
    exact8 = bool(np.all(t % 10 == 0))
    lines = [CART_GT_HEADER]
    for stamp, p in zip(t, np.asarray(positions, dtype=np.float64), strict=False):
        s = ns_to_seconds_str(int(stamp))
        lines.append(f"{s[:-1] if exact8 else s} {p[0]:.8f} {p[1]:.8f} {p[2]:.8f} "
                     "0.00000000 0.00000000 0.00000000 1.00000000")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def write_cart_ros1(bag_dir: str | Path, root: str | Path, name: str | None = None) -> dict:
    """Write the MCAP bag ``bag_dir`` (``rgbt simulate`` output, ``ground_truth_imu.tum`` beside it)
    in CART's layout under ``root``: ``NAME.bag`` (ROS 1, CART topic names),
    ``ground_truth/NAME.txt`` (IMU positions, identity quaternions) and ``ground_truth/SEQUENCES.md``
    (the whole bag: ``0 | -1``). Returns a summary."""
    bag_dir, root = Path(bag_dir), Path(root)
    name = name or root.name
    root.mkdir(parents=True, exist_ok=True)
    res = convert_bag(bag_dir, root / f"{name}.bag", ConvertOptions(to="ros1", renames=dict(CART_ROS1_NAMES)))
    gt = load_trajectory(bag_dir / "ground_truth_imu.tum", "tum")
    gt_path = write_cart_ground_truth(gt.t_ns, gt.positions, root / "ground_truth" / f"{name}.txt")
    (root / "ground_truth" / "SEQUENCES.md").write_text(
        "Clip of each bag when played (rosbag play -s bag_sart -u bag_durr), as CART's table.\n\n"
        "| Bag_Name | bag_sart | bag_durr |\n| --- | --- | --- |\n" f"| {name} | 0 | -1 |\n")

    with open_bag(bag_dir) as bag:
        if bag.synthetic:
            (root / "SYNTHETIC").write_text(f"synthetic data: written by rgbt from {bag_dir.name}\n")
    return {"bag": str(root / f"{name}.bag"), "ground_truth": str(gt_path), "messages": res["messages"],
            "topics": res["topics"]}

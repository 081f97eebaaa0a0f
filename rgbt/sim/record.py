"""Write a simulated run to disk: a rosbag2 MCAP bag, the TUM ground truth and CART-layout labels.

Bag conventions (contract C3): image header stamps are the true trigger times (the restamped time),
the log time of every sensor message is its host arrival time (messages are written in log-time
order), dropped frames are absent, FFC frames are present (frozen). Ground truth
``/rgbt/sim/ground_truth/imu_pose`` (T_world_imu) is logged at the IMU times. The metadata's
``custom_data`` says ``rgbt.synthetic: "true"`` and carries the options as JSON.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
from scipy.spatial.transform import Rotation

from rgbt.bag.writer import BagWriter
from rgbt.errors import BagError
from rgbt.sim.dataset import sequence_writer, write_split_files
from rgbt.sim.messages import MessageFactory, typestore
from rgbt.sim.simstack import SimStack
from rgbt.topics import GT_TOPIC, IMU_SYNC_TOPIC, LABEL_TOPICS, TRIGGER_TOPIC, sim_topic_types

if TYPE_CHECKING:
    from rosbags.typesys.store import Typestore

    from rgbt.bag.writer import BagWriter


def open_writer(path: Path, *, compression: Literal["none", "zstd"], custom_data: dict[str, str], store: Typestore,
                fsync: bool = False) -> BagWriter:
    """A C2 :class:`rgbt.bag.writer.BagWriter` (no fsync by default: a simulated run can be redone)."""
    return BagWriter(path, compression=compression, custom_data=custom_data, typestore=store, fsync=fsync)


def tum_lines(t_ns: np.ndarray, T: np.ndarray) -> str:
    """TUM text (``t_s x y z qx qy qz qw``, seconds with 9 decimals) of poses T (N x 4 x 4)."""
    q = Rotation.from_matrix(T[:, :3, :3]).as_quat()
    lines = ["# timestamp tx ty tz qx qy qz qw (synthetic ground truth: world <- imu)"]
    for t, p, qq in zip(t_ns, T[:, :3, 3], q, strict=False):
        lines.append(f"{int(t) // 10**9}.{int(t) % 10**9:09d} {p[0]:.9f} {p[1]:.9f} {p[2]:.9f} "
                     f"{qq[0]:.9f} {qq[1]:.9f} {qq[2]:.9f} {qq[3]:.9f}")
    return "\n".join(lines) + "\n"


def custom_data_for(sim: SimStack) -> dict[str, str]:
    return {
        "rgbt.synthetic": "true",
        "rgbt.generator": "rgbt.sim",
        "rgbt.sim.options": json.dumps(sim.options.model_dump(mode="json"), sort_keys=True),
        "rgbt.sim.origin_lla": json.dumps(list(sim.origin_lla)),
    }


def write_sim_bag(
    sim: SimStack,
    out: str | Path,
    *,
    label_stride: int = 1,
    compression: Literal["none", "zstd"] = "none",
    labels_every: int = 0,
    progress: Callable[[float], None] | None = None,
) -> dict:
    """Write the run's bag to ``out`` (a new rosbag2 MCAP directory) plus ``ground_truth_imu.tum``.

    ``label_stride``: label topics carry every n-th frame's class ids (0: no label topics).
    ``labels_every``: also write every n-th thermal frame (and the colour frame of the same pulse)
    with its masks to ``out/labels/`` in CART layout, all listed in ``test.txt`` (0: none).

    Returns a summary: message counts per topic, bytes written, dropped / FFC frame counts.
    ``progress`` is called with the simulated seconds done.
    """
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise BagError(f"{out}: output directory exists and is not empty")
    if out.exists():
        out.rmdir()
    store = typestore()
    factory = MessageFactory(store, sim.stack)
    stack = sim.stack
    cams = list(sim.options.cameras)
    topics = sim_topic_types(stack, cams, labels=label_stride > 0)
    writer = open_writer(out, compression=compression, custom_data=custom_data_for(sim), store=store)
    for name, msgtype in topics.items():
        writer.add_topic(name, msgtype)
    counts = {name: 0 for name in topics}
    nbytes = 0
    dropped = {c: 0 for c in cams}
    ffc_frames = 0
    gt_t, gt_T = sim.ground_truth()
    gt_index = {int(t): i for i, t in enumerate(gt_t)}
    gt_q = Rotation.from_matrix(gt_T[:, :3, :3]).as_quat()  # vectorized once (x y z w)
    pending: list[tuple[int, int, str, str, object]] = []  # (log time, order, topic, msgtype, msg)
    order = 0

    def push(t_log: int, topic: str, msg: object) -> None:
        nonlocal order
        heapq.heappush(pending, (t_log, order, topic, topics[topic], msg))
        order += 1

    def flush(upto_ns: int | None) -> None:
        nonlocal nbytes
        while pending and (upto_ns is None or pending[0][0] <= upto_ns):
            t_log, _, topic, msgtype, msg = heapq.heappop(pending)
            raw = store.serialize_cdr(msg, msgtype)
            writer.write(topic, t_log, raw)
            counts[topic] += 1
            nbytes += len(raw)

    last_progress = sim.t_start_ns
    cart = None
    if labels_every > 0:
        cart = sequence_writer(sim, out / "labels", labels_every)  # the writer created ``out``
    try:
        for s in sim.samples():
            # every later sample arrives at or after its own true time >= s.t_ns: safe to flush
            flush(s.t_ns)
            if s.kind in cams:
                cam = stack.camera(s.kind)
                if cart is not None:
                    cart.add(s)
                if s.dropped:
                    dropped[s.kind] += 1
                    continue
                ffc_frames += int(s.ffc)
                push(s.t_host_ns, cam.topic, factory.image(s.data, s.t_ns, cam.frame_id, cam.encoding))
                if s.kind in LABEL_TOPICS and label_stride > 0 and s.seq % label_stride == 0:
                    label = s.label
                    assert label is not None  # camera samples carry their labels
                    push(s.t_host_ns, LABEL_TOPICS[s.kind], factory.image(label, s.t_ns, cam.frame_id, "mono8"))
            elif s.kind == "imu":
                push(s.t_host_ns, stack.imu.topic, factory.imu(s, stack.imu.frame_id))
                push(s.t_host_ns, IMU_SYNC_TOPIC, factory.imu_sync(s, stack.imu.frame_id))
                i = gt_index[s.t_ns]
                push(s.t_ns, GT_TOPIC, factory.pose(gt_T[i], s.t_ns, quat_xyzw=gt_q[i]))
            elif s.kind == "gnss":
                push(s.t_host_ns, stack.gnss.topic, factory.navsatfix(s, stack.gnss.frame_id, rtk=False))
            elif s.kind == "global":
                push(s.t_host_ns, stack.autopilot.global_topic, factory.navsatfix(s, "base_link", rtk=True))
            elif s.kind == "pose":
                push(s.t_host_ns, stack.autopilot.pose_topic, factory.pose(s.data.T_world_body, s.t_ns))
            elif s.kind == "state":
                push(s.t_host_ns, stack.autopilot.state_topic, factory.state(s))
            elif s.kind == "trigger":
                push(s.t_host_ns, TRIGGER_TOPIC, factory.trigger(s))
            if progress is not None and s.t_ns - last_progress > 100_000_000:
                progress((s.t_ns - sim.t_start_ns) * 1e-9)
                last_progress = s.t_ns
        flush(None)
    finally:
        writer.close()
    (out / "ground_truth_imu.tum").write_text(tum_lines(gt_t, gt_T))
    labels = None
    if cart is not None:
        write_split_files(out / "labels", {"test": [f"{cart.sequence}/{i}" for i in cart.ids]})
        labels = {"root": str(out / "labels"), "sequence": cart.sequence, "frames": len(cart.ids)}
    if progress is not None:
        progress(sim.options.duration_s)
    return {"path": str(out), "counts": counts, "bytes": nbytes, "dropped": dropped, "ffc_frames": ffc_frames,
            "labels": labels,
            "duration_s": sim.options.duration_s, "synthetic": True}

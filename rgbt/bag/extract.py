"""``rgbt bag extract``: turn recorded bags into files (images, tables, a frame index).

Output layout under ``OUT``::

    images/<camera>/<stamp_ns>.png     every frame, lossless in its native depth (thermal uint16,
                                       colour RGB, mono); ``.jpg`` for colour with ``color_format="jpg"``;
                                       compressed images are stored as recorded (``.jpg`` / ``.png``)
    images/<camera>_8bit_<mode>/...    normalized 8-bit thermal (``thermal8``: cart, vio, linear)
    topics/<topic>.csv                 every other topic, one flattened row per message (Parquet by option)
    frames.csv                         the frame index (:mod:`rgbt.bag.frameindex`)
    summary.json                       counts, bad messages, where a damaged bag stopped, throughput
    .extract-manifest.json             content hash of every written image (a rerun skips what matches)

Cameras are named after the stack's camera of the image topic (``thermal``, ``color``, ``mono``;
CART's older topic names are renamed first), the simulator's label topics ``labels_<camera>``,
any other image topic after the topic itself. A message that cannot be decoded is counted per topic
and reported; it never stops the extraction. A bag that cannot be read to its end (truncated,
damaged chunk) yields everything before the damage and ``summary["stopped"]`` says where; a bag
that cannot even be opened because its end is missing is salvaged first (whole chunks, into a
temporary copy; the input is never modified).
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import cv2
import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from rgbt.bag.frameindex import COLUMNS, FrameSources, build_index
from rgbt.bag.mcapscan import scan_mcap
from rgbt.bag.reader import BagReader, open_bag
from rgbt.bag.recover import recover_bag
from rgbt.bag.renames import CART_RENAMES, CART_ROS1_NAMES
from rgbt.bag.ros1scan import reindex_ros1
from rgbt.bag.tables import TopicTables
from rgbt.errors import BagError, ConfigError
from rgbt.fileio import write_atomic
from rgbt.image.codec import image_to_numpy
from rgbt.image.normalize import NormalizeOptions, Normalizer, TemporalNormalizer, to_uint8
from rgbt.stack import load_stack
from rgbt.stamps import stamp_to_ns
from rgbt.topics import LABEL_PREFIX, ROS1_METADATA_TOPIC, TRIGGER_TOPIC

MANIFEST = ".extract-manifest.json"
_PNG = [cv2.IMWRITE_PNG_COMPRESSION, 1]
_IMAGE_TYPES = {"sensor_msgs/msg/Image", "sensor_msgs/Image"}
_COMPRESSED_TYPES = {"sensor_msgs/msg/CompressedImage", "sensor_msgs/CompressedImage"}


class ExtractOptions(BaseModel):
    """Options of :func:`extract_bags` (topics default to the stack's)."""

    model_config = ConfigDict(extra="forbid")

    stack_path: str | None = Field(default=None, description="stack YAML (default: calib/stack.yaml)")
    thermal8: Literal["cart", "vio", "linear"] | None = Field(
        default=None, description="also write 8-bit thermal: cart (1-99 % + CLAHE), vio (temporal), linear (1-99 %)")
    color_format: Literal["png", "jpg"] = "png"
    jpeg_quality: int = Field(default=95, ge=1, le=100)
    tables: Literal["csv", "parquet"] = "csv"
    cart_renames: bool = Field(default=True, description="rename CART's older topic names to the stack's")
    gnss_topic: str | None = Field(default=None, description="NavSatFix topic (default: the stack's GNSS, "
                                                                "else the autopilot's global position)")
    pose_topic: str | None = Field(default=None, description="autopilot PoseStamped (default: the stack's)")
    trigger_topic: str = TRIGGER_TOPIC
    moving_threshold_m: float = Field(default=0.5, gt=0)
    moving_window_s: float = Field(default=2.0, gt=0)


@dataclass
class ExtractResult:
    """What :func:`extract_bags` did (``summary`` is what ``summary.json`` holds)."""

    out: Path
    rows: list[dict]
    summary: dict
    stack: Any = None
    cameras: dict[str, str] = field(default_factory=dict)  # camera -> topic


def stack_for(path: str | None) -> Any:
    return load_stack(path)


def _camera_names(stack: Any) -> dict[str, str]:
    names = {cam.topic: name for name, cam in stack.cameras.items()}
    for name in stack.cameras:
        names[f"{LABEL_PREFIX}{name}"] = f"labels_{name}"
    return names


def _topic_name(topic: str) -> str:
    return topic.strip("/").replace("/", "_") or "image"


class _Manifest:
    """Content hashes of written files (relative path -> hash), saved atomically."""

    def __init__(self, root: Path) -> None:
        self.path = root / MANIFEST
        try:
            self.hashes: dict[str, str] = json.loads(self.path.read_text()) if self.path.is_file() else {}
        except (OSError, ValueError):
            self.hashes = {}
        self.root = root
        self._dirty = 0
        self._lock = threading.Lock()

    def fresh(self, rel: str, digest: str) -> bool:
        return self.hashes.get(rel) == digest and (self.root / rel).is_file()

    def put(self, rel: str, digest: str) -> None:
        """Record a file as written (called by the writer threads once the file is in place)."""
        with self._lock:
            self.hashes[rel] = digest
            self._dirty += 1

    def save(self, every: int = 0) -> None:
        """Write the manifest (only when ``every`` or more files were added since the last save)."""
        with self._lock:
            if self._dirty < max(every, 1) and self.path.is_file():
                return
            text = json.dumps(self.hashes)
            self._dirty = 0
        write_atomic(self.path, text)


class _Writers:
    """Encodes and writes images on a thread pool (OpenCV's encoders release the GIL), at most
    ``2 x workers`` pending; a failed write is reported through ``on_error(topic, exc)``."""

    def __init__(self, on_error: Callable[[str, Exception], None], workers: int | None = None) -> None:
        self.workers = workers or max(1, min(8, os.cpu_count() or 1))
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="extract-write")
        self._pending: list[tuple[str, Any]] = []
        self._on_error = on_error

    def submit(self, topic: str, fn: Callable[..., None], *args: Any, then: Callable[[], None] | None = None) -> None:
        def run() -> None:
            fn(*args)
            if then is not None:
                then()

        self._pending.append((topic, self._pool.submit(run)))
        if len(self._pending) > 2 * self.workers:
            self._reap(len(self._pending) - self.workers)

    def _reap(self, n: int) -> None:
        done, self._pending = self._pending[:n], self._pending[n:]
        for topic, fut in done:
            exc = fut.exception()
            if exc is not None:
                self._on_error(topic, exc)

    def close(self) -> None:
        self._reap(len(self._pending))
        self._pool.shutdown()


class _Thermal8:
    """8-bit thermal by mode; one temporal normalizer per camera for ``vio``."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self._cart = Normalizer(NormalizeOptions(clahe=True))
        self._linear = Normalizer(NormalizeOptions(clahe=False))
        self._temporal: dict[str, Any] = {}
        self._new_temporal = TemporalNormalizer

    def __call__(self, camera: str, frame: np.ndarray, t_ns: int) -> np.ndarray:
        if self.mode == "vio":
            norm = self._temporal.setdefault(camera, self._new_temporal())
            return to_uint8(norm(frame, t_ns).image)
        return to_uint8((self._cart if self.mode == "cart" else self._linear)(frame))


@contextmanager
def readable_bag(path: str | Path, scratch: Path) -> Iterator[tuple[BagReader, dict | None]]:
    """Open ``path``; when its end is missing (killed recording, truncated copy), salvage its whole
    chunks into a temporary bag under ``scratch`` first. Yields ``(reader, salvage report or None)``."""
    path = Path(path)
    try:
        reader = open_bag(path)
        salvage = None
    except BagError as exc:
        reader, salvage = _salvaged(path, scratch, exc)
    try:
        yield reader, salvage
    finally:
        reader.close()


def _salvaged(path: Path, scratch: Path, exc: BagError) -> tuple[BagReader, dict]:
    scratch.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".bag" and path.is_file():
        dst = scratch / path.name
        dst.unlink(missing_ok=True)
        rep = reindex_ros1(path, dst, compress=False)
        if not rep["messages"]:
            raise exc
        size = path.stat().st_size
        return open_bag(dst), {"reason": str(exc), "kept_bytes": size - rep["bytes_dropped"], "size": size,
                               "problem": rep["problem"]}
    files = sorted(path.glob("*.mcap")) if path.is_dir() else [path] if path.suffix == ".mcap" else []
    if not files:
        raise exc

    dst = scratch / "salvaged"  # not the file's stem: recovery misbehaves when DIR/NAME.mcap has DIR == NAME
    shutil.rmtree(dst, ignore_errors=True)
    dst.mkdir(parents=True)
    scans = {}
    for f in files:
        shutil.copyfile(f, dst / f.name)  # recovery rewrites files: work on a copy, never the input
        scans[f.name] = scan_mcap(f)
    try:
        recover_bag(dst)
    except BagError as err:
        raise BagError(f"{exc}; salvaging its whole chunks failed too: {err}") from None
    broken = [s for s in scans.values() if not s.finished]
    first = broken[0] if broken else next(iter(scans.values()))
    reader = open_bag(dst)
    if not reader.message_count:
        reader.close()
        raise exc
    return reader, {"reason": str(exc), "file": first.path.name, "kept_bytes": first.complete_end,
                    "size": first.size, "problem": first.problem or "no footer (unfinished file)"}


def extract_bags(bags: Sequence[str | Path], out: str | Path, options: ExtractOptions | None = None,
                 progress: Callable[[int, int], None] | None = None) -> ExtractResult:
    """Extract every bag of ``bags`` (the parts of one flight) into ``out`` (see the module docstring).

    ``progress(done, total)`` is called with messages handled and the bags' message total.
    Raises :class:`BagError` when no bag can be read at all.
    """
    o = options or ExtractOptions()
    out = Path(out)
    stack = stack_for(o.stack_path)
    names = _camera_names(stack)
    gnss_topics = [o.gnss_topic] if o.gnss_topic else [stack.gnss.topic, stack.autopilot.global_topic]
    pose_topic = o.pose_topic or stack.autopilot.pose_topic
    # CART's older names and its ROS 1 layout's (/eo/color/image_color ...) -> the stack's topics
    renames = {**CART_RENAMES, **{v: k for k, v in CART_ROS1_NAMES.items()}} if o.cart_renames else {}
    out.mkdir(parents=True, exist_ok=True)
    manifest = _Manifest(out)
    tables = TopicTables(out / "topics", o.tables)
    thermal8 = _Thermal8(o.thermal8) if o.thermal8 else None
    src = FrameSources()
    gnss_by_topic: dict[str, list] = {t: [] for t in gnss_topics}
    counts: dict[str, int] = {}
    written = skipped = 0
    bad: dict[str, int] = {}
    bad_examples: list[str] = []
    stopped: list[dict] = []
    salvaged: list[dict] = []
    bytes_read = 0
    per_bag: list[dict] = []
    t0 = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix=".salvage-", dir=out))
    done = 0

    def count_bad(topic: str, exc: Exception, t_ns: int | None = None) -> None:
        bad[topic] = bad.get(topic, 0) + 1
        if len(bad_examples) < 5:
            bad_examples.append(f"{topic}" + (f" @ {t_ns}" if t_ns is not None else "") + f": {exc}")

    writers = _Writers(count_bad)
    try:
        with _ExitStackOf(bags, scratch) as opened:
            total = sum(r.message_count for r, _ in opened)
            for path, (reader, salvage) in zip(bags, opened, strict=False):
                if salvage:
                    salvaged.append({"bag": str(path), **salvage})
                n_bag = 0
                last_t = None
                try:
                    for rec in reader.messages(renames=renames):
                        n_bag += 1
                        done += 1
                        last_t = rec.t_ns
                        bytes_read += len(rec.raw)
                        try:
                            w = _handle(rec, o, names, src, tables, manifest, out, thermal8, counts, gnss_by_topic,
                                        pose_topic, writers)
                            written += w == 1
                            skipped += w == 2
                        except Exception as exc:  # noqa: BLE001 - one bad message never stops the extraction
                            count_bad(rec.topic, exc, rec.t_ns)
                        if done % 50 == 0:
                            manifest.save(every=500)
                            if progress is not None:
                                progress(done, total)
                except BagError as exc:
                    stopped.append({"bag": str(path), "after_messages": n_bag, "last_log_ns": last_t,
                                    "reason": str(exc)})
                per_bag.append({"bag": str(path), "messages": n_bag, "kind": reader.kind, "storage": reader.storage,
                                "synthetic": reader.synthetic, "metadata": dict(reader.metadata)})
    finally:
        writers.close()
        shutil.rmtree(scratch, ignore_errors=True)
        manifest.save()
    table_files = tables.close()
    for topic in gnss_topics:  # the first GNSS topic the bag has
        if gnss_by_topic[topic]:
            src.gnss = gnss_by_topic[topic]
            break
    rows = build_index(src, slot_tolerance_ns=int(0.5e9 / stack.trigger.rate_hz),
                       moving_threshold_m=o.moving_threshold_m, moving_window_s=o.moving_window_s)
    write_frames_csv(out / "frames.csv", rows)
    elapsed = time.perf_counter() - t0
    frames = sum(counts.values())
    summary = {
        "bags": per_bag, "out": str(out), "frames": counts, "frames_total": frames, "written": written,
        "skipped_unchanged": skipped, "tables": {t: os.path.relpath(p, out) for t, p in table_files.items()},
        "table_rows": dict(tables.rows), "bad_messages": bad, "bad_examples": bad_examples, "stopped": stopped,
        "salvaged": salvaged, "gnss_topic": next((t for t in gnss_topics if gnss_by_topic[t]), None),
        "slot_tolerance_ns": int(0.5e9 / stack.trigger.rate_hz),
        "synthetic": any(b["synthetic"] for b in per_bag),
        "elapsed_s": round(elapsed, 3), "frames_per_s": round(frames / elapsed, 1) if elapsed else None,
        "mb_per_s": round(bytes_read / 1e6 / elapsed, 1) if elapsed else None, "bytes_read": bytes_read,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return ExtractResult(out, rows, summary, stack, {c: t for c, t in src.frame_topic.items()})


class _ExitStackOf:
    """Opens every bag (salvaging where needed) and closes them all on exit."""

    def __init__(self, bags: Sequence[str | Path], scratch: Path) -> None:
        self.bags, self.scratch = bags, scratch
        self._cms: list[Any] = []

    def __enter__(self) -> list[tuple[BagReader, dict | None]]:
        opened = []
        try:
            for i, bag in enumerate(self.bags):
                cm = readable_bag(bag, self.scratch / str(i))
                opened.append(cm.__enter__())
                self._cms.append(cm)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return opened

    def __exit__(self, *exc: object) -> None:
        for cm in reversed(self._cms):
            cm.__exit__(None, None, None)
        self._cms = []


def _handle(rec: Any, o: ExtractOptions, names: dict[str, str], src: FrameSources, tables: TopicTables,
            manifest: _Manifest, out: Path, thermal8: _Thermal8 | None, counts: dict[str, int],
            gnss_by_topic: dict[str, list], pose_topic: str, writers: _Writers) -> int:
    """Handle one message; returns 1 (image written), 2 (image unchanged, skipped) or 0 (table row)."""
    msgtype = rec.msgtype
    if msgtype in _IMAGE_TYPES or msgtype in _COMPRESSED_TYPES:
        msg = rec.msg
        camera = names.get(rec.topic) or _topic_name(rec.topic)
        stamp = stamp_to_ns(msg.header.stamp)
        digest = hashlib.blake2b(rec.raw, digest_size=16).hexdigest()
        result = 2
        if msgtype in _COMPRESSED_TYPES:
            ext = "png" if "png" in str(msg.format).lower() else "jpg"
            rel = f"images/{camera}/{stamp}.{ext}"
            if not manifest.fresh(rel, digest):
                writers.submit(rec.topic, _write_bytes, out / rel, bytes(msg.data),
                               then=lambda: manifest.put(rel, digest))
                result = 1
        else:
            arr = image_to_numpy(msg, rgb=True)
            colour = arr.ndim == 3
            ext = o.color_format if colour else "png"
            rel = f"images/{camera}/{stamp}.{ext}"
            if not manifest.fresh(rel, digest):
                writers.submit(rec.topic, _write_image, out / rel, arr, o.jpeg_quality,
                               then=lambda: manifest.put(rel, digest))
                result = 1
            if thermal8 is not None and arr.dtype == np.uint16 and arr.ndim == 2:
                rel8 = f"images/{camera}_8bit_{thermal8.mode}/{stamp}.png"
                img8 = thermal8(camera, arr, stamp)  # always run: the vio mode's state needs every frame
                if not manifest.fresh(rel8, digest):
                    writers.submit(rec.topic, _write_image, out / rel8, img8, o.jpeg_quality,
                                   then=lambda: manifest.put(rel8, digest))
        src.frames.append((stamp, rec.t_ns, camera, rel))
        src.frame_topic.setdefault(camera, rec.topic)
        counts[camera] = counts.get(camera, 0) + 1
        return result
    if rec.topic == ROS1_METADATA_TOPIC:
        return 0  # the bag's metadata (custom_data), already in summary.json: not a data topic
    msg = rec.msg
    tables.add(rec.topic, rec.t_ns, msg)
    if rec.topic == o.trigger_topic and hasattr(msg, "time_ref"):
        src.pulses[stamp_to_ns(msg.time_ref)] = int(str(msg.source).split(";")[0])
    elif rec.topic.endswith("/frame_info") and hasattr(msg, "source"):
        counter_flags = str(msg.source).split(";")
        image_topic = rec.topic[: -len("frame_info")] + "image"
        src.ffc.setdefault(image_topic, {})[stamp_to_ns(msg.header.stamp)] = "ffc" in counter_flags[1:]
    elif rec.topic in gnss_by_topic and hasattr(msg, "latitude"):
        gnss_by_topic[rec.topic].append((stamp_to_ns(msg.header.stamp), float(msg.latitude), float(msg.longitude),
                                         float(msg.altitude), int(msg.status.status)))
    elif rec.topic == pose_topic and hasattr(msg, "pose"):
        p, q = msg.pose.position, msg.pose.orientation
        src.poses.append((stamp_to_ns(msg.header.stamp), p.x, p.y, p.z, q.w, q.x, q.y, q.z))
    return 0


def _write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data)


def _write_image(path: Path, arr: np.ndarray, jpeg_quality: int = 95) -> None:
    """PNG (lossless, any depth) or JPEG by suffix; colour arrays are RGB."""
    img = cv2.cvtColor(arr, cv2.COLOR_RGB2BGR) if arr.ndim == 3 and arr.shape[2] == 3 else arr
    params = [cv2.IMWRITE_JPEG_QUALITY, jpeg_quality] if path.suffix == ".jpg" else _PNG
    ok, buf = cv2.imencode(path.suffix, np.ascontiguousarray(img), params)
    if not ok:
        raise BagError(f"{path}: cannot encode a {arr.dtype} {arr.shape} image as {path.suffix}")
    _write_bytes(path, buf.tobytes())


def write_frames_csv(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


def read_frames_csv(path: str | Path) -> list[dict]:
    """Rows of a ``frames.csv`` (values as strings; ``stamp_ns`` as int)."""
    path = Path(path)
    if not path.is_file():
        raise BagError(f"{path}: no frames.csv (run `rgbt bag extract` first)")
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        r["stamp_ns"] = int(r["stamp_ns"])
    return rows


def read_image(path: Path) -> np.ndarray:
    """An extracted image as written (uint16 thermal, RGB colour, mono)."""
    img = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if img is None:
        raise BagError(f"{path}: not a readable image")
    return cv2.cvtColor(img, cv2.COLOR_BGR2RGB) if img.ndim == 3 else img


def check_new_or_extraction(out: str | Path) -> None:
    """``out`` must be absent, empty or an earlier extraction (resuming); anything else is refused."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(str(out), "--out", "a file", "a directory (new, empty, or an earlier extraction)")
    if out.is_dir() and any(out.iterdir()) and not (out / MANIFEST).exists() and not (out / "frames.csv").exists():
        raise ConfigError(str(out), "--out", "a non-empty directory", "a new or empty directory, or an earlier "
                          "extraction to resume")



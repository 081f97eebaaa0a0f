"""``rgbt bag video``: a side-by-side preview of a recording and a contact sheet of sampled frames.

Each video frame (at ``rate_hz`` of log time) shows the newest colour | thermal | mono frame logged
so far, side by side, each scaled by ``scale``. Thermal is normalized with the temporally stable VIO
mode (:class:`rgbt.image.normalize.TemporalNormalizer`, so brightness does not pump) and
colormapped; with a segmentation model its classes are blended over it
(:class:`rgbt.seg.stage.SegmentationStage`). Burned in: the video time and each panel's stamp,
FFC state (driver ``frame_info``; else "frozen" when the normalizer sees a repeated frame, else
n/a), trigger slot and sync residual (trigger topic; else n/a). Written with OpenCV's
``VideoWriter`` (``mp4v`` for .mp4, ``MJPG`` for .avi). The contact sheet (PNG) tiles one video
frame every ``sheet_every_s`` seconds (at most ``sheet_max`` frames, evenly thinned).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from rgbt.bag.extract import stack_for
from rgbt.bag.reader import open_bag
from rgbt.bag.renames import CART_RENAMES, CART_ROS1_NAMES
from rgbt.errors import BagError
from rgbt.image.codec import image_to_numpy
from rgbt.image.colormap import apply_colormap
from rgbt.image.normalize import TemporalNormalizer
from rgbt.seg.classes import overlay
from rgbt.seg.stage import SegmentationStage, SegStageOptions
from rgbt.stamps import stamp_to_ns
from rgbt.topics import TRIGGER_TOPIC

PANELS = ("color", "thermal", "mono")
_FONT = cv2.FONT_HERSHEY_SIMPLEX


class VideoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rate_hz: float = Field(default=10.0, gt=0)
    scale: float = Field(default=0.5, gt=0, le=4)
    cmap: str = "ironbow"
    model: str | None = Field(default=None, description="ONNX segmentation model for a thermal overlay")
    overlay_alpha: float = Field(default=0.45, ge=0, le=1)
    stack_path: str | None = None
    sheet_every_s: float = Field(default=3.0, gt=0)
    sheet_max: int = Field(default=48, ge=1)
    sheet_columns: int = Field(default=4, ge=1)


def _text(img: np.ndarray, lines: list[str], origin: tuple[int, int] = (6, 16)) -> None:
    x, y = origin
    size = max(0.35, img.shape[0] / 900)
    step = int(22 * size / 0.5)
    for i, line in enumerate(lines):
        at = (x, y + i * step)
        cv2.putText(img, line, at, _FONT, size, (0, 0, 0), 3, cv2.LINE_AA)
        cv2.putText(img, line, at, _FONT, size, (255, 255, 255), 1, cv2.LINE_AA)


class _Panels:
    """Turns the newest message of each camera into a BGR panel of a fixed height."""

    def __init__(self, stack: Any, o: VideoOptions) -> None:
        self.o = o
        self.height = max(16, int(round(600 * o.scale)))
        self.widths = {name: int(round(self.height * stack.cameras[name].width / stack.cameras[name].height))
                       if name in stack.cameras else self.height * 16 // 10 for name in PANELS}
        self.normalizer = TemporalNormalizer()
        self.stage = None
        if o.model:
            self.stage = SegmentationStage(SegStageOptions(engine=o.model, color=True))
        self.frozen = False
        self._last_thermal_t: int | None = None

    def render(self, name: str, rec: Any, state: str) -> np.ndarray:
        w, h = self.widths[name], self.height
        if rec is None:
            blank = np.zeros((h, w, 3), np.uint8)
            _text(blank, [f"{name}: no frame"])
            return blank
        msg = rec.msg
        arr = image_to_numpy(msg, rgb=True)
        stamp = stamp_to_ns(msg.header.stamp)
        if name == "thermal" and arr.dtype == np.uint16:
            if self._last_thermal_t != stamp:
                norm = self.normalizer(arr, stamp)
                self.frozen, self._last_thermal_t = norm.frozen, stamp
                self._thermal_rgb = apply_colormap(norm.image, self.o.cmap)
                if self.stage is not None:
                    res = self.stage.process(arr)
                    assert res.color is not None  # the stage was made with color=True
                    self._thermal_rgb = overlay(self._thermal_rgb, res.color, self.o.overlay_alpha)
            rgb = self._thermal_rgb
        elif arr.ndim == 2:
            rgb = cv2.cvtColor(arr if arr.dtype == np.uint8 else cv2.convertScaleAbs(arr, alpha=255 / 65535),
                               cv2.COLOR_GRAY2RGB)
        else:
            rgb = arr[..., :3]
        img = cv2.resize(cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2BGR), (w, h),
                         interpolation=cv2.INTER_AREA)
        _text(img, [f"{name} {stamp / 1e9:.3f} s", state])
        return img


def write_video(bag: str | Path, out: str | Path, options: VideoOptions | None = None, *,
                sheet: str | Path | None = None,
                progress: Callable[[int, int], None] | None = None) -> dict:
    """Write the preview video ``out`` and the contact sheet (default ``out`` with ``_sheet.png``)."""
    o = options or VideoOptions()
    out = Path(out)
    sheet_path = Path(sheet) if sheet else out.with_name(out.stem + "_sheet.png")
    for p in (out, sheet_path):
        if not p.parent.is_dir():
            raise BagError(f"{p}: output folder {p.parent} does not exist")
    stack = stack_for(o.stack_path)
    topics = {stack.cameras[n].topic: n for n in PANELS if n in stack.cameras}
    renames = {**CART_RENAMES, **{v: k for k, v in CART_ROS1_NAMES.items()}}
    panels = _Panels(stack, o)
    step = int(round(1e9 / o.rate_hz))
    every = max(1, int(round(o.sheet_every_s * o.rate_hz)))
    newest: dict[str, Any] = {}
    pulses: list[int] = []
    slots: dict[int, int] = {}
    ffc: dict[str, dict[int, bool]] = {}
    thumbs: list[np.ndarray] = []
    writer = None
    n_out = 0
    size = (0, 0)
    with open_bag(bag) as reader:
        wanted = set(topics) | {TRIGGER_TOPIC} | {t for t in reader.topics if t.endswith("/frame_info")}
        wanted |= {src for src, dst in renames.items() if dst in topics}
        tick: int | None = None  # the video starts at the first camera frame
        t0 = reader.start_ns
        total = int(reader.duration_ns // step) + 1

        def emit() -> None:
            nonlocal writer, n_out, size
            tiles = []
            for name in PANELS:
                rec = newest.get(name)
                tiles.append(panels.render(name, rec, _state(name, rec, pulses, slots, ffc, panels)))
            frame = np.hstack(tiles)
            assert tick is not None  # emit() runs from the first camera frame on
            _text(frame, [f"t = {(tick - t0) / 1e9:7.2f} s"], (6, frame.shape[0] - 10))
            if writer is None:
                size = (frame.shape[1], frame.shape[0])
                fourcc = cv2.VideoWriter.fourcc(*("MJPG" if out.suffix.lower() == ".avi" else "mp4v"))
                writer = cv2.VideoWriter(str(out), fourcc, o.rate_hz, size)
                if not writer.isOpened():
                    raise BagError(f"{out}: OpenCV cannot open a video writer for this file")
            writer.write(frame)
            if n_out % every == 0:
                thumbs.append(frame)
            n_out += 1
            if progress is not None:
                progress(n_out, total)

        try:
            for rec in reader.messages(topics=wanted, renames=renames):
                while tick is not None and rec.t_ns > tick:
                    emit()
                    tick += step
                try:
                    if rec.topic in topics:
                        newest[topics[rec.topic]] = rec
                        if tick is None:
                            tick = rec.t_ns
                    elif rec.topic == TRIGGER_TOPIC:
                        t_ref = stamp_to_ns(rec.msg.time_ref)
                        pulses.append(t_ref)
                        slots[t_ref] = int(str(rec.msg.source).split(";")[0])
                    else:
                        image_topic = rec.topic[: -len("frame_info")] + "image"
                        ffc.setdefault(image_topic, {})[stamp_to_ns(rec.msg.header.stamp)] = \
                            "ffc" in str(rec.msg.source).split(";")[1:]
                except Exception:  # noqa: BLE001 - a bad message leaves the panel as it was
                    continue
            if tick is not None:
                emit()
        finally:
            if writer is not None:
                writer.release()
    if n_out == 0:
        raise BagError(f"{bag}: no frames to render")
    n_sheet = write_contact_sheet(sheet_path, thumbs, o.sheet_max, o.sheet_columns)
    return {"video": str(out), "frames": n_out, "size": list(size), "rate_hz": o.rate_hz, "sheet": str(sheet_path),
            "sheet_frames": n_sheet, "panels": list(PANELS), "overlay": bool(o.model)}


def _state(name: str, rec: Any, pulses: list[int], slots: dict[int, int], ffc: dict[str, dict[int, bool]],
           panels: _Panels) -> str:
    if rec is None:
        return ""
    stamp = stamp_to_ns(rec.msg.header.stamp)
    sync = "sync n/a"
    if pulses:
        i = int(np.argmin(np.abs(np.asarray(pulses[-64:], dtype=np.int64) - stamp)))
        t_ref = pulses[-64:][i]
        sync = f"slot {slots[t_ref]} res {(stamp - t_ref) / 1e6:+.2f} ms"
    flags = ffc.get(rec.source_topic, {}) or ffc.get(rec.topic, {})
    if stamp in flags:
        state = "FFC" if flags[stamp] else "FFC off"
    elif name == "thermal":
        state = "frozen" if panels.frozen else "FFC n/a"
    else:
        state = ""
    return f"{sync}  {state}".strip()


def write_contact_sheet(path: Path, frames: list[np.ndarray], max_frames: int = 48, columns: int = 4) -> int:
    """Tile ``frames`` (BGR, same size) into a PNG grid, at most ``max_frames`` (evenly thinned)."""
    if not frames:
        return 0
    if len(frames) > max_frames:
        idx = np.linspace(0, len(frames) - 1, max_frames).round().astype(int)
        frames = [frames[i] for i in idx]
    h, w = frames[0].shape[:2]
    thumb_w = min(w, 960)
    thumb_h = int(round(h * thumb_w / w))
    cols = min(columns, len(frames))
    rows = math.ceil(len(frames) / cols)
    sheet = np.zeros((rows * thumb_h, cols * thumb_w, 3), np.uint8)
    for k, f in enumerate(frames):
        r, c = divmod(k, cols)
        sheet[r * thumb_h:(r + 1) * thumb_h, c * thumb_w:(c + 1) * thumb_w] = cv2.resize(f, (thumb_w, thumb_h),
                                                                                         interpolation=cv2.INTER_AREA)
    if not cv2.imwrite(str(path), sheet):
        raise BagError(f"{path}: cannot write the contact sheet PNG")
    return len(frames)


__all__ = ["VideoOptions", "write_video", "write_contact_sheet"]

"""Thermal preprocess: raw mono16 counts -> normalized 32FC1 [0, 1], mono8, and a colormapped rgb8 view.

Each output is built only while something subscribes to it; with no subscriber to any of them the
frame is not normalized either (counted: ``frames_without_subscriber``; the normalization's cost is
``rgbt bench preprocess``'s). The segmentation and the VIO bridge normalize for themselves.

Wraps ``rgbt.image.normalize`` (1st-99th percentile + CLAHE by default) and
``rgbt.image.colormap``. Output stamps = input stamps (the restamped trigger time).
Overload policy: frames arrive as raw CDR and only the newest is processed, on a low-priority
worker (``rgbt.ros.mailbox``); stale ones are dropped unread and counted (``latest.dropped_stale``).
The percentiles, CLAHE, the colormap and the outputs are live parameters (``ros2 param set``); a
bad value (``low >= high``, an unknown colormap) is refused with the reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sensor_msgs.msg import Image

from rgbt.errors import ConfigError
from rgbt.graph.options import PreprocessOptions
from rgbt.image.codec import cdr_to_image
from rgbt.ros.mailbox import LatestFrameNode
from rgbt.ros.node import RgbtNode
from rgbt.ros.spin import node_main

if TYPE_CHECKING:
    from rgbt.image.normalize import Normalizer


class ThermalPreprocessNode(LatestFrameNode, RgbtNode):
    options_model = PreprocessOptions
    options: PreprocessOptions
    default_name = "thermal_preprocess"
    prewarm_modules = ("rgbt.image.colormap", "rgbt.image.normalize")

    def __init__(self, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        from rgbt.image.colormap import apply_colormap
        from rgbt.image.normalize import to_uint8

        o = self.options
        self.input_topic = o.input_topic or self.stack().cameras["thermal"].topic
        self.normalize = self.normalizer(o)
        self.to_uint8, self.apply_colormap = to_uint8, apply_colormap
        self.pub_float = self.create_publisher(Image, f"{o.output_prefix}/normalized", self.out_qos)
        self.pub_mono8 = self.create_publisher(Image, f"{o.output_prefix}/image_mono8", self.out_qos)
        self.pub_color = self.create_publisher(Image, f"{o.output_prefix}/colormap", self.out_qos)
        self.unread = 0  # frames taken while no output had a subscriber (not normalized)
        self.mailbox = self.latest_from(Image, self.input_topic, self.on_image, self.in_qos)

    @staticmethod
    def normalizer(o: PreprocessOptions) -> Normalizer:
        from rgbt.image.colormap import COLORMAPS
        from rgbt.image.normalize import NormalizeOptions, Normalizer

        if o.colormap not in COLORMAPS:
            raise ConfigError("thermal_preprocess", "colormap", o.colormap, f"one of {', '.join(COLORMAPS)}")
        return Normalizer(NormalizeOptions(low=o.low, high=o.high, clahe=o.clahe))

    def apply_options(self, new: PreprocessOptions, changed: set[str]) -> None:  # type: ignore[override]
        super().apply_options(new, changed)
        if changed & {"low", "high", "clahe", "colormap"}:
            self.normalize = self.normalizer(new)  # refuses low >= high or an unknown colormap

    def on_image(self, raw: bytes) -> None:  # worker thread: the newest frame
        o = self.options
        t_ns, frame, _, pixels = cdr_to_image(raw)
        # outputs nobody subscribes to are not built (a viewer that subscribes gets them from its first frame)
        want_float = o.publish_float and self.subscribed(self.pub_float)
        want_mono8 = o.publish_mono8 and self.subscribed(self.pub_mono8)
        want_color = o.publish_colormap and self.subscribed(self.pub_color)
        if not (want_float or want_mono8 or want_color):  # nobody listens: no normalization either
            self.unread += 1
            self.diag.values["frames_without_subscriber"] = str(self.unread)
            self.diag.topic(self.input_topic).tick(self.now_ns() - t_ns)
            return
        img01 = self.normalize(pixels)
        if want_float:
            self.publish_image(self.pub_float, img01, t_ns, frame, "32FC1")
        if want_mono8 or want_color:
            u8 = self.to_uint8(img01)
            if want_mono8:
                self.publish_image(self.pub_mono8, u8, t_ns, frame, "mono8")
            if want_color:
                self.publish_image(self.pub_color, self.apply_colormap(u8, o.colormap), t_ns, frame, "rgb8")
        self.diag.topic(self.input_topic).tick(self.now_ns() - t_ns)


NODE = ThermalPreprocessNode


def main(args: list[str] | None = None) -> int:
    return node_main(NODE, args)


if __name__ == "__main__":
    raise SystemExit(main())

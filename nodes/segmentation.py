"""Segmentation: raw thermal (mono16) -> class ids (mono8, CART ids) + coloured mask (rgb8) + diagnostics.

Wraps ``rgbt.seg.stage.SegmentationStage`` in a live ``rgbt.seg.pipeline.SegPipeline``: the
callback only hands the frame over; a low-priority thread normalizes it while the previous frame
is inferred, and results are published from the inference thread. When inference is slower than
the camera the newest frame is processed and older ones are dropped (``pipeline.dropped_stale`` in
diagnostics; the recorder still gets every frame from the sync node), and so is a newest frame that
comes too late (``pipeline.dropped_late``, option ``late_after_periods``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sensor_msgs.msg import Image

from rgbt.graph.liveness import WORKER_STALL_S
from rgbt.graph.options import SegmentationOptions
from rgbt.graph.seg_adapter import make_stage
from rgbt.image.codec import cdr_to_image, image_to_cdr
from rgbt.ros.node import RgbtNode
from rgbt.ros.spin import node_main
from rgbt.seg.pipeline import SegPipeline

if TYPE_CHECKING:
    from rgbt.seg.stage import SegResult


class SegmentationNode(RgbtNode):
    options_model = SegmentationOptions
    options: SegmentationOptions
    default_name = "segmentation"
    prewarm_modules = ("rgbt.graph.seg_adapter", "onnxruntime")

    def __init__(self, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)

        o = self.options
        self.input_topic = o.input_topic or self.stack().cameras["thermal"].topic
        # class colours (the model's palette) are drawn per frame, only while /color has a subscriber
        self.stage = make_stage(o.model, o.backend, {**o.stage, "color": False})
        self.pipeline = SegPipeline(
            self.stage,
            self.on_result,
            late_after_periods=o.late_after_periods,
            on_error=lambda t_ns, exc: self.report_error(f"frame {t_ns}", exc, self.input_topic),
        )
        self.get_logger().info(f"{self.stage.options}")
        self.last_timing: dict = {}  # of the newest result, for diagnostics
        self.pub_ids = self.create_publisher(Image, f"{o.output_prefix}/class_ids", self.out_qos)
        self.pub_color = self.create_publisher(Image, f"{o.output_prefix}/color", self.out_qos)
        self.create_subscription(Image, self.input_topic, self.guard(self.on_image, self.input_topic), self.in_qos,
                                 raw=True)

    def on_image(self, raw: bytes) -> None:  # raw CDR: the pixels are a view, never deserialized
        t_ns, frame_id, _, pixels = cdr_to_image(raw)
        self.pipeline.submit(t_ns, pixels, tag=frame_id)

    def on_result(self, t_ns: int, result: SegResult) -> None:  # inference thread
        frame_id = str(result.tag)  # the frame_id submitted with the frame
        self.pub_ids.publish(image_to_cdr(result.class_ids, t_ns, frame_id, "mono8"))
        if self.options.publish_color and self.subscribed(self.pub_color):
            self.pub_color.publish(image_to_cdr(self.stage.colorize(result.class_ids), t_ns, frame_id, "rgb8"))
        self.diag.topic(self.input_topic).tick(self.now_ns() - t_ns)
        self.last_timing = result.timing

    def apply_options(self, new: SegmentationOptions, changed: set[str]) -> None:  # type: ignore[override]
        """``late_after_periods`` is live: the pipeline takes it at its next frame."""
        super().apply_options(new, changed)
        if "late_after_periods" in changed:
            self.pipeline.gate.late_after_periods = new.late_after_periods

    def progress(self) -> dict[str, tuple[int, int, float]]:
        return {"pipeline": (*self.pipeline.progress(), WORKER_STALL_S)}

    def publish_diagnostics(self) -> None:
        self.diag.set_values("timing", self.last_timing)
        self.diag.set_values("pipeline", self.pipeline.stats())
        super().publish_diagnostics()

    def close(self) -> None:
        self.pipeline.close(drain=False)
        super().close()


NODE = SegmentationNode


def main(args: list[str] | None = None) -> int:
    return node_main(NODE, args)


if __name__ == "__main__":
    raise SystemExit(main())

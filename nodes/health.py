"""Health monitor: CPU, memory, disk and temperatures (psutil), plus Jetson stats from tegrastats
or jtop when present. Publishes ``diagnostic_msgs/DiagnosticArray`` on ``topic`` (``/rgbt/health``:
one status per area, ``rgbt.graph.health.health_statuses``, with WARN / ERROR levels) and its own
summary on ``/diagnostics``. The other nodes' ``/diagnostics`` give ``health/devices``: every device a
driver reports (open, lost, missing; ``rgbt.graph.health.device_status``). ``period_s`` is live
(``ros2 param set``)."""

from __future__ import annotations

import time
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

from rgbt.graph.health import HealthProbe, device_status, health_statuses
from rgbt.graph.options import HealthOptions
from rgbt.ros.node import RgbtNode
from rgbt.ros.qos import qos_profile, topic_qos
from rgbt.ros.spin import node_main
from rgbt.stamps import ns_to_stamp


class HealthNode(RgbtNode):
    options_model = HealthOptions
    options: HealthOptions
    default_name = "health"

    def __init__(self, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.probe = HealthProbe(self.options.disk_path)
        self.pub = self.create_publisher(DiagnosticArray, self.options.topic, qos_profile("reliable"))
        self.timer = self.create_timer(self.options.period_s, self.guard(self.sample))
        self.peers: dict[str, dict[str, str]] = {}  # node -> its last diagnostics values
        self.create_subscription(DiagnosticArray, "/diagnostics", self.guard(self.on_diagnostics),
                                 topic_qos("/diagnostics", depth=50))

    def apply_options(self, new: HealthOptions, changed: set[str]) -> None:  # type: ignore[override]
        super().apply_options(new, changed)
        if "period_s" in changed:  # live: the sampling rate
            self.destroy_timer(self.timer)
            self.timer = self.create_timer(new.period_s, self.guard(self.sample))

    def on_diagnostics(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            if status.name != self.get_name():
                self.peers[status.name] = {kv.key: kv.value for kv in status.values}

    def sample(self) -> None:
        report = self.probe.sample()
        msg = DiagnosticArray()
        ns_to_stamp(time.time_ns(), msg.header.stamp)
        msg.status = [DiagnosticStatus(level=bytes([level]), name=name, message=message, hardware_id="rgbt",
                                       values=[KeyValue(key=k, value=v) for k, v in values.items()])
                      for name, level, message, values in [*health_statuses(report), device_status(self.peers)]]
        self.pub.publish(msg)
        self.diag.values.update({k: str(v) for k, v in report.items() if not isinstance(v, dict)})
        self.diag.values.update({f"temp.{k}": str(v) for k, v in report.get("temperatures_c", {}).items()})
        self.diag.topic(self.options.topic).tick()

    def close(self) -> None:
        self.probe.close()


NODE = HealthNode


def main(args: list[str] | None = None) -> int:
    return node_main(NODE, args)


if __name__ == "__main__":
    raise SystemExit(main())

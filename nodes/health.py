"""Health monitor: CPU, memory, disk and temperatures (psutil), plus Jetson stats from tegrastats
or jtop when present. Publishes a JSON report (``std_msgs/String``) and ``/diagnostics``."""

from __future__ import annotations

import json

from std_msgs.msg import String

from rgbt.ros.health import HealthProbe
from rgbt.ros.node import RgbtNode
from rgbt.ros.options import HealthOptions
from rgbt.ros.qos import qos_profile
from rgbt.ros.spin import node_main


class HealthNode(RgbtNode):
    options_model = HealthOptions
    default_name = "health"

    def __init__(self, name: str | None = None, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(name, **kwargs)
        self.probe = HealthProbe(self.options.disk_path)
        self.pub = self.create_publisher(String, self.options.topic, qos_profile("reliable"))
        self.timer = self.create_timer(self.options.period_s, self.guard(self.sample))

    def apply_options(self, new: HealthOptions, changed: set[str]) -> None:  # type: ignore[override]
        super().apply_options(new, changed)
        if "period_s" in changed:  # live: the sampling rate
            self.destroy_timer(self.timer)
            self.timer = self.create_timer(new.period_s, self.guard(self.sample))

    def sample(self) -> None:
        report = self.probe.sample()
        self.pub.publish(String(data=json.dumps(report)))
        self.diag.values.update({k: str(v) for k, v in report.items() if not isinstance(v, dict)})
        self.diag.values.update({f"temp.{k}": str(v) for k, v in report.get("temperatures_c", {}).items()})
        self.diag.topic(self.options.topic).tick()

    def close(self) -> None:
        self.probe.close()


NODE = HealthNode


def main(args=None) -> int:  # type: ignore[no-untyped-def]
    return node_main(NODE, args)


if __name__ == "__main__":
    raise SystemExit(main())

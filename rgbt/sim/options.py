"""Options of the simulated sensor stack: one printable pydantic model (contract C3)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

#: parametric paths understood by :func:`rgbt.sim.trajectory.load_trajectory` besides TUM files
PARAMETRIC_PATHS = ("circle", "lawnmower", "hover")


class SimOptions(BaseModel):
    """Everything that determines a simulated run. Same options + same seed = same bytes.

    Times are seconds, angles degrees, distances metres (world frame ENU, z up).
    """

    model_config = ConfigDict(extra="forbid")

    stack_path: str | None = Field(default=None, description="stack YAML (default: calib/stack.yaml)")
    trajectory: str = Field(default="circle", description=f"TUM file path or one of {PARAMETRIC_PATHS}")
    duration_s: float = Field(default=10.0, gt=0, description="simulated time (includes lead-in/out)")
    start_s: float = Field(default=0.0, ge=0, description="offset into the trajectory")
    seed: int = Field(default=0, ge=0)
    world_seed: int | None = Field(default=None, ge=0,
                                      description="seed of the world layout (default: seed); same place, other noise")
    night: bool = Field(default=False, description="night: dark colour, thermal inversion (water warmer)")
    altitude_m: float | None = Field(
        default=None, gt=0,
        description="TUM: height of the trajectory's lowest point above the ground plane (default 1); "
                    "parametric paths: flight height above ground (default 20)")
    speed_m_s: float = Field(default=5.0, gt=0, description="parametric paths: cruise speed")
    camera_pitch_deg: float = Field(default=30.0, ge=0, le=90,
                                    description="sensor head pitched down by this angle on the vehicle")
    ffc_period_s: float = Field(default=30.0, ge=0, description="thermal flat-field correction period (0 = none)")
    ffc_first_s: float = Field(default=5.0, ge=0, description="time of the first FFC after the start")
    ffc_duration_s: float = Field(default=0.5, ge=0, description="frames frozen during each FFC")
    drop_prob: float = Field(default=0.002, ge=0, le=1, description="probability a camera frame is lost")
    host_jitter_ms: float = Field(default=3.0, ge=0, description="sigma of host arrival jitter")
    latency_ms: dict[str, float] = Field(
        default_factory=lambda: {"thermal": 12.0, "color": 8.0, "mono": 8.0, "imu": 1.0, "gnss": 80.0,
                                 "global": 30.0, "pose": 15.0, "state": 15.0, "trigger": 0.2},
        description="mean host arrival latency per stream (USB / serial / MAVLink transport)")
    apply_td: bool = Field(default=True, description="render frame content at t_trigger + td_s (t_imu = t_cam + td)")
    noise: bool = Field(default=True, description="sensor noise (IMU noise+bias, image noise, GNSS error)")
    lead_in_s: float = Field(default=1.0, ge=0, description="disarmed time at the start")
    lead_out_s: float = Field(default=1.0, ge=0, description="disarmed time at the end")
    cameras: list[str] = Field(default_factory=lambda: ["thermal", "color", "mono"],
                               description="cameras to render (others are not produced)")
    origin_lla: tuple[float, float, float] | None = Field(
        default=None, description="geodetic origin of the local ENU world (deg, deg, m); default by place")
    world_size_px: int = Field(default=4096, ge=256, description="world raster side (tiles repeat beyond)")
    world_res_m: float = Field(default=0.1, gt=0, description="world raster resolution (m per pixel)")

    def describe(self) -> str:
        return "\n".join(f"{k}: {v}" for k, v in self.model_dump().items())

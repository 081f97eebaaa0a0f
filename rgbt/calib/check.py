"""Cross-source consistency checks of a (valid) stack.

The stack holds each extrinsic twice for a camchain pair: directly (Kalibr ``T_cam1_cam0``) and
through the IMU (``T_cam1_imu @ T_imu_cam0`` from the VINS configs). They come from different
calibrations and can disagree; so can a pair's canvas intrinsics and the camera's own, and camera
rates and the trigger. Each check returns numbers; thresholds make them ``warning`` or ``ok``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel

from rgbt.stack import Stack


class CheckOptions(BaseModel):
    """Tolerances above which a difference is reported as a warning."""

    rotation_deg: float = 1.0  # pair extrinsic vs IMU-chained: rotation angle
    translation_m: float = 0.01  # pair extrinsic vs IMU-chained: translation difference
    focal_rel: float = 0.02  # pair canvas focal vs native focal (relative)
    principal_px: float = 10.0  # pair canvas principal point vs native one shifted by the offset
    td_s: float = 1e-3  # time offsets of cameras on the same trigger


@dataclass
class Finding:
    level: Literal["ok", "warning"]
    check: str  # what was compared
    subject: str  # pair / camera
    message: str
    values: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


def transform_difference(T_a: np.ndarray, T_b: np.ndarray) -> tuple[float, float]:
    """(rotation angle [deg], translation difference norm [m]) between two rigid transforms."""
    dR = T_a[:3, :3] @ T_b[:3, :3].T
    angle = float(np.degrees(np.arccos(np.clip((np.trace(dR) - 1.0) / 2.0, -1.0, 1.0))))
    return angle, float(np.linalg.norm(T_a[:3, 3] - T_b[:3, 3]))


def check_stack(stack: Stack, options: CheckOptions | None = None) -> list[Finding]:
    opt = options or CheckOptions()
    out: list[Finding] = []
    for key in stack.pairs:
        out.append(_check_pair_extrinsic(stack, key, opt))
        out.extend(_check_pair_intrinsics(stack, key, opt))
    out.extend(_check_trigger(stack, opt))
    return out


def _check_pair_extrinsic(stack: Stack, key: str, opt: CheckOptions) -> Finding:
    pair = stack.pairs[key]
    direct = pair.T_cam1_cam0_matrix()
    chained = stack.T_cam_a_cam_b(pair.cam1, pair.cam0)
    angle, dt = transform_difference(direct, chained)
    values = {"rotation_diff_deg": angle, "translation_diff_m": dt,
              "baseline_pair_m": float(np.linalg.norm(direct[:3, 3])),
              "baseline_imu_chain_m": float(np.linalg.norm(chained[:3, 3])),
              "t_pair_m": direct[:3, 3].tolist(), "t_imu_chain_m": chained[:3, 3].tolist()}
    bad = angle > opt.rotation_deg or dt > opt.translation_m
    msg = (f"T_{pair.cam1}_{pair.cam0}: pair (Kalibr) vs through the IMU (T_{pair.cam1}_imu T_imu_{pair.cam0}) "
           f"differ by {angle:.3f} deg and {dt * 100:.2f} cm; baselines {values['baseline_pair_m'] * 100:.2f} cm "
           f"vs {values['baseline_imu_chain_m'] * 100:.2f} cm")
    return Finding("warning" if bad else "ok", "pair extrinsic vs IMU chain", key, msg, values)


def _check_pair_intrinsics(stack: Stack, key: str, opt: CheckOptions) -> list[Finding]:
    pair = stack.pairs[key]
    out = []
    for side in ("cam0", "cam1"):
        cam = stack.camera(getattr(pair, side))
        pi, ci = getattr(pair, f"{side}_intrinsics"), cam.intrinsics
        ox, oy = getattr(pair, f"{side}_offset")
        df = max(abs(pi.fx / ci.fx - 1.0), abs(pi.fy / ci.fy - 1.0))
        dc = float(np.hypot(pi.cx - (ci.cx + ox), pi.cy - (ci.cy + oy)))
        bad = df > opt.focal_rel or dc > opt.principal_px
        fits = ox >= 0 and oy >= 0 and ox + cam.width <= pair.width and oy + cam.height <= pair.height
        msg = (f"{cam.name}: pair canvas intrinsics vs the camera's own (offset ({ox:g}, {oy:g})): "
               f"focal differs {df * 100:.2f} %, principal point {dc:.2f} px")
        if not fits:
            msg += (f"; the {cam.width}x{cam.height} image at that offset does not fit the "
                    f"{pair.width}x{pair.height} canvas")
        out.append(Finding("warning" if bad or not fits else "ok", "pair intrinsics vs camera", key, msg,
                           {"focal_rel_diff": df, "principal_diff_px": dc, "fits_canvas": fits}))
    return out


def _check_trigger(stack: Stack, opt: CheckOptions) -> list[Finding]:
    out = []
    tds = {n: stack.camera(n).td_s for n in stack.trigger.cameras}
    for name in stack.trigger.cameras:
        cam = stack.camera(name)
        frame_rate = stack.trigger.rate_hz / cam.trigger_divider
        ok = abs(frame_rate - cam.rate_hz) < 1e-6
        out.append(Finding("ok" if ok else "warning", "trigger rate", name,
                           f"{name}: trigger {stack.trigger.rate_hz:g} Hz / divider {cam.trigger_divider} = "
                           f"{frame_rate:g} Hz, camera rate {cam.rate_hz:g} Hz",
                           {"trigger_frame_rate_hz": frame_rate, "rate_hz": cam.rate_hz}))
    if tds:
        spread = max(tds.values()) - min(tds.values())
        out.append(Finding("ok" if spread <= opt.td_s else "warning", "td on one trigger", "trigger",
                           f"time offsets of triggered cameras span {spread * 1e3:.2f} ms ({tds})",
                           {"td_spread_s": spread, "td_s": tds}))
    return out

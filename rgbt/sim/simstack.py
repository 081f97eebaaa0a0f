"""The simulated sensor stack: every stream of the CART stack with exact ground truth (contract C3).

Timeline (all times int ns on one true clock; TUM trajectories keep their Unix time):

* trigger pulse ``k = 0, 1, ...`` at ``t_start + round(k / trigger_rate)``; its count (VN-100
  SyncIn count after it) is ``k + 1``.
* camera frame ``n`` of a camera with ``trigger_divider d`` is exposed by pulse ``k = n * d``; its
  stamp ``t_ns`` is that pulse's time and ``seq`` is ``n`` (the device frame counter, counting frames
  later dropped too). Its content is rendered at ``t_ns + td_s`` (``t_imu = t_cam + td``).
* IMU sample ``j`` at ``t_start + 1 ms + j / imu_rate``; ``seq`` and ``data.syncin_count`` are the
  pulses so far, ``data.t_since_sync_ns`` the time since the last one.
* GNSS (u-blox) and the autopilot's global position at the GNSS rate, autopilot pose at its rate,
  armed state at 1 Hz and on each change (armed from ``lead_in_s`` to ``duration - lead_out_s``).
* ``t_host_ns`` = true time + the stream's transport latency + Gaussian jitter (``host_jitter_ms``;
  a fifth of it for the IMU's serial link), never before the true time, increasing per stream.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from rgbt.errors import ConfigError
from rgbt.geo import enu_to_lla, origin_for
from rgbt.sim.effects import ImuNoise, OpticalEffects, ThermalEffects, gauss_markov
from rgbt.sim.options import SimOptions
from rgbt.sim.render import ViewRenderer
from rgbt.sim.trajectory import Trajectory, load_trajectory
from rgbt.sim.world import World, build_world
from rgbt.stack import Stack, load_stack

KINDS = ("thermal", "color", "mono", "imu", "gnss", "global", "pose", "state", "trigger")
# tie-break for equal times: the pulse first, then the IMU, then frames
_PRIORITY = {"trigger": 0, "imu": 1, "thermal": 2, "color": 3, "mono": 4, "gnss": 5, "global": 6, "pose": 7,
             "state": 8}
_STREAM_IDS = {k: i + 1 for i, k in enumerate(KINDS)}
IMU_PHASE_NS = 1_000_000
GNSS_PHASE_NS = 37_000_000
STATE_RATE_HZ = 1.0
RENDER_AHEAD = 2  # frames each camera's worker thread renders ahead of the consumer (0: inline)


@dataclass
class ImuData:
    gyro_rad_s: np.ndarray  # (3,) IMU frame
    accel_m_s2: np.ndarray  # (3,) specific force, IMU frame
    syncin_count: int
    t_since_sync_ns: int


@dataclass
class GnssData:
    lat: float  # deg
    lon: float  # deg
    alt: float  # m (above the local ENU origin's datum)
    sigma_h_m: float
    sigma_v_m: float


@dataclass
class PoseData:
    T_world_body: np.ndarray  # 4x4, ENU world <- vehicle FLU


@dataclass
class StateData:
    armed: bool
    mode: str = "GUIDED"
    connected: bool = True


@dataclass
class SimSample:
    """One sample of a stream. ``label`` (uint8 CART class ids of an image sample) is computed on
    first access, so consumers that do not need labels do not pay for them."""

    kind: str
    t_ns: int
    t_host_ns: int
    seq: int
    data: Any
    label_fn: Callable[[], np.ndarray] | None = field(default=None, repr=False)
    ffc: bool = False
    dropped: bool = False
    meta: dict = field(default_factory=dict)

    @property
    def label(self) -> np.ndarray | None:
        return self.label_fn() if self.label_fn is not None else None


def _memo(fn: Callable[[], np.ndarray]) -> Callable[[], np.ndarray]:
    cache: list[np.ndarray] = []

    def once() -> np.ndarray:
        if not cache:
            cache.append(fn())
        return cache[0]

    return once


class SimStack:
    """The virtual stack. ``samples()`` yields every stream in true-time order (deterministic)."""

    def __init__(self, options: SimOptions, stack: Stack | None = None) -> None:
        self.options = options
        self.stack = stack or load_stack(options.stack_path)
        for name in options.cameras:
            if name not in self.stack.cameras:
                raise ConfigError("<options>", "cameras", name, f"one of {sorted(self.stack.cameras)}")
        self.trajectory: Trajectory = load_trajectory(
            options.trajectory, duration_s=options.duration_s, start_s=options.start_s,
            altitude_m=options.altitude_m, speed_m_s=options.speed_m_s,
            camera_pitch_deg=options.camera_pitch_deg, g_norm=self.stack.imu.noise.g_norm)
        self.t_start_ns = self.trajectory.t_ref_ns + int(round(options.start_s * 1e9))
        self.t_end_ns = self.t_start_ns + int(round(options.duration_s * 1e9))
        self.origin_lla = options.origin_lla or origin_for(self.trajectory.name)
        self.t_arm_ns = self.t_start_ns + int(round(options.lead_in_s * 1e9))
        self.t_disarm_ns = self.t_end_ns - int(round(options.lead_out_s * 1e9))
        rate = self.stack.trigger.rate_hz
        n_pulses = int(np.floor(options.duration_s * rate)) + 1
        self.pulse_ns = self.t_start_ns + np.round(np.arange(n_pulses) * (1e9 / rate)).astype(np.int64)
        self.pulse_ns = self.pulse_ns[self.pulse_ns < self.t_end_ns]
        imu_rate = self.stack.imu.rate_hz
        n_imu = int(np.floor((options.duration_s - IMU_PHASE_NS * 1e-9) * imu_rate)) + 1
        self.imu_ns = self.t_start_ns + IMU_PHASE_NS + np.round(np.arange(n_imu) * (1e9 / imu_rate)).astype(np.int64)
        self.imu_ns = self.imu_ns[self.imu_ns < self.t_end_ns]
        self._world: World | None = None
        self._renderers: dict[str, ViewRenderer] = {}

    # -- world and cameras ---------------------------------------------------------------------------
    @property
    def world(self) -> World:
        if self._world is None:
            o = self.options
            self._world = build_world(o.seed if o.world_seed is None else o.world_seed, o.night,
                                      o.world_size_px, o.world_res_m)
        return self._world

    def renderer(self, camera: str) -> ViewRenderer:
        if camera not in self._renderers:
            self._renderers[camera] = ViewRenderer(self.stack.camera(camera), self.world)
        return self._renderers[camera]

    def frame_times(self, camera: str) -> np.ndarray:
        """Trigger (stamp) times of every frame of ``camera`` (int ns), frame n at index n."""
        d = self.stack.camera(camera).trigger_divider
        return self.pulse_ns[::d]

    def T_world_camera(self, camera: str, t_stamp_ns: int | np.ndarray) -> np.ndarray:
        """Pose of ``camera`` for a frame stamped ``t_stamp_ns`` (content time = stamp + td when applied)."""
        cam = self.stack.camera(camera)
        td_ns = int(round(cam.td_s * 1e9)) if self.options.apply_td else 0
        tau = self.trajectory.tau(np.asarray(t_stamp_ns, dtype=np.int64) + td_ns)
        return self.trajectory.T_world_imu(tau) @ cam.T_imu_cam_matrix()

    def ground_truth(self) -> tuple[np.ndarray, np.ndarray]:
        """``(t_ns, T_world_imu N x 4 x 4)`` at the IMU sample times."""
        return self.imu_ns.copy(), self.trajectory.T_world_imu(self.trajectory.tau(self.imu_ns))

    def armed_at(self, t_ns: int) -> bool:
        return self.t_arm_ns <= t_ns < self.t_disarm_ns

    # -- streams -------------------------------------------------------------------------------------
    def _rng(self, kind: str, purpose: int) -> np.random.Generator:
        return np.random.default_rng(np.random.SeedSequence([self.options.seed, _STREAM_IDS[kind], purpose]))

    def _host(self, kind: str, rng: np.random.Generator, scale: float = 1.0) -> Callable[[int], int]:
        latency = int(round(self.options.latency_ms.get(kind, 5.0) * 1e6))
        sigma = self.options.host_jitter_ms * 1e6 * scale
        last = [0]

        def stamp(t_ns: int) -> int:
            jitter = int(round(rng.normal(0.0, sigma))) if sigma > 0 else 0
            t = max(int(t_ns) + latency + jitter, int(t_ns) + 1000, last[0] + 1000)
            last[0] = t
            return t

        return stamp

    def _camera_stream(self, name: str) -> Iterator[SimSample]:
        cam = self.stack.camera(name)
        o = self.options
        render = self.renderer(name)
        noise_rng = self._rng(name, 1)
        timing_rng = self._rng(name, 2)
        host = self._host(name, timing_rng)
        fx, cx, cy = cam.intrinsics.fx, cam.intrinsics.cx, cam.intrinsics.cy
        effects: ThermalEffects | OpticalEffects
        if cam.modality == "thermal":
            effects = ThermalEffects(self._rng(name, 3), cam.height, cam.width, fx, cx, cy, o.noise)
        else:
            channels = 3 if cam.modality == "color" else 1
            effects = OpticalEffects(self._rng(name, 3), cam.height, cam.width, channels, fx, cx, cy, o.night, o.noise,
                                     frame_period_s=1.0 / cam.rate_hz)
        times = self.frame_times(name)
        poses = self.T_world_camera(name, times)
        ffc_on = cam.modality == "thermal" and o.ffc_period_s > 0 and o.ffc_duration_s > 0
        period_ns = int(round(o.ffc_period_s * 1e9))
        first_ns = self.t_start_ns + int(round(o.ffc_first_s * 1e9))
        ffc_dur_ns = int(round(o.ffc_duration_s * 1e9))
        # the plan: FFC state per frame (known in advance), which frames are rendered
        plan = []
        for t in times:
            t = int(t)
            in_ffc, since_frac = False, 0.0
            if ffc_on:
                if t >= first_ns:
                    j = (t - first_ns) // period_ns
                    start = first_ns + j * period_ns
                    in_ffc = t < start + ffc_dur_ns
                    since_frac = (t - start - ffc_dur_ns) / period_ns if not in_ffc else 0.0
                else:
                    since_frac = (t - self.t_start_ns) / period_ns
            plan.append((t, in_ffc, since_frac))
        render_idx = [n for n, (_, in_ffc, _) in enumerate(plan) if not in_ffc or n == 0]

        def produce(n: int) -> tuple[np.ndarray, Callable[[], np.ndarray]]:
            clean, label = render.render_lazy(poses[n])
            if isinstance(effects, ThermalEffects):  # the thermal camera's
                img = effects.apply(clean, noise_rng, plan[n][2])
            else:
                img = effects.apply(clean, noise_rng)
            return img, _memo(label)

        # frames are rendered in order by one worker thread per camera, RENDER_AHEAD frames ahead of
        # the consumer (OpenCV releases the GIL: cameras render in parallel with everything else);
        # each camera's noise generator is used in frame order, so the bytes stay deterministic
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"sim-{name}") if RENDER_AHEAD else None
        pending: dict[int, Future] = {}
        next_submit = 0
        frozen: tuple[np.ndarray, Callable[[], np.ndarray]] | None = None
        try:
            for n, (t, in_ffc, _) in enumerate(plan):
                dropped = bool(timing_rng.random() < o.drop_prob)
                t_host = host(t)
                if in_ffc and n != 0:
                    img, label = frozen  # type: ignore[misc]
                else:
                    if pool is None:
                        img, label = produce(n)
                    else:
                        while next_submit < len(render_idx) and (
                                len(pending) <= RENDER_AHEAD or render_idx[next_submit] <= n):
                            k = render_idx[next_submit]
                            pending[k] = pool.submit(produce, k)
                            next_submit += 1
                        img, label = pending.pop(n).result()
                    frozen = (img, label)
                yield SimSample(kind=name, t_ns=t, t_host_ns=t_host, seq=n, data=img, label_fn=label, ffc=in_ffc,
                                dropped=dropped)
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)

    def _imu_stream(self) -> Iterator[SimSample]:
        o, spec = self.options, self.stack.imu
        rng = self._rng("imu", 1)
        host = self._host("imu", self._rng("imu", 2), scale=0.2)
        noise = ImuNoise(rng, len(self.imu_ns), spec.rate_hz, spec.noise.acc_n, spec.noise.gyr_n,
                         spec.noise.acc_w, spec.noise.gyr_w) if o.noise else None
        counts = np.searchsorted(self.pulse_ns, self.imu_ns, side="right")
        chunk = 2000
        for c0 in range(0, len(self.imu_ns), chunk):
            ts = self.imu_ns[c0:c0 + chunk]
            ideal = self.trajectory.imu_ideal(self.trajectory.tau(ts))
            gyro, accel = ideal.gyro, ideal.accel
            if noise is not None:
                sl = slice(c0, c0 + len(ts))
                gyro = gyro + noise.gyro_bias[sl] + noise.gyro_white[sl]
                accel = accel + noise.accel_bias[sl] + noise.accel_white[sl]
            for i, t in enumerate(ts):
                j = c0 + i
                count = int(counts[j])
                since = int(t - self.pulse_ns[count - 1]) if count > 0 else int(t - self.t_start_ns)
                yield SimSample(kind="imu", t_ns=int(t), t_host_ns=host(int(t)), seq=count,
                                data=ImuData(gyro[i].copy(), accel[i].copy(), count, since))

    def _trigger_stream(self) -> Iterator[SimSample]:
        host = self._host("trigger", self._rng("trigger", 2), scale=0.0)
        for k, t in enumerate(self.pulse_ns):
            yield SimSample(kind="trigger", t_ns=int(t), t_host_ns=host(int(t)), seq=k + 1, data=k + 1)

    def _gnss_stream(self, kind: str) -> Iterator[SimSample]:
        o = self.options
        rate = self.stack.gnss.rate_hz
        n = int(np.floor((o.duration_s - GNSS_PHASE_NS * 1e-9) * rate)) + 1
        ts = self.t_start_ns + GNSS_PHASE_NS + np.round(np.arange(n) * (1e9 / rate)).astype(np.int64)
        ts = ts[ts < self.t_end_ns]
        pos = self.trajectory.position(self.trajectory.tau(ts))
        rng = self._rng(kind, 1)
        if kind == "gnss":  # u-blox M8N: ~1 m horizontal, 2 m vertical, slowly wandering
            sigma = np.array([0.8, 0.8, 1.6])
            err = gauss_markov(rng, len(ts), 1.0 / rate, sigma, 60.0) + rng.standard_normal((len(ts), 3)) * 0.05
        else:  # autopilot with RTK: 2 cm horizontal, 4 cm vertical
            sigma = np.array([0.02, 0.02, 0.04])
            err = rng.standard_normal((len(ts), 3)) * sigma
        if o.noise:
            pos = pos + err
        lla = enu_to_lla(pos, self.origin_lla)
        host = self._host(kind, self._rng(kind, 2))
        for i, t in enumerate(ts):
            yield SimSample(kind=kind, t_ns=int(t), t_host_ns=host(int(t)), seq=i,
                            data=GnssData(float(lla[i, 0]), float(lla[i, 1]), float(lla[i, 2]),
                                          float(sigma[0]), float(sigma[2])))

    def _pose_stream(self) -> Iterator[SimSample]:
        o = self.options
        rate = self.stack.autopilot.pose_rate_hz
        n = int(np.floor(o.duration_s * rate)) + 1
        ts = self.t_start_ns + np.round(np.arange(n) * (1e9 / rate)).astype(np.int64)
        ts = ts[ts < self.t_end_ns]
        T = self.trajectory.T_world_vehicle(self.trajectory.tau(ts))
        if o.noise:  # EKF output: 1 cm, 0.1 deg
            rng = self._rng("pose", 1)
            T[:, :3, 3] += rng.standard_normal((len(ts), 3)) * 0.01
            dR = Rotation.from_rotvec(rng.standard_normal((len(ts), 3)) * np.deg2rad(0.1)).as_matrix()
            T[:, :3, :3] = T[:, :3, :3] @ dR
        host = self._host("pose", self._rng("pose", 2))
        for i, t in enumerate(ts):
            yield SimSample(kind="pose", t_ns=int(t), t_host_ns=host(int(t)), seq=i, data=PoseData(T[i]))

    def _state_stream(self) -> Iterator[SimSample]:
        ticks = list(range(self.t_start_ns, self.t_end_ns, int(1e9 / STATE_RATE_HZ)))
        events = sorted(
            set(ticks) | {t for t in (self.t_arm_ns, self.t_disarm_ns) if self.t_start_ns <= t < self.t_end_ns}
        )
        host = self._host("state", self._rng("state", 2))
        for i, t in enumerate(events):
            yield SimSample(kind="state", t_ns=int(t), t_host_ns=host(int(t)), seq=i,
                            data=StateData(armed=self.armed_at(t)))

    def samples(self, kinds: Iterable[str] | None = None) -> Iterator[SimSample]:
        """Every sample of the selected kinds (default all) in true-time order.

        Each stream draws its randomness from its own seeded generator, so the samples of one kind
        do not depend on which other kinds are selected. Dropped frames are yielded with
        ``dropped=True`` (truth for tests); a publisher must skip them.
        """
        wanted = set(KINDS if kinds is None else kinds)
        bad = wanted - set(KINDS)
        if bad:
            raise ConfigError("<samples>", "kinds", sorted(bad), f"a subset of {list(KINDS)}")
        streams: list[Iterator[SimSample]] = []
        for name in self.options.cameras:
            if name in wanted:
                streams.append(self._camera_stream(name))
        if "imu" in wanted:
            streams.append(self._imu_stream())
        if "trigger" in wanted:
            streams.append(self._trigger_stream())
        for kind in ("gnss", "global"):
            if kind in wanted:
                streams.append(self._gnss_stream(kind))
        if "pose" in wanted:
            streams.append(self._pose_stream())
        if "state" in wanted:
            streams.append(self._state_stream())
        yield from heapq.merge(*streams, key=lambda s: (s.t_ns, _PRIORITY[s.kind]))

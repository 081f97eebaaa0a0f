"""``rgbt bench sync``: trigger-grid restamping error, mis-associations and drop counting.

Streams come from the simulator (``rgbt.sim.SimStack``, contract C3; ``--source sim``, the
default when it is installed, 30 s) or from the built-in generator :func:`generate`
(``--source builtin``, 120 s; synthetic, no rendering, so long runs are cheap):

- host clock = true time; the VN-100 clock runs ``imu_ppm`` fast with a boot offset;
- the trigger fires at ``rate_hz`` (its own crystal ``trigger_ppm`` off); pulse k = SyncInCnt k;
- every arrival is late by a fixed latency plus half-normal jitter of scale ``jitter_ms``
  (an arrival never precedes its event);
- thermal fires on every pulse, colour on every 2nd; each frame is lost with ``drop_prob``;
  FFC freezes thermal for ``ffc_duration_s`` every ``ffc_period_s`` (frames flagged ``ffc``).

The restamper sees events in host-arrival order, exactly as a live node would.
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from rgbt.output import print_table
from rgbt.sync import CameraSync, RestamperOptions, TriggerRestamper


@dataclass
class GenOptions:
    duration_s: float = 120.0
    rate_hz: float = 60.0
    imu_rate_hz: float = 200.0
    jitter_ms: float = 3.0
    drop_prob: float = 0.01
    ffc_period_s: float = 30.0
    ffc_duration_s: float = 0.5
    imu_latency_ms: float = 1.35  # 124-byte packet at 921600 baud
    thermal_latency_ms: float = 12.0
    color_latency_ms: float = 8.0
    imu_ppm: float = 25.0
    trigger_ppm: float = -8.0
    seed: int = 0


@dataclass(frozen=True)
class Event:
    """One arrival: kind "imu" or a camera name; ``truth`` = true pulse index for frames."""

    t_host_ns: int
    kind: str
    seq: int  # frame counter / SyncInCnt
    t_sensor_ns: int = 0
    t_since_sync_ns: int = 0
    ffc: bool = False
    truth_pulse: int = -1
    truth_t_ns: int = 0


def generate(o: GenOptions) -> tuple[list[Event], dict]:
    """Synthetic streams in host-arrival order and the ground truth counts."""
    rng = np.random.default_rng(o.seed)
    P = 1e9 / o.rate_hz * (1 + o.trigger_ppm * 1e-6)
    t_p0 = 3_000_000.0  # first pulse at 3 ms true time
    n_pulses = int((o.duration_s * 1e9 - t_p0) // P)
    pulse_true = t_p0 + P * np.arange(1, n_pulses + 1)  # pulse k at index k-1
    boot = 7_123_456_789  # VN-100 TimeStartup at true 0
    scale = 1 + o.imu_ppm * 1e-6

    def jitter(n: int) -> np.ndarray:
        return np.abs(rng.normal(0.0, o.jitter_ms * 1e6, n))

    events: list[Event] = []
    # IMU on its own 5 ms grid
    dt_s = 1e9 / o.imu_rate_hz
    n_imu = int(o.duration_s * 1e9 / dt_s * 0.999)
    t_sensor = boot + dt_s * np.arange(1, n_imu + 1)
    t_true = (t_sensor - boot) / scale
    count = np.searchsorted(pulse_true, t_true, side="right")  # pulses at or before the sample
    t_host = t_true + o.imu_latency_ms * 1e6 + jitter(n_imu)
    for i in range(n_imu):
        k = int(count[i])
        since = int(round(t_sensor[i] - (boot + pulse_true[k - 1] * scale))) if k > 0 else 0
        events.append(Event(int(round(t_host[i])), "imu", k, int(round(t_sensor[i])), since))
    truth: dict[str, Any] = {"drops": {}, "ffc_gaps": 0, "frames": {}}
    for cam, div, lat, counter0 in (("thermal", 1, o.thermal_latency_ms, 1000), ("color", 2, o.color_latency_ms, 50)):
        ks = np.arange(1, n_pulses + 1)
        ks = ks[ks % div == 0] if div > 1 else ks
        lost = rng.random(ks.size) < o.drop_prob
        arr = pulse_true[ks - 1] + lat * 1e6 + jitter(ks.size)
        delivered = np.flatnonzero(~lost)
        first, last = delivered[0], delivered[-1]
        truth["drops"][cam] = int(lost[first:last + 1].sum())
        truth["frames"][cam] = int(delivered.size)
        in_ffc_prev = False
        for j, k in enumerate(ks):
            t_k = pulse_true[k - 1]
            ffc = False
            if cam == "thermal" and o.ffc_period_s > 0:
                phase = (t_k / 1e9) % o.ffc_period_s
                ffc = t_k / 1e9 > o.ffc_period_s / 2 and phase < o.ffc_duration_s
            if lost[j]:
                continue
            if ffc and not in_ffc_prev:
                truth["ffc_gaps"] += 1
            in_ffc_prev = ffc
            events.append(Event(int(round(arr[j])), cam, counter0 + j, ffc=ffc, truth_pulse=int(k),
                                truth_t_ns=int(round(t_k))))
    events.sort(key=lambda e: e.t_host_ns)
    return events, truth


def sim_events(duration_s: float, seed: int, jitter_ms: float = 3.0, drop_prob: float = 0.01,
               ffc_period_s: float = 10.0) -> tuple[list[Event], dict, dict]:
    """Events from ``rgbt.sim.SimStack`` (contract C3; synthetic). The simulated VN-100 clock is
    the true clock; frame ``n`` of a camera with divider ``d`` is exposed by pulse ``n*d``, whose
    SyncIn count is ``n*d + 1`` (the simulator's timeline). Returns events, truth and the
    simulator's mean latencies (ms) per stream."""
    from rgbt.sim import SimOptions, SimStack  # noqa: PLC0415 - optional dependency on [sim]

    opts = SimOptions(duration_s=duration_s, seed=seed, host_jitter_ms=jitter_ms, drop_prob=drop_prob,
                      ffc_period_s=ffc_period_s, ffc_first_s=min(5.0, duration_s / 3), cameras=["thermal", "color"],
                      noise=False, world_size_px=256)
    stack = SimStack(opts)
    div = {name: int(stack.stack.cameras[name].trigger_divider) for name in ("thermal", "color")}
    events: list[Event] = []
    truth: dict = {"drops": {}, "ffc_gaps": 0, "frames": {}}
    seen: dict[str, list[bool]] = {"thermal": [], "color": []}
    prev_ffc = False
    for s in stack.samples():
        if s.kind == "imu":
            events.append(Event(int(s.t_host_ns), "imu", int(s.data.syncin_count), int(s.t_ns),
                                int(s.data.t_since_sync_ns)))
        elif s.kind in seen:
            seen[s.kind].append(bool(s.dropped))
            if s.dropped:
                continue
            if s.kind == "thermal":
                if s.ffc and not prev_ffc:
                    truth["ffc_gaps"] += 1
                prev_ffc = bool(s.ffc)
            events.append(Event(int(s.t_host_ns), s.kind, int(s.seq), ffc=bool(s.ffc),
                                truth_pulse=int(s.seq) * div[s.kind] + 1, truth_t_ns=int(s.t_ns)))
    for cam, dropped in seen.items():
        idx = [i for i, d in enumerate(dropped) if not d]
        truth["drops"][cam] = sum(dropped[idx[0]:idx[-1] + 1]) if idx else 0
        truth["frames"][cam] = len(idx)
    events.sort(key=lambda e: e.t_host_ns)
    return events, truth, dict(opts.latency_ms)


def evaluate(events: list[Event], truth: dict, options: RestamperOptions) -> dict:
    """Run the restamper over the events; compare with the truth."""
    rs = TriggerRestamper(options)
    errors = []
    mis = 0
    detected = {c: 0 for c in options.cameras}
    per_slot: dict[int, set[int]] = {}
    unlocked = 0
    t0 = time.perf_counter()
    for e in events:
        if e.kind == "imu":
            rs.add_imu(e.seq, e.t_host_ns, e.t_since_sync_ns, e.t_sensor_ns)
            continue
        r = rs.add_frame(e.kind, e.seq, e.t_host_ns, e.ffc)
        detected[e.kind] += r.dropped_before
        if not r.locked or r.t_trigger_ns is None or r.slot is None:  # slot: None exactly when the stamp is
            unlocked += 1
            continue
        err = r.t_trigger_ns - e.truth_t_ns
        errors.append(err)
        if r.slot != e.truth_pulse:
            mis += 1
        per_slot.setdefault(r.slot, set()).add(r.t_trigger_ns)
    elapsed = time.perf_counter() - t0
    err_ms = np.abs(np.asarray(errors, dtype=np.float64)) / 1e6
    st = rs.status()
    return {
        "restamp_error_ms": {
            "p99": float(np.percentile(err_ms, 99)) if err_ms.size else None,
            "max": float(err_ms.max()) if err_ms.size else None,
            "median": float(np.median(err_ms)) if err_ms.size else None,
        },
        "misassociations": mis,
        "drops_true": int(sum(truth["drops"].values())),
        "drops_detected": int(sum(detected.values())),
        "drops_per_camera": {c: {"true": truth["drops"].get(c, 0), "detected": detected.get(c, 0)} for c in detected},
        "ffc_gaps_true": truth["ffc_gaps"],
        "ffc_gaps_detected": st["cameras"]["thermal"]["ffc_gaps"],
        "frames_restamped": len(errors),
        "frames_before_lock": unlocked,
        "slots_with_differing_stamps": sum(1 for v in per_slot.values() if len(v) > 1),
        "status": st,
        "restamper_us_per_event": elapsed / max(len(events), 1) * 1e6,
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source", choices=["auto", "builtin", "sim"], default="auto",
                        help="stream source: rgbt.sim.SimStack, the built-in generator, or auto (the simulator "
                             "when it is installed, else the generator); both synthetic")
    parser.add_argument("--duration", type=float, default=None,
                        help="seconds of streams (default 30 with the simulator, 120 with the generator)")
    parser.add_argument("--jitter-ms", type=float, default=3.0, help="host arrival jitter scale (ms)")
    parser.add_argument("--drop-prob", type=float, default=0.01, help="probability a frame is lost")
    parser.add_argument("--jitter-model", choices=["one_sided", "symmetric"], default="one_sided")
    parser.add_argument("--seed", type=int, default=0)


@dataclass(frozen=True)
class SyncBenchOptions:
    """What ``rgbt bench sync`` measures (both sources are synthetic)."""

    source: str = "auto"  #: "sim" (rgbt.sim.SimStack), "builtin" (:func:`generate`) or "auto" (sim when installed)
    duration_s: float | None = None  #: seconds of streams (None: 30 with the simulator, 120 with the generator)
    jitter_ms: float = 3.0  #: host arrival jitter scale
    drop_prob: float = 0.01  #: probability a frame is lost
    jitter_model: str = "one_sided"  #: or "symmetric" (:class:`rgbt.sync.RestamperOptions`)
    seed: int = 0


def options_from_args(args: argparse.Namespace) -> SyncBenchOptions:
    """The options of the command line :func:`add_arguments` defines."""
    return SyncBenchOptions(source=args.source, duration_s=args.duration, jitter_ms=args.jitter_ms,
                            drop_prob=args.drop_prob, jitter_model=args.jitter_model, seed=args.seed)


def _sim_available() -> bool:
    return importlib.util.find_spec("rgbt.sim") is not None


def run(options: SyncBenchOptions) -> dict:
    source = options.source if options.source != "auto" else ("sim" if _sim_available() else "builtin")
    duration_s = options.duration_s
    if duration_s is None:
        duration_s = 30.0 if source == "sim" else 120.0
    if source == "sim":
        events, truth, lat = sim_events(duration_s, options.seed, options.jitter_ms, options.drop_prob)
        # the simulator clamps arrivals to >= the true time + 1 us: the IMU's lower envelope is ~0 latency
        opts = RestamperOptions(cameras={"thermal": CameraSync(1, int(lat["thermal"] * 1e6)),
                                         "color": CameraSync(2, int(lat["color"] * 1e6))},
                                imu_latency_ns=0, jitter_model=options.jitter_model)
        gen = {"source": "rgbt.sim.SimStack (synthetic)", "duration_s": duration_s, "seed": options.seed,
               "jitter_ms": options.jitter_ms, "drop_prob": options.drop_prob, "latency_ms": lat}
    else:
        g = GenOptions(duration_s=duration_s, jitter_ms=options.jitter_ms, drop_prob=options.drop_prob,
                       seed=options.seed)
        events, truth = generate(g)
        opts = RestamperOptions(
            trigger_rate_hz=g.rate_hz,
            cameras={"thermal": CameraSync(1, int(g.thermal_latency_ms * 1e6)),
                     "color": CameraSync(2, int(g.color_latency_ms * 1e6))},
            imu_latency_ns=int(g.imu_latency_ms * 1e6), jitter_model=options.jitter_model)
        gen = {"source": "built-in generator (synthetic)", **g.__dict__}
    result = evaluate(events, truth, opts)
    result["streams"] = gen
    return result


def print_result(result: dict) -> None:
    e = result["restamp_error_ms"]
    print_table("trigger-grid restamping (" + result["streams"]["source"] + ")", ["metric", "value"], [
        ("restamp error p99 (ms)", e["p99"]), ("restamp error max (ms)", e["max"]),
        ("mis-associations", result["misassociations"]),
        ("drops true / detected", f"{result['drops_true']} / {result['drops_detected']}"),
        ("FFC gaps true / detected", f"{result['ffc_gaps_true']} / {result['ffc_gaps_detected']}"),
        ("frames restamped / before lock", f"{result['frames_restamped']} / {result['frames_before_lock']}"),
        ("restamper cost (us/event)", result["restamper_us_per_event"]),
    ])

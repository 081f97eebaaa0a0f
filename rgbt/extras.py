"""Which rgbt extra provides a third-party module, and the error for a missing one.

``pip install "rgbt[EXTRA]"`` installs an extra; ``scripts/setup.sh`` installs the demo set.
"""

from __future__ import annotations

from rgbt.errors import MissingCapability

#: top-level module -> the extra of pyproject.toml that installs it
EXTRA_OF_MODULE: dict[str, str] = {
    "onnxruntime": "cpu",
    "tensorrt": "gpu",
    "pycuda": "gpu",
    "onnx": "gpu",
    "evo": "eval",
    "matplotlib": "eval",
    "scipy": "eval",
    "pyorbslam3": "eval",
    "rclpy": "ros-wheels",
    "rosidl_runtime_py": "ros-wheels",
    "sensor_msgs": "ros-wheels",
    "std_msgs": "ros-wheels",
    "geometry_msgs": "ros-wheels",
    "nav_msgs": "ros-wheels",
    "torch": "train",
    "pyarrow": "parquet",
    "ray": "scale",
}

_HINTS = {
    "scipy": "scipy is also in the 'sim' extra",
    "pyorbslam3": "ORB-SLAM3 wheels exist for x86_64 Linux only; score an estimator's output with `rgbt vio ate`",
    "tensorrt": "on a Jetson, TensorRT comes with JetPack: use scripts/setup.sh system-ros",
    "pycuda": "build it on the target: pip install pycuda (needs the CUDA toolkit)",
    "rclpy": "or source a ROS 2 install and use scripts/setup.sh system-ros",
    "ray": "or run the campaign with --executor local",
}


def missing_module(module: str, needed_by: str | None = None) -> MissingCapability:
    """The :class:`MissingCapability` for a third-party ``module`` (dotted names allowed) not installed."""
    top = module.split(".")[0]
    what = f"the Python package '{top}'" + (f" (needed by {needed_by})" if needed_by else "")
    extra = EXTRA_OF_MODULE.get(top)
    hint = _HINTS.get(top) if extra else f"pip install {top}, or the rgbt extra that provides it"
    return MissingCapability(what, extra=extra, hint=hint)

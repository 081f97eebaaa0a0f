#!/usr/bin/env bash
# Set up rgbt in ./.venv on a fresh machine (Python >= 3.10 with venv; package registries only).
#   scripts/setup.sh        everything `rgbt demo` needs: core + cpu + eval + sim + ros-wheels
#   scripts/setup.sh dev    the same plus the test tools
#   scripts/setup.sh onboard   core + cpu only (what the aircraft runs; add extras with EXTRAS=gpu,...)
#   scripts/setup.sh system-ros   on a machine with ROS 2 installed (source /opt/ros/<distro>/setup.bash
#                              first): a venv with --system-site-packages, core + cpu + eval + sim, no PyPI
#                              ROS wheels (rclpy, messages and TensorRT come from the system)
# Versions come from locks/py<XY>-<machine>.txt (as pip constraints) when one exists for the
# interpreter and machine; scripts/lock.sh regenerates them. PYTHON=python3.X picks the interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-demo}
case "$mode" in
  demo) extras="demo" ;;
  dev) extras="dev" ;;
  onboard) extras="cpu" ;;
  system-ros) extras="cpu,eval,sim"
    if [ -z "${ROS_DISTRO:-}" ] || [ ! -f "/opt/ros/${ROS_DISTRO}/setup.bash" ]; then
      echo "scripts/setup.sh system-ros: no ROS 2 sourced: run 'source /opt/ros/<distro>/setup.bash' first" >&2; exit 2
    fi
    if [ -f .venv/pyvenv.cfg ] && ! grep -q "include-system-site-packages = true" .venv/pyvenv.cfg; then
      echo "scripts/setup.sh system-ros: .venv exists without --system-site-packages: remove it first" >&2; exit 2
    fi
    PYTHON=${PYTHON:-/usr/bin/python3} ;;  # the interpreter the ROS 2 packages were built for
  *) echo "scripts/setup.sh: unknown mode '$mode' (expected: demo, dev, onboard, system-ros)" >&2; exit 2 ;;
esac
[ -n "${EXTRAS:-}" ] && extras="${extras},${EXTRAS}"
PY=${PYTHON:-python3}
venv_args=()
[ "$mode" = "system-ros" ] && venv_args=(--system-site-packages)
[ -x .venv/bin/python ] || "$PY" -m venv "${venv_args[@]}" .venv
tag=$(.venv/bin/python -c 'import platform, sys; print(f"py{sys.version_info[0]}{sys.version_info[1]}-{platform.machine()}")')
constraints=()
if [ -f "locks/${tag}.txt" ]; then
  constraints=(-c "locks/${tag}.txt")
else
  echo "scripts/setup.sh: no locks/${tag}.txt: resolving from the ranges in pyproject.toml" >&2
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q "${constraints[@]}" -e ".[${extras}]"
echo "rgbt installed in .venv (extras: ${extras}; constraints: ${constraints[*]:-none})"
if [ "$mode" = "system-ros" ]; then  # one rclpy stack only (exits non-zero naming which to remove)
  .venv/bin/python -c "from rgbt.ros_env import check_single_rclpy as c; s = c(); print('rclpy:', s.describe() if s else 'none found')"
fi

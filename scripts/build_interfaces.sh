#!/usr/bin/env bash
# Build ros2_ws/src/rgbt_interfaces (srv/ThermalQuery: the thermal query node's typed service) against
# the ROS 2 Jazzy wheels of a venv, without a ROS install, and install it.
#
#   scripts/build_interfaces.sh            install into the venv itself: its rclpy then imports
#                                          rgbt_interfaces with no further setup
#   scripts/build_interfaces.sh PREFIX     install into PREFIX; processes that use it need
#                                          PYTHONPATH=PREFIX/lib/pythonX.Y/site-packages and
#                                          LD_LIBRARY_PATH=PREFIX/lib
#   scripts/build_interfaces.sh --check    say what is missing and exit 3, or exit 0 when nothing is
#
# Needs cmake >= 3.19, a C and a C++ compiler, the Python headers, and the `ros-build` extra in the
# venv (`pip install -e ".[ros-build]"`; `scripts/setup.sh dev` installs it). PYTHON names the
# venv's interpreter (default .venv/bin/python); JOBS the parallel compile jobs (default: all CPUs).
# On a machine with ROS 2 installed (Jetson / NUC), build it like any package instead:
#   source /opt/ros/<distro>/setup.bash && cd ros2_ws && colcon build --packages-select rgbt_interfaces
# Measured on a 2-core dev host (nice 19, beside other load): ~10 s configure, ~30 s compile.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
prog="scripts/build_interfaces.sh"
check_only=0
prefix=""
case "${1:-}" in
  --check) check_only=1 ;;
  -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
  "") ;;
  *) prefix=$1 ;;
esac

py=${PYTHON:-.venv/bin/python}
missing=()
if [ ! -x "$py" ]; then
  echo "$prog: no Python interpreter at $py (set PYTHON to the venv's python)" >&2; exit 3
fi
py="$(cd "$(dirname "$py")" && pwd)/$(basename "$py")"  # absolute, symlink kept (a venv's python is one)
venv=$("$py" -c 'import sys; print(sys.prefix)')

if ! command -v cmake >/dev/null; then
  missing+=("cmake >= 3.19 (apt-get install cmake, or pip install cmake)")
else
  cmake_version=$(cmake --version | head -1 | awk '{print $3}')
  printf '%s\n' 3.19 "$cmake_version" | sort -V -C || missing+=("cmake >= 3.19 (found $cmake_version)")
fi
command -v "${CC:-cc}" >/dev/null || missing+=("a C compiler (${CC:-cc}; apt-get install build-essential)")
command -v "${CXX:-c++}" >/dev/null || missing+=("a C++ compiler (${CXX:-c++}; apt-get install build-essential)")
"$py" -c 'import os, sysconfig, sys; sys.exit(not os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
  || missing+=("the Python headers of $py (Python.h; apt-get install python3-dev)")
for mod in catkin_pkg ament_package em lark numpy; do
  "$py" -c "import $mod" 2>/dev/null || missing+=("the Python module $mod in $venv")
done
# ament_cmake / rosidl CMake packages the build loads (PyPI's metadata lacks some: see pyproject.toml)
for pkg in ament_cmake ament_cmake_include_directories ament_cmake_ros ament_cmake_gtest ament_cmake_gmock \
           ament_cmake_pytest python_cmake_module rosidl_default_generators rosidl_core_generators \
           rosidl_typesupport_fastrtps_c service_msgs; do
  [ -f "$venv/share/$pkg/cmake/${pkg}Config.cmake" ] || missing+=("the CMake package $pkg in $venv/share")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "$prog: cannot build rgbt_interfaces: missing ${missing[0]}" >&2
  for m in "${missing[@]:1}"; do echo "  and ${m}" >&2; done
  echo "  (the ROS 2 packages come with: $py -m pip install -e '.[ros-build]')" >&2
  if [ -n "${ROS_DISTRO:-}" ]; then
    echo "  ROS 2 $ROS_DISTRO is sourced: build with colcon instead (cd ros2_ws && colcon build --packages-select rgbt_interfaces)" >&2
  fi
  exit 3
fi
[ "$check_only" = 1 ] && { echo "$prog: every build tool found (venv $venv)"; exit 0; }

prefix=${prefix:-$venv}
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
build=$(mktemp -d -t rgbt_interfaces_build.XXXXXX)
trap 'rm -rf "$build"' EXIT
start=$(date +%s)
export PATH="$venv/bin:$PATH"
export AMENT_PREFIX_PATH="$venv"  # where ament finds the typesupports (its resource index)
cmake -S "$repo/ros2_ws/src/rgbt_interfaces" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
  -DCMAKE_PREFIX_PATH="$venv" -DCMAKE_INSTALL_PREFIX="$prefix" \
  -DPython3_EXECUTABLE="$py" -DPYTHON_EXECUTABLE="$py" \
  -DCMAKE_PROJECT_INCLUDE="$repo/scripts/pip_ros_wheels.cmake" >"$build/configure.log" 2>&1 \
  || { cat "$build/configure.log" >&2; echo "$prog: cmake configure failed (log above)" >&2; exit 1; }
cmake --build "$build" -j "${JOBS:-$(nproc)}" >"$build/build.log" 2>&1 \
  || { cat "$build/build.log" >&2; echo "$prog: compile failed (log above)" >&2; exit 1; }
cmake --install "$build" >"$build/install.log" 2>&1 \
  || { cat "$build/install.log" >&2; echo "$prog: install failed (log above)" >&2; exit 1; }
grep "pip ROS wheels:" "$build/configure.log" | sed 's/^-- /  /' || true
echo "$prog: rgbt_interfaces built and installed into $prefix in $(( $(date +%s) - start )) s"

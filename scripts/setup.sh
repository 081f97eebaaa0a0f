#!/usr/bin/env bash
# Set up rgbt in ./.venv on a fresh machine (Python >= 3.10 with venv; package registries only).
#   scripts/setup.sh        runtime + ROS 2 wheels (what `rgbt demo` needs)
#   scripts/setup.sh dev    the same plus the test tools
set -euo pipefail
cd "$(dirname "$0")/.."
extras="ros"
[ "${1:-}" = "dev" ] && extras="ros,dev"
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[${extras}]"
echo "rgbt installed in .venv (extras: ${extras})"

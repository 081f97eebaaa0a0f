#!/usr/bin/env bash
# Regenerate the per-target constraint files in locks/ from pyproject.toml (needs uv: `pip install uv`,
# part of the dev extra). Metadata only: nothing is installed. Existing pins are kept where they
# still satisfy pyproject.toml (uv prefers them), so a re-run only moves what must move.
#   scripts/lock.sh            all targets
#   scripts/lock.sh py311-x86_64
# Targets (lock name -> what it is for, extras locked):
#   py311-x86_64   this CI machine / dev boxes, PyPI ROS wheels      demo + dev
#   py312-x86_64   Ubuntu 24.04 NUC with system ROS 2 Jazzy          cpu, gpu, eval, sim
#   py310-aarch64  Jetson AGX Orin, JetPack 6, system ROS 2 Humble   cpu, eval, sim (TensorRT from JetPack)
#   py310-x86_64   Ubuntu 22.04 x86_64 with system ROS 2 Humble      cpu, eval, sim
# torch (the train extra, in dev) is locked to the CPU wheel torch==2.13.0+cpu (locks/torch-cpu.txt,
# an override): PyPI's Linux torch pulls the CUDA libraries. uv finds the +cpu wheel in
# TORCH_FIND_LINKS (a folder of wheels, or PyTorch's CPU wheel page, the default).
set -euo pipefail
cd "$(dirname "$0")/.."
UV=${UV:-$(command -v uv || echo .venv/bin/uv)}
TORCH_FIND_LINKS=${TORCH_FIND_LINKS:-https://download.pytorch.org/whl/cpu/torch/}
lock() {  # name python platform extras...
  local name=$1 py=$2 plat=$3; shift 3
  local args=()
  for e in "$@"; do args+=(--extra "$e"); done
  if [ "$name" = py311-x86_64 ]; then
    args+=(--override locks/torch-cpu.txt --find-links "$TORCH_FIND_LINKS")
  fi
  "$UV" pip compile pyproject.toml "${args[@]}" --python-version "$py" --python-platform "$plat" \
    --no-emit-package rgbt --no-python-downloads --quiet \
    --custom-compile-command "scripts/lock.sh $name" -o "locks/$name.txt"
  echo "locks/$name.txt"
}
want=${1:-all}
run() { if [ "$want" = all ] || [ "$want" = "$1" ]; then lock "$@"; fi; }
run py311-x86_64 3.11 x86_64-manylinux_2_28 dev
run py312-x86_64 3.12 x86_64-manylinux_2_28 cpu gpu eval sim
run py310-aarch64 3.10 aarch64-manylinux_2_28 cpu eval sim
run py310-x86_64 3.10 x86_64-manylinux_2_28 cpu eval sim

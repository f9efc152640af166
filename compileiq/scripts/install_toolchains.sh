#!/usr/bin/env bash
# Install the CUDA 13.3 and 13.5 compilers (ptxas, nvcc without cicc) from the nvidia-cuda-nvcc
# wheels into one folder each, for the knob-validation tests of the shipped 13.3/13.5 spaces:
#   <dest>/cuda-13.3/nvidia/cu13/bin/ptxas   <dest>/cuda-13.5/nvidia/cu13/bin/ptxas
# Idempotent: a version whose ptxas already reports the right release is left alone.
# Usage: install_toolchains.sh <dest> [pip]     (pip defaults to the pip next to this repo's .venv)
set -euo pipefail

dest="${1:?usage: install_toolchains.sh <dest-folder> [pip]}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
pip="${2:-$here/../../.venv/bin/pip}"
if [ ! -x "$pip" ]; then
    echo "install_toolchains.sh: no pip at $pip; pass the pip to use as the second argument" >&2
    exit 2
fi

is_release() {  # $1: binary, $2: x.y; no pipe into grep -q (pipefail would see ptxas killed by SIGPIPE)
    local out
    out="$("$1" --version 2>/dev/null)" || return 1
    [[ "$out" == *"release $2,"* ]]
}

for pin in 13.3.73 13.5.37; do
    minor="${pin%.*}"
    folder="$dest/cuda-$minor"
    ptxas="$folder/nvidia/cu13/bin/ptxas"
    if [ -x "$ptxas" ] && is_release "$ptxas" "$minor"; then
        echo "cuda-$minor: already installed ($ptxas)"
        continue
    fi
    rm -rf "$folder"
    # --no-deps: the wheel is self-contained; a folder per version keeps the two apart
    "$pip" install --quiet --disable-pip-version-check --no-deps --target "$folder" "nvidia-cuda-nvcc==$pin"
    if ! is_release "$ptxas" "$minor"; then
        echo "install_toolchains.sh: $ptxas is missing or not CUDA $minor after installing nvidia-cuda-nvcc==$pin" >&2
        exit 1
    fi
    echo "cuda-$minor: installed ($ptxas)"
done

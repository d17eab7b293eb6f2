#!/bin/bash
# The GPU tier in one go, for a session lent a GPU (keep it under 8 minutes of device time):
#   bench/gpu_check.sh [MODELS_DIR]
# 1. bench/gpu_device_check.py: every fused device kernel against the CPU reference on the device, each timed
#    against the reference on the GPU, and a training step op by op vs replayed as a CUDA graph;
# 2. with MODELS_DIR (written here by `.venv/bin/python bench/gpu_models.py --write DIR`, carried along):
#    bench/gpu_models.py with every fast path off (KERNELCORE_NATIVE=off: the reference kernels, op by op) and on
#    (fused kernels, captured graphs), the models checked against Paddle's outputs and timed beside PyTorch at batch 8
#    and 64, and debug steps per second through an LSTM on the GPU.
# Figures go to $OUT (or /tmp/gpu_check). Needs CuPy on the machine; prints why and stops where it is missing.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu_check}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
status=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt" 2>&1
if ! $PY -c "import cupy; cupy.cuda.runtime.getDeviceCount()" > "$OUT/cupy.txt" 2>&1; then
  echo "CuPy is missing or finds no GPU (see $OUT/cupy.txt): nothing checked"; exit 2
fi
timeout 270 $PY bench/gpu_device_check.py --out "$OUT" --repeat 30 2>&1 | tee "$OUT/device_check.txt"
status=${PIPESTATUS[0]}
if [ -n "${1:-}" ] && [ -d "$1" ]; then
  # batch 8 and 64, inference and training, and the stepping row: 270 + 100 + 110 s keeps the whole under 8 minutes
  KERNELCORE_NATIVE=off timeout 100 $PY bench/gpu_models.py "$1" --repeat 5 2>&1 | tee "$OUT/gpu_models_reference.txt"
  timeout 110 $PY bench/gpu_models.py "$1" --repeat 10 2>&1 | tee "$OUT/gpu_models_fused.txt"
fi
exit $status

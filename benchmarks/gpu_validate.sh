#!/usr/bin/env bash
# The product's accuracy benchmark: calibrate the GPU and run the validation suite on it (the
# committed runs in reports/validation/ come from it); results land in $OUT (device tool) or ./out.
# Usage (on the GPU machine, from the repo root):  benchmarks/gpu_validate.sh [--cases TEXT]
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
fi
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw --format=csv | tee "$OUT/nvidia-smi.txt"
python3 -m rooflab.cli calibrate --gpu --force -o hardware_specs/measured/h200.yaml 2>&1 | tee "$OUT/calibrate.log"
cp hardware_specs/measured/h200.yaml "$OUT/h200-calibrated.yaml"; cp reports/calibration/*.json "$OUT/" 2>/dev/null
python3 -m rooflab.cli validate --gpu --force -H hardware_specs/measured/h200.yaml -o "$OUT/validation.json" "$@" 2>&1 | tee "$OUT/validate.log"

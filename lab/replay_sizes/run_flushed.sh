#!/usr/bin/env bash
# One H100 device call: measure.py's replayed copies, back to back and after an L2 flush.
# Run on the device machine from the repository root, after the install line of
# ../shared/device/wheels.sh:   bash lab/replay_sizes/run_flushed.sh
set -uo pipefail
: "${OUT:?set OUT}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
    --format=csv > "$OUT/nvidia-smi.csv" 2>&1
timeout 150 python3 lab/replay_sizes/measure.py "$OUT/replay_sizes.json" > "$OUT/replay_sizes.log" 2>&1
echo "replay_sizes rc=$?"
grep -v -i warn "$OUT/replay_sizes.log" | tail -12

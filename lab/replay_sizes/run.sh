#!/usr/bin/env bash
# One H100 device call (when the H200 lease does not come): replayed kernels by size
# (lab/replay_sizes/measure.py), compiled extern calls by kind (lab/compiled_launch/externs.py),
# and the torch suite's host-bound compiled calibration cases on the same host.
# Run on the device machine from the repository root, after the install line of
# ../shared/device/wheels.sh:   ROOFLAB_GIT_SHA=<commit here> bash lab/replay_sizes/run.sh
source lab/compiled_steps/suite_cases.sh
timeout 100 python3 lab/replay_sizes/measure.py "$OUT/replay_sizes.json" > "$OUT/replay_sizes.log" 2>&1
echo "replay_sizes rc=$?"
timeout 200 python3 lab/compiled_launch/externs.py "$OUT/externs.json" > "$OUT/externs.log" 2>&1
echo "externs rc=$?"
grep -v -i warn "$OUT/replay_sizes.log" | tail -12
grep -v -i warn "$OUT/externs.log" | tail -10

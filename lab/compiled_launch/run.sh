#!/usr/bin/env bash
# One device call: the torch suite's host-bound compiled calibration cases (this host's fit of
# torch.compile's host cost) and measure.py's chains of k reductions, on the same host.
# Run on the device machine from the repository root, after the install line of
# ../shared/device/wheels.sh:   ROOFLAB_GIT_SHA=<commit here> bash lab/compiled_launch/run.sh
source lab/compiled_steps/suite_cases.sh
timeout 150 python3 lab/compiled_launch/measure.py "$OUT/chains.json" > "$OUT/chains.log" 2>&1
echo "chains rc=$?"
grep -v -i warn "$OUT/chains.log" | tail -8

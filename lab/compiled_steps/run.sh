#!/usr/bin/env bash
# One device call: the torch suite's host-bound compiled calibration cases (for this host's
# torch.compile fit) and two Hugging Face decode steps under torch.compile, on the same host.
# Run on the device machine from the repository root, after the install line of
# ../shared/device/wheels.sh:   ROOFLAB_GIT_SHA=<commit here> bash lab/compiled_steps/run.sh
source lab/compiled_steps/suite_cases.sh
M=lab/compiled_steps/measure.py
timeout 190 python3 $M llama3.2-1b 1 1024 "$OUT/llama3.2-1b_b1.json" > "$OUT/steps.log" 2>&1
echo "llama b1 rc=$?"
timeout 110 python3 $M qwen2.5-0.5b 1 1024 "$OUT/qwen2.5-0.5b_b1.json" --modes default \
    >> "$OUT/steps.log" 2>&1
echo "qwen b1 rc=$?"
grep -vE "^\s*$|Warning|warn" "$OUT/steps.log" | tail -20

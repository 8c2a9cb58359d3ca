#!/usr/bin/env bash
# One H100 device call (when the H200 lease does not come): the torch suite's host-bound
# compiled calibration cases with the reduction and linear chains (the fit of torch.compile's
# host cost, and Inductor's kernel counts for the chains), replayed kernels by size
# (lab/replay_sizes/measure.py), and compiled extern calls by kind
# (lab/compiled_launch/externs.py), and Llama-3.2-1B's decode step under torch.compile
# (lab/compiled_steps/measure.py, default mode and reduce-overhead), on one host.
# Run on the device machine from the repository root, after the install line of
# ../shared/device/wheels.sh:   ROOFLAB_GIT_SHA=<commit here> bash lab/replay_sizes/run.sh
set -uo pipefail
: "${OUT:?set OUT}"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
    --format=csv > "$OUT/nvidia-smi.csv" 2>&1
CASES=add_1M,silu_1M,sum_all_2M,softmax_16x128256,mlp_t1_d1024,rmsnorm_linear_t1_
CASES=$CASES,decoder_layer_b1_s16_,pointwise_chain5_2K,bias_gelu_chain4_16x4096
CASES=$CASES,reduction_chain,linear_chain
timeout 200 python3 -m rooflab.cli validate --gpu --backend torch --force --cases $CASES \
    -o "$OUT/suite.json" > "$OUT/suite.log" 2>&1
echo "suite rc=$?"
timeout 170 python3 lab/compiled_steps/measure.py llama3.2-1b 1 1024 "$OUT/llama3.2-1b_b1.json" \
    --modes default,reduce-overhead > "$OUT/steps.log" 2>&1
echo "llama b1 rc=$?"
timeout 80 python3 lab/replay_sizes/measure.py "$OUT/replay_sizes.json" > "$OUT/replay_sizes.log" 2>&1
echo "replay_sizes rc=$?"
timeout 110 python3 lab/compiled_launch/externs.py "$OUT/externs.json" > "$OUT/externs.log" 2>&1
echo "externs rc=$?"
grep -E "^(calibration|validation) |chain" "$OUT/suite.log" | tail -12
grep -v -i warn "$OUT/replay_sizes.log" | tail -12
grep -v -i warn "$OUT/externs.log" | tail -10
grep -vE "^\s*$|Warning|warn" "$OUT/steps.log" | tail -8

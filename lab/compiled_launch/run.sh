#!/usr/bin/env bash
# One device call: the torch suite's host-bound compiled calibration cases (this host's fit of
# torch.compile's host cost) and measure.py's chains of k reductions, on the same host.
# Run on the device machine from the repository root, after the install line of
# ../shared/device/wheels.sh:   ROOFLAB_GIT_SHA=<commit here> bash lab/compiled_launch/run.sh
set -uo pipefail
: "${OUT:?set OUT}"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
    --format=csv > "$OUT/nvidia-smi.csv" 2>&1
CASES=add_1M,silu_1M,sum_all_2M,softmax_16x128256,mlp_t1_d1024,rmsnorm_linear_t1_
CASES=$CASES,decoder_layer_b1_s16_,pointwise_chain5_2K,bias_gelu_chain4_16x4096
timeout 150 python3 -m rooflab.cli validate --gpu --backend torch --force --cases $CASES \
    -o "$OUT/suite.json" > "$OUT/suite.log" 2>&1
echo "suite rc=$?"
timeout 150 python3 lab/compiled_launch/measure.py "$OUT/chains.json" > "$OUT/chains.log" 2>&1
echo "chains rc=$?"
grep -v -i warn "$OUT/chains.log" | tail -8

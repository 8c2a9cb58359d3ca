#!/usr/bin/env bash
# Sourced by the compiled-call studies' run.sh: the GPU's state, then the torch suite's
# host-bound compiled calibration cases that torch_compare.fit_compiled_host and
# fit_compiled_graph_call rest on (1 to 13 kernels a call), timed into $OUT/suite.json.
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

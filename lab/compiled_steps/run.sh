#!/usr/bin/env bash
# One device call: the torch suite's host-bound compiled calibration cases (for this host's
# torch.compile fit) and three Hugging Face decode steps under torch.compile, on the same host.
# Run on the device machine from the repository root, after the install line of
# ../shared/device/wheels.sh:   ROOFLAB_GIT_SHA=<commit here> bash lab/compiled_steps/run.sh
set -uo pipefail
: "${OUT:?set OUT}"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
    --format=csv > "$OUT/nvidia-smi.csv" 2>&1
# the host-bound compiled calibration cases the fits rest on (1 to 13 kernels; see
# torch_compare.fit_compiled_host and fit_compiled_graph_call)
CASES=add_1M,silu_1M,sum_all_2M,softmax_16x128256,mlp_t1_d1024,rmsnorm_linear_t1_
CASES=$CASES,decoder_layer_b1_s16_,pointwise_chain5_2K,bias_gelu_chain4_16x4096
timeout 150 python3 -m rooflab.cli validate --gpu --backend torch --force --cases $CASES \
    -o "$OUT/suite.json" > "$OUT/suite.log" 2>&1
echo "suite rc=$?"
M=lab/compiled_steps/measure.py
timeout 190 python3 $M llama3.2-1b 1 1024 "$OUT/llama3.2-1b_b1.json" > "$OUT/steps.log" 2>&1
echo "llama b1 rc=$?"
timeout 110 python3 $M qwen2.5-0.5b 1 1024 "$OUT/qwen2.5-0.5b_b1.json" --modes default \
    >> "$OUT/steps.log" 2>&1
echo "qwen b1 rc=$?"
grep -vE "^\s*$|Warning|warn" "$OUT/steps.log" | tail -20

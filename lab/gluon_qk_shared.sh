#!/usr/bin/env bash
# Time bmm_pingpong.py configurations (lab/gluon_qk_shared.py) on the GPU, each in a process of its own (a
# faulting configuration then ends only its own case). Output: $OUT/gluon_qk_shared.log (or ./out).
# Usage, from the repo root on the GPU machine:  lab/gluon_qk_shared.sh [B*H S]
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
batch=${1:-64}; seq=${2:-2048}
log="$OUT/gluon_qk_shared.log"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  git rev-parse HEAD 2>/dev/null; } | tee "$log"
case_() { timeout 120 python3 lab/gluon_qk_shared.py --case "$@" 2>&1 | grep -v Warning | tail -4 | tee -a "$log"; }
case_ "$batch" "$seq" 0 0
# SHARE Q_SLOTS K_SLOTS EPI
for cfg in "2 2 2 1" "4 2 2 1" "8 2 2 1" "16 2 2 1" "16 1 4 1" "16 1 2 2"; do
  set -- $cfg
  case_ "$batch" "$seq" "$1" 132 "$2" "$3" "$4"
done
case_ "$batch" "$seq" 0 0

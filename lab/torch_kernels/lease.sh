#!/usr/bin/env bash
# One lease, one consistent set of figures: a fresh calibration (Triton and the torch suite's
# calibration split), then on that spec the torch backend (both splits: eager, CUDA graph,
# torch.compile) and the Triton backend. Everything lands in $OUT/lease.tar.gz with the logs.
# The spec is written as <gpu>.yaml, the datasheet spec's name of the GPU here (h200, h100-sxm):
# the gate names a Triton run's GPU by its spec's file stem, so the run can be committed as
# reports/validation/<gpu>-<date>.json as it is, beside its calibration's raw figures copied to
# reports/calibration/<gpu>-<date>.json (rooflab/validate/gate.py).
# Run on the device machine from the repository root, after the install line of
# ../shared/device/wheels.sh:   ROOFLAB_GIT_SHA=<commit here> bash lab/torch_kernels/lease.sh
# (the device's .git can be stale: `git rev-parse HEAD` there named an older commit than the
# tree it ran, 2026-12-06; provenance takes ROOFLAB_GIT_SHA first)
set -uo pipefail
: "${OUT:?set OUT}"
R="python3 -m rooflab.cli"
mkdir -p /tmp/lease
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
    *H100*) SPEC=/tmp/lease/h100-sxm.yaml ;;
    *) SPEC=/tmp/lease/h200.yaml ;;
esac
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
    --format=csv > /tmp/lease/nvidia-smi.csv 2>&1
t0=$(date +%s)
# the archive is rewritten after each step, so a run cut off by the time limit keeps what it did
pack() { tar -C /tmp -czf "$OUT/lease.tar.gz" lease; }
$R calibrate --gpu --force -o $SPEC > /tmp/lease/calibrate.log 2>&1
echo "calibrate rc=$? $(( $(date +%s) - t0 )) s" | tee -a /tmp/lease/steps.txt
# only what this calibration wrote (the tree may hold an earlier lease's files of the same day)
find reports/calibration -type f -newer /tmp/lease/nvidia-smi.csv -exec cp {} /tmp/lease/ \;
pack
$R validate --gpu --backend torch --force -H $SPEC \
    -o /tmp/lease/torch.json > /tmp/lease/torch.log 2>&1
echo "torch rc=$? $(( $(date +%s) - t0 )) s" | tee -a /tmp/lease/steps.txt
pack
timeout "${TRITON_S:-240}" $R validate --gpu --force -H $SPEC -o /tmp/lease/triton.json \
    > /tmp/lease/triton.log 2>&1
echo "triton rc=$? $(( $(date +%s) - t0 )) s" | tee -a /tmp/lease/steps.txt
pack
grep -E "^(calibration|validation) " /tmp/lease/torch.log
tail -4 /tmp/lease/triton.log

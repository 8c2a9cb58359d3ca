"""Which kernels of a CUDA-graph replay read only bytes the L2 holds.

A replayed kernel whose every load hits L2 starts sooner than one that waits on HBM for its
first lines. The spec holds the two per-kernel figures (graph_warm_launch_s, graph_launch_s;
measured in lab/replay_sizes/NOTES.md); this module says which applies to each kernel: the
warm one where every tensor the kernel reads is in L2.

- A tensor an earlier kernel of the step wrote is in L2 when the bytes moved since (by the
  kernels in between, and the tensor itself) fit the L2: it keeps the lines touched last. A
  scatter (a KV-cache write) leaves its target where it was.
- A step's input (a weight, a cache, the call's argument) is in L2 when the step is replayed
  back to back, as a decode loop replays it, and either the whole step's traffic fits the L2
  or the input is small (SMALL_INPUT_BYTES): the norm weights, biases, positions and rotary
  tables that a decode step's small kernels read behave as in L2 although the GEMMs stream
  far more than the L2 between two reads of them; a KV cache or a weight does not. After an
  L2 flush (as rooflab's Triton validation times a case) every input comes from HBM.
"""

from __future__ import annotations

from rooflab.ops import OPAQUE_TRAFFIC
from rooflab.schedule import Schedule

# A step input this small stays in L2 between back-to-back replays of a step that outgrows
# the L2. Every bound from 64 KiB to 1 MiB prices the measured steps alike: a decode step's
# small inputs are under 64 KiB, its KV caches and weights over 1 MiB.
SMALL_INPUT_BYTES = 1 << 20


def warm_kernels(info, schedule: Schedule, priced: list[dict], l2_bytes: float,
                 l2_flushed: bool = False) -> list:
    """Per kernel of `schedule`, whether every tensor it reads is in L2 when it starts: a
    bool, or per grid point a boolean array where the bytes vary over a sweep. `info`: the
    graph's facts (rooflab.cost's _Graphinfo: each op's read positions, view roots);
    `priced`: each kernel's numbers (its HBM bytes read and written); `l2_flushed`: the step
    runs after an L2 flush, else it is replayed back to back. An opaque op's declared
    traffic counts as a step input that is never small."""
    g = schedule.graph
    moved_before = [0]                    # HBM bytes moved by kernels 0 .. i-1
    for p in priced:
        moved_before.append(moved_before[-1] + p["hbm_read_bytes"] + p["hbm_write_bytes"])
    step_fits = False if l2_flushed else moved_before[-1] <= l2_bytes
    written_at: dict[str, int] = {}       # root tensor -> the last kernel that wrote it
    warm = []
    for i, kernel in enumerate(schedule.kernels):
        made = {info.rt(t) for j in kernel.ops for t in g.ops[j].outputs}
        ok = True
        for j in kernel.ops:
            for pos, _ in info.costs[j].reads:
                t = info.rt(g.ops[j].inputs[pos]) if pos != OPAQUE_TRAFFIC else None
                if t in made:
                    continue
                p = written_at.get(t)
                if p is not None:
                    # the lines moved since t was written, t's own among them
                    ok = ok & (moved_before[i] - moved_before[p + 1] + g.tensors[t].nbytes
                               <= l2_bytes)
                elif l2_flushed:
                    ok = False
                else:
                    ok = ok & (step_fits | (t is not None
                                            and g.tensors[t].nbytes <= SMALL_INPUT_BYTES))
        warm.append(ok)
        for j in kernel.ops:
            op = g.ops[j]
            if j not in info.scatters:
                written_at.update(dict.fromkeys((info.rt(t) for t in op.outputs), i))
                continue
            # a scatter writes a few rows of its target (input 0): its result is where the
            # target was
            out, target = info.rt(op.outputs[0]), info.rt(op.inputs[0])
            if target in written_at:
                written_at[out] = written_at[target]
            else:
                written_at.pop(out, None)
    return warm

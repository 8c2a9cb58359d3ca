"""What one step keeps in one GPU's memory: its weights, its KV cache, its inputs, the peak of
the activations it makes, and the workspace the CUDA stack holds beyond any tensor.

Which graph input is which is not declared anywhere; `tensor_roles` tells them apart by how
their shapes answer a change of the workload's sizes (the rule is in its docstring). Bytes are
exact: a tensor's `nbytes` (block scales included), summed.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Callable, Mapping

import numpy as np

from rooflab.graph import Graph
from rooflab.grid import Values
from rooflab.ops import KINDS, Role

MiB = 1 << 20

# What a PyTorch process on one Hopper GPU holds beyond its tensors, as one allowance:
#   400 MiB  the CUDA context with lazy module loading (PyTorch's default since 1.13): "around
#            400MB" (ptrblck, pytorch/pytorch#109888); 287,047,680 B measured as total - free
#            after one tensor in pytorch/pytorch#86509 (666,632,192 B with eager loading)
#    32 MiB  the cuBLAS workspace: 32 MiB on Hopper, the size cuBLAS recommends there
#            (docs.nvidia.com/cuda/cublas, cublasSetWorkspace; PyTorch's CublasHandlePool,
#            pytorch/pytorch#89027: ":4096:2:16:8 default, 32MiB for Hopper")
#    32 MiB  the cuBLASLt workspace: 32 MiB on sm90 (pytorch/pytorch#120925)
#    48 MiB  the caching allocator's slack, an allowance rather than a figure: it rounds blocks
#            up (512 B; large ones to 2 MiB) and serves 1-10 MiB requests from 20 MiB segments
#            (kSmallBuffer, kLargeBuffer, kRoundLarge in c10/cuda/CUDACachingAllocator.cpp)
# = 512 MiB. NB: one stream, one handle; each extra stream gets its own cuBLAS workspaces.
WORKSPACE_BYTES = (400 + 32 + 32 + 48) * MiB

# The workload sizes a probe changes: one sequence more, one prompt token more, one cached
# token more.
PROBED = ("batch", "seq", "context")

# Inputs of these dtypes are data a step is given (token ids, positions, counters, masks):
# no weight or cache format is a 64-bit integer or a boolean.
_DATA_DTYPES = frozenset({"int64", "bool"})
_CACHE_PREFIX = "kv_cache."     # how a traced graph names its cache (rooflab/trace/hf.py)


class TensorRole(str, Enum):
    """What a tensor is to the memory of a serving step."""
    WEIGHT = "weight"            # resident: the same bytes whatever the batch or lengths
    KV_CACHE = "kv_cache"        # resident per sequence: grows with the cached tokens
    INPUT = "input"              # given to each step: token ids, positions, rotary rows, masks
    ACTIVATION = "activation"    # made by an op of the step, freed after its last reader


@dataclass(frozen=True, slots=True)
class StepMemory:
    """Bytes of one step's working set on one GPU."""
    weights_bytes: int
    kv_cache_bytes: int
    input_bytes: int
    activation_peak_bytes: int   # the most activation bytes live at once
    workspace_bytes: int         # CUDA context, cuBLAS workspaces, allocator slack

    @property
    def total_bytes(self) -> int:
        return (self.weights_bytes + self.kv_cache_bytes + self.input_bytes
                + self.activation_peak_bytes + self.workspace_bytes)


def storage_roots(graph: Graph) -> dict[str, str]:
    """Each op output that owns no bytes of its own -> the tensor whose bytes it names: a
    view's output -> its root (as `rooflab.ops.view_roots`), and a scatter's output -> its
    target's root, since a scatter writes its target in place (Role.SCATTER; its target is its
    first input). Chains are followed to the end; tensors that own their bytes are absent."""
    root: dict[str, str] = {}
    for op in graph.ops:
        if KINDS[op.kind].role in (Role.VIEW, Role.SCATTER):
            src = op.inputs[0]
            for out in op.outputs:
                root[out] = root.get(src, src)
    return root


def tensor_roles(graph: Graph, probes: Mapping[str, Graph]) -> dict[str, TensorRole]:
    """The role of every tensor of `graph`. `probes`: the same workload built with one size
    changed, keyed by that size ({"batch": graph at batch + 1, "context": ...}; `probe_graphs`
    builds them); tensors are matched by name.

    A graph input (a tensor no op makes) is, in this order:
      KV_CACHE  when a traced graph names it `kv_cache.*`;
      INPUT     when its dtype is int64 or bool (ids, positions, counters, masks);
      KV_CACHE  when its shape changes in the `context` probe (the cache decode attends over);
      INPUT     when its shape changes in any other probe (ids, a prompt's rotary rows), or the
                probe has no tensor of that name;
      WEIGHT    when its shape changes in no probe: weights, norms, biases, and resident
                buffers (a traced rotary inv_freq, a workload's cos/sin rows of one position).
    An op output is ACTIVATION, except that a view or scatter output takes the role of the
    tensor whose bytes it names (`storage_roots`): the transpose of a weight is a WEIGHT, the
    cache an index_copy updates is KV_CACHE. Without probes nothing changes shape, so every
    float input not named `kv_cache.*` is a WEIGHT."""
    made = {t for op in graph.ops for t in op.outputs}
    roles = {name: _input_role(name, t.shape, t.dtype.name, probes)
             for name, t in graph.tensors.items() if name not in made}
    root = storage_roots(graph)
    for name in graph.tensors:
        if name in made:
            roles[name] = roles.get(root.get(name, name), TensorRole.ACTIVATION)
    return roles


def _input_role(name: str, shape: tuple[int, ...], dtype: str,
                probes: Mapping[str, Graph]) -> TensorRole:
    if name.startswith(_CACHE_PREFIX):
        return TensorRole.KV_CACHE
    if dtype in _DATA_DTYPES:
        return TensorRole.INPUT
    changed = {size for size, g in probes.items()
               if name not in g.tensors or g.tensors[name].shape != shape}
    if "context" in changed:
        return TensorRole.KV_CACHE
    return TensorRole.INPUT if changed else TensorRole.WEIGHT


def probe_graphs(graph: Graph, build: Callable[[dict[str, int]], Graph],
                 sets: Mapping[str, int] | None = None) -> dict[str, Graph]:
    """The probes `tensor_roles` takes: for each size of PROBED that `graph` has among its
    params, `build(sets with that size one larger than in graph)`. `build` makes the workload
    from its --set values (e.g. `lambda s: api.load_workload(path, s, phase)`)."""
    sets = dict(sets or {})
    return {size: build({**sets, size: graph.params[size] + 1})
            for size in PROBED if size in graph.params}


def on_chip_tensors(schedule) -> frozenset[str]:
    """Tensors of a `rooflab.schedule.Schedule` that never leave the kernel that makes them (a
    fused kernel keeps them in registers or shared memory): made and read only inside it, and not
    a graph output. They take no device memory."""
    g = schedule.graph
    root = storage_roots(g)
    readers: dict[str, set[int]] = {}
    for i, op in enumerate(g.ops):
        for t in op.inputs:
            readers.setdefault(root.get(t, t), set()).add(i)
    outs = {root.get(t, t) for t in g.outputs}
    kept = set()
    for k in schedule.kernels:
        members = set(k.ops)
        for i in k.ops:
            for t in g.ops[i].outputs:
                if t not in root and t not in outs and readers.get(t, set()) <= members:
                    kept.add(t)
    return frozenset(kept)


def _live_deltas(graph: Graph, on_chip: frozenset[str]) -> list:
    """Per op of `graph`, the activation bytes that start to live there less those that stop
    living after the op before (activation_timeline's rule)."""
    n = len(graph.ops)
    root = storage_roots(graph)
    made_at: dict[str, int] = {}
    for i, op in enumerate(graph.ops):
        for t in op.outputs:
            if t not in root and t not in on_chip:
                made_at[t] = i
    last = dict(made_at)
    for i, op in enumerate(graph.ops):
        for t in op.inputs:
            r = root.get(t, t)
            if r in last:
                last[r] = max(last[r], i)
    for t in graph.outputs:
        r = root.get(t, t)
        if r in last:
            last[r] = n - 1
    delta = [0] * (n + 1)
    for t, i in made_at.items():
        b = graph.tensors[t].nbytes
        delta[i] += b
        delta[last[t] + 1] -= b
    return delta[:n]


def activation_timeline(graph: Graph, on_chip: frozenset[str] = frozenset()) -> list[int]:
    """Bytes of activations live while each op of `graph` runs, in op order.

    A tensor an op makes is live from that op to the last op that reads it, or any view or
    scatter output that names its bytes (a graph output: to the last op); one nothing reads is
    live during its own op only. An op's inputs and outputs are live together. Views and
    scatter outputs cost nothing themselves; a scatter into an input (the KV cache) adds no
    activation bytes. NB: an in-place op other than a scatter (a traced `add_`) is a new
    tensor here, so its input and output are counted together for that one op."""
    live, out = 0, []
    for d in _live_deltas(graph, on_chip):
        live += d
        out.append(live)
    return out


def activation_peak_bytes(graph: Graph, on_chip: frozenset[str] = frozenset()):
    """The most bytes of activations live at once: the max of activation_timeline, an int, or
    over a sweep's grid an array of every point's peak."""
    live = peak = 0
    for d in _live_deltas(graph, on_chip):
        live = _into(np.add, live, d)
        peak = _into(np.maximum, peak, live)
    return peak


def _into(ufunc, acc, x):
    """ufunc(acc, x) for numbers; over a grid, written into acc's own array once it spans the
    result (a step's thousands of ops would otherwise allocate a grid-sized array each)."""
    if not isinstance(acc, np.ndarray) and not isinstance(x, np.ndarray):
        return acc + x if ufunc is np.add else max(acc, x)
    if isinstance(acc, np.ndarray) and acc.shape == np.broadcast_shapes(acc.shape, np.shape(x)):
        return ufunc(acc, x, out=acc)
    return ufunc(acc, x).view(Values)


def step_memory(graph: Graph, roles: Mapping[str, TensorRole],
                workspace_bytes: int = WORKSPACE_BYTES,
                on_chip: frozenset[str] = frozenset()) -> StepMemory:
    """The memory one step of `graph` needs on one GPU: its inputs' bytes summed by role
    (`roles` from `tensor_roles`), the peak of `activation_timeline`, and `workspace_bytes`.
    ValueError when an input has no role or is called an activation."""
    made = {t for op in graph.ops for t in op.outputs}
    sums = dict.fromkeys(TensorRole, 0)
    for name, t in graph.tensors.items():
        if name in made:
            continue
        role = roles.get(name)
        if role is None or role is TensorRole.ACTIVATION:
            raise ValueError(f"graph input '{name}' needs a role of weight, kv_cache or input, "
                             f"got {role.value if role else 'none'}")
        sums[role] += t.nbytes
    return StepMemory(weights_bytes=sums[TensorRole.WEIGHT],
                      kv_cache_bytes=sums[TensorRole.KV_CACHE],
                      input_bytes=sums[TensorRole.INPUT],
                      activation_peak_bytes=activation_peak_bytes(graph, on_chip),
                      workspace_bytes=workspace_bytes)


def kv_bytes_per_token(graph: Graph, roles: Mapping[str, TensorRole], batch: int,
                       context: int) -> int:
    """KV-cache bytes one token of one sequence takes, over all layers: the cache inputs'
    bytes over `batch` x `context` (the tokens the cache holds; a traced prefill's cache holds
    `seq`). Exact per token only where every layer caches the whole context (a sliding-window
    layer stops growing at its window). ValueError when the bytes do not divide evenly."""
    made = {t for op in graph.ops for t in op.outputs}
    kv = sum(t.nbytes for name, t in graph.tensors.items()
             if name not in made and roles.get(name) is TensorRole.KV_CACHE)
    tokens = batch * context
    if tokens < 1 or kv % tokens:
        raise ValueError(f"{kv} bytes of KV cache are not a whole number of bytes per token "
                         f"over batch {batch} x context {context}")
    return kv // tokens

"""Schedules: which ops share a kernel. A fusion policy (plain data) turns a graph into kernels.

Fusion is greedy and vertical, in topological order, like Inductor's: each op tries to join the
kernel of one of its producers. `legal()` decides with guard clauses, each "no" leaving a
reason (Inductor's WhyNoFuse); the policy says which role may follow which. Views (reshape,
permute) are metadata: they belong to no kernel and fusion looks through them.

Built-in policies (unfused, epilogue, fused, inductor) are data in rooflab/policies.py;
docs/fusion.md defines them precisely. Inductor's own rules (its fusion distance, split
reductions, the kernels it generates for an SDPA call) are in rooflab/inductor_rules.py.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import accumulate

from rooflab.graph import Graph, outer_block_index
from rooflab.grid import vmax
from rooflab.hardware import Hardware
from rooflab.inductor_rules import MAX_FUSION_DISTANCE, mask_launches, split_launches
from rooflab.kernel_dag import KernelDag
from rooflab.kernel_families import extern_call
from rooflab.ops import KINDS, Role, allocates, view_roots
from rooflab.policies import FusionPolicy, load_policy

# Group "anchors": what a kernel is built around. A kernel of only pointwise ops is POINTWISE.
# kernels that are library calls under any policy (cuBLAS, SDPA, NCCL, opaque calls)
_LIBRARY = (Role.GEMM, Role.ATTENTION, Role.COLLECTIVE, Role.OPAQUE)
_ANCHOR_ORDER = (Role.ATTENTION, Role.GEMM, Role.REDUCTION, Role.GATHER, Role.POINTWISE)
# how a kernel that computes an inlined producer is labelled, by its anchor
_INLINED_INTO = {Role.SCATTER: "scatter prologue", Role.REDUCTION: "reduction prologue"}


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why op `op` did not join the kernel holding `into`."""
    into: str          # an op of the kernel it could not join
    op: str
    reason: str


@dataclass(frozen=True)
class Kernel:
    name: str
    ops: tuple[int, ...]           # indices into graph.ops, in order
    anchor: Role
    fusion: str = ""               # how it was formed: "", "epilogue", "pointwise", ...
    stopped_by: tuple[str, ...] = ()
    launches: int = 1              # CUDA kernels it launches (an op that launches several
                                   # keeps its extra ones, such as a split-K reduction)
    split_reduction: bool = False  # its reduction is split over the grid (launches > 1)
    generated_launches: int = 0    # of an extern kernel's launches, Triton ones Inductor makes
                                   # for its call (an SDPA's additive mask from a boolean one)


@dataclass(frozen=True)
class Schedule:
    graph: Graph
    policy: FusionPolicy
    kernels: tuple[Kernel, ...]
    refusals: tuple[Refusal, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def triton_and_extern(self) -> tuple[int, int]:
        """(Triton kernels launched, extern library calls) that torch.compile's wrapper issues
        when Inductor runs the schedule (kernel_families.extern_call; the kernels generated for
        an extern call, such as an SDPA's mask, are Triton)."""
        ext = [extern_call(self.graph, k.ops, k.anchor) for k in self.kernels]
        return sum(k.generated_launches if e else k.launches for k, e in zip(self.kernels, ext)), \
            sum(ext)


# ------------------------------------------------------------------------------------------
class _View:
    """Looks through view ops: maps every tensor to the tensor whose bytes it names."""

    def __init__(self, graph: Graph):
        self.root = view_roots(graph)

    def __call__(self, t: str) -> str:
        return self.root.get(t, t)


class _Grouper:
    def __init__(self, graph: Graph, policy: FusionPolicy, hw: Hardware | None):
        self.g, self.policy, self.hw = graph, policy, hw
        self.view = _View(graph)
        self.roles = [KINDS[op.kind].role for op in graph.ops]
        self.producer = {self.view(t): i for i, op in enumerate(graph.ops)
                         if self.roles[i] is not Role.VIEW for t in op.outputs}
        self.consumers: dict[str, list[int]] = {}      # by the bytes they read
        root = self.view.root
        for i, op in enumerate(graph.ops):
            for t in op.inputs if self.roles[i] is not Role.VIEW else ():
                self.consumers.setdefault(root.get(t, t), []).append(i)
        self.group_of: dict[int, int] = {}
        self.groups: list[list[int]] = []
        self.anchor: list[Role] = []
        self.fusion: list[str] = []
        self.dag = KernelDag()                  # which groups read which
        self.min_pos: list[int] = []
        self.max_pos: list[int] = []
        # per-group facts kept as ops join, so each legality check is O(1), not a rescan
        self.out_sizes: list[set[int]] = []      # element counts of the ops' outputs
        self.max_out: list[int] = []
        self.red_in_sizes: list[set[int]] = []   # element counts of the reductions' inputs
        self.max_red_in: list[int] = []
        self.first_of: list[dict[Role, int]] = []   # first op of each role, in joining order
        self.data_dep: list[str | None] = []     # first data-dependent op's name
        self.prologue_verdict: dict[int, tuple[int, str | None]] = {}   # gid -> (size, why)
        self.refusals: list[Refusal] = []

    # -- bookkeeping ---------------------------------------------------------------------
    def _new(self, ops: list[int], anchor: Role, fusion: str = "") -> int:
        gid = len(self.groups)
        self.groups.append([])
        self.anchor.append(anchor)
        self.fusion.append(fusion)
        self.dag.add()
        self.min_pos.append(ops[0])
        self.max_pos.append(ops[0])
        self.out_sizes.append(set())
        self.max_out.append(0)
        self.red_in_sizes.append(set())
        self.max_red_in.append(0)
        self.first_of.append({})
        self.data_dep.append(None)
        for i in ops:
            self._add(gid, i)
        return gid

    def _add(self, gid: int, i: int) -> None:
        self.groups[gid].append(i)
        self.group_of[i] = gid
        self.min_pos[gid] = min(self.min_pos[gid], i)
        self.max_pos[gid] = max(self.max_pos[gid], i)
        op = self.g.ops[i]
        for t in op.outputs:
            n = self._numel(t)
            self.out_sizes[gid].add(n)
            self.max_out[gid] = max(self.max_out[gid], n)
        self.first_of[gid].setdefault(self.roles[i], i)
        if self.roles[i] is Role.REDUCTION:
            n = self._numel(op.inputs[0])
            self.red_in_sizes[gid].add(n)
            self.max_red_in[gid] = max(self.max_red_in[gid], n)
        if op.data_dependent and self.data_dep[gid] is None:
            self.data_dep[gid] = op.name
        for t in self.g.ops[i].inputs:
            p = self.producer.get(self.view(t))
            if p is not None and p in self.group_of and self.group_of[p] != gid:
                self.dag.edge(gid, self.group_of[p])
        # readers grouped before their producer (an attention pattern is grouped first)
        for t in op.outputs:
            for j in self.consumers.get(self.view(t), ()):
                h = self.group_of.get(j, gid)
                if h != gid:
                    self.dag.edge(h, gid)

    def _numel(self, t: str) -> int:
        return self.g.tensors[t].numel

    # -- legality: every "no" says why -----------------------------------------------------
    def legal(self, gid: int, i: int) -> str | None:
        op = self.g.ops[i]
        role = self.roles[i]
        anchor = self.anchor[gid]
        if op.data_dependent:
            return f"{op.name} is data-dependent control flow"
        if role is Role.COLLECTIVE:
            return f"{op.name} is a collective ({op.kind}): it runs on the interconnect"
        if role is Role.OPAQUE:
            return f"{op.name} is an opaque library call"
        dep = self.data_dep[gid]
        if dep:
            return f"{dep} is data-dependent control flow"
        if self.fusion[gid] == "attention":
            return "a FlashAttention-style kernel takes no epilogue here"
        if anchor in (Role.COLLECTIVE, Role.OPAQUE, Role.ATTENTION, Role.SCATTER):
            barrier = self.first_of[gid].get(anchor, self.groups[gid][0])
            return f"{self.g.ops[barrier].name} is a fusion barrier ({anchor.value})"
        if role is Role.GEMM:
            # the verdict depends only on the group's ops: reuse it until the group grows
            size = len(self.groups[gid])
            cached = self.prologue_verdict.get(gid)
            if cached is None or cached[0] != size:
                cached = self.prologue_verdict[gid] = (size, self._gemm_prologue(gid, i))
            return cached[1]
        if role is Role.ATTENTION:
            return "attention kernels take no prologue"
        if role is Role.REDUCTION:
            if anchor is Role.GEMM:
                return (f"{op.name} needs a whole row ({op.kind}); a GEMM epilogue sees one tile")
            if anchor is Role.REDUCTION:
                return "one reduction per kernel"
            if not self.policy.reduction_prologue:
                return f"policy '{self.policy.name}' fuses no reduction prologues"
            spill = self._row_spills(i)
            if spill:
                return spill
            return self._same_space(gid, i, self.g.ops[i].inputs[0])
        if role is Role.SCATTER:
            return self._scatter_prologue(gid, i)
        if role is Role.GATHER and anchor is not Role.POINTWISE and any(
                self.group_of.get(self.producer.get(self.view(t), -1)) == gid for t in op.inputs):
            # a row kernel's (or a tile's) results are whole only at its end: a gather from
            # them, or by indices made there, may reach rows other programs hold
            return f"{op.name} ({op.kind}) reads by index what a {anchor.value} kernel makes"
        # pointwise or gather joining
        if anchor is Role.GEMM and self.policy.extern_gemm:
            return (f"policy '{self.policy.name}' calls cuBLAS for the GEMM (an extern kernel): "
                    "no epilogue; max-autotune's Triton GEMM templates can take one")
        if not self.policy.allows(anchor, role if role is not Role.GATHER else Role.POINTWISE):
            return f"policy '{self.policy.name}' does not fuse {role.value} into a {anchor.value} kernel"
        if anchor is Role.REDUCTION:
            red = self.first_of[gid][Role.REDUCTION]
            spill = self._row_spills(red)
            if spill:
                return spill
        if anchor is Role.GEMM:
            gemm = self.first_of[gid][Role.GEMM]
            out = self.g.ops[gemm].outputs[0]
            if self._numel(op.outputs[0]) != self._numel(out):
                return (f"{op.name} is not elementwise over the GEMM output "
                        f"({self._numel(op.outputs[0])} vs {self._numel(out)} elements)")
            return None
        return self._same_space(gid, i, op.outputs[0])

    def _same_space(self, gid: int, i: int, tensor: str) -> str | None:
        """Pointwise work fuses when it iterates over the same number of elements."""
        n = self._numel(tensor)
        if n in self.out_sizes[gid]:
            return None
        largest = self.max_out[gid]
        if self.anchor[gid] is Role.REDUCTION:
            if n in self.red_in_sizes[gid]:
                return None
            largest = max(largest, self.max_red_in[gid])
        return f"{self.g.ops[i].name} iterates over {n} elements, the kernel over {largest}"

    def _row_spills(self, i: int) -> str | None:
        if self.hw is None:
            return None
        op = self.g.ops[i]
        c = KINDS[op.kind].cost(op, [self.g.tensors[t] for t in op.inputs],
                            [self.g.tensors[t] for t in op.outputs])
        if c.row_bytes > self.hw.smem_per_sm_bytes:
            return (f"{op.name}'s row ({c.row_bytes // 1024} KiB in fp32) does not fit in "
                    f"{int(self.hw.smem_per_sm_bytes) // 1024} KiB of shared memory: multi-pass")
        return None

    def _scatter_prologue(self, gid: int, i: int) -> str | None:
        """A scatter (in place into its first input) takes a pointwise kernel that computes
        the values it writes (its last input), and nothing else."""
        op = self.g.ops[i]
        if self.anchor[gid] is not Role.POINTWISE:
            return f"{op.name} ({op.kind}) fuses only with a pointwise producer of its values"
        if not self.policy.allows(Role.POINTWISE, Role.SCATTER):
            return f"policy '{self.policy.name}' does not fuse a scatter into a pointwise kernel"
        made_here = [self.group_of.get(self.producer.get(self.view(t), -1)) == gid
                     for t in op.inputs]
        if any(made_here[:-1]) or not made_here[-1]:
            return (f"{op.name} would read its target or index from this kernel: only the "
                    "values it writes fuse")
        return self._same_space(gid, i, op.inputs[-1])

    def _gemm_prologue(self, gid: int, i: int) -> str | None:
        if not self.policy.dequant_prologue:
            return f"policy '{self.policy.name}' fuses nothing into a GEMM's operands"
        ops = [self.g.ops[j] for j in self.groups[gid]]
        if any(o.kind not in ("dequantize", "cast") for o in ops):
            return "a GEMM operand is fused only through a dequantize/cast prologue"
        for o in ops:
            if o.attrs.get("fallback"):
                src = self.g.tensors[o.inputs[0]].dtype.name
                hw = self.hw.name if self.hw else "this GPU"
                return f"{hw} has no GEMM kernel that reads {src}: the dequantized copy is written"
            src = self.g.tensors[o.inputs[0]].dtype
            if o.kind == "dequantize" and not src.is_float and self.hw is not None \
                    and src.name not in self.hw.weight_only_gemm:
                return f"{self.hw.name} has no fused {src.name} dequant-in-GEMM kernel"
        return None

    # -- the attention pattern ------------------------------------------------------------
    def _attention_groups(self) -> None:
        """Find matmul(q, kᵀ) → pointwise* → softmax → pointwise* → matmul(·, v) chains whose
        intermediates nothing else reads, and make each one kernel."""
        outs = {self.view(t) for t in self.g.outputs}

        def only_consumer(j: int) -> int | None:
            out = self.view(self.g.ops[j].outputs[0])
            cs = self.consumers.get(out, [])
            return cs[0] if len(cs) == 1 and out not in outs else None

        for i, op in enumerate(self.g.ops):
            if op.kind != "matmul" or i in self.group_of:
                continue
            chain, j, seen_softmax = [i], only_consumer(i), False
            while j is not None and j not in self.group_of:
                k = self.g.ops[j].kind
                if k == "softmax" and not seen_softmax:
                    seen_softmax = True
                elif k == "matmul" and seen_softmax and \
                        self.view(self.g.ops[j].inputs[0]) == self.view(self.g.ops[chain[-1]].outputs[0]):
                    chain.append(j)
                    self._new(sorted(chain), Role.ATTENTION, "attention")
                    break
                elif self.roles[j] is not Role.POINTWISE:
                    break
                chain.append(j)
                j = only_consumer(j)

    def _gqa_groups(self) -> None:
        """Make each attention op one kernel with the copies that give its shared key and value
        heads to every query head (transformers' repeat_kv: an expand of [..., 1, S, D] to
        [..., G, S, D], then a copy) where the attention is the copy's only reader: a GQA kernel
        reads each shared head in place."""
        view_of = {o: op for op, r in zip(self.g.ops, self.roles) if r is Role.VIEW
                   for o in op.outputs}
        outs = {self.view(t) for t in self.g.outputs}

        def heads_broadcast(t: str) -> bool:
            while t in view_of:
                op = view_of[t]
                if op.kind == "expand":
                    src, out = self.g.tensors[op.inputs[0]].shape, self.g.tensors[t].shape
                    src = (1,) * (len(out) - len(src)) + src     # new leading dims broadcast
                    grown = [d for d in range(len(out)) if src[d] == 1 and out[d] > 1]
                    return grown == [len(out) - 3]      # over heads, not batch or sequence
                t = op.inputs[0]
            return False

        for i, op in enumerate(self.g.ops):
            if op.kind != "attention" or i in self.group_of:
                continue
            copies = {p for t in op.inputs[1:3] for p in [self.producer.get(self.view(t))]
                      if p is not None and p not in self.group_of and self.g.ops[p].kind == "copy"
                      and heads_broadcast(self.g.ops[p].inputs[0])
                      and set(self.consumers[self.view(t)]) == {i} and self.view(t) not in outs}
            if copies:
                self._new(sorted(copies) + [i], Role.ATTENTION, "GQA attention")

    # -- the greedy pass --------------------------------------------------------------------
    def run(self) -> list[int]:
        if self.policy.attention_pattern:
            self._attention_groups()
        if self.policy.gqa_attention:
            self._gqa_groups()
        order, ordered = [], set()
        for i, op in enumerate(self.g.ops):
            if self.roles[i] is Role.VIEW:
                continue
            if i in self.group_of:
                gid = self.group_of[i]
                if gid not in ordered:
                    order.append(gid)
                    ordered.add(gid)
                continue
            gid = self._try_join(i)
            if gid is None:
                gid = self._new([i], self.roles[i])
                order.append(gid)
                ordered.add(gid)
        if self.policy.inline_single_reader:
            order = self._inline_single_readers(order)
        if self.policy.fuse_siblings:
            order = self._fuse_siblings(order)
        return order

    def _inline_single_readers(self, order: list[int]) -> list[int]:
        """Merge each pointwise or gather kernel (Inductor lowers a concat and an indexed load
        as pointwise code) whose outputs only one other kernel reads into that kernel, until
        none is left: the reader computes the values where it loads them. Into a reduction
        only over the reduction's input space, into a scatter only as the values it writes;
        never into a GEMM, attention, collective or opaque kernel, nor from data-dependent ops."""
        merged = True
        while merged:
            merged = False
            for a in order:
                if not self.groups[a] or self.anchor[a] not in (Role.POINTWISE, Role.GATHER) \
                        or len(self.dag.readers[a]) != 1 or self.data_dep[a]:
                    continue
                (b,) = self.dag.readers[a]
                if self.anchor[b] not in (Role.POINTWISE, Role.GATHER, Role.REDUCTION,
                                          Role.SCATTER) or self.fusion[b] == "attention" or \
                        self.data_dep[b] or self._refuses_inline(a, b):
                    continue
                self._merge(a, b)
                merged = True
        return [g for g in order if self.groups[g]]

    def _refuses_inline(self, a: int, b: int) -> bool:
        """Whether kernel b cannot compute kernel a's outputs where it reads them: a reduction
        reads them outside its input space; a copy-only kernel reads a gather's; a scatter
        reads them as its target or indices, or a reads the scatter's target (its loads would
        race the scatter's stores)."""
        if self.anchor[b] is Role.REDUCTION:
            return not self.out_sizes[a] <= self.red_in_sizes[b] | self.out_sizes[b]
        if self.anchor[a] is Role.GATHER and all(self.g.ops[i].kind == "copy"
                                                 for i in self.groups[b]):
            # a copy out of an expanded view (repeat_kv before GQA attention) reads a gather
            # kernel's result as Inductor realized it (the torch suite's GQA decoder layer)
            return True
        if self.anchor[b] is Role.SCATTER:
            made = {self.view(t) for i in self.groups[a] for t in self.g.ops[i].outputs}
            read = {self.view(t) for i in self.groups[a] for t in self.g.ops[i].inputs}
            return any(self.view(self.g.ops[i].inputs[0]) in made | read or made & {
                self.view(t) for t in self.g.ops[i].inputs[1:-1]} for i in self.groups[b]
                if self.roles[i] is Role.SCATTER)
        return False

    def _external_inputs(self, gid: int) -> set[str]:
        """The tensors (by the bytes they name) that group gid reads from outside itself."""
        return {self.view(t) for i in self.groups[gid] for t in self.g.ops[i].inputs
                if self.group_of.get(self.producer.get(self.view(t), -1)) != gid}

    def _fuse_siblings(self, order: list[int]) -> list[int]:
        """Merge pointwise (or gather) kernels with no path between them that produce the same
        number of elements and read a common tensor into one that loads it once (Inductor's
        siblings: the rotary embeddings of q and k read cos and sin). Data-dependent kernels
        stay apart, and so do different repeats of the outermost block: layers depend on each
        other through state a graph need not spell out (a KV-cache write before the cache's
        read), and so do kernels more than MAX_FUSION_DISTANCE ops apart. Only the later
        kernels near one that read one of its inputs at its size are looked at, so a long graph
        costs about its reads, not its kernels squared."""
        rank = list(accumulate(r is not Role.VIEW for r in self.roles))   # op order, views out
        cands = sorted((g for g in order if self.groups[g] and not self.data_dep[g]
                        and self.anchor[g] in (Role.POINTWISE, Role.GATHER)
                        and self.fusion[g] != "attention"), key=lambda g: self.min_pos[g])
        inputs = {g: self._external_inputs(g) for g in cands}
        block = {g: outer_block_index(self.g.ops[min(self.groups[g])].name) for g in cands}
        readers: dict[tuple[str, int], list[int]] = {}   # (tensor, size) -> kernels, by first op
        for g in cands:
            for t in inputs[g]:
                readers.setdefault((t, self.max_out[g]), []).append(g)
        firsts = {key: [self.min_pos[g] for g in gs] for key, gs in readers.items()}
        for a in cands:
            if not self.groups[a]:
                continue
            seen, todo = {a}, sorted(inputs[a])
            while todo:
                key = (todo.pop(), self.max_out[a])
                later = readers.get(key, [])
                for b in later[bisect_right(firsts.get(key, []), self.min_pos[a]):]:
                    # a merged group keeps its first op, so the list stays ordered by it
                    if rank[self.min_pos[b]] - rank[self.min_pos[a]] > MAX_FUSION_DISTANCE:
                        break
                    if b in seen or not self.groups[b] or block[b] != block[a] or max(
                            rank[self.max_pos[b]] - rank[self.min_pos[a]],
                            abs(rank[self.max_pos[a]] - rank[self.min_pos[b]])) \
                            > MAX_FUSION_DISTANCE:
                        continue
                    seen.add(b)
                    if self.dag.depends_on(a, b) or self.dag.depends_on(b, a):
                        continue
                    self._merge_siblings(a, b)
                    todo.extend(sorted(inputs[b] - inputs[a]))
                    inputs[a] |= inputs[b]
        return [g for g in order if self.groups[g]]

    def _move(self, src: int, dst: int) -> None:
        """Move group src's ops into group dst, which takes over src's producers and readers
        (an edge between the two disappears)."""
        ops = sorted(self.groups[src])
        for i in ops:                  # first, so that no edge between the two is recorded
            self.group_of[i] = dst
        for i in ops:
            self._add(dst, i)
        self.groups[src] = []
        self.dag.detach(src)

    def _merge_siblings(self, a: int, b: int) -> None:
        """Move group b's ops into group a (neither reads the other)."""
        self._move(b, a)
        if self.anchor[b] is Role.GATHER:
            self.anchor[a] = Role.GATHER
        self.fusion[a] = "pointwise"

    def _merge(self, a: int, b: int) -> None:
        """Move group a's ops into group b (b reads a; nothing else does)."""
        self._move(a, b)
        if self.anchor[b] is Role.POINTWISE:
            self.anchor[b] = self.anchor[a]     # b makes a gather's indexed loads too
        self.fusion[b] = self.fusion[b] or _INLINED_INTO.get(self.anchor[b], "pointwise")

    def _try_join(self, i: int) -> int | None:
        op = self.g.ops[i]
        cands: list[tuple[int, int]] = []     # (bytes shared, gid)
        for t in op.inputs:
            p = self.producer.get(self.view(t))
            if p is None:
                continue
            gid = self.group_of[p]
            cands.append((self.g.tensors[t].nbytes, gid))
        if not cands or not any(self.policy.edges) and not self.policy.dequant_prologue:
            return None
        # Inductor's score: prefer the producer whose kernel shares the most bytes.
        cands.sort(key=lambda c: (-c[0], c[1]))
        tried = set()
        for _, gid in cands:
            if gid in tried:
                continue
            tried.add(gid)
            why = self.legal(gid, i)
            if why is None:
                others = {g for _, g in cands if g != gid}
                if any(self.dag.depends_on(h, gid) for h in others):
                    why = "joining would make a cycle between kernels"
            if why is None:
                self._join(gid, i)
                return gid
            self.refusals.append(Refusal(self.g.ops[self.groups[gid][-1]].name, op.name, why))
        return None

    def _join(self, gid: int, i: int) -> None:
        role = self.roles[i]
        old = self.anchor[gid]
        self._add(gid, i)
        if role is Role.SCATTER:
            self.anchor[gid] = role
            self.fusion[gid] = "scatter prologue"
        elif role is Role.GEMM or (role is Role.REDUCTION and old in (Role.POINTWISE, Role.GATHER)):
            self.anchor[gid] = role
            self.fusion[gid] = "dequant-in-GEMM" if role is Role.GEMM else "reduction prologue"
        elif old is Role.GEMM:
            self.fusion[gid] = self.fusion[gid] or "epilogue"
            if self.fusion[gid] == "dequant-in-GEMM":
                self.fusion[gid] = "dequant-in-GEMM + epilogue"
        elif old is Role.REDUCTION:
            self.fusion[gid] = "reduction + epilogue" if "prologue" not in self.fusion[gid] \
                else "reduction prologue + epilogue"
        elif not self.fusion[gid]:
            self.fusion[gid] = "pointwise"


def kernel_name(graph: Graph, ops: tuple[int, ...]) -> str:
    names = [graph.ops[i].name for i in ops]
    if len(names) == 1:
        return names[0]
    block = graph.ops[ops[0]].block
    short = [n[len(block) + 1:] if block and n.startswith(block + ".") else n for n in names]
    return (block + "." if block else "") + "+".join(short)


def _one_per_launch(graph: Graph) -> tuple[Kernel, ...]:
    """One kernel per op that launches one, in graph order; an op that launches none of its own
    (`launches: 0`, a library GEMM's bias epilogue) joins the kernel of the op before it when
    that op made one of its inputs."""
    kernels: list[Kernel] = []
    view = _View(graph)
    for i, op in enumerate(graph.ops):
        role = KINDS[op.kind].role
        if role is Role.VIEW:
            continue
        if op.launches == 0 and kernels:
            last = kernels[-1]
            made = {view(t) for j in last.ops for t in graph.ops[j].outputs}
            if any(view(t) in made for t in op.inputs):
                kernels[-1] = Kernel(last.name, last.ops + (i,), last.anchor, "library epilogue",
                                     last.stopped_by, last.launches)
                continue
        kernels.append(Kernel(op.name, (i,), role, launches=vmax(op.launches, 1 - allocates(op))))
    return tuple(kernels)


def build(graph: Graph, policy: FusionPolicy | str = "unfused", hw: Hardware | None = None,
          notes: tuple[str, ...] = ()) -> Schedule:
    """Group `graph`'s ops into kernels under `policy`. `hw` supplies on-chip capacity and
    which fused dequant kernels exist; without it those checks are skipped."""
    if isinstance(policy, str):
        policy = load_policy(policy)
    if not (policy.edges or policy.dequant_prologue or policy.attention_pattern
            or policy.gqa_attention):
        # one kernel per op, in the graph's (topological) order
        return Schedule(graph, policy, _one_per_launch(graph), (), notes)
    gr = _Grouper(graph, policy, hw)
    order = gr.dag.order(gr.run(), gr.min_pos)
    refusals_by_op: dict[str, list[Refusal]] = {}
    for r in gr.refusals:
        refusals_by_op.setdefault(r.into, []).append(r)
    kernels = []
    for gid in order:
        ops = tuple(sorted(gr.groups[gid]))
        names = [graph.ops[i].name for i in ops]     # in op order: the output is deterministic
        inside = set(names)
        stopped = tuple(f"{r.op}: {r.reason}" for n in names for r in refusals_by_op.get(n, ())
                        if r.op not in inside)
        launches = int(not all(allocates(graph.ops[i]) for i in ops)) + sum(
            vmax(graph.ops[i].launches - 1, 0) for i in ops)
        generated = sum(mask_launches(graph, graph.ops[i]) for i in ops) \
            if policy.extern_gemm and gr.anchor[gid] is Role.ATTENTION else 0
        if (policy.extern_gemm and gr.anchor[gid] not in _LIBRARY) or generated:
            launches = 1 + generated        # generated code launches once; SDPA after its mask
        split = policy.split_reductions and gr.anchor[gid] is Role.REDUCTION and hw is not None \
            and split_launches(graph, graph.ops[gr.first_of[gid][Role.REDUCTION]], hw)
        kernels.append(Kernel(kernel_name(graph, ops), ops, gr.anchor[gid], gr.fusion[gid], stopped,
                              launches + (split - 1 if split else 0), bool(split), generated))
    return Schedule(graph, policy, tuple(kernels), tuple(gr.refusals), notes)

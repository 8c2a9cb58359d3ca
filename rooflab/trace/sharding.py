"""Sharding a traced step across GPUs: tensor parallelism (its collectives added to a step
traced from a sharded config) and expert parallelism (a MoE's experts split, tokens exchanged).

Tensor parallelism, Megatron-style:

A model traced from a config sharded `tp` ways (zoo.shard_config: heads, KV heads, MLP columns
and vocabulary divided) is what one GPU computes, but without the communication that makes the
pieces whole again. That communication sits at module boundaries, found here by the module
paths transformers gives decoder layers:
  * each attention block (`layers.N.self_attn`) and each MLP or MoE block (`layers.N.mlp`,
    `block_sparse_moe`, `feed_forward`) ends in a row-parallel linear whose partial sums are
    all-reduced before the residual add: one `all_reduce` of every tensor leaving the block;
  * the vocab-parallel embedding (`embed_tokens`) all-reduces its rows (each GPU looked up the
    ids in its part of the vocabulary);
  * the column-parallel `lm_head` all-gathers the logits along the vocabulary.
How long a collective takes is the cost model's (the collective op kinds).
"""

from __future__ import annotations

import re
from dataclasses import replace

from rooflab.errors import RooflabError
from rooflab.graph import Graph, Op, Tensor
from rooflab.ops import KINDS, Role

_BLOCKS = re.compile(r"^(.*\blayers\.\d+\.(?:self_attn|mlp|block_sparse_moe|feed_forward))\.")
_EMBED = re.compile(r"^(.*\bembed_tokens)\.")
_LM_HEAD = re.compile(r"^(lm_head)\.")


def _module(name: str) -> tuple[str, str] | None:
    """(module path, collective kind) of the block an op belongs to, or None."""
    for pattern, kind in ((_BLOCKS, "all_reduce"), (_EMBED, "all_reduce"),
                          (_LM_HEAD, "all_gather")):
        m = pattern.match(name)
        if m:
            return m.group(1), kind
    return None


def block_collective(module_path: str) -> str | None:
    """The collective tensor parallelism puts after the module at `module_path` (a name from
    named_modules(): "model.layers.3.mlp" -> "all_reduce", "lm_head" -> "all_gather"), or None
    for a module inside a block or outside every block. The GPU measurement of a sharded step
    (rooflab.validate.tp_run) places its collectives by this, as tensor_parallel places them in
    the graph."""
    found = _module(module_path + ".")
    return found[1] if found and found[0] == module_path else None


def tensor_parallel(graph: Graph, tp: int) -> Graph:
    """`graph` (one GPU's shard of a traced step) with the collectives of `tp`-way tensor
    parallelism inserted after the blocks that need them; the same graph when tp is 1.
    RooflabError when no decoder block is found (a model whose modules are named otherwise)."""
    if tp == 1:
        return graph
    block_of = [_module(op.name) for op in graph.ops]
    if not any(b and b[1] == "all_reduce" and "layers." in b[0] for b in block_of):
        raise RooflabError(f"{graph.name}: no decoder blocks (layers.N.self_attn / mlp) found, "
                           "so the collectives of tensor parallelism cannot be placed")
    producer = {t: i for i, op in enumerate(graph.ops) for t in op.outputs}
    leaving: dict[str, tuple[str, str]] = {}     # tensor -> (module, collective kind)
    for j, op in enumerate(graph.ops):
        for t in op.inputs:
            i = producer.get(t)
            if i is not None and block_of[i] and block_of[i][0] != (block_of[j] or ("",))[0]:
                leaving[t] = block_of[i]
    for t in graph.outputs:
        i = producer.get(t)
        if i is not None and block_of[i] and block_of[i][1] == "all_gather":
            leaving[t] = block_of[i]
    tensors = dict(graph.tensors)
    renamed: dict[str, str] = {}
    ops: list[Op] = []
    for i, op in enumerate(graph.ops):
        inside = block_of[i][0] if block_of[i] else None
        # a reader outside the block that made a tensor reads the collective's result
        ins = tuple(renamed[t] if t in renamed and block_of[producer[t]][0] != inside else t
                    for t in op.inputs)
        ops.append(replace(op, inputs=ins) if ins != op.inputs else op)
        for t in op.outputs:
            if t not in leaving:
                continue
            module, kind = leaving[t]
            x = tensors[t]
            shape = x.shape if kind == "all_reduce" else x.shape[:-1] + (x.shape[-1] * tp,)
            new = f"{t}.{kind}"
            tensors[new] = Tensor(new, shape, x.dtype)
            renamed[t] = new
            attrs = {"world_size": tp, **({"axis": len(shape) - 1} if kind == "all_gather" else {})}
            ops.append(Op(f"{module}.{kind}", kind, (t,), (new,), attrs, block=op.block))
    outputs = frozenset(renamed.get(t, t) for t in graph.outputs)
    return replace(graph, tensors=tensors, ops=tuple(ops), outputs=outputs,
                   description=graph.description + f"; {tp}-way tensor parallel, per GPU")


def expert_parallel(graph: Graph, ep: int) -> Graph:
    """`graph` as one of `ep` expert-parallel GPUs runs it: each MoE layer's expert weights
    ([E, K, N] inputs of its `grouped_matmul`s) hold E / ep experts, and the rows routed to
    experts go to the GPU holding them and come back: an all_to_all of the first grouped GEMM's
    input (dispatch) and of the last one's output (combine). Each GPU serves its own batch (the
    attention runs data-parallel), so with balanced routing it receives as many rows as it sends.
    RooflabError when the model has no experts or E does not divide by ep."""
    if ep == 1:
        return graph
    by_module: dict[str, list[int]] = {}
    for i, op in enumerate(graph.ops):
        if op.kind == "grouped_matmul":
            by_module.setdefault(op.name.rsplit(".", 1)[0], []).append(i)
    if not by_module:
        raise RooflabError(f"--ep {ep}: {graph.name} has no experts (no grouped_matmul)")
    tensors = dict(graph.tensors)
    producer = {t: op for op in graph.ops for t in op.outputs}
    for idx in by_module.values():
        for i in idx:
            name = graph.ops[i].inputs[1]
            e = tensors[name].shape[0]
            if e % ep:
                raise RooflabError(f"--ep {ep}: {e} experts do not divide by {ep}")
            # the weight and the views it reaches the GEMM through (a transpose of its last
            # two dimensions) lead with the expert dimension
            while True:
                w = graph.tensors[name]
                tensors[name] = Tensor(name, (w.shape[0] // ep,) + w.shape[1:], w.dtype)
                op = producer.get(name)
                if op is None or KINDS[op.kind].role is not Role.VIEW:
                    break
                name = op.inputs[0]
    dispatch = {graph.ops[idx[0]].inputs[0]: graph.ops[idx[0]].name.rsplit(".", 1)[0]
                for idx in by_module.values()}
    combine = {graph.ops[idx[-1]].outputs[0]: graph.ops[idx[-1]].name.rsplit(".", 1)[0]
               for idx in by_module.values()}
    renamed: dict[str, str] = {}
    ops: list[Op] = []

    def exchange(t: str, module: str, what: str, block: str) -> None:
        new = f"{t}.{what}"
        tensors[new] = Tensor(new, tensors[t].shape, tensors[t].dtype)
        ops.append(Op(f"{module}.{what}_all_to_all", "all_to_all", (t,), (new,),
                      {"world_size": ep}, block=block))
        renamed[t] = new
    for op in graph.ops:
        for t in op.inputs:
            if t in dispatch and t not in renamed:
                exchange(t, dispatch[t], "dispatch", op.block)
        ins = tuple(renamed.get(t, t) for t in op.inputs)
        ops.append(replace(op, inputs=ins) if ins != op.inputs else op)
        for t in op.outputs:
            if t in combine:
                exchange(t, combine[t], "combine", op.block)
    outputs = frozenset(renamed.get(t, t) for t in graph.outputs)
    return replace(graph, tensors=tensors, ops=tuple(ops), outputs=outputs,
                   description=graph.description + f"; {ep}-way expert parallel, per GPU")


def sequence_parallel(graph: Graph, tp: int) -> Graph:
    """`graph` (tensor_parallel's, `tp` > 1) under Megatron sequence parallelism: each
    all-reduce of a row-parallel block's partial sums (and of the vocab-parallel embedding)
    becomes a `reduce_scatter` over the token axis, and what runs between the blocks (residual
    adds, norms, casts: the residual stream) runs on tokens / tp rows per GPU; a block (or the
    lm_head, or an op that does not keep the token rows, like the last-token slice) that reads
    the stream first `all_gather`s it, once per tensor. The link carries as many bytes as
    before (reduce-scatter + all-gather = all-reduce); the norms read and write 1/tp of them.
    RooflabError in one line when the tokens do not divide by tp."""
    if tp == 1:
        return graph
    sources = [op for op in graph.ops if op.kind == "all_reduce"
               and op.attrs.get("world_size") == tp and op.name.endswith(".all_reduce")]
    if not sources:
        raise RooflabError(f"--sp: {graph.name} has no tensor-parallel all-reduce to split")
    lead = graph.tensors[sources[0].inputs[0]].shape[:-1]
    tokens = 1
    for d in lead:
        tokens *= d
    if tokens % tp:
        raise RooflabError(f"--sp: {tokens} tokens (batch x sequence {' x '.join(map(str, lead))}) "
                           f"do not divide by --tp {tp}")
    axis = next((i for i, d in enumerate(lead) if d % tp == 0), None)
    if axis is None:
        raise RooflabError(f"--sp: neither the batch nor the sequence axis of "
                           f"{' x '.join(map(str, lead))} tokens divides by --tp {tp}")
    block_of = [_module(op.name) for op in graph.ops]
    source_ids = {id(op) for op in sources}

    def token_rows(shape: tuple) -> bool:
        n = 1
        for d in shape[:-1]:
            n *= d
        return len(shape) == len(lead) + 1 and n == tokens and shape[axis] == lead[axis]

    def split(shape: tuple) -> tuple:
        return shape[:axis] + (shape[axis] // tp,) + shape[axis + 1:]

    tensors = dict(graph.tensors)
    renamed: dict[str, str] = {}      # tensor_parallel's all-reduce output -> the scattered one
    sharded: set[str] = set()         # tensors held as tokens / tp rows
    gathered: dict[str, str] = {}     # sharded tensor -> its all-gathered copy
    ops: list[Op] = []

    def gather(t: str, module: str, block: str) -> str:
        if t not in gathered:
            new = f"{t}.all_gather"
            x = tensors[t]
            tensors[new] = Tensor(new, graph.tensors[t].shape if t in graph.tensors
                                  else x.shape[:axis] + (x.shape[axis] * tp,) + x.shape[axis + 1:],
                                  x.dtype)
            ops.append(Op(f"{module}.input_all_gather", "all_gather", (t,), (new,),
                          {"world_size": tp, "axis": axis}, block=block))
            gathered[t] = new
        return gathered[t]

    for i, op in enumerate(graph.ops):
        if id(op) in source_ids:
            x = op.inputs[0]
            new = f"{x}.reduce_scatter"
            tensors[new] = Tensor(new, split(graph.tensors[x].shape), graph.tensors[x].dtype)
            renamed[op.outputs[0]] = new
            sharded.add(new)
            module = op.name[: -len(".all_reduce")]
            ops.append(Op(f"{module}.reduce_scatter", "reduce_scatter", (x,), (new,),
                          {"world_size": tp, "axis": axis}, block=op.block))
            continue
        ins = tuple(renamed.get(t, t) for t in op.inputs)
        if any(t in sharded for t in ins):
            inside = block_of[i] is not None and (block_of[i][1] == "all_gather"
                                                   or "layers." in block_of[i][0])
            keeps_rows = all(token_rows(graph.tensors[t].shape) for t in op.outputs) and not (
                KINDS[op.kind].role is Role.VIEW and "shape" in op.attrs)
            if inside or not keeps_rows:
                module = block_of[i][0] if inside else op.name.rsplit(".", 1)[0]
                ins = tuple(gather(t, module, op.block) if t in sharded else t for t in ins)
            else:
                for t in op.outputs:
                    x = graph.tensors[t]
                    tensors[t] = Tensor(t, split(x.shape), x.dtype)
                    sharded.add(t)
        ops.append(replace(op, inputs=ins) if ins != op.inputs else op)
    outs = []
    for t in graph.outputs:
        t = renamed.get(t, t)
        outs.append(gather(t, "output", "") if t in sharded else t)
    return replace(graph, tensors=tensors, ops=tuple(ops), outputs=frozenset(outs),
                   description=graph.description + "; sequence parallel")

"""A traced Graph as an ordinary workload YAML, identical layers folded into `repeat` blocks.

The ops of one module-list item (`model.layers.3`) are one segment. Consecutive segments of
the same list that run the same ops on the same shapes are one `repeat` block: inside it, a
parameter of the layer (`model.layers.3.mlp.up_proj.weight`) is a per-iteration tensor named
relative to the layer (`mlp.up_proj.weight`), a tensor the previous layer made (the residual
stream) is carried, and anything made before the block (rotary tables, the mask) is read by
its own name. Segments that differ (Gemma's sliding and global layers) start a new block.
Loading the YAML gives back a graph that predicts exactly what the traced graph predicts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

from rooflab import ops as oplib
from rooflab.graph import Graph, Op, folded_name


@dataclass
class _Segment:
    block: str                      # "model.layers.3"
    ops: list[Op]
    produced: dict[str, int] = field(default_factory=dict)    # tensor -> local index

    def add(self, op: Op) -> None:
        self.ops.append(op)
        for t in op.outputs:
            self.produced[t] = len(self.produced)


def _local_input_name(seg: _Segment, name: str, index: str) -> str | None:
    """The per-iteration name of an input tensor of `seg`, or None if it is not one of its own:
    its parameters relative to the layer; other tensors spelled with the layer's index, that
    index dropped ("kv_cache.3.keys" -> "kv_cache.keys")."""
    if name.startswith(seg.block + "."):
        return name[len(seg.block) + 1:]
    parts = name.split(".")
    if index in parts:
        parts.remove(index)
        return ".".join(parts)
    return None


class _Folder:
    def __init__(self, graph: Graph):
        self.g = graph
        self.producer = graph.producers()
        self.inputs = {t for t in graph.tensors if t not in self.producer}
        self.users: dict[str, set[str]] = {}          # graph input -> blocks that read it

    def segments(self) -> list[_Segment | Op]:
        """Top-level ops and segments, in graph order. Top-level ops between two items of one
        module list (a residual add the parent module does) belong to the earlier item; after
        the last item, as many as each earlier item took, if they are there."""
        items: list[_Segment | Op] = []
        for op in self.g.ops:
            if not op.block:
                items.append(op)
            else:
                if not (items and isinstance(items[-1], _Segment) and items[-1].block == op.block):
                    items.append(_Segment(op.block, []))
                items[-1].add(op)
        merged: list[_Segment | Op] = []
        tail: dict[str, int] = {}      # module list -> top-level ops each item took
        i = 0
        while i < len(items):
            it = items[i]
            merged.append(it)
            i += 1
            if not isinstance(it, _Segment):
                continue
            family = folded_name(it.block)
            j = i
            while j < len(items) and isinstance(items[j], Op):
                j += 1
            if j < len(items) and folded_name(items[j].block) == family:
                take = j - i
                tail[family] = take if tail.get(family, take) == take else -1
            else:
                take = tail.get(family, 0) if tail.get(family, 0) > 0 and j - i >= tail[family] else 0
            for op in items[i:i + take]:
                it.add(op)
            i += take
        items = merged
        for it in items:
            if isinstance(it, _Segment):
                for op in it.ops:
                    for t in op.inputs:
                        if t in self.inputs:
                            self.users.setdefault(t, set()).add(it.block)
        return items

    def own_inputs(self, seg: _Segment) -> dict[str, str]:
        """The graph inputs only `seg` reads -> their per-iteration names (parameters relative
        to the layer; unnamed ones, such as constants made on the fly, numbered in order)."""
        index = seg.block.rsplit(".", 1)[1]
        own: dict[str, str] = {}
        for op in seg.ops:
            for t in op.inputs:
                if t in self.inputs and t not in own and self.users.get(t) == {seg.block}:
                    local = _local_input_name(seg, t, index)
                    if local is None and re.fullmatch(r"v\d+", t):    # unnamed (a constant)
                        local = f"const{len(own)}"
                    if local is not None:
                        own[t] = local
        return own

    def signature(self, seg: _Segment, prev: _Segment | None):
        """What must match between iterations, and the carries: (signature, {input position:
        local index in `prev`}, {input position: outer tensor read})."""
        own = self.own_inputs(seg)
        sig, carried, outer = [], {}, {}
        for i, op in enumerate(seg.ops):
            refs = []
            for j, t in enumerate(op.inputs):
                if t in seg.produced:
                    refs.append(("l", seg.produced[t]))
                    continue
                if t in own:
                    tt = self.g.tensors[t]
                    refs.append(("p", own[t], tt.shape, tt.dtype.name))
                    continue
                if prev is not None and t in prev.produced:
                    carried[(i, j)] = prev.produced[t]
                    refs.append(("c",))
                else:
                    outer[(i, j)] = t
                    refs.append(("c",))     # read from outside: a carry or a shared tensor
            sig.append((op.kind, repr(sorted(op.attrs.items())), op.launches, tuple(refs),
                        tuple((self.g.tensors[t].shape, self.g.tensors[t].dtype.name)
                              for t in op.outputs)))
        return tuple(sig), carried, outer


def _runs(folder: _Folder, items) -> list:
    """Items with consecutive same-signature segments grouped: [Op | [segments...]]."""
    out: list = []
    i = 0
    while i < len(items):
        it = items[i]
        if isinstance(it, Op):
            out.append(it)
            i += 1
            continue
        run = [it]
        sig0, _, outer0 = folder.signature(it, None)
        carry_k = None
        j = i + 1
        while j < len(items) and isinstance(items[j], _Segment) and \
                folded_name(items[j].block) == folded_name(it.block):
            sig, carried, outer = folder.signature(items[j], run[-1])
            # every position is either carried from the previous layer or the same outer tensor
            # as in the first layer's; the carried positions are the same in every layer
            shared_ok = all(outer0.get(pos) == t for pos, t in outer.items())
            if sig != sig0 or not shared_ok or (carry_k is not None and carried != carry_k) \
                    or set(carried) | set(outer) != set(outer0):
                break
            carry_k = carried
            run.append(items[j])
            j += 1
        out.append(run if len(run) > 1 else it)
        i = j if len(run) > 1 else i + 1
    return out


def _op_yaml(op: Op, name: str, inputs, outputs) -> dict:
    d = {"name": name, "kind": op.kind, "inputs": list(inputs), "outputs": list(outputs)}
    d.update(op.attrs)
    if op.launches != 1 and oplib.KINDS[op.kind].role is not oplib.Role.VIEW:
        d["launches"] = op.launches
    return d


def _tensor_yaml(t) -> dict:
    return {"shape": list(t.shape), "dtype": t.dtype.name}


def to_workload(graph: Graph) -> dict:
    """The workload document (a dict ready for yaml.safe_dump) of a traced graph."""
    folder = _Folder(graph)
    items = _runs(folder, folder.segments())
    g = graph
    top_tensors: dict[str, dict] = {}
    ops_out: list = []
    rename: dict[str, str] = {}      # tensor made in a run's last layer -> its carried name
    needs_decl = lambda t: t in folder.inputs or g.ops[folder.producer[t]].kind == "opaque"  # noqa: E731

    def outer(t):
        return rename.get(t, t)

    for item in items:
        if not isinstance(item, list):          # a top-level op, or a layer like no other
            for op in ([item] if isinstance(item, Op) else item.ops):
                for t in list(op.inputs) + list(op.outputs):
                    if needs_decl(t) and t not in top_tensors:
                        top_tensors[t] = _tensor_yaml(g.tensors[t])
                ops_out.append(_op_yaml(op, op.name, map(outer, op.inputs), op.outputs))
            continue
        first, second, last = item[0], item[1], item[-1]
        _, carried, _ = folder.signature(second, first)
        _, _, outer0 = folder.signature(first, None)
        index = first.block.rsplit(".", 1)[1]
        local_of_first = {t: t for t in first.produced}
        carry: dict[str, str] = {}
        for pos, k in carried.items():
            src = outer0[pos]
            inner = list(first.produced)[k]
            if carry.setdefault(outer(src), inner) != inner:
                raise ValueError(f"{src} is carried into two different tensors")
        block_tensors: dict[str, dict] = {}
        body = []
        own = folder.own_inputs(first)
        for op in first.ops:
            ins = []
            for j, t in enumerate(op.inputs):
                if t in first.produced:
                    ins.append(local_of_first[t])
                    continue
                if t in own:
                    block_tensors[own[t]] = _tensor_yaml(g.tensors[t])
                    ins.append(own[t])
                else:
                    ins.append(outer(t))
                    if needs_decl(t) and t not in top_tensors and t not in rename:
                        top_tensors[t] = _tensor_yaml(g.tensors[t])
            for t in op.outputs:
                if op.kind == "opaque":
                    block_tensors[t] = _tensor_yaml(g.tensors[t])
            base = op.name[len(first.block) + 1:] if op.name.startswith(first.block + ".") else op.name
            body.append(_op_yaml(op, base, ins, op.outputs))
        list_name = first.block.rsplit(".", 1)[0]
        start = int(index)
        ops_out.append({"repeat": len(item), "name": list_name if start == 0 else
                        f"{list_name}_from{start}", "carry": carry, "tensors": block_tensors,
                        "ops": body})
        # after the block, a carried name holds the last layer's value
        last_names = list(last.produced)
        for outer_name, inner in carry.items():
            rename[last_names[list(first.produced).index(inner)]] = outer_name
    doc = {"name": g.name, "description": g.description}
    doc["tensors"] = top_tensors
    doc["ops"] = ops_out
    return doc


def check_expressible(graph: Graph, doc: dict) -> None:
    """Raise ValueError when a tensor made inside a folded layer is read after the block other
    than through a carry (the YAML could not name it)."""
    named = set()
    for item in doc["ops"]:
        if "repeat" in item:
            local = set(item["tensors"]) | set(item["carry"])
            for op in item["ops"]:
                for t in op["inputs"]:
                    if t not in local and t not in named and t not in doc["tensors"]:
                        raise ValueError(f"op {op['name']} reads {t}, made inside a folded block")
                local |= set(op["outputs"])
            named |= set(item["carry"])
            continue
        named |= set(item["outputs"])
        for t in item["inputs"]:
            if t not in named and t not in doc["tensors"]:
                raise ValueError(f"op {item['name']} reads {t}, made inside a folded block")


def document(graph: Graph) -> dict:
    """The workload document of a traced graph, layers folded where every tensor can still be
    named, else unrolled."""
    try:
        doc = to_workload(graph)
        check_expressible(graph, doc)
    except ValueError:
        doc = to_workload(_without_blocks(graph))
    return doc


class _Flow(dict):
    """A mapping written on one line: an op, a tensor spec."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Flow, lambda d, data: d.represent_mapping(
    "tag:yaml.org,2002:map", data.items(), flow_style=True))


def _flowed(doc: dict) -> dict:
    """`doc` with every op and tensor spec marked to be written on one line."""
    def ops(items):
        return [dict(item, tensors={k: _Flow(v) for k, v in item["tensors"].items()},
                     ops=ops(item["ops"])) if "repeat" in item else _Flow(item) for item in items]
    return dict(doc, tensors={k: _Flow(v) for k, v in doc["tensors"].items()}, ops=ops(doc["ops"]))


def dump(graph: Graph, header: list[str] = ()) -> str:
    """The workload YAML text of a traced graph, `header` lines as comments on top: one line
    per op and per tensor."""
    doc = _flowed(document(graph))
    text = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=10_000, allow_unicode=True)
    return "".join(f"# {line}\n" for line in header) + text


def summary(graph: Graph) -> str:
    """Two lines on what a trace holds: ops by role, kernels eager PyTorch launches, notes."""
    views = sum(oplib.KINDS[op.kind].role is oplib.Role.VIEW for op in graph.ops)
    launches = sum(op.launches for op in graph.ops if oplib.KINDS[op.kind].role is not oplib.Role.VIEW)
    opaque = sum(op.kind == "opaque" for op in graph.ops)
    text = (f"{graph.name}: {len(graph.ops):,} ops ({views:,} views, {opaque:,} opaque); "
            f"eager PyTorch launches {launches:,} kernels")
    return "\n".join([text, *(f"note: {n}" for n in graph.notes)])


def header(graph: Graph, command: str) -> list[str]:
    """The comment lines on top of a traced workload: what was traced, how, with what."""
    import datetime

    from rooflab import __version__
    day = datetime.date.today().isoformat()
    return [f"Traced by rooflab {__version__} on {day}: {command}",
            graph.description, *summary(graph).splitlines(),
            "An ordinary workload: rooflab predict/fusions/report/validate take it as it is."]


def _without_blocks(graph: Graph) -> Graph:
    from dataclasses import replace
    return replace(graph, ops=tuple(replace(op, block="") for op in graph.ops))

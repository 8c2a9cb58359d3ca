"""Trace any nn.Module: its forward over meta stand-ins of its parameters and inputs.

`trace_module(model, example_inputs)` never touches the model's real weights: the forward runs
through `torch.func.functional_call` with a meta tensor in place of every parameter and buffer,
so a model on the CPU or a GPU, or already on the meta device, traces the same and no memory is
allocated. Example inputs may be tensors (only their shape and dtype are used) or meta tensors.
"""

from __future__ import annotations

from dataclasses import replace

from rooflab.graph import Graph
from rooflab.trace.convert import convert
from rooflab.trace.record import Trace, record


def tensor_names(model) -> dict[int, str]:
    """id() of each parameter and buffer -> its dotted name (a tied weight: its first name)."""
    names: dict[int, str] = {}
    for n, t in list(model.named_parameters(remove_duplicate=False)) + \
            list(model.named_buffers(remove_duplicate=False)):
        names.setdefault(id(t), n)
    return names


def graph_of(trace: Trace, name: str, description: str, params: dict[str, int]) -> Graph:
    """The Graph of a trace, its conversion notes attached."""
    graph, notes = convert(trace, name, description, params)
    return graph.with_notes(notes) if notes else graph


def trace_module(model, example_inputs=(), example_kwargs=None, name: str | None = None,
                 params: dict[str, int] | None = None,
                 input_names: list[str] | None = None) -> Graph:
    """The rooflab Graph of `model(*example_inputs, **example_kwargs)` as eager PyTorch would
    dispatch it. No GPU and no weights are needed. `name` defaults to the model's class name;
    `input_names` name the positional inputs' tensors (default input, or input0, input1...)."""
    import torch
    from torch.func import functional_call

    def meta(t):
        return t if not isinstance(t, torch.Tensor) or t.device.type == "meta" \
            else torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")

    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    args = tuple(meta(a) for a in example_inputs)
    kwargs = {k: meta(v) for k, v in (example_kwargs or {}).items()}
    state = {n: meta(t) for n, t in list(model.named_parameters(remove_duplicate=False))
             + list(model.named_buffers(remove_duplicate=False))}
    names = {id(t): n for n, t in state.items()}
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            names[id(a)] = input_names[i] if input_names and i < len(input_names) else \
                (f"input{i}" if len(args) > 1 else "input")
    for k, v in kwargs.items():
        if isinstance(v, torch.Tensor):
            names[id(v)] = k
    modules = {id(m): n for n, m in model.named_modules()}
    trace = record(lambda: functional_call(model, state, args, kwargs, tie_weights=False,
                                           strict=False), names, modules)
    label = name or type(model).__name__
    shapes = ", ".join(f"{list(a.shape)}:{str(a.dtype).removeprefix('torch.')}" for a in args
                       if isinstance(a, torch.Tensor))
    graph = graph_of(trace, label, f"traced from {label}({shapes}) with torch "
                     f"{torch.__version__}", params or {})
    arguments = {names[id(t)] for t in (*args, *kwargs.values()) if isinstance(t, torch.Tensor)}
    return replace(graph, written_inputs=trace.written - set(state),
                   call_inputs=frozenset(arguments & graph.tensors.keys()))

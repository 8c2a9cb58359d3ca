"""Record what eager PyTorch dispatches for one forward call: every ATen op, on meta tensors.

A `TorchDispatchMode` sees each ATen op after autograd and the composite decompositions, which
is the level eager PyTorch launches kernels at. The forward runs on the meta device, so no GPU,
no weights and no memory are needed; shapes, dtypes and strides are exact.

Two things are recorded above the ATen level, where the meta device would not run what a GPU
runs: `scaled_dot_product_attention` and `rms_norm`, which on CUDA are one fused kernel each
but on meta decompose into their math (they are captured at the function level, their inner
ATen ops are not recorded, and SDPA's output is laid out as the CUDA kernel writes it), and
the module path of every op (forward pre/post hooks
keep a stack).

Data flow: every tensor value gets a number. An op's outputs are new values; an op that writes
an input in place (`add_`, `index_copy_`) makes a new version of it, which later readers of
that tensor object see. Views are new values that remember their base. An alias created before
an in-place update keeps naming the earlier version (the bytes are right; only that ordering
edge is lost).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rooflab.errors import RooflabError

# functions captured whole instead of by their ATen decomposition on the meta device: on CUDA
# each runs as one fused kernel (an SDPA backend, the fused RMS norm)
CAPTURED_FUNCTIONS = ("scaled_dot_product_attention", "rms_norm")


@dataclass(frozen=True, slots=True)
class Value:
    """One tensor value: its shape, torch dtype name (`torch.bfloat16` -> "bfloat16"), strides
    in elements, and the name of the parameter/buffer/input it is, if it came from outside."""
    shape: tuple[int, ...]
    dtype: str
    strides: tuple[int, ...]
    name: str | None = None


@dataclass(frozen=True, slots=True)
class Call:
    """One recorded op. `target`: the ATen overload ("aten.mm.default") or a captured function
    ("scaled_dot_product_attention"); `inputs`: value numbers of its tensor arguments in
    argument order (tensors inside lists flattened); `outputs`: value numbers it produced,
    in-place versions included; `mutated`: positions in `inputs` it wrote in place;
    `args`/`kwargs`: the call's arguments with every tensor replaced by None."""
    target: str
    module: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    mutated: tuple[int, ...]
    args: tuple
    kwargs: dict = field(hash=False, compare=False)
    flops: int | None = None      # tensor-core FLOPs, where torch's flop counter knows the op

    @property
    def packet(self) -> str:
        """The op's name without namespace and overload: "aten.add_.Tensor" -> "add_"."""
        parts = self.target.split(".")
        return parts[1] if parts[0] == "aten" and len(parts) > 1 else self.target


@dataclass
class Trace:
    """Everything one recorded forward dispatched, in dispatch order (a topological order)."""
    calls: list[Call]
    values: list[Value]
    outputs: tuple[int, ...]      # values the forward returned (flattened)
    # names (from `names`) of the tensors the forward wrote in place, itself or through a view
    written: frozenset[str] = frozenset()


class TraceError(RooflabError):
    """The forward failed under the recorder, or made what rooflab cannot price; the message
    says which op and module."""


def record(fn, names: dict[int, str], modules: dict[int, str]) -> Trace:
    """Run `fn()` (a forward call over meta tensors) under the recorder. `names` maps id() of
    tensors that come from outside (parameters, buffers, inputs) to their names; `modules` maps
    id() of modules to their dotted paths, for naming ops. Returns the Trace."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten
    from torch.utils.flop_counter import flop_registry

    calls: list[Call] = []
    values: list[Value] = []
    value_of: dict[int, int] = {}      # id(tensor object) -> its current value number
    keep: list[Any] = []               # holds every tensor seen, so no id() is reused
    stack: list[str] = [""]
    suppressed = [0]
    written_names: set[str] = set()

    def value(t) -> int:
        v = value_of.get(id(t))
        if v is None:
            v = new_value(t, names.get(id(t)))
        return v

    def new_value(t, name: str | None = None) -> int:
        keep.append(t)
        values.append(Value(tuple(t.shape), str(t.dtype).removeprefix("torch."),
                            tuple(t.stride()), name))
        value_of[id(t)] = len(values) - 1
        return len(values) - 1

    def strip(obj):
        return None if isinstance(obj, torch.Tensor) else obj

    def add_call(target, args, kwargs, out, mutated_args, func=None):
        flat_in, _ = tree_flatten((args, kwargs))
        tensors_in = [a for a in flat_in if isinstance(a, torch.Tensor)]
        inputs = tuple(value(a) for a in tensors_in)
        mutated = tuple(i for i, a in enumerate(tensors_in) if id(a) in mutated_args)
        outputs = []
        for i in mutated:
            outputs.append(new_value(tensors_in[i]))
        flat_out, _ = tree_flatten(out)
        written = {id(tensors_in[i]) for i in mutated}
        for i in mutated:
            t = tensors_in[i]
            name = names.get(id(t)) or (names.get(id(t._base)) if t._base is not None else None)
            if name is not None:
                written_names.add(name)
        for o in flat_out:
            if isinstance(o, torch.Tensor) and id(o) not in written:
                outputs.append(new_value(o))
        flops = None
        counter = flop_registry.get(getattr(func, "overloadpacket", None))
        if counter is not None:
            try:
                flops = int(counter(*args, **kwargs, out_val=out))
            except Exception:  # noqa: BLE001 - a formula that does not take these arguments
                flops = None
        calls.append(Call(target, stack[-1], inputs, tuple(outputs), mutated,
                          tuple(tree_map_strip(args, strip)),
                          {k: tree_map_strip(v, strip) for k, v in kwargs.items()}, flops))

    class _Dispatch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            if not suppressed[0]:
                schema = func._schema
                mutated_args = set()
                for i, arg in enumerate(schema.arguments):
                    if arg.alias_info is not None and arg.alias_info.is_write:
                        a = args[i] if i < len(args) else kwargs.get(arg.name)
                        # a Tensor(a!) argument, or a Tensor(a!)[] list (_foreach_copy_)
                        for t in a if isinstance(a, (list, tuple)) else (a,):
                            if isinstance(t, torch.Tensor):
                                mutated_args.add(id(t))
                add_call(str(func), args, kwargs, out, mutated_args, func)
            return out

    class _Functions(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = getattr(func, "__name__", "")
            if name not in CAPTURED_FUNCTIONS or suppressed[0]:
                return func(*args, **kwargs)
            suppressed[0] += 1
            try:
                out = func(*args, **kwargs)
                if name == "scaled_dot_product_attention":
                    out = _sdpa_layout(torch, out, args, kwargs)
            finally:
                suppressed[0] -= 1
            add_call(name, args, kwargs, out, set())
            return out

    def pre(module, _inputs):
        stack.append(modules.get(id(module), stack[-1]))

    def post(module, _inputs, _output):
        stack.pop()

    hooks = [torch.nn.modules.module.register_module_forward_pre_hook(pre),
             torch.nn.modules.module.register_module_forward_hook(post)]
    try:
        with torch.no_grad(), _Functions(), _Dispatch():
            out = fn()
    except Exception as e:  # noqa: BLE001 - any failure of user code under fake tensors
        where = f" (in module {stack[-1]})" if stack[-1] else ""
        raise TraceError(f"the forward failed on meta tensors{where}: "
                         f"{type(e).__name__}: {first_line(e)}") from None
    finally:
        for h in hooks:
            h.remove()
    flat_out, _ = tree_flatten(out if not hasattr(out, "to_tuple") else out.to_tuple())
    outputs = tuple(value_of[id(o)] for o in flat_out
                    if isinstance(o, torch.Tensor) and id(o) in value_of)
    return Trace(calls, values, outputs, frozenset(written_names))


def _sdpa_layout(torch, out, args, kwargs):
    """SDPA's output laid out as CUDA's backends write it, not as the meta device's math does:
    the cuDNN kernel (16-bit, masked or not, on the H200) in the stride order of the query
    (aten/src/ATen/native/transformers/sdp_utils.h, alloc_with_matching_layout), the
    memory-efficient one (fp32) as [batch, seq, heads, dim] returned transposed. A query
    transposed from [batch, seq, heads, dim], as transformers makes it, gets that layout from
    either, so the transpose back before o_proj is a view, not a copy."""
    q = args[0] if args else kwargs.get("query")
    if not isinstance(q, torch.Tensor) or out.dim() != 4 or q.dim() != 4:
        return out
    if q.dtype in (torch.float16, torch.bfloat16):
        order = sorted(range(4), key=lambda d: -q.stride(d))
    else:
        order = [0, 2, 1, 3]
    return torch.empty([out.shape[d] for d in order], dtype=out.dtype,
                       device=out.device).permute([order.index(d) for d in range(4)])


def tree_map_strip(obj, strip):
    """`obj` with tensors replaced by None, lists and tuples kept (torch.Size as a tuple)."""
    if isinstance(obj, (list, tuple)):
        return type(obj)(tree_map_strip(o, strip) for o in obj) if not _is_size(obj) \
            else tuple(obj)
    return strip(obj)


def _is_size(obj) -> bool:
    return type(obj).__name__ == "Size"


def first_line(e: BaseException) -> str:
    """The first line of an exception's message, or '(no message)'."""
    text = str(e).strip().splitlines()
    return text[0][:300] if text else "(no message)"

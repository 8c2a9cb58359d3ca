"""Generate a Triton kernel that computes exactly what one rooflab kernel computes.

Three generated shapes of kernel cover the pointwise / reduction / GEMM families (`route.py`
picks which one, or a hand-written template, builds a kernel):

  pointwise   a 1-D grid over the kernel's output elements; every op is one line of fp32 math
  row         one program per row of a last-axis reduction (reduce, softmax, rmsnorm, layernorm)
              with its pointwise prologue and epilogue
  gemm        a tiled matmul (batched, transposes) whose epilogue runs the fused pointwise ops
              on the fp32 accumulator tile

Every tensor the kernel reads from outside is addressed from the kernel's iteration space by one
of a few broadcast patterns (full, trailing dims such as a bias row, leading dims such as a
per-row scalar); anything else raises `Unsupported` with the reason, and the suite skips it.
Sources are written to a cache folder and imported, because `triton.jit` needs a real file.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import tempfile
from pathlib import Path

from rooflab.graph import Graph, Tensor
from rooflab.ops import KINDS, Role
from rooflab.schedule import Kernel
from rooflab.validate.common import Unsupported
from rooflab.validate.kernels.built import Built, Views, escaping, external_inputs
from rooflab.validate.kernels.configs import SM_COUNT_DEFAULT, gemm_config, row_config

TL_DTYPES = {"fp32": "tl.float32", "tf32": "tl.float32", "bf16": "tl.bfloat16",
             "fp16": "tl.float16", "fp8_e4m3": "tl.float8e4nv", "fp8_e5m2": "tl.float8e5",
             "int32": "tl.int32", "int64": "tl.int64"}

_SIG_DTYPES = {"fp32": "fp32", "tf32": "fp32", "bf16": "bf16", "fp16": "fp16",
               "fp8_e4m3": "fp8e4nv", "fp8_e5m2": "fp8e5", "int64": "i64", "int32": "i32",
               "int8": "i8", "int4": "i8"}


def _signature(g: Graph, params: list[str], constexprs: dict) -> dict:
    """Triton signature of a generated kernel, to compile it ahead of time without a GPU."""
    missing = [g.tensors[t].dtype.name for t in params
               if g.tensors[t].dtype.name not in _SIG_DTYPES]
    if missing:         # block-scaled FP4/FP6: no Triton pointer type to load them through
        raise Unsupported(f"no generated Triton kernel reads {missing[0]}")
    sig = {f"p{i}": "*" + _SIG_DTYPES[g.tensors[t].dtype.name] for i, t in enumerate(params)}
    sig.update({k: "constexpr" for k in constexprs})
    return sig




# ------------------------------------------------------------------------------------------
class _Space:
    """Iteration space of a generated kernel and how to index a tensor from it."""

    def __init__(self, shape: tuple[int, ...], flat: str, mask: str, col: str, row: str,
                 row_is_scalar: bool = False):
        self.shape = shape
        self.n = math.prod(shape)
        self.c = shape[-1]
        self.flat, self.mask, self.col, self.row = flat, mask, col, row
        self.row_is_scalar = row_is_scalar

    def index(self, t: Tensor) -> tuple[str, bool]:
        """(index expression, is it a per-row scalar) for reading `t` broadcast to the space."""
        n = t.numel
        dims = list(t.shape)
        while dims and dims[0] == 1:
            dims.pop(0)
        if n == self.n:
            return self.flat, False
        if n == 1:
            return "0", self.row_is_scalar
        if tuple(dims) == tuple(self.shape[len(self.shape) - len(dims):]):
            return (self.col, False) if n == self.c else (f"({self.flat}) % {n}", False)
        lead = list(t.shape)
        while lead and lead[-1] == 1:
            lead.pop()
        if tuple(lead) == tuple(self.shape[:len(lead)]):
            if n * self.c == self.n:
                return self.row, self.row_is_scalar
            return f"({self.flat}) // {self.n // n}", False
        raise Unsupported(f"broadcast of {t.name} {list(t.shape)} to {list(self.shape)}")


class _Emitter:
    """Turns the kernel's ops into lines of fp32 Triton code over a `_Space`."""

    def __init__(self, graph: Graph, kernel: Kernel, views: Views, space: _Space):
        self.g, self.k, self.views, self.space = graph, kernel, views, space
        self.lines: list[str] = []
        self.vars: dict[str, str] = {}
        self.params: list[str] = []            # pointer parameter per external tensor
        self.param_of: dict[str, str] = {}
        self.scalar_vars: set[str] = set()

    def ptr(self, t: str) -> str:
        if t not in self.param_of:
            self.param_of[t] = f"p{len(self.params)}"
            self.params.append(t)
        return self.param_of[t]

    def value(self, t: str) -> str:
        r = self.views(t)
        if r in self.vars:
            return self.vars[r]
        if t in self.views.permuted:
            raise Unsupported(f"{t} is a permuted view")
        tensor = self.g.tensors[r]
        idx, scalar = self.space.index(self.g.tensors[t] if t in self.g.tensors else tensor)
        var = f"v{len(self.vars)}"
        conv = ".to(tl.float32)" if tensor.dtype.is_float or tensor.dtype.name == "int4" else ""
        if scalar:
            self.lines.append(f"{var} = tl.load({self.ptr(r)} + {idx}){conv}")
            self.scalar_vars.add(var)
        else:
            self.lines.append(f"{var} = tl.load({self.ptr(r)} + {idx}, mask={self.space.mask}, "
                              f"other=0.0){conv}")
        self.vars[r] = var
        return var

    def assign(self, t: str, expr: str) -> str:
        var = f"v{len(self.vars)}"
        self.lines.append(f"{var} = {expr}")
        self.vars[self.views(t)] = var
        return var

    def pointwise(self, i: int) -> None:
        """Emit op i of a generated kernel as its kind's Triton hook says."""
        op = self.g.ops[i]
        hook = KINDS[op.kind].triton
        if hook.emit:
            getattr(self, "_" + hook.emit)(op)
        elif hook.expr and KINDS[op.kind].role is Role.POINTWISE:
            if op.kind == "dequantize" and "group_size" in op.attrs:
                raise Unsupported("grouped dequantize runs through the w4a16 templates")
            values = [self.value(t) for t in op.inputs]
            self.assign(op.outputs[0], hook.expr.format(x=values[0], a=values[0],
                                                        b=values[-1]))
        else:
            raise Unsupported(f"{op.kind} in a generated pointwise kernel")

    def _scale(self, op) -> None:
        self.assign(op.outputs[0],
                    f"{self.value(op.inputs[0])} * {float(op.attrs.get('factor', 1.0))!r}")

    def _cast(self, op) -> None:
        out_dt = self.g.tensors[op.outputs[0]].dtype.name
        x = self.value(op.inputs[0])
        if out_dt not in TL_DTYPES:
            raise Unsupported(f"cast to {out_dt}")
        if out_dt.startswith("fp8"):
            lim = 448.0 if out_dt == "fp8_e4m3" else 57344.0
            x = f"tl.minimum(tl.maximum({x}, -{lim}), {lim})"
        self.assign(op.outputs[0], f"({x}).to({TL_DTYPES[out_dt]}).to(tl.float32)")

    def _causal_mask(self, op) -> None:
        x = self.value(op.inputs[0])
        sq, sk = self.g.tensors[op.outputs[0]].shape[-2:]
        f = self.space.flat
        self.assign(op.outputs[0], f"tl.where(({f}) % {sk} <= (({f}) // {sk}) % {sq} + {sk - sq}, "
                                   f"{x}, float('-inf'))")

    def _rotary(self, op) -> None:
        x_name = self.views(op.inputs[0])
        if x_name in self.vars or op.inputs[0] in self.views.permuted:
            raise Unsupported("rotary of a value made inside the kernel (needs its partner lane)")
        x = self.value(op.inputs[0])
        cos, sin = self.value(op.inputs[1]), self.value(op.inputs[2])
        d = self.g.tensors[op.outputs[0]].shape[-1]
        half = d // 2
        f = self.space.flat
        partner = f"tl.where(({f}) % {d} < {half}, ({f}) + {half}, ({f}) - {half})"
        xp = f"v{len(self.vars)}p"
        self.lines.append(f"{xp} = tl.load({self.ptr(x_name)} + {partner}, mask={self.space.mask}, "
                          "other=0.0).to(tl.float32)")
        rot = f"tl.where(({f}) % {d} < {half}, -{xp}, {xp})"
        self.assign(op.outputs[0], f"{x} * {cos} + {rot} * {sin}")

    def _embedding(self, op) -> None:
        table, ids = op.inputs
        d = self.g.tensors[table].shape[1]
        vocab = self.g.tensors[table].shape[0]
        f = self.space.flat
        idv = f"v{len(self.vars)}i"
        self.lines.append(f"{idv} = tl.load({self.ptr(self.views(ids))} + ({f}) // {d}, "
                          f"mask={self.space.mask}, other=0).to(tl.int64) % {vocab}")
        self.assign(op.outputs[0], f"tl.load({self.ptr(self.views(table))} + {idv} * {d} + "
                                   f"({f}) % {d}, mask={self.space.mask}, other=0.0).to(tl.float32)")

    def store(self, t: str, full_index: str | None = None) -> None:
        r = self.views(t)
        dt = self.g.tensors[r].dtype.name
        if dt not in TL_DTYPES:
            raise Unsupported(f"store of {dt}")
        var = self.vars[r]
        tensor = self.g.tensors[r]
        if var in self.scalar_vars or (tensor.numel * self.space.c == self.space.n
                                       and self.space.row_is_scalar):
            self.lines.append(f"tl.store({self.ptr(r)} + {self.space.row}, "
                              f"{var}.to({TL_DTYPES[dt]}))")
        else:
            if tensor.numel != self.space.n:
                raise Unsupported(f"store of {t} {list(tensor.shape)} from a "
                                  f"{list(self.space.shape)} kernel")
            self.lines.append(f"tl.store({self.ptr(r)} + {full_index or self.space.flat}, "
                              f"{var}.to({TL_DTYPES[dt]}), mask={self.space.mask})")


# ------------------------------------------------------------------------------------------
_CACHE = Path(os.environ.get("ROOFLAB_KERNEL_CACHE", Path(tempfile.gettempdir()) / "rooflab_kernels"))


class Lazy:
    """Generated source, imported (and so compiled by Triton) only when first launched."""

    def __init__(self, source: str):
        self.source = source
        self._mod = None

    @property
    def kernel(self):
        if self._mod is None:
            self._mod = load_source(self.source)
        return self._mod.kernel


def load_source(source: str):
    """Import generated Triton source from a file (triton.jit reads the source of its function)."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:16]
    _CACHE.mkdir(parents=True, exist_ok=True)
    path = _CACHE / f"k_{digest}.py"
    if not path.exists():
        path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"rooflab_k_{digest}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _header() -> str:
    return "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"


def _indent(lines: list[str], n: int = 4) -> str:
    return "\n".join(" " * n + line for line in lines)


def _alloc(g: Graph, names: list[str], device):
    import torch
    from rooflab.validate.reference import torch_dtype
    return {t: torch.empty(g.tensors[t].shape, dtype=torch_dtype(g.tensors[t].dtype.name),
                           device=device) for t in names}


def gen_pointwise(g: Graph, kernel: Kernel, views: Views) -> Built:
    outs = escaping(g, kernel, views)
    shape = max((g.tensors[views(t)].shape for i in kernel.ops for t in g.ops[i].outputs),
                key=math.prod)
    space = _Space(shape, "offs", "mask", f"offs % {shape[-1]}", f"offs // {shape[-1]}")
    em = _Emitter(g, kernel, views, space)
    for i in kernel.ops:
        em.pointwise(i)
    for t in outs:
        em.store(t)
    ins = [t for t in em.params if t not in outs]
    params = ", ".join(em.param_of[t] for t in em.params)
    n = space.n
    src = (_header() + f"def kernel({params}, BLOCK: tl.constexpr):\n"
           "    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)\n"
           f"    mask = offs < {n}\n" + _indent(em.lines) + "\n")
    mod = Lazy(src)
    block = 1024 if n >= 1 << 20 else 512

    def run(env):
        out = _alloc(g, outs, env[ins[0]].device if ins else "cuda")
        args = [env[t] if t in env and t not in out else out[t] for t in em.params]
        mod.kernel[(triton_cdiv(n, block),)](*args, BLOCK=block, num_warps=4)
        return out
    const = {"BLOCK": block}
    return Built(kernel.name, "pointwise", ins, outs, run, src,
                 {"signature": _signature(g, em.params, const), "constexprs": const,
                  "num_warps": 4})


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _evict(line: str, policy: str) -> str:
    return line.replace(", other=0.0)", f", other=0.0, eviction_policy='{policy}')")


def gen_row(g: Graph, kernel: Kernel, views: Views, config: dict | None = None) -> Built:
    """One program per row: prologue ops, the reduction, epilogue ops. Whole-row form: every
    line runs once on the row in registers. Looped form: pass 1 runs the prologue and the
    reduction's accumulation chunk by chunk (and writes prologue values that escape), the
    statistics are finished after the loop, pass 2 runs the prologue again, the reduction's
    elementwise output and the epilogue, chunk by chunk."""
    red = next(i for i in kernel.ops if KINDS[g.ops[i].kind].role is Role.REDUCTION)
    rop = g.ops[red]
    x_t = g.tensors[views(rop.inputs[0])]
    axis = rop.attrs.get("axis", -1) % len(x_t.shape)
    if axis != len(x_t.shape) - 1:
        raise Unsupported("reduction over a non-last axis")
    c = x_t.shape[-1]
    in_bytes = sum(-(-g.tensors[t].dtype.bits // 8) for t in external_inputs(g, kernel, views))
    cfg = config or row_config(c, in_bytes)
    block_c, warps, loop = cfg["BLOCK_C"], cfg["num_warps"], cfg["loop"]
    space = _Space(x_t.shape, "flat", "mask", "cols", "row", row_is_scalar=True)
    em = _Emitter(g, kernel, views, space)
    outs = escaping(g, kernel, views)
    fmt = dict(c=float(c), eps=float(rop.attrs.get("eps", 1e-5)))
    pro = [i for i in kernel.ops if i < red]
    epi = [i for i in kernel.ops if i > red]
    for i in pro:
        em.pointwise(i)
    x = em.value(rop.inputs[0])
    pro_lines = list(em.lines)            # loads and prologue math: pass 2 runs them again
    y = f"v{len(em.vars)}"
    em.vars[views(rop.outputs[0])] = y
    scalar = rop.kind in ("sum", "mean", "max")
    if scalar:
        em.scalar_vars.add(y)
    made_before = {views(t) for i in pro for t in g.ops[i].outputs}

    def lines(template: list[str]) -> list[str]:
        # weight and bias are loaded where the template uses them (pass 2 of a looped row)
        uses = "".join(template)
        w = f" * {em.value(rop.inputs[1])}" if len(rop.inputs) > 1 and "{w}" in uses else ""
        b = f" + {em.value(rop.inputs[2])}" if len(rop.inputs) > 2 and "{b}" in uses else ""
        return [line.format(y=y, x=x, w=w, b=b, **fmt) for line in template]

    def epilogue_and_stores(skip: set[str]) -> None:
        for i in epi:
            em.pointwise(i)
        for t in outs:
            if views(t) not in skip:
                em.store(t)

    if not loop:
        em.lines += lines(KINDS[rop.kind].triton.row)
        epilogue_and_stores(set())
        body = ("    cols = tl.arange(0, BLOCK_C)\n"
                f"    mask = cols < {c}\n"
                f"    flat = row * {c} + cols\n" + _indent(em.lines))
    else:
        init, acc, fin, elem = KINDS[rop.kind].triton.loop
        em.lines = []
        for t in outs:                    # prologue values that escape are written in pass 1
            if views(t) in made_before:
                em.store(t)
        pass1 = pro_lines + em.lines + lines(acc)
        if cfg.get("evict"):
            # keep the row in L2 for pass 2's re-read; pass 2's reads are the last use
            pass1 = [_evict(line, "evict_last") for line in pass1]
        em.lines = []
        head = (f"    for c0 in range(0, {c}, BLOCK_C):\n"
                "        cols = c0 + tl.arange(0, BLOCK_C)\n"
                f"        mask = cols < {c}\n"
                f"        flat = row * {c} + cols\n")
        body = _indent(lines(init)) + "\n" + head + _indent(pass1, 8) + "\n" + _indent(lines(fin))
        done = set(made_before)
        if scalar and views(rop.outputs[0]) in outs:
            em.store(rop.outputs[0])
            body += "\n" + _indent(em.lines)
            done.add(views(rop.outputs[0]))
        if [t for t in outs if views(t) not in done]:
            em.lines = [_evict(line, "evict_first") if cfg.get("evict") else line
                        for line in pro_lines]
            em.lines += lines(elem)
            epilogue_and_stores(done)
            body += "\n" + head + _indent(em.lines, 8)
    ins = [t for t in em.params if t not in outs]
    params = ", ".join(em.param_of[t] for t in em.params)
    rows = x_t.numel // c
    const = {"BLOCK_C": block_c}
    if cfg.get("persistent"):
        # one program per SM walks rows; num_stages lets Triton's pipeliner fetch the next row
        # (cp.async into shared memory) while this one is reduced and written
        per_sm = cfg.get("programs_per_sm", 1)
        const["NPROG"] = min(rows, SM_COUNT_DEFAULT * per_sm)
        src = (_header() + f"def kernel({params}, BLOCK_C: tl.constexpr, NPROG: tl.constexpr):\n"
               f"    for r in tl.range(tl.program_id(0), {rows}, NPROG, "
               f"num_stages={cfg.get('num_stages', 2)}):\n"
               "        row = r.to(tl.int64)\n" + _indent(body.splitlines(), 4) + "\n")
    else:
        src = (_header() + f"def kernel({params}, BLOCK_C: tl.constexpr):\n"
               "    row = tl.program_id(0).to(tl.int64)\n" + body + "\n")
    mod = Lazy(src)

    def run(env):
        out = _alloc(g, outs, env[ins[0]].device)
        args = [env[t] if t not in out else out[t] for t in em.params]
        extra = {"maxnreg": cfg["maxnreg"]} if cfg.get("maxnreg") else {}
        if cfg.get("persistent"):
            import torch
            sms = torch.cuda.get_device_properties(out[outs[0]].device).multi_processor_count
            nprog = min(rows, sms * per_sm)
            mod.kernel[(nprog,)](*args, num_warps=warps, BLOCK_C=block_c, NPROG=nprog, **extra)
        else:
            mod.kernel[(rows,)](*args, num_warps=warps, **const, **extra)
        return out
    return Built(kernel.name, "row", ins, outs, run, src,
                 {"config": cfg, "signature": _signature(g, em.params, const), "constexprs": const,
                  "num_warps": warps})


def gen_gemm(g: Graph, kernel: Kernel, views: Views, config: dict | None = None) -> Built:
    mm_i = next(i for i in kernel.ops if g.ops[i].kind == "matmul")
    if mm_i != kernel.ops[0]:
        raise Unsupported("GEMM prologue")
    mm = g.ops[mm_i]
    a_n, b_n = (views(t) for t in mm.inputs)
    if any(t in views.permuted for t in mm.inputs):
        raise Unsupported("matmul of a permuted view")
    a, b = g.tensors[a_n], g.tensors[b_n]
    c_t = g.tensors[views(mm.outputs[0])]
    if a.dtype.compute != b.dtype.compute or a.dtype.name not in ("bf16", "fp16", "fp32"):
        raise Unsupported(f"generated GEMM of {a.dtype.name} x {b.dtype.name}")
    ta, tb = mm.attrs.get("transpose_a", False), mm.attrs.get("transpose_b", False)
    m, n = c_t.shape[-2:]
    k = a.shape[-2] if ta else a.shape[-1]
    batch = math.prod(c_t.shape[:-2])
    sa = (1, m) if ta else (k, 1)          # (stride_m, stride_k) of a
    sb = (1, k) if tb else (n, 1)          # (stride_k, stride_n) of b
    bsa = m * k if len(a.shape) > 2 and math.prod(a.shape[:-2]) > 1 else 0
    bsb = k * n if len(b.shape) > 2 and math.prod(b.shape[:-2]) > 1 else 0
    space = _Space(c_t.shape, "flat", "mask", "rn[None, :]", "(pid_b * M + rm[:, None])")
    em = _Emitter(g, kernel, views, space)
    pa, pb = em.ptr(a_n), em.ptr(b_n)
    em.vars[views(mm.outputs[0])] = "acc"
    for i in kernel.ops[1:]:
        em.pointwise(i)
    outs = escaping(g, kernel, views)
    for t in outs:
        em.store(t)
    ins = [t for t in em.params if t not in outs]
    params = ", ".join(em.param_of[t] for t in em.params)
    prec = ', input_precision="ieee"' if a.dtype.name == "fp32" and not mm.attrs.get("tf32") else ""
    cfg = config or gemm_config(m, n, k, batch)
    where = ("    mask = (rm[:, None] < M) & (rn[None, :] < N)\n"
             "    flat = pid_b * M * N + rm[:, None].to(tl.int64) * N + rn[None, :]\n")
    if cfg.get("split_epilogue") and len(kernel.ops) > 1:
        # the epilogue runs on two [BM, BN/2] halves of the tile in turn: the tensors it loads
        # (bias, residual) then need half the registers next to the fp32 accumulator
        epilogue = ("    acc_0, acc_1 = tl.split(tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1)))\n"
                    + "".join(f"    acc = acc_{h}\n"
                              f"    rn = pid_n * BN + {h} * (BN // 2) + tl.arange(0, BN // 2)\n"
                              + where + _indent(em.lines) + "\n" for h in (0, 1)))
    else:
        epilogue = where + _indent(em.lines) + "\n"
    src = _header() + f"""def kernel({params}, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    # grouped tile order (Triton tutorial 03) for L2 reuse of A rows and B columns
    pid = tl.program_id(0)
    pid_b = tl.program_id(1).to(tl.int64)
    n_m = tl.cdiv(M, BM)
    n_n = tl.cdiv(N, BN)
    group = pid // (GROUP * n_n)
    first_m = group * GROUP
    size_m = tl.minimum(n_m - first_m, GROUP)
    pid_m = first_m + (pid % (GROUP * n_n)) % size_m
    pid_n = (pid % (GROUP * n_n)) // size_m
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = {pa} + pid_b * {bsa} + rm[:, None] * {sa[0]} + rk[None, :] * {sa[1]}
    b_ptrs = {pb} + pid_b * {bsb} + rk[:, None] * {sb[0]} + rn[None, :] * {sb[1]}
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a_t = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] + k0 < K), other=0.0)
        b_t = tl.load(b_ptrs, mask=(rk[:, None] + k0 < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a_t, b_t, acc{prec})
        a_ptrs += BK * {sa[1]}
        b_ptrs += BK * {sb[0]}
""" + epilogue
    tiles = triton_cdiv(m, cfg["BM"]) * triton_cdiv(n, cfg["BN"])
    const = {"M": m, "N": n, "K": k, "BM": cfg["BM"], "BN": cfg["BN"], "BK": cfg["BK"],
             "GROUP": cfg["GROUP"]}
    mod = Lazy(src)

    def run(env):
        out = _alloc(g, outs, env[a_n].device)
        args = [env[t] if t not in out else out[t] for t in em.params]
        mod.kernel[(tiles, batch)](*args, num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
                                   **const)
        return out
    return Built(kernel.name, "gemm", ins, outs, run, src,
                 {"config": cfg, "signature": _signature(g, em.params, const), "constexprs": const,
                  "num_warps": cfg["num_warps"], "num_stages": cfg["num_stages"]})

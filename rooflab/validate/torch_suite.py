"""The torch-backend validation suite: small eager PyTorch programs, each one ATen kernel family
at one size, as data.

rooflab prices eager PyTorch by the ATen kernel family each op falls into
(`rooflab.kernel_families`). These cases are what a GPU run times (`torch_run.run`) to fit the
families' curves (`split == "calibration"`) and to check them (`split == "validation"`): sizes
alternate between the two splits within each variant of a family, so both span the size range
from launch-bound (~4 KB) to bandwidth-bound (~1 GB) and compute-bound GEMMs (8192³).

A case's `build(device)` makes the nn.Module whose forward is the program (on the meta device
by default, so tracing allocates nothing); `inputs` say each input's shape, dtype and fill.
Families are rooflab.kernel_families.FAMILIES keys, plus `gemm`, `bmm`, `sdpa` (priced by the
GEMM and attention models, not a bandwidth curve) and `step` (multi-op programs timed whole:
SwiGLU MLP, rms_norm + linear, a small Llama-like decoder layer, a pointwise chain).

torch is imported only when a case is built or its inputs made; the programs are in
rooflab.validate.torch_programs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod
from typing import Callable

from rooflab.kernel_families import SMALL_INDEX_MAX, softmax_family
from rooflab.validate.torch_programs import (chain, chain_bias, decoder_builder, functional,
                                             grouped_mm_builder, linear_chain_builder,
                                             mlp_builder, program, reduction_chain,
                                             rmsnorm_linear_builder, torch_dtype, torch_module)

SPLITS = ("calibration", "validation")
EXTRA_FAMILIES = ("gemm", "bmm", "sdpa", "step")
_DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4, "int64": 8, "bool": 1}
_MAX_CASE_BYTES = 8 * 2**30        # every case's tensors must fit well inside an H200 (< 8 GB)


@dataclass(frozen=True)
class Input:
    """One input of a case: `fill` is "randn" (standard normal), "index" (uniform integers in
    [0, high)), "arange" (low, low+1, ...: distinct positions, a KV-cache write's) or "ones"
    (all ones; an all-True boolean mask)."""
    name: str
    shape: tuple[int, ...]
    dtype: str = "bf16"
    fill: str = "randn"
    low: int = 0
    high: int = 0

    @property
    def nbytes(self) -> int:
        return prod(self.shape) * _DTYPE_BYTES[self.dtype]


@dataclass(frozen=True)
class Case:
    """One program at one size. `build(device="meta")` returns the nn.Module (parameters, if
    any, on `device` in the case's dtype); `compile` says whether torch.compile is timed too."""
    id: str
    family: str
    split: str
    build: Callable
    inputs: tuple[Input, ...]
    compile: bool = False
    note: str = ""
    variant: str = field(default="", compare=False)
    between: bool = False          # a size added between a variant's, outside its alternation

    @property
    def single_kernel(self) -> bool:
        """Whether eager PyTorch runs this case as one kernel (every family but `step`)."""
        return self.family != "step"

    @property
    def input_bytes(self) -> int:
        return sum(i.nbytes for i in self.inputs)

    def param_bytes(self) -> int:
        """Bytes of the module's parameters and buffers (built on the meta device)."""
        m = self.build("meta")
        return sum(t.numel() * t.element_size() for t in list(m.parameters()) + list(m.buffers()))

    def example_inputs(self, device: str = "meta") -> list:
        """Empty tensors of the inputs' shapes and dtypes on `device` (meta: for tracing)."""
        import torch
        return [torch.empty(i.shape, dtype=torch_dtype(i.dtype), device=device)
                for i in self.inputs]

    def make_inputs(self, device: str, seed: int = 0) -> list:
        """The inputs filled as `inputs` say, on `device`."""
        import torch
        g = torch.Generator(device=device).manual_seed(seed)
        out = []
        for i in self.inputs:
            dt = torch_dtype(i.dtype)
            if i.fill == "randn":
                out.append(torch.randn(i.shape, dtype=dt, device=device, generator=g))
            elif i.fill == "index":
                out.append(torch.randint(0, i.high, i.shape, dtype=dt, device=device,
                                         generator=g))
            elif i.fill == "arange":
                out.append(torch.arange(i.low, i.low + prod(i.shape), dtype=dt,
                                        device=device).view(i.shape))
            elif i.fill == "ones":
                out.append(torch.ones(i.shape, dtype=dt, device=device))
            else:
                raise ValueError(f"{self.id}: unknown fill {i.fill!r}")
        return out


# ---- the sizes -------------------------------------------------------------------------------

def _size_tag(n: int) -> str:
    for unit, scale in (("M", 2**20), ("K", 2**10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)


class _Builder:
    """Collects cases; `variant` sizes alternate between the splits in size order."""

    def __init__(self):
        self.cases: list[Case] = []

    def variant(self, family, variant: str, rows: list[tuple], compile_at=()):
        """rows: (id, build, inputs) in increasing size; compile_at: row indexes to compile;
        family: the rows' family, or a function of a row's index giving it."""
        for i, (cid, build, inputs) in enumerate(rows):
            self.cases.append(Case(cid, family(i) if callable(family) else family,
                                   SPLITS[i % 2], build, tuple(inputs),
                                   compile=i in compile_at, variant=variant))

    def calibration(self, family, variant: str, rows: list[tuple], split: str = "calibration",
                    compile_at=()):
        """Rows of one split (calibration by default), sizes between a variant's: they resolve
        a family's curve where it bends (the L2 cliff, a kernel's fixed time), or give a
        kernel that a variant's sizes reach rarely its validation cases, without moving the
        variant's alternation. compile_at: row indexes to compile."""
        for i, (cid, build, inputs) in enumerate(rows):
            self.cases.append(Case(cid, family, split, build, tuple(inputs), variant=variant,
                                   between=True, compile=i in compile_at))


def _cases() -> list[Case]:
    B = _Builder()
    F, T = functional, torch_module

    # elementwise: numel from 2K (4 KB of bf16) to 128M (256 MB each, 768 MB moved by an add)
    sizes = [2048, 65536, 2**20, 2**22, 2**24, 2**26, 2**27]
    for op, fn, n_in, dt in (
            ("add", lambda x, y: x + y, 2, "bf16"),
            ("mul", lambda x, y: x * y, 2, "bf16"),
            ("silu", lambda x: F().silu(x), 1, "bf16"),
            ("cast_bf16_fp32", lambda x: x.float(), 1, "bf16")):
        family = "cast" if op.startswith("cast") else \
            "elementwise_transcendental" if op == "silu" else "elementwise"
        B.variant(family, op, [
            (f"{op}_{_size_tag(n)}_{dt}", program(fn, f"Elementwise_{op}"),
             [Input(nm, (n,), dt) for nm in ("x", "y")[:n_in]]) for n in sizes],
            compile_at=(2, 5) if op in ("add", "silu") else ())
        if op != "mul":
            B.calibration(family, op, [
                (f"{op}_{_size_tag(n)}_{dt}", program(fn, f"Elementwise_{op}"),
                 [Input(nm, (n,), dt) for nm in ("x", "y")[:n_in]])
                for n in (2**18, 2**21, 2**23, 2**25)])

    # elementwise_broadcast: x[T, D] + b[D] and x[T, D] * s[T, 1] (T >= 2: at T = 1 the
    # bias add is a same-shaped add)
    shapes = [(2, 1024), (64, 4096), (512, 4096), (4096, 4096), (16384, 4096), (65536, 4096),
              (131072, 4096)]
    B.variant("elementwise_broadcast", "bias_add", [
        (f"bias_add_{t}x{d}_bf16", program(lambda x, b: x + b, "BiasAdd"),
         [Input("x", (t, d)), Input("b", (d,))]) for t, d in shapes], compile_at=(3,))
    B.variant("elementwise_broadcast", "row_scale", [
        (f"row_scale_{t}x{d}_bf16", program(lambda x, s: x * s, "RowScale"),
         [Input("x", (t, d)), Input("s", (t, 1))]) for t, d in shapes[1:]])
    # strided operands take the same kernel (strides.vectorised): the neg of a sliced half and
    # the add of a head-transposed tensor to a row-major one, as a rotary embedding runs them
    heads = [(1, 8, 16), (1, 16, 512), (1, 32, 2048), (4, 32, 2048), (16, 32, 2048),
             (32, 32, 4096)]
    B.variant("elementwise_broadcast", "neg_half", [
        (f"neg_half_b{b}_h{h}_s{s}_d128_bf16", program(lambda x: -x[..., 64:], "NegHalf"),
         [Input("x", (b, h, s, 128))]) for b, h, s in heads])
    B.variant("elementwise_broadcast", "add_transposed", [
        (f"add_transposed_b{b}_h{h}_s{s}_d128_bf16",
         program(lambda x, y: x.transpose(1, 2) + y, "AddTransposed"),
         [Input("x", (b, s, h, 128)), Input("y", (b, h, s, 128))]) for b, h, s in heads])

    # reductions over the last axis and over the first
    rshapes = [(2, 1024), (64, 4096), (1024, 4096), (8192, 4096), (32768, 4096), (131072, 4096)]
    B.variant("reduce_row", "sum", [
        (f"sum_row_{t}x{d}_bf16", program(lambda x: x.sum(-1), "RowSum"), [Input("x", (t, d))])
        for t, d in rshapes], compile_at=(3,))
    between = [(16, 4096), (256, 4096), (2048, 4096)]
    B.calibration("reduce_row", "sum", [
        (f"sum_row_{t}x{d}_bf16", program(lambda x: x.sum(-1), "RowSum"), [Input("x", (t, d))])
        for t, d in between])
    B.variant("reduce_row", "amax", [
        (f"amax_row_{t}x{d}_fp32", program(lambda x: x.amax(-1), "RowMax"),
         [Input("x", (t, d), "fp32")]) for t, d in rshapes[:-1]])
    B.variant("reduce_column", "sum", [
        (f"sum_col_{t}x{d}_bf16", program(lambda x: x.sum(0), "ColumnSum"),
         [Input("x", (t, d))]) for t, d in rshapes], compile_at=(3,))
    # compiled at 2048 rows: Inductor splits it into 2 kernels, and the call is host-bound, so
    # it measures what a split reduction's extra launch costs torch.compile's host
    B.calibration("reduce_column", "sum", [
        (f"sum_col_{t}x{d}_bf16", program(lambda x: x.sum(0), "ColumnSum"),
         [Input("x", (t, d))]) for t, d in between], compile_at=(2,))
    # between 2048 and 32768 rows a column sum runs well under HBM's rate (2 TB/s at 67 MB on
    # the H100, 2.7 at 268 MB) and its input does not fit in L2: two sizes there (34 and
    # 134 MB)
    B.calibration("reduce_column", "sum", [
        (f"sum_col_{t}x{d}_bf16", program(lambda x: x.sum(0), "ColumnSum"),
         [Input("x", (t, d))]) for t, d in ((4096, 4096), (16384, 4096))])
    B.variant("reduce_column", "mean", [
        (f"mean_col_{t}x{d}_fp32", program(lambda x: x.mean(0), "ColumnMean"),
         [Input("x", (t, d), "fp32")]) for t, d in rshapes[:-1]])

    # reduce_all: x.sum() of a 1-D fp32 tensor, 4 KB to 1 GB
    B.variant("reduce_all", "sum", [
        (f"sum_all_{_size_tag(n)}_fp32", program(lambda x: x.sum(), "TotalSum"),
         [Input("x", (n,), "fp32")])
        for n in (1024, 32768, 2**20, 2**22, 2**24, 2**26, 2**28)], compile_at=(4,))
    B.calibration("reduce_all", "sum", [
        (f"sum_all_{_size_tag(n)}_fp32", program(lambda x: x.sum(), "TotalSum"),
         [Input("x", (n,), "fp32")]) for n in (2**13, 2**17, 2**21, 2**23)], compile_at=(2,))

    # softmax over rows: long vocab-like rows and attention-like rows; ATen picks its kernel
    # by the row's length (kernel_families.eager_family), so each row is that kernel's family
    def softmax_rows(shapes, dt):
        return [(f"softmax_{t}x{d}_{dt}", program(lambda x: T().softmax(x, -1), "Softmax"),
                 [Input("x", (t, d), dt)]) for t, d in shapes]

    sm_shapes = ((1, 2048), (64, 1024), (256, 4096), (128, 128256), (4096, 4096),
                 (16384, 4096), (1024, 128256), (32768, 8192))
    B.variant(lambda i: softmax_family(sm_shapes[i][1]), "bf16",
              softmax_rows(sm_shapes, "bf16"), compile_at=(1, 3, 4))
    fp32_shapes = ((64, 4096), (4096, 4096), (16384, 8192))
    B.variant(lambda i: softmax_family(fp32_shapes[i][1]), "fp32",
              softmax_rows(fp32_shapes, "fp32"))
    B.calibration("softmax_warp", "bf16", softmax_rows(
        ((16, 1024), (256, 512), (4096, 1024), (32768, 2048)), "bf16"))
    B.calibration("softmax", "bf16", softmax_rows(((8, 4096), (256, 6144), (1024, 4096),
                                                   (2048, 6144)), "bf16"))
    B.calibration("softmax_wide_row", "bf16", softmax_rows(
        ((16, 8192), (1024, 7168), (1024, 8192), (2048, 8192)), "bf16"))
    B.calibration("softmax_wide_row", "bf16", softmax_rows(((64, 8192),), "bf16"), "validation")
    B.calibration("softmax", "bf16", softmax_rows(((4096, 6144),), "bf16"), "validation")
    # a vocabulary row a block: 132 rows fill one wave of the H100's or H200's SMs
    B.calibration("softmax_long_row", "bf16", softmax_rows(
        ((1, 128256), (16, 128256), (256, 128256), (512, 128256), (4096, 128256)), "bf16"),
        compile_at=(1,))
    B.calibration("softmax_warp", "bf16", softmax_rows(((8192, 512),), "bf16"), "validation")
    B.calibration("softmax", "bf16", softmax_rows(((32, 4096),), "bf16"), "validation")
    B.calibration("softmax_long_row", "bf16", softmax_rows(((4, 151936),), "bf16"),
                  "validation")

    # norms over the last axis, weight (and bias) as inputs
    nshapes = [(1, 2048), (16, 4096), (256, 4096), (2048, 4096), (8192, 4096), (32768, 4096),
               (65536, 8192)]
    B.variant("layer_norm", "bf16", [
        (f"layer_norm_{t}x{d}_bf16",
         program(lambda x, w, b: F().layer_norm(x, (x.shape[-1],), w, b, 1e-5), "LayerNorm"),
         [Input("x", (t, d)), Input("w", (d,)), Input("b", (d,))]) for t, d in nshapes],
        compile_at=(3, 5))
    nbetween = [(4, 4096), (64, 4096), (1024, 4096), (16384, 4096)]
    B.calibration("layer_norm", "bf16", [
        (f"layer_norm_{t}x{d}_bf16",
         program(lambda x, w, b: F().layer_norm(x, (x.shape[-1],), w, b, 1e-5), "LayerNorm"),
         [Input("x", (t, d)), Input("w", (d,)), Input("b", (d,))]) for t, d in nbetween])
    B.variant("layer_norm", "fp32", [
        (f"layer_norm_{t}x{d}_fp32",
         program(lambda x, w, b: F().layer_norm(x, (x.shape[-1],), w, b, 1e-5), "LayerNorm"),
         [Input("x", (t, d), "fp32"), Input("w", (d,), "fp32"), Input("b", (d,), "fp32")])
        for t, d in ((64, 1024), (4096, 4096))])
    B.variant("rms_norm", "bf16", [
        (f"rms_norm_{t}x{d}_bf16",
         program(lambda x, w: F().rms_norm(x, (x.shape[-1],), w, 1e-6), "RMSNorm"),
         [Input("x", (t, d)), Input("w", (d,))]) for t, d in nshapes], compile_at=(1, 3, 5))
    B.calibration("rms_norm", "bf16", [
        (f"rms_norm_{t}x{d}_bf16",
         program(lambda x, w: F().rms_norm(x, (x.shape[-1],), w, 1e-6), "RMSNorm"),
         [Input("x", (t, d)), Input("w", (d,))]) for t, d in nbetween])
    B.variant("rms_norm", "fp32", [
        (f"rms_norm_{t}x{d}_fp32",
         program(lambda x, w: F().rms_norm(x, (x.shape[-1],), w, 1e-6), "RMSNorm"),
         [Input("x", (t, d), "fp32"), Input("w", (d,), "fp32")])
        for t, d in ((64, 1024), (4096, 4096))])

    # embedding: ids gather rows of a Llama-3 table (128256 x 4096 bf16, 1.05 GB); at most 16
    # ids take ATen's small-index kernel
    def llama_embedding(t: int):
        return (f"embedding_{t}x4096_v128256_bf16",
                program(lambda table, ids: F().embedding(ids, table), "Embedding"),
                [Input("table", (128256, 4096)), Input("ids", (t,), "int64", "index",
                                                       high=128256)])
    emb_rows = (1, 16, 128, 1024, 4096, 16384, 65536)
    B.variant(lambda i: "embedding_small_index" if emb_rows[i] <= SMALL_INDEX_MAX
              else "embedding", "llama3", [llama_embedding(t) for t in emb_rows],
              compile_at=(3,))
    B.calibration("embedding_small_index", "llama3", [llama_embedding(t) for t in (3, 4, 8)])
    B.calibration("embedding_small_index", "llama3", [llama_embedding(2)], "validation")
    B.calibration("embedding", "llama3", [llama_embedding(t) for t in (512, 2048)])
    def small_embedding(t: int):
        return (f"embedding_{t}x128_v32000_fp32",
                program(lambda table, ids: F().embedding(ids, table), "Embedding"),
                [Input("table", (32000, 128), "fp32"), Input("ids", (t,), "int64", "index",
                                                              high=32000)])
    B.variant("embedding", "small_table", [small_embedding(t) for t in (64, 8192)])
    B.calibration("embedding", "small_table", [small_embedding(t) for t in (1024, 32768)])

    # index_copy: KV-cache writes of T new positions into a [B, S, H, D] cache along dim 1
    def kv_write(cache, pos, new):
        return cache.index_copy_(1, pos, new)
    B.variant("index_copy", "kv_cache", [
        (f"index_copy_b{b}_s{s}_t{t}_h8_d128_bf16", program(kv_write, "KVCacheWrite"),
         [Input("cache", (b, s, 8, 128)), Input("pos", (t,), "int64", "arange", low=s // 2),
          Input("new", (b, t, 8, 128))])
        for b, s, t in ((1, 1024, 1), (1, 4096, 512), (8, 4096, 1), (4, 8192, 2048),
                        (8, 16384, 8192), (64, 4096, 1), (16, 32768, 16384))],
        compile_at=(1,))
    B.calibration("index_copy", "kv_cache", [
        (f"index_copy_b{b}_s{s}_t{t}_h8_d128_bf16", program(kv_write, "KVCacheWrite"),
         [Input("cache", (b, s, 8, 128)), Input("pos", (t,), "int64", "arange", low=s // 2),
          Input("new", (b, t, 8, 128))]) for b, s, t in ((1, 2048, 128), (2, 4096, 1024))])

    # foreach_copy: torch._foreach_copy_ of one bf16 tensor, the copy that torch.compile's
    # reduce-overhead runs each call to bring its inputs into its CUDA graph's buffers
    def foreach_copy(dst, src):
        T()._foreach_copy_([dst], [src])
        return dst
    B.variant("foreach_copy", "bf16", [
        (f"foreach_copy_{_size_tag(n)}_bf16", program(foreach_copy, "ForeachCopy"),
         [Input("dst", (n,)), Input("src", (n,))]) for n in (2**12, 2**18, 2**22, 2**26)])
    B.calibration("foreach_copy", "bf16", [
        (f"foreach_copy_{_size_tag(n)}_bf16", program(foreach_copy, "ForeachCopy"),
         [Input("dst", (n,)), Input("src", (n,))])
        for n in (2**10, 2**16, 2**20, 2**23, 2**24, 2**25, 2**27)])

    # copy_broadcast: transformers' repeat_kv, the KV heads of grouped-query attention copied
    # out to every query head: k[:, :, None].expand(b, h, rep, s, d).reshape(b, h * rep, s, d)
    def repeat_kv(rep):
        def fn(k):
            b, h, s, d = k.shape
            return k[:, :, None, :, :].expand(b, h, rep, s, d).reshape(b, h * rep, s, d)
        return fn
    B.variant("copy_broadcast", "repeat_kv4", [
        (f"repeat_kv4_b{b}_h8_s{s}_d128_bf16", program(repeat_kv(4), "RepeatKV"),
         [Input("k", (b, 8, s, 128))])
        for b, s in ((1, 16), (1, 512), (1, 4096), (4, 4096), (16, 2048), (16, 4096),
                     (64, 2048), (64, 4096))])
    B.variant("copy_broadcast", "repeat_kv7", [
        (f"repeat_kv7_b{b}_h{h}_s{s}_d128_bf16", program(repeat_kv(7), "RepeatKV"),
         [Input("k", (b, h, s, 128))])
        for b, h, s in ((1, 2, 1024), (4, 2, 4096), (16, 4, 1024), (16, 4, 4096),
                        (64, 4, 4096))])

    # cat of two tensors along the first and the last axis
    B.variant("cat", "dim0", [
        (f"cat_dim0_2x{t}x{d}_bf16", program(lambda x, y: T().cat([x, y], 0), "Cat0"),
         [Input("x", (t, d)), Input("y", (t, d))])
        for t, d in ((1, 2048), (256, 4096), (4096, 4096), (32768, 4096))], compile_at=(2,))
    B.variant("cat", "dim_last", [
        (f"cat_dimlast_2x{t}x{d}_bf16", program(lambda x, y: T().cat([x, y], -1), "CatLast"),
         [Input("x", (t, d)), Input("y", (t, d))])
        for t, d in ((64, 128), (2048, 1024), (16384, 4096), (65536, 2048))], compile_at=(2,))
    B.calibration("cat", "dim_last", [
        (f"cat_dimlast_2x{t}x{d}_bf16", program(lambda x, y: T().cat([x, y], -1), "CatLast"),
         [Input("x", (t, d)), Input("y", (t, d))]) for t, d in ((512, 1024), (4096, 2048))])
    B.calibration("cat", "dim0", [
        (f"cat_dim0_2x{t}x{d}_bf16", program(lambda x, y: T().cat([x, y], 0), "Cat0"),
         [Input("x", (t, d)), Input("y", (t, d))]) for t, d in ((1024, 4096),)])

    # a cat of a tensor's two halves, swapped (rotary embedding's rotate_half without its neg):
    # slices, not row-major, so ATen's strided cat kernel
    B.variant("cat_strided", "swap_halves", [
        (f"cat_swap_halves_b{b}_h{h}_s{s}_d128_bf16",
         program(lambda x: T().cat((x[..., 64:], x[..., :64]), -1), "SwapHalves"),
         [Input("x", (b, h, s, 128))]) for b, h, s in heads + [(64, 32, 2048), (64, 32, 4096)]])

    # GEMMs: square torch.mm, decode GEMV-like F.linear (M 1..16), addmm with bias, small-N
    # long-K (a router or LoRA-down shape) and fp32
    B.variant("gemm", "mm_square", [
        (f"mm_{n}x{n}x{n}_bf16", program(lambda a, b: T().mm(a, b), "MM"),
         [Input("a", (n, n)), Input("b", (n, n))])
        for n in (64, 256, 512, 1024, 2048, 4096, 6144, 8192)], compile_at=(5,))
    B.variant("gemm", "linear_decode", [
        (f"linear_m{m}_n{n}_k{k}_bf16", program(lambda x, w: F().linear(x, w), "Linear"),
         [Input("x", (m, k)), Input("w", (n, k))])
        for m, n, k in ((1, 4096, 4096), (4, 4096, 4096), (16, 4096, 4096), (1, 14336, 4096),
                        (8, 14336, 4096), (16, 4096, 14336), (1, 128256, 4096),
                        (16, 128256, 4096))])
    B.variant("gemm", "linear_bias", [
        (f"linear_bias_m{m}_n{n}_k{k}_bf16",
         program(lambda x, w, b: F().linear(x, w, b), "LinearBias"),
         [Input("x", (m, k)), Input("w", (n, k)), Input("b", (n,))])
        for m, n, k in ((16, 1024, 1024), (512, 4096, 4096), (4096, 4096, 4096),
                        (8192, 14336, 4096))])
    B.variant("gemm", "addmm", [
        (f"addmm_m{m}_n{n}_k{k}_bf16", program(lambda b, x, w: T().addmm(b, x, w), "AddMM"),
         [Input("b", (n,)), Input("x", (m, k)), Input("w", (k, n))])
        for m, n, k in ((128, 1024, 1024), (2048, 2048, 2048), (4096, 8192, 4096))])
    B.variant("gemm", "small_n_long_k", [
        (f"mm_m{m}_n{n}_k{k}_bf16", program(lambda a, b: T().mm(a, b), "MM"),
         [Input("a", (m, k)), Input("b", (k, n))])
        for m, n, k in ((16, 16, 65536), (4096, 8, 4096), (4096, 64, 16384), (16384, 16, 8192),
                        (8192, 128, 32768))])
    B.variant("gemm", "mm_fp32", [
        (f"mm_{n}x{n}x{n}_fp32", program(lambda a, b: T().mm(a, b), "MM"),
         [Input("a", (n, n), "fp32"), Input("b", (n, n), "fp32")]) for n in (512, 4096)])

    # bmm: attention-shaped and MoE-like batches
    B.variant("bmm", "bf16", [
        (f"bmm_b{b}_m{m}_n{n}_k{k}_bf16", program(lambda a, c: T().bmm(a, c), "BMM"),
         [Input("a", (b, m, k)), Input("c", (b, k, n))])
        for b, m, n, k in ((4, 64, 64, 64), (32, 128, 128, 128), (32, 512, 512, 128),
                           (8, 1024, 1024, 1024), (32, 1, 4096, 128), (64, 2048, 2048, 128),
                           (32, 2048, 128, 2048), (8, 4096, 4096, 4096))], compile_at=(3,))

    # grouped expert GEMMs as transformers' MoE experts run them: Mixtral-8x7B's gate_up and
    # down, a 128-expert gate_up (Qwen3-MoE's shape) and a small 64-expert one. Rows are tokens
    # x top-k spread evenly, so the experts that get a row, whose weights are read, grow with
    # them: from one expert's 0.5 MB to all of 1.9 GB, memory-bound throughout
    def grouped(e, n, k, rows):
        return (f"grouped_mm_e{e}_n{n}_k{k}_t{rows}_bf16",
                grouped_mm_builder(e, n, k, rows, "bf16"), [Input("x", (rows, k))])
    B.variant("grouped_mm", "mixtral_gate_up", [grouped(8, 28672, 4096, t)
                                                for t in (1, 2, 4, 8, 32)])
    B.variant("grouped_mm", "mixtral_down", [grouped(8, 4096, 14336, t)
                                             for t in (1, 2, 4, 8, 32)])
    B.variant("grouped_mm", "e128", [grouped(128, 1536, 2048, t)
                                     for t in (4, 16, 64, 256, 1024, 4096)])
    B.variant("grouped_mm", "e64_small", [grouped(64, 1024, 1024, t) for t in (1, 8, 64, 512)])
    B.variant("grouped_mm", "e16_tiny", [grouped(16, 512, 512, t) for t in (1, 8, 64)])

    # sdpa: causal bf16 (flash), additive float mask (efficient), fp32, decode q_len 1
    def sdpa_causal(q, k, v):
        return F().scaled_dot_product_attention(q, k, v, is_causal=True)

    def sdpa_mask(q, k, v, m):
        return F().scaled_dot_product_attention(q, k, v, attn_mask=m)

    def sdpa_plain(q, k, v):
        return F().scaled_dot_product_attention(q, k, v)

    def qkv(b, h, s, lk, d, dt="bf16"):
        return [Input("q", (b, h, s, d), dt), Input("k", (b, h, lk, d), dt),
                Input("v", (b, h, lk, d), dt)]
    B.variant("sdpa", "causal_flash", [
        (f"sdpa_causal_b{b}_h{h}_s{s}_d{d}_bf16", program(sdpa_causal, "SDPACausal"),
         qkv(b, h, s, s, d)) for b, h, s, d in ((1, 8, 128, 64), (1, 32, 512, 128),
                                                (4, 32, 1024, 128), (1, 32, 4096, 128),
                                                (4, 32, 4096, 128), (1, 32, 16384, 128))])
    B.variant("sdpa", "float_mask", [
        (f"sdpa_mask_b{b}_h{h}_s{s}_d{d}_bf16", program(sdpa_mask, "SDPAMask"),
         qkv(b, h, s, s, d) + [Input("m", (b, 1, s, s))])
        for b, h, s, d in ((1, 8, 128, 64), (2, 32, 1024, 128), (1, 32, 4096, 128),
                           (2, 32, 4096, 128))])
    B.variant("sdpa", "fp32", [
        (f"sdpa_causal_b{b}_h{h}_s{s}_d{d}_fp32", program(sdpa_causal, "SDPACausal"),
         qkv(b, h, s, s, d, "fp32")) for b, h, s, d in ((1, 8, 256, 64), (1, 16, 2048, 128))])
    B.calibration("sdpa", "causal_flash", [
        (f"sdpa_causal_b{b}_h{h}_s{s}_d{d}_bf16", program(sdpa_causal, "SDPACausal"),
         qkv(b, h, s, s, d)) for b, h, s, d in ((2, 32, 2048, 128), (1, 32, 8192, 128))])
    B.calibration("sdpa", "plain", [
        (f"sdpa_plain_b{b}_h{h}_s{s}_d{d}_bf16", program(sdpa_plain, "SDPAPlain"),
         qkv(b, h, s, s, d)) for b, h, s, d in ((1, 32, 2048, 128),)])
    B.calibration("sdpa", "float_mask", [
        (f"sdpa_mask_b{b}_h{h}_s{s}_d{d}_bf16", program(sdpa_mask, "SDPAMask"),
         qkv(b, h, s, s, d) + [Input("m", (b, 1, s, s))]) for b, h, s, d in ((1, 16, 2048, 128),)])
    B.calibration("sdpa", "fp32", [
        (f"sdpa_causal_b{b}_h{h}_s{s}_d{d}_fp32", program(sdpa_causal, "SDPACausal"),
         qkv(b, h, s, s, d, "fp32")) for b, h, s, d in ((1, 16, 1024, 128), (2, 8, 4096, 64))])
    B.variant("sdpa", "decode", [
        (f"sdpa_decode_b{b}_h{h}_l{lk}_d128_bf16", program(sdpa_plain, "SDPADecode"),
         qkv(b, h, 1, lk, 128)) for b, h, lk in ((1, 32, 512), (8, 32, 2048), (32, 32, 4096),
                                                 (16, 32, 16384))])

    # decode against a static KV cache as transformers runs it: a boolean mask over the keys
    # (its dispatch converts the mask and picks a backend; cuDNN on the H200)
    B.variant("sdpa", "decode_bool_mask", [
        (f"sdpa_decode_mask_b{b}_h{h}_l{lk}_d128_bf16", program(sdpa_mask, "SDPADecodeMask"),
         qkv(b, h, 1, lk, 128) + [Input("m", (b, 1, 1, lk), "bool", "ones")])
        for b, h, lk in ((1, 32, 1024), (4, 32, 1024), (4, 32, 4096), (16, 32, 1024),
                         (16, 32, 4096), (64, 32, 1024), (64, 14, 4096), (64, 32, 4096))])

    # steps: multi-op programs timed whole (all compiled too: fusion is what compile buys)
    B.variant("step", "mlp", [
        (f"mlp_t{t}_d{d}_f{f}_bf16", mlp_builder(d, f, "bf16"), [Input("x", (t, d))])
        for t, d, f in ((1, 1024, 2816), (512, 2048, 5632), (16, 4096, 14336),
                        (2048, 4096, 14336))], compile_at=(0, 1, 2, 3))
    B.variant("step", "rmsnorm_linear", [
        (f"rmsnorm_linear_t{t}_d{d}_n{n}_bf16", rmsnorm_linear_builder(d, n, "bf16"),
         [Input("x", (t, d))])
        for t, d, n in ((1, 4096, 4096), (128, 4096, 6144), (2048, 4096, 6144),
                        (8192, 4096, 4096))], compile_at=(0, 1, 2, 3))
    B.variant("step", "decoder_layer", [
        (f"decoder_layer_b{b}_s{s}_d{d}_bf16", decoder_builder(d, d // 128, kv, f, "bf16"),
         [Input("x", (b, s, d)), Input("cos", (s, 128)), Input("sin", (s, 128))])
        for b, s, d, kv, f in ((1, 16, 1024, 8, 2816), (1, 512, 2048, 16, 5632),
                               (1, 2048, 2048, 16, 5632), (4, 1024, 4096, 8, 14336))],
        compile_at=(0, 1, 2, 3))
    B.variant("step", "pointwise_chain", [
        (f"pointwise_chain5_{_size_tag(n)}_bf16", program(chain, "PointwiseChain"),
         [Input("x", (n,)), Input("y", (n,))]) for n in (2048, 2**20, 2**24, 2**26)],
        compile_at=(0, 1, 2, 3))
    B.variant("step", "bias_gelu_chain", [
        (f"bias_gelu_chain4_{t}x{d}_bf16", program(chain_bias, "BiasGeluChain"),
         [Input("x", (t, d)), Input("b", (d,))]) for t, d in ((16, 4096), (16384, 4096))],
        compile_at=(0, 1))
    # launch-bound compiled calls of many kernels of one kind. A chain of k reductions (k
    # Triton kernels, no extern call) pins the fit's Triton launch (torch_compare.
    # fit_compiled_host). A chain of k linears (k extern GEMMs, no Triton kernel) checks the
    # extern price only: a bare chained GEMM's call cost 16 µs on an H100 where a model's
    # cost 64 (lab/replay_sizes/NOTES.md), so fitting on it would misprice real steps
    B.variant("step", "reduction_chain", [
        (f"reduction_chain{k}_16x1024_bf16", program(reduction_chain(k), "ReductionChain"),
         [Input("x", (16, 1024))]) for k in (4, 16, 32)], compile_at=(0, 1, 2))
    B.calibration("step", "linear_chain", [
        (f"linear_chain{k}_t16_d256_bf16", linear_chain_builder(k, 256, "bf16"),
         [Input("x", (16, 256))]) for k in (2, 8, 16)], split="validation", compile_at=(0, 1, 2))
    return B.cases


CASES: tuple[Case, ...] = tuple(_cases())


def program_case(source: str, inputs: tuple[str, ...], sets: dict[str, int] | None = None) -> Case:
    """A user's `py:FILE.py:FACTORY` module as a case of family `step` (timed whole, compiled
    too), its forward's inputs from --input specs (`x=[16,4096]:bf16`): what `validate
    --backend torch py:...` runs. RooflabError on a bad source or an input dtype the runner
    cannot fill."""
    from rooflab.errors import RooflabError
    from rooflab.trace import source as src
    path, factory = src.split_py(source)
    if not inputs:
        raise RooflabError(f"{source}: give the forward's inputs with --input, like "
                           "--input \"x=[16,4096]:bf16\"")
    made = []
    for spec in inputs:
        name, shape, dtype = src.parse_input(spec, dict(sets or {}))
        if dtype not in _DTYPE_BYTES:
            raise RooflabError(f"--input {spec!r}: the torch backend fills only "
                               f"{', '.join(_DTYPE_BYTES)} inputs")
        fill = "index" if dtype == "int64" else "ones" if dtype == "bool" else "randn"
        made.append(Input(name, shape, dtype, fill, high=2))

    def build(device: str = "meta"):
        return src.build_module(str(path.resolve()), factory, device)[0]
    return Case(f"{path.stem}.{factory}", "step", "validation", build, tuple(made),
                compile=True, variant="user")


def select(only: str | None = None, split: str | None = None) -> list[Case]:
    """The cases whose id matches the regex `only` (re.search) and that are in `split`."""
    import re
    pat = re.compile(only) if only else None
    return [c for c in CASES if (split is None or c.split == split)
            and (pat is None or pat.search(c.id))]

"""The programs of the torch-backend suite (rooflab.validate.torch_suite): module factories, the
multi-op steps (SwiGLU MLP, rms_norm + linear, a Llama-like decoder layer), pointwise chains.
Each factory's `build(device)` makes the nn.Module (on the meta device by default); torch is
imported only when one is built or run.
"""

from __future__ import annotations

from typing import Callable


def torch_dtype(name: str):
    import torch
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32,
            "int64": torch.int64, "bool": torch.bool}[name]


def program(fn: Callable, name: str):
    """A module factory whose forward is fn(*inputs); the class is named for the program so a
    trace and a profile say what ran."""
    def build(device: str = "meta"):
        import torch.nn as nn
        cls = type(name, (nn.Module,), {"forward": lambda self, *a: fn(*a)})
        return cls()
    return build


def functional():
    import torch.nn.functional as F
    return F


def torch_module():
    import torch
    return torch


def mlp_builder(d: int, f: int, dtype: str):
    def build(device: str = "meta"):
        import torch.nn as nn
        import torch.nn.functional as F

        class SwiGLU(nn.Module):
            def __init__(self):
                super().__init__()
                kw = dict(bias=False, device=device, dtype=torch_dtype(dtype))
                self.gate, self.up, self.down = nn.Linear(d, f, **kw), nn.Linear(d, f, **kw), \
                    nn.Linear(f, d, **kw)

            def forward(self, x):
                return self.down(F.silu(self.gate(x)) * self.up(x))
        return SwiGLU()
    return build


def rmsnorm_linear_builder(d: int, n: int, dtype: str):
    def build(device: str = "meta"):
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        class RMSNormLinear(nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = nn.Parameter(torch.ones(d, device=device, dtype=torch_dtype(dtype)))
                self.proj = nn.Linear(d, n, bias=False, device=device, dtype=torch_dtype(dtype))

            def forward(self, x):
                return self.proj(F.rms_norm(x, (d,), self.weight, 1e-6))
        return RMSNormLinear()
    return build


def decoder_builder(d: int, heads: int, kv_heads: int, f: int, dtype: str):
    """A Llama-like decoder layer (prefill, causal): rms_norm, fused-free q/k/v projections,
    rotary (rotate-half), SDPA, o_proj, residual, rms_norm, SwiGLU MLP, residual."""
    hd = d // heads

    def build(device: str = "meta"):
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        kw = dict(bias=False, device=device, dtype=torch_dtype(dtype))

        def rotate(x, cos, sin):
            half = x.shape[-1] // 2
            rot = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
            return x * cos + rot * sin

        class DecoderLayer(nn.Module):
            def __init__(self):
                super().__init__()
                self.ln1 = nn.Parameter(torch.ones(d, device=device, dtype=torch_dtype(dtype)))
                self.ln2 = nn.Parameter(torch.ones(d, device=device, dtype=torch_dtype(dtype)))
                self.q = nn.Linear(d, heads * hd, **kw)
                self.k = nn.Linear(d, kv_heads * hd, **kw)
                self.v = nn.Linear(d, kv_heads * hd, **kw)
                self.o = nn.Linear(heads * hd, d, **kw)
                self.mlp = mlp_builder(d, f, dtype)(device)

            def forward(self, x, cos, sin):
                b, s, _ = x.shape
                h = F.rms_norm(x, (d,), self.ln1, 1e-6)
                q = self.q(h).view(b, s, heads, hd).transpose(1, 2)
                k = self.k(h).view(b, s, kv_heads, hd).transpose(1, 2)
                v = self.v(h).view(b, s, kv_heads, hd).transpose(1, 2)
                q, k = rotate(q, cos, sin), rotate(k, cos, sin)
                if kv_heads != heads:          # GQA as eager Llama runs it: repeat the KV heads
                    k = k.repeat_interleave(heads // kv_heads, dim=1)
                    v = v.repeat_interleave(heads // kv_heads, dim=1)
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                x = x + self.o(a.transpose(1, 2).reshape(b, s, heads * hd))
                return x + self.mlp(F.rms_norm(x, (d,), self.ln2, 1e-6))
        return DecoderLayer()
    return build


def grouped_mm_builder(experts: int, n: int, k: int, rows: int, dtype: str):
    """A MoE expert projection as transformers runs it: `rows` token rows grouped by expert
    through torch._grouped_mm, the weights stored [experts, n, k] and passed transposed, the
    rows spread as rooflab's balanced routing spreads them (rows // experts each, one more for
    the first rows % experts; ops/moe.py), their group ends a buffer."""
    def build(device: str = "meta"):
        import torch
        import torch.nn as nn
        counts = [rows // experts + (1 if e < rows % experts else 0) for e in range(experts)]

        class GroupedExperts(nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = nn.Parameter(0.02 * torch.randn(
                    experts, n, k, device=device, dtype=torch_dtype(dtype)))
                ends = torch.tensor(counts, dtype=torch.int32, device=device).cumsum(0)
                self.register_buffer("offs", ends.to(torch.int32))

            def forward(self, x):
                return torch._grouped_mm(x, self.weight.transpose(-2, -1), offs=self.offs)
        return GroupedExperts()
    return build

def chain(x, y):
    """Five pointwise ops over same-shaped tensors (eager: five kernels)."""
    torch = torch_module()
    t = x * y
    t = t + x
    t = torch.sigmoid(t)
    t = t * y
    return t - 1.0


def chain_bias(x, b):
    """Four pointwise ops, a bias broadcast among them (a GELU-bias-scale tail)."""
    F = functional()
    t = x + b
    t = F.gelu(t)
    t = t * 0.5
    return t.to(torch_module().float32)


def reduction_chain(k: int) -> Callable:
    """k reductions, each over the other axis of the previous one's result (x less its column
    means, then its row means, ...; the values stay finite): Inductor cannot fuse them into
    fewer than k kernels, so a compiled call of it launches k Triton kernels and no extern
    one."""
    def fn(x):
        for i in range(k):
            x = x - x.mean(dim=i % 2, keepdim=True)
        return x
    return fn


def linear_chain_builder(k: int, d: int, dtype: str):
    """k bias-free d x d nn.Linear layers applied in turn: k cuBLAS GEMMs, eager or compiled (an
    extern call each in Inductor's wrapper, no Triton kernel)."""
    def build(device: str = "meta"):
        import torch.nn as nn
        return nn.Sequential(*[nn.Linear(d, d, bias=False, device=device,
                                         dtype=torch_dtype(dtype)) for _ in range(k)])
    return build

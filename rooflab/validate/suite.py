"""The built-in validation suite: workloads that span every op class and sizes from launch-bound
(kilobytes) through bandwidth-bound (gigabytes) to compute-bound GEMMs, each run in its unfused
and fused schedules. Plain data (workload mappings), no torch: CI can list and re-predict it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    name: str
    workload: dict
    op_class: str


def _wl(name: str, params: dict, tensors: dict, ops: list, outputs: list | None = None) -> dict:
    d = {"name": name, "params": params, "tensors": tensors, "ops": ops}
    if outputs:
        d["outputs"] = outputs
    return d


def pointwise_chain(t: int, d: int = 4096) -> Case:
    return Case(f"pointwise_chain/T={t},D={d}", _wl("pointwise_chain", {"T": t, "D": d}, {
        "x": {"shape": ["T", "D"], "dtype": "bf16"}, "bias": {"shape": ["D"], "dtype": "bf16"},
        "gate": {"shape": ["T", "D"], "dtype": "bf16"}, "res": {"shape": ["T", "D"], "dtype": "bf16"},
    }, [
        {"kind": "scale", "name": "scale", "factor": 0.5, "inputs": ["x"], "outputs": ["xs"]},
        {"kind": "add", "name": "bias", "inputs": ["xs", "bias"], "outputs": ["xb"]},
        {"kind": "gelu", "name": "gelu", "inputs": ["xb"], "outputs": ["xg"]},
        {"kind": "mul", "name": "gate", "inputs": ["xg", "gate"], "outputs": ["xm"]},
        {"kind": "add", "name": "residual", "inputs": ["xm", "res"], "outputs": ["y"]},
    ]), "pointwise")


def silu_mul(t: int, f: int = 14336) -> Case:
    return Case(f"silu_mul/T={t},F={f}", _wl("silu_mul", {"T": t, "F": f}, {
        "g": {"shape": ["T", "F"], "dtype": "bf16"}, "u": {"shape": ["T", "F"], "dtype": "bf16"},
    }, [
        {"kind": "silu", "name": "silu", "inputs": ["g"], "outputs": ["ga"]},
        {"kind": "mul", "name": "mul", "inputs": ["ga", "u"], "outputs": ["y"]},
    ]), "pointwise")


def add_rmsnorm(t: int, d: int = 4096) -> Case:
    return Case(f"add_rmsnorm/T={t},D={d}", _wl("add_rmsnorm", {"T": t, "D": d}, {
        "x": {"shape": ["T", "D"], "dtype": "bf16"}, "res": {"shape": ["T", "D"], "dtype": "bf16"},
        "w": {"shape": ["D"], "dtype": "bf16"},
    }, [
        {"kind": "add", "name": "residual_add", "inputs": ["x", "res"], "outputs": ["h"]},
        {"kind": "rmsnorm", "name": "rmsnorm", "eps": 1e-5, "inputs": ["h", "w"], "outputs": ["y"]},
    ], outputs=["h", "y"]), "reduction")


def layernorm_gelu(t: int, d: int = 4096) -> Case:
    return Case(f"layernorm_gelu/T={t},D={d}", _wl("layernorm_gelu", {"T": t, "D": d}, {
        "x": {"shape": ["T", "D"], "dtype": "bf16"}, "w": {"shape": ["D"], "dtype": "bf16"},
        "b": {"shape": ["D"], "dtype": "bf16"},
    }, [
        {"kind": "layernorm", "name": "layernorm", "inputs": ["x", "w", "b"], "outputs": ["xn"]},
        {"kind": "gelu", "name": "gelu", "inputs": ["xn"], "outputs": ["y"]},
    ]), "reduction")


def scale_softmax(r: int, c: int) -> Case:
    return Case(f"scale_softmax/R={r},C={c}", _wl("scale_softmax", {"R": r, "C": c}, {
        "x": {"shape": ["R", "C"], "dtype": "bf16"},
    }, [
        {"kind": "scale", "name": "scale", "factor": 0.125, "inputs": ["x"], "outputs": ["xs"]},
        {"kind": "softmax", "name": "softmax", "inputs": ["xs"], "outputs": ["y"]},
    ]), "reduction")


def row_stats(t: int, c: int) -> Case:
    return Case(f"row_max_normalise/T={t},C={c}", _wl("row_max_normalise", {"T": t, "C": c}, {
        "x": {"shape": ["T", "C"], "dtype": "fp32"},
    }, [
        {"kind": "abs", "name": "abs", "inputs": ["x"], "outputs": ["xa"]},
        {"kind": "max", "name": "absmax", "keepdim": True, "inputs": ["xa"], "outputs": ["m"]},
        {"kind": "div", "name": "normalise", "inputs": ["x", "m"], "outputs": ["y"]},
    ]), "reduction")


def gemm_epilogue(m: int, n: int, k: int) -> Case:
    return Case(f"gemm_bias_gelu_residual/M={m},N={n},K={k}", _wl(
        "gemm_bias_gelu_residual", {"M": m, "N": n, "K": k}, {
            "x": {"shape": ["M", "K"], "dtype": "bf16"}, "w": {"shape": ["K", "N"], "dtype": "bf16"},
            "b": {"shape": ["N"], "dtype": "bf16"}, "r": {"shape": ["M", "N"], "dtype": "bf16"},
        }, [
            {"kind": "matmul", "name": "gemm", "inputs": ["x", "w"], "outputs": ["y"]},
            {"kind": "add", "name": "bias", "inputs": ["y", "b"], "outputs": ["y1"]},
            {"kind": "gelu", "name": "gelu", "inputs": ["y1"], "outputs": ["y2"]},
            {"kind": "add", "name": "residual", "inputs": ["y2", "r"], "outputs": ["out"]},
        ]), "gemm")


def gemm_nt(m: int, n: int, k: int) -> Case:
    return Case(f"gemm_nt_relu/M={m},N={n},K={k}", _wl("gemm_nt_relu", {"M": m, "N": n, "K": k}, {
        "x": {"shape": ["M", "K"], "dtype": "bf16"}, "w": {"shape": ["N", "K"], "dtype": "bf16"},
    }, [
        {"kind": "matmul", "name": "gemm", "transpose_b": True, "inputs": ["x", "w"], "outputs": ["y"]},
        {"kind": "relu", "name": "relu", "inputs": ["y"], "outputs": ["out"]},
    ]), "gemm")


def naive_attention(b: int, h: int, s: int, d: int = 128) -> Case:
    return Case(f"attention_naive/B={b},H={h},S={s},D={d}", _wl(
        "attention_naive", {"B": b, "H": h, "S": s, "D": d}, {
            "q": {"shape": ["B", "H", "S", "D"], "dtype": "bf16"},
            "k": {"shape": ["B", "H", "S", "D"], "dtype": "bf16"},
            "v": {"shape": ["B", "H", "S", "D"], "dtype": "bf16"},
        }, [
            {"kind": "matmul", "name": "qk", "transpose_b": True, "inputs": ["q", "k"], "outputs": ["s"]},
            {"kind": "scale", "name": "scale", "factor": d ** -0.5, "inputs": ["s"], "outputs": ["ss"]},
            {"kind": "causal_mask", "name": "mask", "inputs": ["ss"], "outputs": ["sm"]},
            {"kind": "softmax", "name": "softmax", "inputs": ["sm"], "outputs": ["p"]},
            {"kind": "matmul", "name": "pv", "inputs": ["p", "v"], "outputs": ["o"]},
        ]), "attention")


def flash_attention(b: int, hq: int, hkv: int, sq: int, sk: int, d: int = 128) -> Case:
    kind = "decode" if sq == 1 else "prefill"
    return Case(f"attention_{kind}/B={b},Hq={hq},Hkv={hkv},Sq={sq},Sk={sk}", _wl(
        f"attention_{kind}", {"B": b, "Hq": hq, "Hkv": hkv, "Sq": sq, "Sk": sk, "D": d}, {
            "q": {"shape": ["B", "Hq", "Sq", "D"], "dtype": "bf16"},
            "k": {"shape": ["B", "Hkv", "Sk", "D"], "dtype": "bf16"},
            "v": {"shape": ["B", "Hkv", "Sk", "D"], "dtype": "bf16"},
        }, [{"kind": "attention", "name": "attention", "causal": True, "inputs": ["q", "k", "v"],
             "outputs": ["o"]}]), "attention")


def w4a16(m: int, k: int, n: int, fused_op: bool) -> Case:
    if fused_op:
        ops = [{"kind": "qmatmul", "name": "qgemm", "group_size": 128, "inputs": ["x", "w"],
                "outputs": ["y"]}]
    else:
        ops = [{"kind": "dequantize", "name": "dequant", "dtype": "bf16", "group_size": 128,
                "inputs": ["w"], "outputs": ["wb"]},
               {"kind": "matmul", "name": "gemm", "inputs": ["x", "wb"], "outputs": ["y"]}]
    form = "qmatmul" if fused_op else "dequant_gemm"
    return Case(f"w4a16_{form}/M={m},K={k},N={n}", _wl(f"w4a16_{form}", {"M": m, "K": k, "N": n}, {
        "x": {"shape": ["M", "K"], "dtype": "bf16"}, "w": {"shape": ["K", "N"], "dtype": "int4"},
    }, ops), "quantized")


def fp8_gemm(m: int, n: int, k: int) -> Case:
    return Case(f"fp8_gemm/M={m},N={n},K={k}", _wl("fp8_gemm", {"M": m, "N": n, "K": k}, {
        "a": {"shape": ["M", "K"], "dtype": "bf16"}, "w": {"shape": ["K", "N"], "dtype": "fp8_e4m3"},
    }, [
        {"kind": "quantize", "name": "quantize", "dtype": "fp8_e4m3", "inputs": ["a"], "outputs": ["a8"]},
        {"kind": "qmatmul", "name": "gemm", "inputs": ["a8", "w"], "outputs": ["y"]},
    ]), "quantized")


def embedding(tokens: int, d: int = 4096, vocab: int = 128256) -> Case:
    return Case(f"embedding_scale/T={tokens},D={d}", _wl("embedding_scale", {"T": tokens, "D": d, "V": vocab}, {
        "table": {"shape": ["V", "D"], "dtype": "bf16"}, "ids": {"shape": ["T"], "dtype": "int64"},
    }, [
        {"kind": "embedding", "name": "embed", "inputs": ["table", "ids"], "outputs": ["x"]},
        {"kind": "scale", "name": "scale", "factor": 64.0, "inputs": ["x"], "outputs": ["y"]},
    ]), "gather")


def mlp_block(t: int, d: int = 4096, f: int = 14336) -> Case:
    return Case(f"mlp_block/T={t},D={d},F={f}", _wl("mlp_block", {"T": t, "D": d, "F": f}, {
        "x": {"shape": ["T", "D"], "dtype": "bf16"}, "nw": {"shape": ["D"], "dtype": "bf16"},
        "wg": {"shape": ["D", "F"], "dtype": "bf16"}, "wu": {"shape": ["D", "F"], "dtype": "bf16"},
        "wd": {"shape": ["F", "D"], "dtype": "bf16"},
    }, [
        {"kind": "rmsnorm", "name": "norm", "inputs": ["x", "nw"], "outputs": ["xn"]},
        {"kind": "matmul", "name": "gate", "inputs": ["xn", "wg"], "outputs": ["g"]},
        {"kind": "matmul", "name": "up", "inputs": ["xn", "wu"], "outputs": ["u"]},
        {"kind": "silu", "name": "silu", "inputs": ["g"], "outputs": ["ga"]},
        {"kind": "mul", "name": "mul", "inputs": ["ga", "u"], "outputs": ["m"]},
        {"kind": "matmul", "name": "down", "inputs": ["m", "wd"], "outputs": ["o"]},
        {"kind": "add", "name": "residual", "inputs": ["x", "o"], "outputs": ["y"]},
    ]), "gemm")


def builtin() -> list[Case]:
    """The suite, smallest cases first within each family."""
    cases: list[Case] = []
    cases += [pointwise_chain(t) for t in (1, 16, 256, 2048, 8192, 32768)]
    cases += [silu_mul(t) for t in (1, 512, 8192)]
    cases += [add_rmsnorm(t) for t in (1, 64, 1024, 8192, 32768)] + [add_rmsnorm(4096, 8192)]
    cases += [layernorm_gelu(t) for t in (16, 2048, 16384)]
    # the last: temperature + softmax over a 128K vocabulary for a decode batch (looped rows)
    cases += [scale_softmax(r, c) for r, c in ((64, 1024), (4096, 1024), (32768, 4096), (4096, 32768),
                                               (64, 128256))]
    cases += [row_stats(t, c) for t, c in ((256, 4096), (16384, 4096))]
    cases += [gemm_epilogue(m, n, k) for m, n, k in (
        (16, 4096, 4096), (128, 4096, 4096), (1024, 1024, 1024), (2048, 2048, 2048),
        (4096, 4096, 4096), (8192, 8192, 8192))]
    cases += [gemm_nt(m, n, k) for m, n, k in ((1, 14336, 4096), (4096, 14336, 4096))]
    cases += [mlp_block(t) for t in (16, 4096)]
    cases += [naive_attention(1, 32, 512), naive_attention(2, 32, 2048)]
    cases += [flash_attention(8, 32, 32, 4096, 4096), flash_attention(4, 32, 8, 2048, 2048),
              flash_attention(16, 32, 8, 1, 8192), flash_attention(64, 32, 8, 1, 2048)]
    cases += [w4a16(m, 8192, 8192, fused) for m in (16, 2048) for fused in (True, False)]
    cases += [fp8_gemm(m, m, m) for m in (2048, 8192)]
    cases += [embedding(t) for t in (16, 8192)]
    return cases

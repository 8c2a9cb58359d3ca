"""Data types by their storage bits, including block-scaled FP4/FP6 formats.

A dtype is stored by bits, not bytes (FP4 is 4 bits), and block-scaled formats carry their
scale bytes in `nbytes`, so a tensor's size is exact.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DType:
    name: str
    bits: int                 # storage bits per element
    is_float: bool
    compute: str              # family that names a peak in a hardware spec: bf16, fp8, fp4, ...
    block_size: int = 0       # elements that share one scale (0: no block scale)
    scale_bits: int = 0       # bits of each block scale

    def nbytes(self, numel: int) -> int:
        """Bytes that `numel` elements occupy in memory, block scales included."""
        data_bytes = -(-numel * self.bits // 8)
        if not self.block_size:
            return data_bytes
        n_blocks = -(-numel // self.block_size)
        return data_bytes + -(-n_blocks * self.scale_bits // 8)


_ALL = [
    DType("fp64", 64, True, "fp64"),
    DType("fp32", 32, True, "fp32"),
    DType("tf32", 32, True, "tf32"),      # stored as fp32; tensor cores multiply at tf32
    DType("bf16", 16, True, "bf16"),
    DType("fp16", 16, True, "fp16"),
    DType("fp8_e4m3", 8, True, "fp8"),
    DType("fp8_e5m2", 8, True, "fp8"),
    # OCP MX formats: 32 elements share one 8-bit power-of-two (E8M0) scale (OCP MX spec v1.0).
    DType("mxfp6_e2m3", 6, True, "fp6", block_size=32, scale_bits=8),
    DType("mxfp6_e3m2", 6, True, "fp6", block_size=32, scale_bits=8),
    DType("mxfp4", 4, True, "fp4", block_size=32, scale_bits=8),
    # NVFP4: 16 elements share one FP8 E4M3 scale (NVIDIA Blackwell NVFP4 format); the
    # per-tensor fp32 second-level scale is 4 bytes per tensor and is ignored.
    DType("nvfp4", 4, True, "fp4", block_size=16, scale_bits=8),
    DType("int64", 64, False, "int64"),
    DType("int32", 32, False, "int32"),
    DType("int8", 8, False, "int8"),
    DType("int4", 4, False, "int4"),
    DType("bool", 8, False, "bool"),
]

DTYPES: dict[str, DType] = {d.name: d for d in _ALL}
ALIASES = {"fp8": "fp8_e4m3", "fp6": "mxfp6_e2m3", "fp4": "nvfp4", "float32": "fp32",
           "float16": "fp16", "bfloat16": "bf16"}

# Tensor-core families a hardware spec may list, narrowest first.
TENSOR_FAMILIES = ("fp4", "fp6", "fp8", "int8", "bf16", "fp16", "tf32", "fp64")
VECTOR_FAMILIES = ("fp64", "fp32", "bf16", "fp16")


def lookup(name: str) -> DType | None:
    """The dtype called `name` (aliases allowed), or None."""
    return DTYPES.get(ALIASES.get(name, name))


def known_names() -> list[str]:
    return sorted(DTYPES) + sorted(ALIASES)

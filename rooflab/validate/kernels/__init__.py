"""Triton kernels used to validate rooflab on a real GPU (import torch/triton; no GPU work at import)."""

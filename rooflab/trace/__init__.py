"""Trace real PyTorch programs into rooflab graphs: any nn.Module (`trace_module`) and Hugging
Face models from their config (`trace_hf`). torch (and transformers, for `trace_hf`) are needed
only here, and only when a trace runs: `pip install 'rooflab[trace]'`.

    >>> from rooflab.trace import trace_hf
    >>> g = trace_hf("llama3-8b", phase="decode", batch=16, context=1024)
"""

from __future__ import annotations

from rooflab.trace.hf import trace_hf
from rooflab.trace.module import trace_module

__all__ = ["trace_hf", "trace_module"]

import textwrap
from pathlib import Path

import pytest

from rooflab import api, hardware

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session", autouse=True)
def _trace_cache(tmp_path_factory):
    """Traces cached on disk go to a folder of this test session, not the user's cache."""
    import os
    os.environ["ROOFLAB_CACHE_DIR"] = str(tmp_path_factory.mktemp("trace-cache"))


@pytest.fixture(scope="session")
def h200():
    return hardware.load("h200")


@pytest.fixture
def write_yaml(tmp_path):
    """Write a dedented YAML string to a file and return its path."""
    def _write(text: str, name: str = "w.yaml") -> Path:
        p = tmp_path / name
        p.write_text(textwrap.dedent(text))
        return p
    return _write


@pytest.fixture
def masked_decode(write_yaml):
    """The path of a one-token SDPA decode step over 1,024 keys whose mask has `mask_dtype`."""
    def _write(mask_dtype: str = "bool") -> Path:
        return write_yaml(f"""
            name: masked_decode
            tensors:
              q: {{shape: [1, 32, 1, 64], dtype: bf16}}
              k: {{shape: [1, 32, 1024, 64], dtype: bf16}}
              v: {{shape: [1, 32, 1024, 64], dtype: bf16}}
              m: {{shape: [1, 1, 1, 1024], dtype: {mask_dtype}}}
            ops:
              - {{kind: attention, name: sdpa, causal: false, inputs: [q, k, v, m], outputs: [o]}}
            outputs: [o]
        """, f"masked_{mask_dtype}.yaml")
    return _write


@pytest.fixture
def unfused(write_yaml, h200):
    """Price a small workload unfused on the H200; returns {op name: KernelCost}."""
    def _run(text: str, hw=None):
        pred = api.predict(write_yaml(text), hw or h200, "unfused", "graph")
        return {k.name: k for k in pred.kernels}
    return _run

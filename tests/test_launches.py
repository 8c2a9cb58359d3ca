"""`launches:` on an op: the CUDA kernels it launches when it runs alone (a split-K GEMM: 2; a bias
add cuBLASLt runs in its GEMM's epilogue: 0, in that GEMM's kernel)."""

import pytest

from rooflab import api, workload
from rooflab.errors import RooflabError

DOC = """
name: launches
tensors:
  x: {shape: [16, 1024], dtype: bf16}
  w: {shape: [1024, 4096], dtype: bf16}
  b: {shape: [4096], dtype: bf16}
ops:
  - {name: gemm, kind: matmul, inputs: [x, w], outputs: [h], launches: 2}
  - {name: bias, kind: add, inputs: [h, b], outputs: [hb], launches: 0}
  - {name: act, kind: gelu, inputs: [hb], outputs: [y]}
"""


def _load(tmp_path, text=DOC):
    f = tmp_path / "w.yaml"
    f.write_text(text)
    return workload.load(str(f))


def test_launches_count_kernels_and_a_zero_rides_in_the_producers_kernel(tmp_path):
    g = _load(tmp_path)
    hw = api.load_hardware("h200")
    p = api.predict_graph(g, hw, "unfused", "graph")
    # two rooflab kernels: gemm+bias (the bias add in the GEMM's epilogue) and gelu
    assert [k.ops for k in p.kernels] == [("gemm", "bias"), ("act",)]
    assert [k.launches for k in p.kernels] == [2, 1]
    assert p.totals.kernels == 3
    # a CUDA graph pays graph_launch_s per launched kernel
    assert p.kernels[0].launch_s == pytest.approx(2 * hw.graph_launch_s)
    # h is made and used inside the first kernel: only hb leaves it, [16, 4096] bf16
    assert p.kernels[0].hbm_write_bytes == 16 * 4096 * 2
    e = api.predict_graph(g, hw, "unfused", "eager")
    assert e.totals.kernels == 3 and e.kernels[0].launch_s >= 2 * hw.min_kernel_s


def test_a_negative_launch_count_is_one_line(tmp_path):
    with pytest.raises(RooflabError, match="launches"):
        _load(tmp_path, DOC.replace("launches: 2", "launches: -1"))

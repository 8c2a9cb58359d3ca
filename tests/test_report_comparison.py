"""rooflab.compare computes and the renderers render: compare.py imports nothing from report/
(function-level imports included), and the text and JSON of one comparison agree."""

import ast
from pathlib import Path

from rooflab import api
from rooflab.compare import compare
from rooflab.report import comparison, jsonout

COMPARE = Path(__file__).resolve().parent.parent / "rooflab" / "compare.py"


def test_compare_imports_nothing_from_report_or_cli():
    mods = set()
    for node in ast.walk(ast.parse(COMPARE.read_text())):      # every import, at any depth
        if isinstance(node, ast.Import):
            mods |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            mods.add(node.module)
    assert not {m for m in mods if m.startswith(("rooflab.report", "rooflab.cli"))}, mods


def test_text_and_json_of_the_gemm_epilogue_comparison(h200):
    e = 4096 * 4096 * 2                  # one bf16 [4096, 4096] tensor, bytes
    w = "workloads/gemm_bias_gelu_residual.yaml"
    c = compare(api.predict(w, h200, "unfused", "graph"), api.predict(w, h200, "fused", "graph"))
    j = jsonout.comparison_json(c)
    assert (j.hbm_bytes_saved, j.launches_saved, len(j.fusions)) == (6 * e, 3, 1)
    assert j.fusions[0].ops == ["matmul", "add", "gelu", "add"]
    text = comparison.render(c)
    assert text.splitlines()[0].startswith("fused vs unfused on h200 (graph launch): ")
    assert "kernels 4 → 1" in text.splitlines()[0]
    assert "gemm+bias+gelu+residual" in text and "matmul→add→gelu→add" in text
    ranking = comparison.render_ranking(c)
    assert " 1. matmul → add → gelu → add: epilogue fusion saves " in ranking

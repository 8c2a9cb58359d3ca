"""rooflab.compare computes and the renderers render: compare.py imports nothing from report/
(function-level imports included), and the text and JSON of one comparison agree."""

import ast
from pathlib import Path

import pytest

from rooflab import api
from rooflab.compare import compare
from rooflab.report import comparison, jsonout
from rooflab.units import format_time

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


def test_what_no_fusion_holds_is_shown_apart():
    # mlp_block, inductor vs fused, on the measured H200 spec under torch.compile's launch: the
    # two fusions (gate+silu+mul, down+residual) hold their kernels' difference; the up
    # projection holds the same op in both schedules but is a cuBLAS call under inductor and
    # rooflab's own GEMM under fused, so it is priced apart. norm is the same kernel, priced
    # alike. The fusions and the repriced kernel add up to the whole difference
    from rooflab.bundled import SPEC_DIR
    hw = api.load_hardware(str(SPEC_DIR / "measured" / "h200.yaml"))
    ind = api.predict("mlp_block", hw, "inductor", "compiled")
    fus = api.predict("mlp_block", hw, "fused", "compiled")
    c = compare(ind, fus)
    up = {p.policy: next(k for k in p.kernels if k.name == "up") for p in (ind, fus)}
    assert [(r.kernel, r.count) for r in c.repriced] == [("up", 1)]
    assert c.repriced[0].baseline_s == up["inductor"].time_s
    assert c.repriced[0].candidate_s == up["fused"].time_s
    assert up["fused"].time_s > up["inductor"].time_s          # the tile model, not cuBLAS's curve
    norm = [next(k for k in p.kernels if k.name == "norm").time_s for p in (ind, fus)]
    assert norm[0] == norm[1]
    assert c.time_saved_elsewhere_s == pytest.approx(up["inductor"].time_s - up["fused"].time_s,
                                                     abs=1e-12)
    assert sum(f.time_saved_s for f in c.fusions) + c.time_saved_elsewhere_s == \
        pytest.approx(c.time_saved_s, abs=1e-12)
    rest = format_time(abs(c.time_saved_elsewhere_s))
    line = f"besides the fusions, fused loses {rest}: kernels both schedules run, priced or " \
           f"issued differently (up {format_time(up['inductor'].time_s)} → " \
           f"{format_time(up['fused'].time_s)})"
    assert line in comparison.render_ranking(c).splitlines()
    assert line in comparison.render(c).splitlines()
    j = jsonout.comparison_json(c)
    assert j.time_saved_elsewhere_s == c.time_saved_elsewhere_s
    assert [(r.kernel, r.candidate_s) for r in j.repriced] == [("up", up["fused"].time_s)]
    # where the fusions hold the whole difference, no such line: the GEMM epilogue comparison
    w = "workloads/gemm_bias_gelu_residual.yaml"
    plain = compare(api.predict(w, hw, "unfused", "graph"), api.predict(w, hw, "fused", "graph"))
    assert "besides the fusions" not in comparison.render(plain)


def test_a_regrouping_is_not_called_a_fusion(h200):
    # activations.yaml: four hand-written activations of one x. Inductor's sibling fusion makes
    # them one kernel that reads x once; `fused` joins each chain but not the chains, so its
    # five kernels split inductor's one: no fusion, the whole difference is regrouping
    ind = api.predict("workloads/activations.yaml", h200, "inductor", "graph")
    fus = api.predict("workloads/activations.yaml", h200, "fused", "graph")
    assert (len(ind.kernels), len(fus.kernels)) == (1, 5)
    c = compare(ind, fus)
    assert (c.fusions, c.repriced, c.regrouped_kernels) == ((), (), 5)
    assert c.time_saved_elsewhere_s == c.time_saved_s < 0
    assert comparison.render(c).splitlines()[-1] == (
        f"besides the fusions, fused loses {format_time(-c.time_saved_s)}: 5 of its kernels "
        "group ops otherwise than inductor's")
    assert jsonout.comparison_json(c).regrouped_kernels == 5
    text = comparison.render(c).splitlines()
    slower = fus.totals.time_s / ind.totals.time_s
    assert f"({slower:.2f}× slower, costs {format_time(-c.time_saved_s)})" in text[0]
    assert text[1] == "no fusions: no kernel of fused merges kernels of inductor"


def test_the_html_summary_says_the_same():
    # the HTML summary of the mlp_block comparison carries the terminal's sentences: the
    # speedup phrase, and what no fusion holds under the fusion table
    from rooflab.bundled import SPEC_DIR
    from rooflab.report.html.summary import summary_html
    hw = api.load_hardware(str(SPEC_DIR / "measured" / "h200.yaml"))
    ind = api.predict("mlp_block", hw, "inductor", "compiled")
    fus = api.predict("mlp_block", hw, "fused", "compiled")
    c = compare(ind, fus)
    page = summary_html([ind, fus], [c], 10)
    assert comparison.faster(c) in page
    assert comparison.elsewhere(c) in page
    slower = compare(api.predict("workloads/activations.yaml", hw, "inductor", "graph"),
                     api.predict("workloads/activations.yaml", hw, "fused", "graph"))
    assert "slower, costs" in summary_html([slower.baseline, slower.candidate], [slower], 10)


def test_a_fusion_priced_above_its_parts_costs_time():
    # the same comparison's ranking, graph launch: fused's gate+silu+mul GEMM is rooflab's
    # tile, inductor's gate a cuBLAS call; where the fused kernel prices above inductor's two,
    # the line says the time it costs, not a negative saving
    from dataclasses import replace

    from rooflab.bundled import SPEC_DIR
    hw = api.load_hardware(str(SPEC_DIR / "measured" / "h200.yaml"))
    c = compare(api.predict("mlp_block", hw, "inductor", "graph"),
                api.predict("mlp_block", hw, "fused", "graph"))
    f = c.fusions[0]
    worse = replace(c, fusions=(replace(f, time_saved_s=-28.7e-6),) + c.fusions[1:])
    line = comparison.render_ranking(worse).splitlines()[2]
    assert f": {f.fusion} fusion costs 28.7 µs, saves " in line
    assert "saves -" not in comparison.render_ranking(worse)


def test_the_committed_json_schema_is_the_models_schema():
    """docs/prediction.schema.json is what `python -m rooflab.report.jsonout` prints: a field
    added to a model and not to the published schema fails here."""
    import json
    committed = Path(__file__).resolve().parent.parent / "docs" / "prediction.schema.json"
    assert json.loads(committed.read_text()) == jsonout.PredictionsJSON.model_json_schema()


def test_nothing_saved_elsewhere_is_zero_not_rounding_noise():
    # every difference of this comparison is held by its fusions; subtracting them left
    # -3.05e-20 s in the JSON before
    hw = api.load_hardware("b200")
    c = compare(*(api.predict(api.load_workload("opaque_library_call"), hw, s, "compiled")
                  for s in ("unfused", "inductor")))
    assert c.time_saved_elsewhere_s == 0.0
    assert c.time_saved_s == pytest.approx(sum(f.time_saved_s for f in c.fusions), abs=1e-15)

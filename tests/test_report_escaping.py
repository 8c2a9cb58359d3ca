"""Names written into HTML reports are escaped where each view renders them: hardware, policy,
workload, kernel and op names holding markup, quotes and control characters reach neither the
page's HTML nor plotly's text as markup."""

from __future__ import annotations

import dataclasses
import re

from rooflab import api
from rooflab.compare import compare
from rooflab.report import html

EVIL = "x<script>alert(\"q'\")</script>\x1b[31m\x00"
ESCAPED = "x&lt;script&gt;alert(&quot;q&#x27;&quot;)&lt;/script&gt;\\x1b[31m\\x00"


def test_esc_turns_markup_quotes_and_control_characters_into_text():
    assert html.esc(EVIL) == ESCAPED
    assert html.esc("a&b\x7f\x85") == "a&amp;b\\x7f\\x85"
    assert html.esc("layer[3].q_proj") == "layer[3].q_proj"      # ordinary names unchanged


def _hostile_predictions(h200):
    """unfused and fused predictions of mlp_block on an H200 whose every name is EVIL-laden."""
    hw = dataclasses.replace(h200, name="h200" + EVIL, display_name="H200" + EVIL)
    graph = api.load_workload("workloads/mlp_block.yaml")

    def rename(p, policy):
        ks = tuple(dataclasses.replace(k, name=k.name + EVIL, ops=tuple(o + EVIL for o in k.ops),
                                       kinds=tuple(o + EVIL for o in k.kinds),
                                       stopped_by=tuple(s + EVIL for s in k.stopped_by))
                   for k in p.kernels)
        return dataclasses.replace(p, workload=p.workload + EVIL, hardware=hw,
                                   policy=policy + EVIL, kernels=ks,
                                   notes=p.notes + ("note" + EVIL,))
    unf = rename(api.predict_graph(graph, h200, "unfused"), "unfused")
    fus = rename(api.predict_graph(graph, h200, "fused"), "fused")
    return [unf, fus], [compare(unf, fus)]


def _strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _strings(v)


def test_hostile_names_reach_plotly_text_only_escaped(h200):
    preds, cmps = _hostile_predictions(h200)
    figs = [html.roofline_figure(preds, cmps), html.breakdown_figure(preds),
            html.totals_figure(preds + preds)]
    for fig in figs:
        spec = fig.to_plotly_json()
        spec["layout"].pop("meta", None)          # data, not drawn
        texts = list(_strings(spec))
        assert not [t for t in texts if "<script" in t or "\x1b" in t or "\x00" in t or '"q' in t]
        assert any(ESCAPED in t for t in texts)
    assert figs[0].layout.meta["arrows"] > 0          # the fused kernel's arrows are drawn


def test_hostile_names_reach_the_page_only_escaped(h200, tmp_path):
    preds, cmps = _hostile_predictions(h200)
    out = tmp_path / "evil.html"
    html.write_predictions(out, preds, cmps)
    page = out.read_text(encoding="utf-8")
    assert "alert(" not in page.replace("alert(&quot;", "")   # only the escaped form
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", page)
    summary = html.summary_html(preds, cmps)
    assert "<script" not in summary and summary.count(ESCAPED) >= 5
    assert f"<title>rooflab · mlp_block{ESCAPED}</title>" in page

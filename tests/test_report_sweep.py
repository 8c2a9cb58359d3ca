"""The sweep report (rooflab.report.html.sweep): built from hand-made ServeTables whose every
number is worked out below, so the figures, the Pareto front, the best configuration and the
"stops fitting" rows can be checked by hand. The browser test is in test_report_html.py.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from rooflab.errors import RooflabError
from rooflab.report import html
from rooflab.report.html.sweep import (batch_figure, memory_figure, render_sweep, sweep_figures,
                                       throughput_figure, write_sweep)
from rooflab.sweep_table import COLUMNS, ServeTable

EVIL = "x<script>alert(\"q'\")</script>\x1b[31m\x00"
ESCAPED = "x&lt;script&gt;alert(&quot;q&#x27;&quot;)&lt;/script&gt;\\x1b[31m\\x00"

HBM = {"h100-sxm": 80e9, "h200": 141e9}
WEIGHTS = 70e9                 # bytes, every configuration
KV_PER_TOKEN = 200e3           # bytes per token of one sequence
OUTPUT = 128


def make_table(rows: list[dict], meta: dict | None = None) -> ServeTable:
    """A ServeTable from rows giving every column (missing text columns are "", a missing
    GPU count 1)."""
    cols = {}
    for c in COLUMNS:
        vals = [r.get(c, "") if c in ("schedule", "launch", "variant", "why")
                else r.get(c, 1) if c == "gpus"
                else r.get(c, r["tokens_per_s"] * r.get("gpus", 1)) if c == "total_tokens_per_s"
                else r[c] for r in rows]
        cols[c] = np.array(vals, dtype=object if c in ("gpu", "schedule", "launch", "variant",
                                                       "why") else None)
    return ServeTable(cols, meta if meta is not None else {"model": "toy-70b"})


def toy_row(gpu: str, batch: int, inp: int) -> dict:
    """One configuration of a made-up model on a made-up cost:
    memory = weights 70 GB + KV batch × (input + 128) × 200 kB + activations batch × 1 MB
             + workspace 2 GB;
    TPOT   = 10 ms + 0.1 ms × batch × (input + 128) / 640 on the H100, 8 ms + 0.08 ms × ... on
             the H200 (the KV cache read grows with batch and context);
    TTFT   = 1 ms × batch × input / 512;  latency = TTFT + 127 × TPOT;
    tokens/s = batch × 128 / latency, per request 128 / latency. NaN times where it does not
    fit."""
    kv = batch * (inp + OUTPUT) * KV_PER_TOKEN
    act = batch * 1e6
    mem = WEIGHTS + kv + act + 2e9
    fits = mem <= HBM[gpu]
    a, b = (0.010, 1e-4) if gpu == "h100-sxm" else (0.008, 8e-5)
    tpot = a + b * batch * (inp + OUTPUT) / 640
    ttft = 1e-3 * batch * inp / 512
    lat = ttft + (OUTPUT - 1) * tpot
    nan = float("nan")
    return dict(
        gpu=gpu, schedule="fused", launch="graph", variant="", batch=batch, input_tokens=inp,
        output_tokens=OUTPUT, fits=fits, weights_bytes=int(WEIGHTS), kv_cache_bytes=int(kv),
        activation_bytes=int(act), workspace_bytes=int(2e9), memory_bytes=int(mem),
        hbm_bytes=int(HBM[gpu]), ttft_s=ttft if fits else nan, tpot_s=tpot if fits else nan,
        latency_s=lat if fits else nan, tokens_per_s=batch * OUTPUT / lat if fits else nan,
        tokens_per_s_per_request=OUTPUT / lat if fits else nan,
        why="" if fits else f"needs {mem / 1e9:.0f} GB of {HBM[gpu] / 1e9:.0f} GB: KV cache "
                            f"{kv / 1e9:.0f} GB")


def toy_table(meta: dict | None = None) -> ServeTable:
    """2 GPUs × batch 1, 32, 128 × input 512, 2048 (output 128): 12 rows.
    Memory (GB): 70 + 2 + batch/1000 + KV, KV = batch × tokens × 0.0002:
      in 512 (640 tokens):   b1 0.128 -> 72.13;  b32 4.096 -> 76.13;  b128 16.38 -> 88.51
      in 2048 (2176 tokens): b1 0.435 -> 72.44;  b32 13.93 -> 85.96;  b128 55.71 -> 127.84
    The H100 (80 GB) fits b1 (both inputs) and b32 at input 512 only: 3 rows do not fit
    (b32/2048 85.96 GB, b128/512 88.51 GB, b128/2048 127.84 GB). The H200 (141 GB) fits all."""
    return make_table([toy_row(g, b, i) for g in HBM for i in (512, 2048) for b in (1, 32, 128)],
                      meta)


def spec(fig) -> dict:
    return json.loads(fig.to_json())


# ------------------------------------------------------------------------------ the figures
def test_the_page_has_the_four_figures_with_their_titles_and_axes():
    text = render_sweep(toy_table())
    divs = re.findall(r'<div id="(rooflab-sweep-[a-z]+)"', text)
    assert divs == ["rooflab-sweep-tpot", "rooflab-sweep-ttft", "rooflab-sweep-throughput",
                    "rooflab-sweep-memory"]
    tpot, ttft, thr, mem = (spec(f) for f in sweep_figures(toy_table()))
    assert tpot["layout"]["title"]["text"] == "TPOT against batch · toy-70b"
    assert ttft["layout"]["title"]["text"] == "TTFT against batch · toy-70b"
    assert thr["layout"]["title"]["text"].startswith("Throughput against request latency")
    assert mem["layout"]["title"]["text"].startswith("Memory against batch")
    assert tpot["layout"]["yaxis"]["title"]["text"].startswith("TPOT")
    assert tpot["layout"]["xaxis"]["title"]["text"] == "batch (requests served together)"
    assert thr["layout"]["xaxis"]["title"]["text"].startswith("request latency")
    # batch 1..128 spans two decades: log, ticked at the three swept batches
    assert tpot["layout"]["xaxis"]["type"] == "log"
    assert tpot["layout"]["xaxis"]["tickvals"] == [1, 32, 128]
    # TPOT 8.08 ms (H200 b1/512) .. 42.8 ms (H200 b128/2048) spans under a decade: linear
    # from 0, in seconds with SI ticks
    assert tpot["layout"]["yaxis"]["type"] == "linear"
    assert tpot["layout"]["yaxis"]["ticksuffix"] == "s"
    # TTFT 1 ms (b1 in512) .. 512 ms (b128 in2048 on the H200): log
    assert ttft["layout"]["yaxis"]["type"] == "log"
    # throughput: 99.5 tokens/s (b1) .. 6702 tokens/s (b128): log
    assert thr["layout"]["yaxis"]["type"] == "log"


def test_lines_stop_where_a_configuration_does_not_fit_and_nan_is_never_zero():
    fig = spec(batch_figure(toy_table(), "tpot_s", "t", "TPOT"))
    # the series differ in input length: a panel per GPU (x/y the H100, x2/y2 the H200)
    assert [a["text"] for a in fig["layout"]["annotations"]] == ["h100-sxm", "h200"]
    lines = [t for t in fig["data"] if t["mode"] == "lines+markers"]
    h100 = [t for t in lines if t["xaxis"] == "x"]
    h200 = [t for t in lines if t["xaxis"] == "x2"]
    assert [t["name"] for t in h100] == ["in 512", "in 2048"]      # the label is what varies
    # one legend entry per input length, shared by the panels, one colour per input length
    assert [t.get("showlegend", True) for t in h100 + h200] == [True, True, False, False]
    assert h100[0]["line"]["color"] == h200[0]["line"]["color"] != h100[1]["line"]["color"]
    # H100, input 512: b1 10 + 0.1 = 10.1 ms, b32 10 + 3.2 = 13.2 ms, b128 does not fit
    assert h100[0]["x"] == [1, 32, 128] and h100[0]["y"] == [0.0101, 0.0132, None]
    # H100, input 2048: only b1 fits, 10 ms + 0.1 ms × 2176 / 640 = 10.34 ms
    assert h100[1]["y"] == [0.01034, None, None]
    # H200, every batch fits: 8 + 0.08 × 128 = 18.24 ms
    assert h200[0]["y"] == [0.00808, 0.01056, 0.01824]
    assert not any(v == 0 for t in lines for v in t["y"])
    # the three that do not fit are crosses on a hidden 0..1 axis over the H100 panel
    nofit = [t for t in fig["data"] if t.get("legendgroup") == "nofit"]
    assert len(nofit) == 1 and nofit[0]["x"] == [32, 128]
    over = "yaxis" + nofit[0]["yaxis"][1:]
    assert fig["layout"][over]["overlaying"] == "y" and fig["layout"][over]["visible"] is False
    # batch 32: 85.96 GB; batch 128: 88.51 GB (in 512) and 127.84 GB (in 2048)
    assert "in 2048: needs 86 GB of 80 GB: KV cache 14 GB" in nofit[0]["hovertext"][0]
    assert "in 512: needs 89 GB of 80 GB: KV cache 16 GB" in nofit[0]["hovertext"][1]
    assert "in 2048: needs 128 GB of 80 GB: KV cache 56 GB" in nofit[0]["hovertext"][1]


def test_one_series_per_gpu_shares_one_panel_coloured_by_gpu():
    table = make_table([toy_row(g, b, 512) for g in HBM for b in (1, 32, 128)])
    fig = spec(batch_figure(table, "tpot_s", "t", "TPOT"))
    lines = [t for t in fig["data"] if t["mode"] == "lines+markers"]
    assert [(t["name"], t["xaxis"]) for t in lines] == [("h100-sxm", "x"), ("h200", "x")]
    assert lines[0]["line"]["color"] != lines[1]["line"]["color"]
    (nofit,) = [t for t in fig["data"] if t.get("legendgroup") == "nofit"]
    assert nofit["name"] == "h100-sxm: does not fit (hover for why)" and nofit["x"] == [128]


def test_ttft_plots_the_prefill_time():
    fig = spec(batch_figure(toy_table(), "ttft_s", "t", "TTFT"))
    h200 = [t for t in fig["data"] if t["mode"] == "lines+markers" and t["xaxis"] == "x2"]
    # 1 ms × batch × input / 512: in 512 -> 1, 32, 128 ms; in 2048 -> 4, 128, 512 ms
    assert h200[0]["y"] == [0.001, 0.032, 0.128] and h200[1]["y"] == [0.004, 0.128, 0.512]


def test_throughput_points_are_only_the_fitting_ones_and_the_front_is_per_gpu():
    fig = spec(throughput_figure(toy_table()))
    pts = {t["legendgroup"]: t for t in fig["data"] if t["name"] == "configurations"}
    assert len(pts["gpu0"]["x"]) == 3 and len(pts["gpu1"]["x"]) == 6
    assert None not in pts["gpu0"]["x"] + pts["gpu0"]["y"]
    front = {t["legendgroup"]: t for t in fig["data"] if t["name"] == "Pareto front"}
    # H100 latencies: b1/512 0.001 + 127 × 0.0101 = 1.2837 s, 128/1.2837 = 99.71 tokens/s;
    # b1/2048 0.004 + 127 × 0.01034 = 1.3172 s, 97.18 tokens/s (slower and fewer: off the front);
    # b32/512 0.032 + 127 × 0.0132 = 1.7084 s, 4096/1.7084 = 2397.6 tokens/s
    assert front["gpu0"]["x"] == [1.284, 1.708]
    assert front["gpu0"]["y"] == [99.71, 2398.0]
    x_title = fig["layout"]["xaxis"]["title"]["text"]
    assert x_title == "request latency = TTFT + (output − 1) × TPOT"


def test_pareto_front_of_four_points_worked_by_hand():
    """(latency s, tokens/s): A (1.0, 100), B (2.0, 300), C (1.5, 90), D (3.0, 250).
    By latency: A first (on the front, best 100); C 90 < 100 (A is faster and more); B 300 > 100
    (on the front); D 250 < 300 (B is faster and more). Front: A then B."""
    rows = []
    for lat, tps in ((1.0, 100.0), (2.0, 300.0), (1.5, 90.0), (3.0, 250.0)):
        r = toy_row("h200", 1, 512)
        r.update(latency_s=lat, tokens_per_s=tps)
        rows.append(r)
    fig = spec(throughput_figure(make_table(rows)))
    (front,) = [t for t in fig["data"] if t["name"] == "Pareto front"]
    assert front["x"] == [1.0, 2.0] and front["y"] == [100.0, 300.0]


def test_memory_stacks_the_largest_series_with_the_hbm_line_and_the_largest_fit():
    fig = spec(memory_figure(toy_table()))
    # the H100 panel (x/y): the series needing most is input 2048 (127.84 GB at b128)
    stacked = [t for t in fig["data"] if t.get("stackgroup") == "m0"]
    assert [t["name"] for t in stacked] == ["weights", "KV cache", "activations", "workspace"]
    assert stacked[1]["y"] == [435200000, 13926400000, 55705600000]   # 200 kB × 2176 × b
    assert stacked[0]["y"] == [70e9] * 3
    hbm = [t for t in fig["data"] if t["name"] == "allocatable memory"]
    assert [t["y"] for t in hbm] == [[80e9, 80e9], [141e9, 141e9]]
    stars = [t for t in fig["data"] if t["name"] == "largest batch that fits"]
    # H100: in 512 fits up to 32 (70 + 2 + 0.032 + 4.096 = 76.128 GB), in 2048 up to 1
    # (70 + 2 + 0.001 + 0.4352 = 72.4362 GB); the H200 all to 128
    assert stars[0]["x"] == [32, 1] and stars[0]["y"] == [76128000000, 72436200000]
    assert stars[1]["x"] == [128, 128]
    notes = [a["text"] for a in fig["layout"]["annotations"]]
    assert notes == ["h100-sxm · 80 GB allocatable · stacked: in 2048",
                     "h200 · 141 GB allocatable · stacked: in 2048",
                     "fits up to batch 1", "fits up to batch 128"]
    # one memory axis for all panels, up to the larger of the most memory (127.84 GB × 1.08 =
    # 138.1 GB, under 3× HBM) and the largest HBM with room above (141 GB × 1.15 = 162.15 GB)
    assert fig["layout"]["yaxis"]["range"] == fig["layout"]["yaxis2"]["range"] == [0, 162.15e9]


# ------------------------------------------------------------------------------ the page
def test_best_configuration_per_gpu_and_where_each_stops_fitting():
    text = render_sweep(toy_table())
    # H100 best: b32/512, 2397.6 tokens/s, per request 128/1.7084 = 74.9, TTFT 32 ms,
    # TPOT 13.2 ms, memory 76.13 GB of 80 GB
    assert ("<td><b>h100-sxm</b></td><td>batch <b>32</b> · in 512 · out 128</td>"
            "<td><b>2,398</b></td><td>74.9</td><td>32 ms</td><td>13.2 ms</td><td>1.71 s</td>"
            "<td>76.1 GB of 80 GB</td>") in text
    # H200 best: b128/512: TPOT 18.24 ms, latency 0.128 + 127 × 0.01824 = 2.4445 s,
    # 16384 / 2.4445 = 6702 tokens/s (b128/2048: TPOT 8 + 0.08 × 128 × 3.4 = 42.816 ms, latency
    # 0.512 + 127 × 0.042816 = 5.9496 s, 2754 tokens/s)
    assert "<td><b>6,702</b></td>" in text and "<td>18.2 ms</td><td>2.44 s</td>" in text
    # where it stops: H100 in 512 fits to 32, fails at 128 (88.51 GB); in 2048 fits 1, fails 32
    assert ("<td><b>h100-sxm</b></td><td>in 512</td><td>32</td><td>128</td>"
            "<td><span class=dim>needs 89 GB of 80 GB: KV cache 16 GB</span></td>") in text
    assert "<td>in 2048</td><td>1</td><td>32</td>" in text
    assert "<td><b>h200</b></td><td>in 2048</td><td>128</td><td>all fit</td>" in text
    assert "12 configurations (9 fit) on h100-sxm, h200 · batch 1, 32, 128" in text


def test_a_gpu_where_nothing_fits_says_why_and_draws_no_times():
    rows = [toy_row("h100-sxm", b, 2048) for b in (32, 128)]        # neither fits (above)
    table = make_table(rows)
    text = render_sweep(table)
    # the smallest is b32: 85.96 GB
    assert "<td>nothing fits</td>" in text and "needs 86 GB of 80 GB: KV cache 14 GB" in text
    fig = spec(batch_figure(table, "tpot_s", "t", "TPOT"))
    (line,) = [t for t in fig["data"] if t["mode"] == "lines+markers"]
    assert line["y"] == [None, None]
    assert "fits up to" not in json.dumps(spec(memory_figure(table)))
    assert "nothing fits" in json.dumps(spec(memory_figure(table)))


def test_page_is_offline_and_embeds_plotly_once(tmp_path):
    out = tmp_path / "sweep.html"
    write_sweep(out, toy_table())
    text = out.read_text()
    assert text.count("window.PlotlyConfig") == 1
    assert not re.search(r"<script[^>]*\bsrc=", text)
    assert "<title>rooflab sweep · toy-70b</title>" in text
    with pytest.raises(RooflabError, match="exists; pass --force"):
        write_sweep(out, toy_table())
    write_sweep(out, toy_table(), force=True)
    assert html.write_sweep is write_sweep and html.render_sweep is render_sweep


def test_an_empty_table_is_refused():
    empty = make_table([toy_row("h200", 1, 512)]).select(np.zeros(1, dtype=bool))
    with pytest.raises(RooflabError, match="no configurations"):
        render_sweep(empty)


def test_hostile_names_reach_the_page_and_plotly_only_escaped():
    rows = [toy_row("h100-sxm", b, 2048) for b in (1, 32)]
    for r in rows:
        r.update(gpu="h100" + EVIL, variant="dtype=" + EVIL)
    rows[1]["why"] = "needs" + EVIL
    rows.append(dict(rows[0], variant="dtype=fp8"))     # the variant varies: it is in labels
    table = make_table(rows, {"model": "m" + EVIL, "note": EVIL})
    text = render_sweep(table)
    assert "alert(" not in text.replace("alert(&quot;", "")
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", text)
    assert f"<title>rooflab sweep · m{ESCAPED}</title>" in text
    for fig in sweep_figures(table):
        strings = re.findall(r'"((?:[^"\\]|\\.)*)"', fig.to_json())
        decoded = [json.loads(f'"{s}"') for s in strings]
        assert not [s for s in decoded if "<script" in s or "\x1b" in s or "\x00" in s]
        assert any(ESCAPED in s for s in decoded)


def test_text_columns_as_numpy_strings_draw_the_same_page():
    """The sweep may hold its text columns as numpy str arrays rather than objects."""
    table = toy_table()
    as_str = ServeTable({k: (v.astype(str) if v.dtype == object else v)
                         for k, v in table.columns.items()}, table.meta)
    assert as_str.columns["gpu"].dtype.kind == "U"
    assert render_sweep(as_str) == render_sweep(table)

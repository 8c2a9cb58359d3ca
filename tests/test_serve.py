"""rooflab serve / sweep: TTFT, TPOT and memory fit from the per-step predictions, over a grid."""

import math

import numpy as np
import pytest
from typer.testing import CliRunner

from rooflab import api, grid, serve
from rooflab.cli import app

DEC, PRE = "workloads/llama3_8b_decode.yaml", "workloads/llama3_8b_prefill.yaml"


def test_ttft_tpot_latency_from_the_step_predictions():
    # batch 8, a 512-token prompt, 4 output tokens: the prefill gives the first token, then
    # 3 decode steps attend over 513, 514 and 515 cached tokens.
    t = serve.serve(DEC, ["h200"], [8], [512], [4], "fused", "graph", prefill_source=PRE)
    row = t.rows()[0]
    ttft = api.predict(PRE, "h200", "fused", "graph", {"batch": 8, "seq": 512}).totals.time_s
    steps = [api.predict(DEC, "h200", "fused", "graph", {"batch": 8, "context": c}).totals.time_s
             for c in (513, 514, 515)]
    tpot = sum(steps) / 3
    assert row["ttft_s"] == pytest.approx(ttft, rel=1e-12)
    assert row["tpot_s"] == pytest.approx(tpot, rel=1e-12)
    assert row["latency_s"] == pytest.approx(ttft + 3 * tpot, rel=1e-12)
    assert row["tokens_per_s"] == pytest.approx(8 * 4 / (ttft + 3 * tpot), rel=1e-12)
    assert row["tokens_per_s_per_request"] == pytest.approx(4 / (ttft + 3 * tpot), rel=1e-12)
    # static cache: every step at input + output = 516
    s = serve.serve(DEC, ["h200"], [8], [512], [4], "fused", "graph", prefill_source=PRE,
                    kv="static").rows()[0]
    at516 = api.predict(DEC, "h200", "fused", "graph", {"batch": 8, "context": 516}).totals.time_s
    assert s["tpot_s"] == pytest.approx(at516, rel=1e-12)


def test_a_long_generation_prices_a_sample_of_its_decode_steps(monkeypatch):
    # 4,000 output tokens: 3,999 decode steps at contexts 513..4511, priced at 1,024 of them
    # spread evenly; their mean is the mean of every step's within a part in a thousand
    ctx = serve._decode_contexts(512, 4000, "growing")
    assert len(ctx) == serve.MAX_DECODE_CONTEXTS and (ctx[0], ctx[-1]) == (513, 4511)
    assert serve._decode_contexts(512, 1025, "growing").tolist() == list(range(513, 1537))
    sampled = serve.serve(DEC, ["h200"], [8], [512], [4000], "fused", "graph",
                          prefill_source=PRE).rows()[0]["tpot_s"]
    monkeypatch.setattr(serve, "MAX_DECODE_CONTEXTS", 10**6)
    every = serve.serve(DEC, ["h200"], [8], [512], [4000], "fused", "graph",
                        prefill_source=PRE).rows()[0]["tpot_s"]
    assert sampled == pytest.approx(every, rel=1e-3) and sampled != every


def test_kv_cache_and_weights_by_hand_and_what_does_not_fit():
    # Llama-3-8B (workloads/llama3_8b_decode.yaml): KV per token = 32 layers x (k + v) x 8 KV
    # heads x 128 x 2 B = 131,072 B. Batch 256 at 512 + 4096 tokens:
    # 256 x 4608 x 131072 = 154,618,822,656 B, over an 80 GB H100 with the 16 GB of weights.
    t = serve.serve(DEC, ["h100-sxm"], [1, 256], [512], [4096], prefill_source=PRE)
    small, big = t.rows()
    assert big["kv_cache_bytes"] == 256 * 4608 * 131072
    assert small["kv_cache_bytes"] == 4608 * 131072
    # weights: embed + lm_head 2 x 128256 x 4096, per layer q,o 4096^2, k,v 4096 x 1024, MLP
    # 3 x 4096 x 14336, 2 norms of 4096; a final norm; the rotary cos and sin rows [1, 128] of
    # the new token's position (they do not change with batch or context); all bf16
    per_layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    assert small["weights_bytes"] == 2 * (2 * 128256 * 4096 + 32 * per_layer + 4096 + 2 * 128)
    assert small["fits"] and not big["fits"]
    assert math.isnan(big["ttft_s"]) and math.isnan(big["tokens_per_s"])
    assert big["why"].startswith("needs ") and "of 85 GB: KV cache 155 GB" in big["why"]


def test_best_batch_under_a_tpot_limit():
    t = serve.serve(DEC, ["h200"], [1, 8, 32, 64], [512], [16], prefill_source=PRE)
    tpot = {r["batch"]: r["tpot_s"] for r in t.rows()}
    limit = (tpot[8] + tpot[32]) / 2           # 8 meets it, 32 does not
    best = serve.best_under(t, max_tpot_s=limit).rows()
    assert [r["batch"] for r in best] == [8]


def test_sweep_over_a_grid_equals_one_prediction_per_point():
    # the grid evaluation runs the one cost model on arrays: every point is the scalar answer
    b = np.array([1, 3, 17, 64, 100, 256])
    c = np.array([100, 1024, 5000])
    part = grid.grid({"batch": b, "context": c})
    hw = api.load_hardware("h200")
    for sched, launch in (("unfused", "eager"), ("fused", "graph")):
        answers = grid.evaluate(part, lambda p: api.predict_graph(
            api.load_workload(DEC, {"batch": p["batch"], "context": p["context"]}), hw, sched,
            launch))
        got = grid.gather(answers, part.index.size, lambda p: p.totals.time_s)
        for i, (bi, ci) in enumerate((x, y) for x in b for y in c):
            want = api.predict(DEC, hw, sched, launch, {"batch": int(bi), "context": int(ci)})
            assert got[i] == pytest.approx(want.totals.time_s, rel=1e-12), (sched, bi, ci)


def test_parse_sizes():
    assert serve.parse_sizes("--batch", "1..16") == [1, 2, 4, 8, 16]
    assert serve.parse_sizes("--batch", "3,1k..4k") == [3, 1024, 2048, 4096]
    assert serve.parse_sizes("--batch", "1..6") == [1, 2, 4, 6]
    for bad in ("0", "8..4", "x", ""):
        with pytest.raises(Exception):
            serve.parse_sizes("--batch", bad)


@pytest.mark.parametrize("args, message", [
    (["--batch", "0"], "--batch '0': sizes must be positive"),
    (["-H", "h999"], "unknown hardware 'h999'"),
    (["--max-tpot", "fast"], "--max-tpot 'fast': expected a time with a unit"),
    (["--max-tpot", "50"], "--max-tpot '50': expected a time with a unit"),     # not 50 s
    (["--max-ttft", "xs"], "--max-ttft 'xs': expected a time"),
])
def test_bad_arguments_are_one_line_and_exit_2(args, message):
    r = CliRunner().invoke(app, ["serve", DEC, "--prefill", PRE, *args])
    assert r.exit_code == 2
    assert message in r.output and "Traceback" not in r.output


def test_a_configuration_that_does_not_fit_is_an_answer():
    r = CliRunner().invoke(app, ["serve", DEC, "--prefill", PRE, "-H", "h100-sxm", "--batch",
                                 "1,256", "--input", "512", "--output", "4096"])
    assert r.exit_code == 0, r.output
    assert "does not fit: needs" in r.output and "KV cache 155 GB" in r.output


def test_chunked_prefill_is_the_first_chunk_then_extend_steps():
    # 1000 prompt tokens in chunks of 384: a prefill of 384, an extend of 384 new tokens against
    # a cache of 768, and one of the last 232 against the whole 1000
    t = serve.serve(DEC, ["h200"], [4], [1000], [2], "fused", "graph", chunk=384).rows()[0]
    step = lambda sets: api.predict(DEC, "h200", "fused", "graph", {"batch": 4, **sets}).totals.time_s
    want = (step({"seq": 384, "context": 384}) + step({"seq": 384, "context": 768})
            + step({"seq": 232, "context": 1000}))
    assert t["ttft_s"] == pytest.approx(want, rel=1e-12)
    # without --chunk the same file is the prefill, all 1000 tokens at once
    whole = serve.serve(DEC, ["h200"], [4], [1000], [2], "fused", "graph").rows()[0]
    assert whole["ttft_s"] == pytest.approx(step({"seq": 1000, "context": 1000}), rel=1e-12)



def test_every_input_and_output_at_once_equals_each_pair_alone():
    # one serve prices the decode step once over every context its pairs reach, each kind of
    # prefill once over its lengths and the memory once over batch x length: a pair's rows and
    # largest batch are those of a serve of that pair alone. Chunks of 384: 300 tokens are one
    # prefill, 1000 end in a chunk of 232, 1200 in one of 48; one output token has no decode.
    inputs, outputs, batches = [300, 1000, 1200], [1, 3], [1, 5]
    t = serve.serve(DEC, ["h200"], batches, inputs, outputs, "fused", ["graph", "eager"],
                    chunk=384)
    rows = iter(t.rows())
    for mode in ("graph", "eager"):
        for n_in in inputs:
            for n_out in outputs:
                alone = serve.serve(DEC, ["h200"], batches, [n_in], [n_out], "fused", mode,
                                    chunk=384)
                for want in alone.rows():
                    got = next(rows)
                    for k, v in want.items():
                        same = (got[k] == v or isinstance(v, float) and math.isnan(v)
                                and math.isnan(got[k]))
                        assert same or got[k] == pytest.approx(v, rel=1e-12), (mode, n_in, k)
                if mode == "graph":
                    assert alone.meta["largest_batch"][0] in t.meta["largest_batch"]
    assert len(t.meta["largest_batch"]) == 6 and t.meta["launch"] == "graph,eager"

def test_an_fp8_kv_cache_halves_its_bytes():
    # --set kv_dtype=fp8: 1 byte per element instead of 2 (32 x 2 x 8 x 128 B = 65,536 per token)
    rows = {v: serve.serve(DEC, ["h200"], [16], [1024], [64], sets={"kv_dtype": v}).rows()[0]
            for v in ("bf16", "fp8_e4m3")}
    assert rows["bf16"]["kv_cache_bytes"] == 16 * 1088 * 131072
    assert rows["fp8_e4m3"]["kv_cache_bytes"] == 16 * 1088 * 65536
    assert rows["fp8_e4m3"]["tpot_s"] < rows["bf16"]["tpot_s"]


def test_largest_batch_that_fits_by_hand():
    # Llama-3-8B on an 80 GB H100 at 4096 + 4096 tokens (fused, growing cache): weights
    # 16,060,523,008 B, workspace 536,870,912 B, KV 8192 x 131,072 = 1,073,741,824 B per sequence,
    # plus the activations of the largest step; KV alone would allow
    # (80e9 - 16,597,393,920) / 1,073,741,824 = 59.05 sequences
    t = serve.serve(DEC, ["h100-sxm"], [1], [4096], [4096])
    n = t.meta["largest_batch"][0]["batch"]
    assert 1 <= n <= 59
    fits = serve.serve(DEC, ["h100-sxm"], [n, n + 1], [4096], [4096]).rows()
    assert fits[0]["fits"] and not fits[1]["fits"]


def test_a_fit_is_checked_against_what_one_process_can_allocate():
    # the H200's "141 GB" is nearer GiB: torch reports 150.11e9 B (spec memory.usable_gb).
    # Llama-3-8B at 16 + 8176 tokens: 8192 x 131,072 = 1,073,741,824 B of KV per sequence;
    # batch 124: 16,060,523,008 + 536,870,912 + 124 x 1,073,741,824 = 149,741,380,096 B
    # + 130,047,488 B of activations = 149,871,427,584 B: over 141e9, under 150.11e9;
    # batch 125 needs 1,073,741,824 + 1,048,704 more = 150,946,218,112 B
    assert api.load_hardware("h200").allocatable_bytes == 150.11e9
    assert api.load_hardware("h200").hbm_bytes == 141e9
    assert api.load_hardware("h100-sxm").allocatable_bytes == 85.02e9   # torch, 2026-12-07
    assert api.load_hardware("a100-sxm-80gb").allocatable_bytes == 80e9   # none measured
    t = serve.serve(DEC, ["h200"], [124, 125], [16], [8176], prefill_source=PRE)
    rows = t.rows()
    assert [r["memory_bytes"] for r in rows] == [149_871_427_584, 150_946_218_112]
    assert [r["fits"] for r in rows] == [True, False]
    assert rows[0]["hbm_bytes"] == 150.11e9
    assert t.meta["largest_batch"][0]["batch"] == 124


def test_a_sweep_answers_the_largest_batch_per_schedule_and_variant():
    # what fits depends on what the schedule keeps on chip and on the KV dtype: one answer
    # each, equal to serve's, named in the printed line (not the first variant's for all)
    t = serve.sweep(DEC, ["h200"], [1], [2048], [256], ["unfused", "fused"], ["eager", "graph"],
                    prefill_source=PRE, variants=[{"kv_dtype": "bf16"}, {"kv_dtype": "fp8"}])
    got = {(f["schedule"], f["variant"]): f["batch"] for f in t.meta["largest_batch"]}
    assert len(t.meta["largest_batch"]) == 4
    for (s, v), n in got.items():
        one = serve.serve(DEC, ["h200"], [1], [2048], [256], s, prefill_source=PRE,
                          sets={"kv_dtype": v.split("=")[1]})
        assert one.meta["largest_batch"][0]["batch"] == n
    assert got[("unfused", "kv_dtype=bf16")] < got[("fused", "kv_dtype=bf16")] \
        < got[("fused", "kv_dtype=fp8")]
    from rooflab.report.serving import render
    assert "tokens (fused, kv_dtype=fp8): " in render(t)
    # the fit's assumption is printed with it
    assert "prefilling every prompt of the batch at once" in render(t)


def test_sweep_variants_and_outputs(tmp_path):
    r = CliRunner().invoke(app, ["sweep", DEC, "-H", "h200,b200", "--batch", "1..4", "--input",
                                 "512", "--output", "8", "--set", "kv_dtype=bf16,fp8",
                                 "--csv", str(tmp_path / "s.csv"), "--json",
                                 str(tmp_path / "s.json"), "--html", str(tmp_path / "s.html")])
    assert r.exit_code == 0, r.output
    import csv
    import json
    rows = list(csv.DictReader(open(tmp_path / "s.csv")))
    # 2 GPUs x 2 variants x batch 1, 2, 4
    assert len(rows) == 12
    assert {x["variant"] for x in rows} == {"kv_dtype=bf16",
                                           "kv_dtype=fp8_e4m3"}
    doc = json.loads((tmp_path / "s.json").read_text())
    assert doc["schema"] == "rooflab.serve/1" and len(doc["rows"]) == 12
    assert list(doc["rows"][0]) == list(serve.COLUMNS)
    assert "TPOT against batch" in (tmp_path / "s.html").read_text()
    # the outputs are never written over without --force
    again = CliRunner().invoke(app, ["sweep", DEC, "--batch", "1", "--output", "2", "--csv",
                                     str(tmp_path / "s.csv")])
    assert again.exit_code == 2 and "exists" in again.output


def test_an_opaque_ops_sizes_follow_the_grid():
    # a traced model's opaque op (DeepSeek-V3's scatter_) declares bytes that grow with the
    # batch: priced over a sweep's grid, not forced to one integer. The sampler of
    # workloads/opaque_library_call.yaml reads 22 B per logit + 8 per row: 22 x 128,256 + 8 =
    # 2,821,640 B at B=1, 22 x 64 x 128,256 + 512 = 180,584,960 B at B=64
    hw = api.load_hardware("h200")
    part = grid.grid({"B": np.array([1, 64])})
    answers = grid.evaluate(part, lambda p: api.predict_graph(
        api.load_workload("workloads/opaque_library_call.yaml", {"B": p["B"]}), hw,
        "unfused", "graph"))
    read = grid.gather(answers, part.index.size, lambda pred: next(
        k.hbm_read_bytes for k in pred.kernels if k.name == "top_p_sample"))
    assert list(read) == [2_821_640, 180_584_960]


def test_two_specs_of_one_gpu_are_told_apart_by_their_files():
    # the datasheet H200 and the calibrated one are both named h200: the table names each by
    # its file (a bundled one relative to the bundled specs), the calibrated one pricing the
    # same step from its measured curves
    t = serve.serve(DEC, ["h200", "measured/h200.yaml"], [1], [512], [4], prefill_source=PRE)
    gpus = [r["gpu"] for r in t.rows()]
    assert gpus == ["h200", "measured/h200"]
    assert [f["gpu"] for f in t.meta["largest_batch"]] == gpus
    one = serve.serve(DEC, ["h200"], [1], [512], [4], prefill_source=PRE)
    assert one.rows()[0]["gpu"] == "h200"
    assert t.rows()[0]["tpot_s"] == one.rows()[0]["tpot_s"] != t.rows()[1]["tpot_s"]

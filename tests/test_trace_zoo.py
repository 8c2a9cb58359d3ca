"""Every bundled model traces offline (CPU, meta tensors, no hub) for prefill and decode, and its
trace predicts on the H100, H200 and B200; each trace's ATen ops are all mapped (the notes list
what is not, and only known gaps may be there)."""

import pytest

pytest.importorskip("transformers")

from rooflab import api  # noqa: E402
from rooflab.trace import trace_hf, zoo  # noqa: E402

GPUS = [api.load_hardware(h) for h in ("h100-sxm", "h200", "b200")]
# ATen ops a zoo model dispatches that rooflab prices as opaque, with why
KNOWN_OPAQUE = {"aten.scatter_.value"}      # DeepSeek-V3's router: a scalar scattered into a mask


@pytest.mark.parametrize("phase", ["decode", "prefill"])
@pytest.mark.parametrize("model", zoo.bundled_names())
def test_zoo_model_traces_and_predicts(model, phase):
    g = trace_hf(model, phase=phase, batch=2, context=256, seq=64)
    layers = zoo.resolve_config(model)[1]["num_hidden_layers"]
    blocks = {op.block for op in g.ops if op.block}
    assert len(blocks) == layers                    # every decoder layer is a block
    assert sum(op.kind in ("attention", "mla_attention") for op in g.ops) == layers
    for note in g.notes:
        assert any(k in note for k in KNOWN_OPAQUE), note
    for hw in GPUS:
        p = api.predict_graph(g, hw, "unfused", "eager")
        f = api.predict_graph(g, hw, "fused", "graph")
        assert 0 < f.totals.time_s < p.totals.time_s
        assert p.totals.tensor_flops == f.totals.tensor_flops     # fusion never changes FLOPs

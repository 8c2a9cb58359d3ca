"""Compute-communication overlap (rooflab/overlap.py): the arithmetic, and a step by hand."""

import pytest
from typer.testing import CliRunner

from rooflab import api, overlap
from rooflab.cli import app

# a row-parallel GEMM's partial sums all-reduced on 8 GPUs, beside a GEMM that does not depend
# on them (and that the all-reduce does not depend on): the second can hide the first
YAML = """
name: overlap_toy
params: {T: 4096, D: 4096}
tensors:
  x: {shape: [T, D], dtype: bf16}
  w: {shape: [D, D], dtype: bf16}
  y: {shape: [T, D], dtype: bf16}
  v: {shape: [D, D], dtype: bf16}
ops:
  - {name: layers.0.a.mm, kind: matmul, inputs: [x, w], outputs: [p]}
  - {name: layers.0.a.all_reduce, kind: all_reduce, world_size: 8, inputs: [p], outputs: [s]}
  - {name: layers.0.b.mm, kind: matmul, inputs: [y, v], outputs: [q]}
  - {name: layers.0.c.add, kind: add, inputs: [s, q], outputs: [out]}
outputs: [out]
"""


def test_exposed_arithmetic():
    assert overlap.exposed(10.0, 4.0, 1.0) == 6.0     # link - hideable
    assert overlap.exposed(10.0, 40.0, 1.0) == 1.0    # one step latency stays exposed
    assert overlap.exposed(0.5, 40.0, 1.0) == 0.5     # never more than the link time
    assert overlap.group("model.layers.12.mlp.all_reduce") == "layers.12"
    assert overlap.group("lm_head.all_gather") == "rest"


def test_a_step_by_hand(tmp_path):
    f = tmp_path / "w.yaml"
    f.write_text(YAML)
    p = api.predict(str(f), "h100-sxm", "unfused", "graph")
    ov = overlap.overlap(p)
    (g,) = ov.groups
    coll = next(k for k in p.kernels if k.link_s)
    free = next(k for k in p.kernels if k.name == "layers.0.b.mm")
    assert g.collectives == 1 and g.link_s == coll.link_s
    # only the independent GEMM hides it: neither the GEMM it reduces nor the add after it
    assert g.hideable_s == pytest.approx(max(free.compute_s, free.memory_s))
    assert g.latency_floor_s == pytest.approx(overlap.step_latency_s(p, p.kernels.index(coll)))
    assert g.exposed_s == pytest.approx(overlap.exposed(g.link_s, g.hideable_s,
                                                        g.latency_floor_s))
    saved = min(g.hidden_s, coll.link_s - max(coll.compute_s, coll.memory_s))
    assert ov.time_s == pytest.approx(p.totals.time_s - saved)
    assert 0 < ov.hidden_s <= ov.link_s


def test_cli_states_it_and_refuses_json(tmp_path):
    f = tmp_path / "w.yaml"
    f.write_text(YAML)
    r = CliRunner().invoke(app, ["predict", str(f), "--overlap", "-l", "graph"])
    assert r.exit_code == 0 and "overlap: on, " in r.output and "link time hidden" in r.output
    r = CliRunner().invoke(app, ["predict", str(f), "--overlap", "--json"])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1
    assert "--overlap with --json" in r.output

"""Long chains under the fused policy: the per-group bookkeeping that makes fusing them linear
keeps the same kernels, refusals and messages (counts worked out by hand below)."""

from rooflab import api

ROWS, COLS = 64, 1024
N = ROWS * COLS                         # elements of one [64, 1024] activation


def test_a_5000_op_pointwise_chain_is_one_kernel(write_yaml, h200):
    path = write_yaml(f"""
        name: chain
        params: {{n: 4999}}
        tensors:
          x0: {{shape: [{ROWS}, {COLS}], dtype: bf16}}
        ops:
          - {{name: first, kind: scale, factor: 0.5, inputs: [x0], outputs: [x]}}
          - repeat: n
            name: step
            carry: {{x: y}}
            ops:
              - {{name: s, kind: scale, factor: 0.5, inputs: [x], outputs: [y]}}
        """)
    p = api.predict(path, h200, "fused")
    assert len(p.kernels) == 1 and len(p.kernels[0].ops) == 5000
    k = p.kernels[0]
    assert k.fusion == "pointwise"
    assert (k.hbm_read_bytes, k.hbm_write_bytes) == (2 * N, 2 * N)    # x0 in, y out, bf16
    assert p.schedule.refusals == ()


def test_reduction_chain_makes_one_kernel_per_reduction_and_says_why(write_yaml, h200):
    # Each step: a = scale(x); m = sum(a) per row; y = sub(a, m). Step 0's group takes scale,
    # sum (prologue) and sub (epilogue); step k's scale joins step k-1's group, its sum is
    # refused ("one reduction per kernel") and starts a kernel, its sub is refused by the
    # earlier group (it would make a cycle: the new kernel reads a from it) and joins the
    # new one. 1000 steps -> 1000 kernels (5 ops with the start, 3, ..., 3, 2) and 2 x 999
    # refusals; the tail's [2, 64, 1024] output fails the same-space check against the last
    # kernel's 65,536 elements and is kernel 1001.
    path = write_yaml(f"""
        name: reduction_chain
        params: {{n: 1000}}
        tensors:
          x0: {{shape: [{ROWS}, {COLS}], dtype: bf16}}
          z: {{shape: [2, {ROWS}, {COLS}], dtype: bf16}}
        ops:
          - {{name: start, kind: scale, factor: 1.0, inputs: [x0], outputs: [x]}}
          - repeat: n
            name: step
            carry: {{x: y}}
            ops:
              - {{name: s, kind: scale, factor: 0.5, inputs: [x], outputs: [a]}}
              - {{name: r, kind: sum, axis: -1, keepdim: true, inputs: [a], outputs: [m]}}
              - {{name: d, kind: sub, inputs: [a, m], outputs: [y]}}
          - {{name: tail, kind: add, inputs: [x, z], outputs: [out]}}
        """)
    p = api.predict(path, h200, "fused")
    sizes = [len(k.ops) for k in p.kernels]
    assert len(sizes) == 1001
    assert sizes == [5] + [3] * 998 + [2, 1]
    assert p.kernels[0].ops == ("start", "step[0].s", "step[0].r", "step[0].d", "step[1].s")
    assert p.kernels[1].ops == ("step[1].r", "step[1].d", "step[2].s")
    reasons = [r.reason for r in p.schedule.refusals]
    assert reasons.count("one reduction per kernel") == 999
    assert reasons.count("joining would make a cycle between kernels") == 999
    assert reasons[-1] == f"tail iterates over {2 * N} elements, the kernel over {N}"
    assert len(reasons) == 2 * 999 + 1


def test_a_chain_reading_a_long_unfusable_chain_joins_its_own_kernel(write_yaml, h200):
    # Chain b: 1000 data-dependent relus, none can fuse (1000 kernels, 1000 refusals, each
    # naming the relu). Chain a: each add reads the previous a and this step's relu and joins
    # chain a's kernel (the relu's kernel does not depend on it), which therefore runs last.
    path = write_yaml(f"""
        name: two_chains
        params: {{n: 1000}}
        tensors:
          a0: {{shape: [{ROWS}, {COLS}], dtype: bf16}}
          b0: {{shape: [{ROWS}, {COLS}], dtype: bf16}}
        ops:
          - {{name: sa, kind: scale, factor: 1.0, inputs: [a0], outputs: [a]}}
          - {{name: sb, kind: scale, factor: 1.0, inputs: [b0], outputs: [b]}}
          - repeat: n
            name: step
            carry: {{a: a2, b: b2}}
            ops:
              - {{name: r, kind: relu, data_dependent: true, inputs: [b], outputs: [b2]}}
              - {{name: s, kind: add, inputs: [a, b2], outputs: [a2]}}
        """)
    p = api.predict(path, h200, "fused")
    assert len(p.kernels) == 1002
    assert [k.ops for k in p.kernels[:2]] == [("sb",), ("step[0].r",)]
    assert p.kernels[-1].ops == ("sa",) + tuple(f"step[{i}].s" for i in range(1000))
    assert [r.reason for r in p.schedule.refusals] == [
        f"step[{i}].r is data-dependent control flow" for i in range(1000)]

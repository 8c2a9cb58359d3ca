"""Plain, right-aligned terminal tables of predictions (pipe-friendly; --json for machines)."""

from __future__ import annotations

from dataclasses import dataclass, field

from rooflab.cost import KernelCost, Prediction
from rooflab.graph import folded_name
from rooflab.terminal import printable
from rooflab.units import format_bytes, format_flops, format_intensity, format_time



@dataclass
class Row:
    """A kernel, or the same kernel of every iteration of a repeated block."""
    name: str
    count: int
    first: KernelCost
    flops: int = 0
    read: int = 0
    written: int = 0
    compute_s: float = 0.0
    memory_s: float = 0.0
    launch_s: float = 0.0
    link_s: float = 0.0
    time_s: float = 0.0
    time_s_by_bound: dict[str, float] = field(default_factory=dict)

    @property
    def bound(self) -> str:
        """What bounds the row: the bound of most of its kernels' time (the iterations of a
        repeated block can differ: the first layer's GEMM waits on its launch, the rest not)."""
        return max(self.time_s_by_bound, key=self.time_s_by_bound.get)


def collapse(kernels, repeat: bool = True) -> list[Row]:
    """Rows in order; with `repeat`, kernels that differ only in block index share one row."""
    rows: dict[str, Row] = {}
    for k in kernels:
        key = folded_name(k.name) if repeat else k.name
        r = rows.get(key)
        if r is None:
            r = rows[key] = Row(key, 0, k)
        r.count += 1
        r.flops += k.flops
        r.read += k.hbm_read_bytes
        r.written += k.hbm_write_bytes
        r.compute_s += k.compute_s
        r.memory_s += k.memory_s
        r.launch_s += k.launch_s
        r.link_s += k.link_s
        r.time_s += k.time_s
        r.time_s_by_bound[k.bound] = r.time_s_by_bound.get(k.bound, 0.0) + k.time_s
    return list(rows.values())


def unit_label(k: KernelCost) -> str:
    parts = [f"tc {'/'.join(k.tensor_dtypes)}"] if k.tensor_flops else []
    if k.vector_flops:
        parts.append("vec fp32")
    if k.link_bytes:
        parts.append("link")
    return " + ".join(parts) or "-"


def _short_ops(k: KernelCost) -> str:
    kinds = list(k.kinds)
    return "→".join(kinds) if len(kinds) <= 6 else "→".join(kinds[:5]) + f"…(+{len(kinds) - 5})"


def render(pred: Prediction, all_kernels: bool = False, max_name: int = 34) -> str:
    """The `rooflab predict` table: one row per kernel (repeated blocks folded), then totals."""
    hw = pred.hardware
    head = (f"{pred.workload} on {hw.display_name} ({hw.name}) | schedule {pred.policy}, "
            f"launch {pred.launch}")
    if pred.params:
        head += " | " + " ".join(f"{k}={v}" for k, v in pred.params.items())
    t = pred.totals
    # a step with collectives shows their link time beside compute and memory
    links = bool(t.link_s)
    cols = ["kernel", "ops", "FLOPs", "unit", "HBM read", "HBM write", "FLOP/B",
            "compute", "memory", *(["link"] if links else []), "launch", "bound", "time"]
    body = []
    for r in collapse(pred.kernels, repeat=not all_kernels):
        k = r.first
        name = r.name if len(r.name) <= max_name else "…" + r.name[-(max_name - 1):]
        if r.count > 1:
            name += f" ×{r.count}"
        inten = r.flops / (r.read + r.written) if r.read + r.written else float("inf")
        body.append([name, _short_ops(k), format_flops(r.flops), unit_label(k),
                     format_bytes(r.read), format_bytes(r.written), format_intensity(inten),
                     format_time(r.compute_s), format_time(r.memory_s),
                     *([format_time(r.link_s)] if links else []), format_time(r.launch_s),
                     r.bound, format_time(r.time_s)])
    inten = t.flops / t.hbm_bytes if t.hbm_bytes else float("inf")
    total = [f"total ({t.kernels} kernel{'' if t.kernels == 1 else 's'})", "", format_flops(t.flops), "",
             format_bytes(t.hbm_read_bytes), format_bytes(t.hbm_write_bytes),
             format_intensity(inten), format_time(t.compute_s), format_time(t.memory_s),
             *([format_time(t.link_s)] if links else []), format_time(t.launch_s), t.bound,
             format_time(t.time_s)]
    lines = [head, ""] + _grid(cols, body, total, left={0, 1, 3, len(cols) - 2})
    if t.link_bytes:
        link_kernels = sum(k.time_s for k in pred.kernels if k.link_s)
        lines.append(f"interconnect: {format_bytes(t.link_bytes)} sent per GPU, "
                     f"{format_time(t.link_s)} on the links; the collectives' kernels take "
                     f"{link_kernels / t.time_s:.0%} of the step")
    for n in pred.notes:
        lines.append(f"note: {n}")
    return "\n".join(printable(line) for line in lines)    # names come from the user's files


def _grid(cols: list[str], body: list[list[str]], total: list[str] | None = None,
          left: set[int] = frozenset({0})) -> list[str]:
    body = [[printable(c) for c in r] for r in body]
    rows = [cols] + body + ([total] if total else [])
    widths = [max(len(r[i]) for r in rows) for i in range(len(cols))]

    def fmt(r):
        return "  ".join(c.ljust(w) if i in left else c.rjust(w)
                         for i, (c, w) in enumerate(zip(r, widths))).rstrip()

    rule = "  ".join("-" * w for w in widths).rstrip()    # an all-empty last column: no tail
    out = [fmt(cols), rule] + [fmt(r) for r in body]
    if total:
        out += [rule, fmt(total)]
    return out


def grid(cols: list[str], body: list[list[str]], left: set[int] = frozenset({0})) -> str:
    """A generic aligned table (first column left-aligned unless told otherwise); control
    characters in the cells are shown as escapes."""
    return "\n".join(_grid(cols, body, left=left))

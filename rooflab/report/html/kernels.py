"""Kernels as the reports show them: repeated-block kernels folded into groups, labels, and
the text helpers that put names into hover text and HTML (`esc` is the one escape for names)."""

from __future__ import annotations

import html as _html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rooflab.cost import KernelCost, Prediction
from rooflab.graph import folded_name

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def esc(name: object) -> str:
    """A name (hardware, policy, workload, kernel, op, file field) as safe HTML and plotly
    text: `<`, `>`, `&` and quotes become entities, control characters become `\\xNN`."""
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(name))
    return _html.escape(text, quote=True)


@dataclass
class Group:
    """The kernels of one schedule that differ only in block index, summed."""
    name: str
    kernels: list[KernelCost] = field(default_factory=list)

    @property
    def first(self) -> KernelCost:
        return self.kernels[0]

    @property
    def count(self) -> int:
        return len(self.kernels)

    @property
    def label(self) -> str:
        return self.name + (f" ×{self.count}" if self.count > 1 else "")

    def total(self, attr: str) -> float:
        return sum(getattr(k, attr) for k in self.kernels)

    @property
    def flops(self) -> int:
        return sum(k.flops for k in self.kernels)

    @property
    def hbm_bytes(self) -> int:
        return sum(k.hbm_bytes for k in self.kernels)

    @property
    def time_s(self) -> float:
        return sum(k.time_s for k in self.kernels)

    def busy_by_bound(self) -> dict[str, float]:
        """Busy time (max of compute, memory, link), filed under whichever is largest."""
        out = {"compute": 0.0, "memory": 0.0, "link": 0.0}
        for k in self.kernels:
            out[busy_bound(k)] += max(k.compute_s, k.memory_s, k.link_s)
        return out

    @property
    def bound(self) -> str:
        by: dict[str, float] = {}
        for k in self.kernels:
            by[k.bound] = by.get(k.bound, 0.0) + k.time_s
        return max(by, key=by.get)


def busy_bound(k: KernelCost) -> str:
    return k.busy_bound


def fold(kernels: Sequence[KernelCost]) -> list[Group]:
    """Groups in execution order; kernels whose names differ only in `[i]` share one."""
    groups: dict[str, Group] = {}
    for k in kernels:
        key = folded_name(k.name)
        groups.setdefault(key, Group(key)).kernels.append(k)
    return list(groups.values())


def pred_label(p: Prediction, preds: Sequence[Prediction]) -> str:
    """A prediction's name among its neighbours: the schedule, plus the launch mode if they vary."""
    launches = {q.launch for q in preds}
    return esc(p.policy) + (f" · {esc(p.launch)}" if len(launches) > 1 else "")


def by_gpu(preds: Sequence[Prediction]) -> dict[str, list[Prediction]]:
    out: dict[str, list[Prediction]] = {}
    for p in preds:
        out.setdefault(p.hardware.name, []).append(p)
    return out


def slug(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", s.lower()).strip("-") or "x"


def wrap_hover(items: Sequence[str], sep: str, width: int = 70, max_items: int = 24) -> str:
    """Join items into <br>-separated lines of at most `width` characters (hover text)."""
    items = list(items)
    extra = len(items) - max_items
    if extra > 0:
        items = items[:max_items] + [f"… +{extra} more"]
    lines, cur = [], ""
    for it in items:
        piece = it if not cur else sep + it
        if cur and len(cur) + len(piece) > width:
            lines.append(cur + sep.rstrip())
            cur = it
        else:
            cur += piece
    lines.append(cur)
    return "<br>   ".join(esc(line) for line in lines)


def shorten(name: str, n: int = 44) -> str:
    return name if len(name) <= n else name[: n - 12] + "…" + name[-11:]


def ops_text(k: KernelCost) -> str:
    return wrap_hover(list(k.kinds), " → ")

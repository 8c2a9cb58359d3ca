"""Interactive HTML reports: plotly figures joined into one self-contained file (docs/reports.md).

The figure builders are pure: they read `Prediction`, `KernelCost`, `Comparison` and
`ValidationFile` objects and return `go.Figure`s or HTML text; nothing here prices anything.
`write_predictions` and `write_validation` join them into one file with plotly.js embedded once
(no CDN: it opens offline) and never overwrite an existing file unless `force`.

One concern per module: `page` (shell, offline plotly.js, writing), `kernels` (folding, labels,
escaping names), `style` (colours, layout, axes), `roofline`, `breakdown` (time per kernel and
totals), `summary` (speedups and fusion table), `validation` (the validation report), `sweep` (the
serving sweep report of a `ServeTable`).
Repeated-block kernels (names that differ only in `[i]`) fold into one point or bar with a
count, as the terminal table folds them, so an 80-layer model stays small and readable.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from rooflab.compare import Comparison
from rooflab.cost import Prediction
from rooflab.errors import RooflabError
from rooflab.report.html.breakdown import MAX_BREAKDOWN_ROWS, breakdown_figure, totals_figure
from rooflab.report.html.kernels import Group, by_gpu, esc, fold, slug
from rooflab.report.html.page import check_target, plotlyjs_bundle, render_page, write_page
from rooflab.report.html.roofline import TOP_ARROWS, Roof, roofline_figure, roofs
from rooflab.report.html.style import time_unit
from rooflab.report.html.summary import summary_html
from rooflab.report.html.sweep import render_sweep, sweep_figures, write_sweep
from rooflab.report.html.validation import (validation_figures, validation_html,
                                            validation_summary_html, write_validation)

__all__ = ["MAX_BREAKDOWN_ROWS", "TOP_ARROWS", "Group", "Roof", "breakdown_figure",
           "check_target", "esc", "fold", "plotlyjs_bundle", "prediction_parts",
           "predictions_html", "render_page", "render_sweep", "roofline_figure", "roofs",
           "summary_html", "sweep_figures", "time_unit", "totals_figure", "validation_figures",
           "validation_html", "validation_summary_html", "write_predictions", "write_sweep",
           "write_validation"]


def prediction_parts(preds: Sequence[Prediction], comparisons: Sequence[Comparison] = ()
                     ) -> list[str | tuple[str, go.Figure]]:
    """The sections of a predictions report, in order."""
    if not preds:
        raise RooflabError("nothing to report: no predictions")
    gpus = by_gpu(preds)
    parts: list[str | tuple[str, go.Figure]] = [summary_html(preds, comparisons)]
    parts.append("<h2>Roofline</h2><p class=dim>Each point is a kernel (the kernels of repeated "
                 "blocks fold into one point with a count). x: FLOPs per HBM byte; y: FLOPs ÷ "
                 "predicted time, launch included."
                 + (" Arrows run from the kernels a fusion replaces to the fused kernel."
                    if comparisons else "") + "</p>")
    for name, ps in gpus.items():
        parts.append((f"rooflab-roofline-{slug(name)}", roofline_figure(ps, comparisons)))
    parts.append("<h2>Time breakdown</h2><p class=dim>Busy time is max(compute, memory, link) "
                 "and is coloured by the largest; launch is the per-kernel launch cost and any "
                 "wait for the CPU.</p>")
    if len(preds) > 1:
        parts.append(("rooflab-totals", totals_figure(preds)))
    for name, ps in gpus.items():
        parts.append((f"rooflab-breakdown-{slug(name)}", breakdown_figure(ps)))
    return parts


def predictions_html(preds: Sequence[Prediction], comparisons: Sequence[Comparison] = ()) -> str:
    p0 = preds[0] if preds else None
    title = f"rooflab · {p0.workload}" if p0 else "rooflab"
    return render_page(title, prediction_parts(preds, comparisons))


def write_predictions(path, preds, comparisons, force: bool = False) -> None:
    """Write the predictions report (summary, roofline per GPU, time breakdowns) to `path`."""
    check_target(path, force)
    write_page(path, predictions_html(list(preds), list(comparisons)), force)

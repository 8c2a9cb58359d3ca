"""Interactive HTML reports (plotly). Placeholder module filled in by the reports issue."""

from __future__ import annotations

from rooflab.errors import RooflabError


def write_predictions(path, preds, comparisons, force: bool = False) -> None:
    raise RooflabError("HTML reports are not built yet (issue: interactive plotly reports)")

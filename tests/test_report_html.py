"""HTML reports: the figure builders, the no-overwrite rule, the size limit, and the reports as a
user sees them, rendered in a real headless Chromium (Debian's; skipped where it is missing).

Screenshots go under pytest's tmp dir and, when ROOFLAB_SCREENSHOT_DIR is set, are copied there.
"""

from __future__ import annotations

import math
import os
import random
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflab import api
from rooflab.cli import app
from rooflab.compare import compare
from rooflab.errors import RooflabError
from rooflab.report import html
from rooflab.validate.records import (CaseResult, KernelResult, Provenance, ScheduleResult,
                                      ValidationFile)
from test_report_sweep import toy_table

ROOT = Path(__file__).resolve().parent.parent
W = ROOT / "workloads"
GPUS3 = "h100-sxm,h200,b200"
runner = CliRunner()


def _predict(workload: str, gpus: str, schedules=("unfused", "fused"), launch="eager", sets=None):
    graph = api.load_workload(W / workload, sets)
    preds, cmps = [], []
    for name in gpus.split(","):
        hw = api.load_hardware(name)
        ps = [api.predict_graph(graph, hw, s, launch) for s in schedules]
        preds += ps
        cmps += [compare(ps[0], p) for p in ps[1:]]
    return preds, cmps


@pytest.fixture(scope="module")
def llama8b():
    return _predict("llama3_8b_decode.yaml", GPUS3)


def synthetic_validation(n_cases: int = 6) -> ValidationFile:
    """A small, deterministic validation file: every op class, errors from -40% to +60%."""
    rng = random.Random(7)
    classes = ["pointwise", "reduction", "gemm", "attention", "quantized", "gather"]
    cases = []
    for c in range(n_cases):
        kernels = {}
        for sched in ("unfused", "fused"):
            ks = []
            for i, cls in enumerate(classes):
                measured = 10 ** rng.uniform(-5.7, -2.5)
                err = rng.uniform(-0.4, 0.6) if i % 3 else rng.uniform(-0.08, 0.08)
                ks.append(KernelResult(
                    kernel=f"layer[{c}].{cls}_{sched}", ops=[f"{cls}_op", "add"],
                    op_class=cls, fusion="" if sched == "unfused" else "epilogue",
                    flops=rng.randrange(1, 10 ** 12), hbm_bytes=rng.randrange(1, 10 ** 10),
                    predicted_s=measured * (1 + err), measured_s=measured,
                    measured_p20_s=measured * 0.97, measured_p80_s=measured * 1.04,
                    bound=rng.choice(["memory", "compute", "launch"]), max_rel_error=1e-3))
            kernels[sched] = ks
        sched_res = [ScheduleResult(schedule=s, launch="graph",
                                    predicted_s=sum(k.predicted_s for k in ks),
                                    measured_s=sum(k.measured_s for k in ks))
                     for s, ks in kernels.items()]
        cases.append(CaseResult(case=f"synthetic/{c}", workload={"name": f"synthetic{c}"},
                                params={"T": 1024 * (c + 1)}, kernels=kernels,
                                schedules=sched_res))
    prov = Provenance(gpu="NVIDIA H200", sm_count=132, driver="570.00", cuda="12.8",
                      torch="2.7.0", triton="3.3.0", date="2025-01-01T00:00:00Z",
                      command="rooflab validate --gpu", git_sha="0123456789abcdef",
                      hardware_spec="h200")
    return ValidationFile(provenance=prov, cases=cases)


# ------------------------------------------------------------------------------ figure builders
def test_roofline_is_log_log_with_roofs_points_and_arrows(llama8b):
    preds, cmps = llama8b
    h200 = [p for p in preds if p.hardware.name == "h200"]
    fig = html.roofline_figure(h200, cmps)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    names = [t.name for t in fig.data]
    assert "unfused kernels" in names and "fused kernels" in names
    assert any(n.startswith("HBM ") for n in names)
    assert any(n.startswith("bf16 tensor") for n in names)
    assert any(n.startswith("fp32 vector") for n in names)
    u, f = (next(t for t in fig.data if t.name == f"{s} kernels") for s in ("unfused", "fused"))
    assert u.marker.symbol != f.marker.symbol                 # distinct markers
    # repeated layers fold: 32 layers of ~15 kernels become ~20 points
    assert 5 < len(u.x) <= 30 and len(f.x) < len(u.x)
    assert all(x > 0 and y > 0 for x, y in zip(u.x, u.y))
    assert "×32" in " ".join(u.hovertext) and "bound:" in u.hovertext[0]
    # arrows: annotations in the log coordinates of the axes
    arrows = [a for a in fig.layout.annotations if a.showarrow]
    assert 0 < len(arrows) <= 3 * html.TOP_ARROWS
    lo, hi = fig.layout.xaxis.range
    assert all(lo <= a.x <= hi and lo <= a.ax <= hi for a in arrows)
    # kernels with no FLOPs are listed, not plotted at zero
    assert any("k_cache_write" in s for s in fig.layout.meta["skipped"])


def test_roofline_roofs_follow_the_dtypes_used(h200):
    fp8 = api.predict(W / "fp8_gemm.yaml", h200, "fused")
    names = [t.name for t in html.roofline_figure([fp8]).data]
    assert any(n.startswith("fp8 tensor") for n in names)
    assert not any(n.startswith("fp4 tensor") for n in names)   # h200 lists fp4? not used anyway
    rms = api.predict(W / "rmsnorm.yaml", h200, "unfused")
    names = [t.name for t in html.roofline_figure([rms]).data]
    assert not any("tensor" in n for n in names)                 # no GEMM: vector roof only
    assert any(n.startswith("fp32 vector") for n in names)


def test_roofline_rejects_two_gpus(llama8b):
    with pytest.raises(ValueError, match="one GPU"):
        html.roofline_figure(llama8b[0])


def test_breakdown_and_totals_add_up_to_the_predicted_time(llama8b):
    preds, _ = llama8b
    h200 = [p for p in preds if p.hardware.name == "h200"]
    fig = html.breakdown_figure(h200)
    scale, _unit = html.time_unit(max(p.totals.time_s for p in h200))
    for i, p in enumerate(h200, 1):
        axis = "x" if i == 1 else f"x{i}"
        bars = [t for t in fig.data if t.type == "bar" and t.xaxis == axis]
        assert {t.name for t in bars} >= {"memory-bound", "launch overhead"}
        total = sum(sum(t.x) for t in bars) / scale
        assert math.isclose(total, sum(k.time_s for k in p.kernels), rel_tol=1e-9)
    tot = html.totals_figure(preds)
    scale, _unit = html.time_unit(max(p.totals.time_s for p in preds))
    bars = [t for t in tot.data if t.type == "bar"]
    for j, p in enumerate(preds):
        assert math.isclose(sum(t.y[j] for t in bars) / scale, p.totals.time_s, rel_tol=1e-9)


def test_breakdown_folds_many_kernels_into_at_most_30_bars(h200):
    preds, _ = _predict("llama3_8b_prefill.yaml", "h200", schedules=("unfused",))
    fig = html.breakdown_figure(preds)
    assert len(fig.data[0].y) <= html.MAX_BREAKDOWN_ROWS


def test_three_schedules_two_launch_modes(h200, tmp_path):
    graph = api.load_workload(W / "mlp_block.yaml")
    preds, cmps = [], []
    for mode in ("eager", "graph"):
        ps = [api.predict_graph(graph, h200, s, mode) for s in ("unfused", "epilogue", "fused")]
        preds += ps
        cmps += [compare(ps[0], p) for p in ps[1:]]
    fig = html.breakdown_figure(preds)
    assert len([a for a in fig.layout if a.startswith("xaxis")]) == 6   # a panel each
    assert {t.xaxis for t in fig.data} == {"x", "x2", "x3", "x4", "x5", "x6"}
    roof = html.roofline_figure(preds, cmps)
    assert {t.name for t in roof.data} >= {"unfused · eager kernels", "fused · graph kernels"}
    text = html.summary_html(preds, cmps)
    assert "Top fusion opportunities (fused vs unfused)" in text
    assert "speedup: epilogue vs unfused" in text and "speedup: fused vs unfused" in text
    html.write_predictions(tmp_path / "m.html", preds, cmps)


def test_summary_names_times_bounds_speedup_and_top_fusions(llama8b):
    preds, cmps = llama8b
    text = html.summary_html(preds, cmps)
    for c in cmps:
        assert f"{c.speedup:.2f}×" in text
    assert "Top fusion opportunities" in text and "memory" in text
    assert cmps[0].fusions[0].kernel.split("[*]")[-1] in text


def test_validation_figures_log_axes_bands_and_histogram():
    vf = synthetic_validation()
    sc, hist = html.validation_figures(vf)
    assert sc.layout.xaxis.type == "log" and sc.layout.yaxis.type == "log"
    names = [t.name for t in sc.data]
    assert {"within ±10%", "within ±25%", "predicted = measured", "whole schedule"} <= set(names)
    assert {"gemm", "pointwise", "reduction", "attention", "quantized", "gather"} <= set(names)
    assert [t.type for t in hist.data] == ["bar"] * 6           # binned in Python
    assert sum(sum(t.y) for t in hist.data) == 6 * 2 * 6          # every kernel counted once


# ------------------------------------------------------------------------------ writing
def test_page_embeds_plotly_once_and_is_offline(llama8b, tmp_path):
    preds, cmps = llama8b
    out = tmp_path / "r.html"
    html.write_predictions(out, preds, cmps)
    text = out.read_text()
    assert text.count("window.PlotlyConfig") == 1           # plotly.js embedded exactly once
    if html.plotlyjs_bundle() is not None:                  # plotly.py's plotly.js is 4.1.1
        assert text.count("plotly.js (basic - minified) v4.1.1") == 1   # the small bundle
    assert not re.search(r"<script[^>]*\bsrc=", text), "a script loaded from elsewhere"
    for div in ["rooflab-roofline-h100-sxm", "rooflab-roofline-h200", "rooflab-roofline-b200",
                "rooflab-totals", "rooflab-breakdown-h200"]:
        assert f'id="{div}"' in text


def test_writer_never_overwrites_without_force(llama8b, tmp_path):
    preds, cmps = llama8b
    out = tmp_path / "r.html"
    out.write_text("keep me")
    with pytest.raises(RooflabError, match=r"r\.html exists; pass --force to overwrite"):
        html.write_predictions(out, preds, cmps)
    with pytest.raises(RooflabError, match="exists"):
        html.write_validation(out, synthetic_validation())
    assert out.read_text() == "keep me"
    html.write_predictions(out, preds, cmps, force=True)
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("args", [
    ["report", str(W / "rmsnorm.yaml"), "-H", "h200", "-o"],
    ["predict", str(W / "rmsnorm.yaml"), "-H", "h200", "--html"],
])
def test_cli_refuses_to_overwrite(tmp_path, args):
    out = tmp_path / "old.html"
    out.write_text("precious")
    mtime = out.stat().st_mtime_ns
    r = runner.invoke(app, args + [str(out)])
    assert r.exit_code == 2, r.output
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in r.output
    option = "--output" if args[0] == "report" else "--html"
    assert err == f"error: {option} {out}: exists; pass --force to overwrite it"
    assert out.read_text() == "precious" and out.stat().st_mtime_ns == mtime
    r = runner.invoke(app, args + [str(out), "--force"])
    assert r.exit_code == 0, r.output + r.stderr
    assert out.read_text().startswith("<!DOCTYPE html>")


def test_cli_report_errors_are_one_line(tmp_path):
    for args, expected in [
        (["--launch", "warp"], "--launch warp: expected one of eager, graph, compiled"),
        (["--compare", ","], "--compare ',': expected one or more names"),
        (["-H", "h999"], "unknown hardware 'h999'"),
    ]:
        r = runner.invoke(app, ["report", str(W / "rmsnorm.yaml"), "-o",
                                str(tmp_path / "x.html"), *args])
        assert r.exit_code == 2 and expected in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    r = runner.invoke(app, ["report", str(W / "rmsnorm.yaml"), "-o",
                            str(tmp_path / "missing" / "x.html")])
    assert r.exit_code == 2 and "does not exist" in r.stderr


# ------------------------------------------------------------------------------ generated reports
@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """The reports the browser tests open, made as a user makes them (the sweep from a
    hand-made table: test_report_sweep.py)."""
    d = tmp_path_factory.mktemp("reports")
    out = {}

    def cli(*args):
        r = runner.invoke(app, [str(a) for a in args])
        assert r.exit_code == 0, r.output + (r.stderr or "")
        return r.stdout

    out["rmsnorm"] = d / "rmsnorm.html"
    cli("predict", W / "rmsnorm.yaml", "--hardware", "h200", "--html", out["rmsnorm"])
    out["llama8b"] = d / "llama-decode.html"
    stdout = cli("report", W / "llama3_8b_decode.yaml", "--hardware", GPUS3, "--compare",
                 "unfused,fused", "-o", out["llama8b"])
    assert stdout.startswith(f"wrote {out['llama8b']} (") and stdout.strip().endswith("MB)")
    out["llama70b"] = d / "llama70b-decode.html"
    cli("report", W / "llama3_70b_decode.yaml", "--hardware", GPUS3, "--compare",
        "unfused,fused", "-o", out["llama70b"])
    out["validation"] = d / "validation.html"
    html.write_validation(out["validation"], synthetic_validation())
    out["sweep"] = d / "sweep.html"
    html.write_sweep(out["sweep"], toy_table())
    return out


def test_llama70b_report_is_under_10_mb(reports):
    graph = api.load_workload(W / "llama3_70b_decode.yaml")
    assert len(graph.ops) > 1500
    size = reports["llama70b"].stat().st_size
    assert size < 10e6, f"{size / 1e6:.1f} MB"


# ------------------------------------------------------------------------------ in a browser
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
ALL_RENDERED = """() => {
  const plots = [...document.querySelectorAll('.js-plotly-plot')];
  return plots.length > 0 && plots.every(d => d.querySelector('svg.main-svg') && d._fullLayout)
         && performance.now();
}"""


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM:
        pytest.skip("chromium is not installed (apt-get install chromium; .ci/run does)")
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="playwright is not installed (pip install -e .[dev])")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def screens(tmp_path_factory):
    d = tmp_path_factory.mktemp("screens")
    yield d
    target = os.environ.get("ROOFLAB_SCREENSHOT_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        for f in d.glob("*.png"):
            shutil.copy(f, Path(target) / f.name)


def render(browser, path: Path, screens: Path, name: str) -> dict:
    """Open a report as a user would, fail on any JavaScript error or request off this machine,
    check every plot rendered, screenshot the page and each plot; returns timings and counts."""
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    errors, remote = [], []
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}")
            if m.type in ("error", "warning") else None)
    page.on("request", lambda r: remote.append(r.url)
            if not r.url.startswith(("file:", "data:", "blob:", "about:")) else None)
    try:
        page.goto(path.resolve().as_uri(), wait_until="load")
        rendered_ms = page.wait_for_function(ALL_RENDERED, timeout=30_000).json_value()
        plots = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].map(d => ({
            id: d.id, traces: d._fullData.length, w: d.getBoundingClientRect().width,
            h: d.getBoundingClientRect().height,
            svg: d.querySelectorAll('svg.main-svg').length,
            points: d.querySelectorAll('.scatterlayer .point, .barlayer .point').length}))""")
        page.screenshot(path=str(screens / f"{name}.png"), full_page=True)
        for i, loc in enumerate(page.locator(".js-plotly-plot").all()):
            loc.screenshot(path=str(screens / f"{name}-{i}-{plots[i]['id']}.png"))
        hover = _hover_check(page, screens, name)
    finally:
        page.close()
    assert not errors, errors
    assert not remote, f"the report fetched {remote}: it must open offline"
    for p in plots:
        assert p["svg"] >= 1 and p["traces"] > 0 and p["w"] > 300 and p["h"] > 200, p
        assert p["points"] > 0, f"{p['id']} drew no points or bars"
    return {"ms": rendered_ms, "plots": plots, "hover": hover}


def _hover_check(page, screens: Path, name: str) -> dict | None:
    """Hover the right-most point of the first plot (where hover text is most likely cut off)
    and check the label lies inside the plot and the window."""
    plot = page.locator(".js-plotly-plot").first
    pts = plot.locator(".scatterlayer .trace .point")
    if pts.count() == 0:
        return None
    plot.evaluate("d => d.scrollIntoView({block: 'center'})")
    boxes = [b for b in (pts.nth(i).bounding_box() for i in range(min(pts.count(), 200))) if b]
    target = max(boxes, key=lambda b: b["x"])
    page.mouse.move(target["x"] + target["width"] / 2, target["y"] + target["height"] / 2)
    label = plot.locator(".hoverlayer .hovertext")
    label.first.wait_for(state="visible", timeout=5_000)
    box = label.first.bounding_box()
    outer = plot.bounding_box()
    page.screenshot(path=str(screens / f"{name}-hover.png"),
                    clip={"x": outer["x"], "y": outer["y"], "width": outer["width"],
                          "height": outer["height"]})
    assert box["x"] >= outer["x"] - 1 and box["x"] + box["width"] <= outer["x"] + outer["width"] + 1, \
        (box, outer)
    assert box["y"] >= outer["y"] - 1 and box["y"] + box["height"] <= outer["y"] + outer["height"] + 1, \
        (box, outer)
    return box


def test_browser_rmsnorm_predict_html(browser, reports, screens):
    r = render(browser, reports["rmsnorm"], screens, "rmsnorm")
    assert [p["id"] for p in r["plots"]] == ["rooflab-roofline-h200", "rooflab-breakdown-h200"]
    assert r["hover"] is not None


def test_browser_llama8b_three_gpus(browser, reports, screens):
    r = render(browser, reports["llama8b"], screens, "llama8b-decode")
    ids = [p["id"] for p in r["plots"]]
    assert ids == ["rooflab-roofline-h100-sxm", "rooflab-roofline-h200", "rooflab-roofline-b200",
                   "rooflab-totals", "rooflab-breakdown-h100-sxm", "rooflab-breakdown-h200",
                   "rooflab-breakdown-b200"]


def test_browser_llama70b_renders_in_under_3s(browser, reports, screens):
    times = []
    for attempt in range(2):            # a second look only if a busy CI machine was slow
        r = render(browser, reports["llama70b"], screens, "llama70b-decode")
        times.append(r["ms"] / 1000)
        if times[-1] < 3.0:
            break
    print(f"llama70b report rendered in {times} s")
    assert min(times) < 3.0, f"rendered in {times} s"
    assert len(r["plots"]) == 7


def test_browser_validation_report(browser, reports, screens):
    r = render(browser, reports["validation"], screens, "validation")
    assert [p["id"] for p in r["plots"]] == ["rooflab-validation-scatter",
                                             "rooflab-validation-errors"]


def test_browser_sweep_report(browser, reports, screens):
    r = render(browser, reports["sweep"], screens, "sweep")
    assert [p["id"] for p in r["plots"]] == ["rooflab-sweep-tpot", "rooflab-sweep-ttft",
                                             "rooflab-sweep-throughput", "rooflab-sweep-memory"]
    assert r["hover"] is not None

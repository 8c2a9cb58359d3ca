"""The GPU tuning lab (lab/) stays apart from the product: rooflab's docstrings and comments say
what the code does, not how it was tuned; nothing of the product or its tests uses lab/; the
product's benchmarks (benchmarks/) are not GPU studies."""

import ast
import fnmatch
import io
import re
import tokenize
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Markers of tuning history: "round 23", "rounds 9-10", "round23c"; a date; a commit; a
# before -> after figure ("169 -> 148 µs"); words that tell what happened rather than what is.
HISTORY = [
    re.compile(r"\brounds?\s*\d+", re.I),
    re.compile(r"(?<![\w-])20\d\d-\d\d-\d\d(?![\w-])"),
    re.compile(r"\bcommit\s+[0-9a-f]{7,40}\b", re.I),
    re.compile(r"\d\s*(->|→)\s*\d[\d.]*\s*(µs|us|ms|%|[TGM]B/s|TFLOP/s)", re.I),
    re.compile(r"\b(superseded|no longer|used to be|(was|were|we) tried|tuning (round|session))\b",
               re.I),
]


def comments_and_docstrings(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and every module, class and function docstring."""
    found = [(tok.start[0], tok.string)
             for tok in tokenize.generate_tokens(io.StringIO(source).readline)
             if tok.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                found += [(node.body[0].lineno + i, line) for i, line in enumerate(doc.splitlines())]
    return found


def history_markers(source: str) -> list[tuple[int, str]]:
    """(line, matched text) of every tuning-history marker in the comments and docstrings."""
    return [(line, m.group(0)) for line, text in comments_and_docstrings(source)
            for pat in HISTORY for m in pat.finditer(text)]


def test_history_markers_are_recognised():
    src = ('"""Persistent row kernel (rounds 9-10)."""\n'
           "X = 1  # chosen on 2026-12-02 at commit 84f3347: 169 -> 148 µs, round23c\n"
           "def f():\n    \"\"\"Superseded by g; what was tried is in the lab.\"\"\"\n")
    assert history_markers(src) == [
        (2, "round23"), (2, "2026-12-02"), (2, "commit 84f3347"), (2, "9 -> 148 µs"),
        (1, "rounds 9"), (4, "Superseded"), (4, "was tried")]


def test_what_code_does_is_not_a_marker():
    src = ('"""Tiles: 128x128, fastest on the H200 for this shape (lab/gpu_tune.md); rounds up\n'
           'to a warpgroup; reports/validation/h200-2026-12-03.json; 1e12 -> \'1T\'."""\n'
           "n = round(x)  # round to bf16, 2 -> 3 stages\n")
    assert history_markers(src) == []


@pytest.mark.parametrize("path", sorted(p.relative_to(ROOT).as_posix()
                                        for p in (ROOT / "rooflab").rglob("*.py")))
def test_no_docstring_or_comment_tells_tuning_history(path):
    assert history_markers((ROOT / path).read_text()) == []


def _product_files():
    for top in ("rooflab", "tests", "docs", "benchmarks", "hardware_specs", "workloads", ".ci"):
        yield from (p for p in (ROOT / top).rglob("*") if p.is_file() and p.suffix != ".pyc")
    yield from (ROOT / name for name in ("README.md", "pyproject.toml"))


def test_the_product_does_not_use_the_lab():
    moved = re.compile(r"reports/tuning|benchmarks/(gpu_tune|gpu_kernels|gluon_qk|profile_qk)")
    for p in _product_files():
        if p.suffix in (".py", ".md", ".toml", ".yaml", ".sh", ".json", "") and p.name != Path(__file__).name:
            text = p.read_text(errors="replace")
            assert not moved.search(text), f"{p.relative_to(ROOT)} names a path that moved to lab/"
            if p.suffix == ".py":
                mods = {n.module or "" for n in ast.walk(ast.parse(text)) if isinstance(n, ast.ImportFrom)}
                mods |= {a.name for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Import)
                         for a in n.names}
                assert not {m for m in mods if m.split(".")[0] == "lab"}, p
    # the wheel's packages: setup.py's find_packages(include=[...])
    include = ast.literal_eval(re.search(r"include=(\[[^\]]*\])", (ROOT / "setup.py").read_text())[1])
    assert not [pat for pat in include if fnmatch.fnmatch("lab", pat)], include   # not in the wheel
    assert (ROOT / "lab" / "README.md").is_file()


def test_product_benchmarks_are_not_gpu_studies():
    for p in (ROOT / "benchmarks").glob("*.py"):
        tree = ast.parse(p.read_text())
        mods = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        mods |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        studies = {m for m in mods if m.split(".")[0] in ("torch", "triton")
                   or m.startswith("rooflab.validate.kernels")}
        assert not studies, f"{p.name} imports {studies}: a GPU study belongs in lab/"

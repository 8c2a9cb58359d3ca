"""Architecture rules (docs/layout.md): data flows one way; predicting needs no torch."""

import ast
import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "rooflab"


def _imports(path: Path) -> set[str]:
    mods = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            mods |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            mods.add(node.module)
    return mods


def test_nothing_imports_the_cli():
    for f in PKG.rglob("*.py"):
        if f.name != "cli.py":
            assert not any(m.startswith("rooflab.cli") for m in _imports(f)), f


def test_torch_and_triton_only_under_validate():
    for f in PKG.rglob("*.py"):
        if "validate" in f.parts:
            continue
        bad = {m for m in _imports(f) if m.split(".")[0] in ("torch", "triton")}
        assert not bad, f"{f} imports {bad}"


def test_predict_runs_without_torch():
    code = ("import sys; sys.modules['torch'] = None; sys.modules['triton'] = None\n"
            "from rooflab.cli import main; sys.argv = ['rooflab', 'hardware', 'list']; main()")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr

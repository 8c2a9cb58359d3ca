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
        if "cli" not in f.relative_to(PKG).parts:
            assert not any(m.startswith("rooflab.cli") for m in _imports(f)), f


def test_torch_and_triton_only_under_validate_and_trace():
    for f in PKG.rglob("*.py"):
        if "validate" in f.parts or "trace" in f.parts:
            continue
        bad = {m for m in _imports(f) if m.split(".")[0] in ("torch", "triton", "transformers")}
        assert not bad, f"{f} imports {bad}"


def test_trace_imports_torch_only_inside_functions():
    # `import rooflab.trace` must work without torch: it is imported when a trace runs
    import ast
    for f in (PKG / "trace").rglob("*.py"):
        top = [n for n in ast.parse(f.read_text()).body if isinstance(n, (ast.Import, ast.ImportFrom))]
        names = {a.name for n in top for a in n.names} | {n.module or "" for n in top
                                                          if isinstance(n, ast.ImportFrom)}
        bad = {m for m in names if m.split(".")[0] in ("torch", "triton", "transformers")}
        assert not bad, f"{f} imports {bad} at module level"


def test_predict_runs_without_torch():
    code = ("import sys; sys.modules['torch'] = None; sys.modules['triton'] = None\n"
            "from rooflab.cli import main; sys.argv = ['rooflab', 'hardware', 'list']; main()")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def _module_name(path: Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _rooflab_edges() -> dict[str, set[str]]:
    """Module -> the rooflab modules it imports anywhere in its file (function bodies too).
    `from rooflab.x import y` is an edge to rooflab.x.y when that is a module, else to rooflab.x."""
    modules = {_module_name(f): f for f in PKG.rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for name, f in modules.items():
        out = set()
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                out |= {a.name for a in node.names if a.name in modules}
            elif isinstance(node, ast.ImportFrom) and node.module in modules:
                subs = {f"{node.module}.{a.name}" for a in node.names} & modules.keys()
                out |= subs or {node.module}
        edges[name] = out - {name}
    return edges


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle among `edges`, or None (depth-first search with colours)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(edges.get(m, ())):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state and (found := visit(n)):
                return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(edges):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_no_import_cycles_function_level_imports_included():
    assert _cycle(_rooflab_edges()) is None


def test_the_core_imports_no_view_validation_or_cli():
    """Data flows one way: the core (graph, ops, schedule, cost, compare, ...) never reaches up
    into report/, validate/ or the CLI."""
    upper = ("rooflab.report", "rooflab.validate", "rooflab.cli")
    for mod, deps in _rooflab_edges().items():
        if mod.startswith(upper):
            continue
        bad = {d for d in deps if d.startswith(upper)}
        assert not bad, f"{mod} imports {bad}"

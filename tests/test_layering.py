"""The layering of design.md, enforced: a test walks every module's imports and fails on a forbidden edge.

| folder        | may import                                                                 |
|---------------|----------------------------------------------------------------------------|
| model/        | itself, lark, z3, pyspark (pyspark only in Spark backend modules)          |
| impl/         | itself and impl/_generated — never kcoord.model, lark, z3 or pyspark       |
| conformance/  | impl, model (not the CLI)                                                  |
| kcoord/       | everything                                                                 |

Inside impl/ the imports between its own modules form no cycle, and none of them is made inside a function (such an
import only hides a cycle).
"""

from __future__ import annotations

import ast
import pickle
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"model": "kcoord.model", "impl": "kcoord.impl", "conformance": "kcoord.conformance", "kcoord": "kcoord"}


@dataclass(frozen=True)
class Edge:
    source: str  # file, relative to the repository root
    line: int
    target: str  # absolute module name


def module_name(path: Path, root: Path = ROOT) -> str:
    rel = path.relative_to(root)
    package = PACKAGES[rel.parts[0]]
    parts = [package, *rel.parts[1:-1]]
    if rel.stem != "__init__":
        parts.append(rel.stem)
    return ".".join(parts)


def parse(source: str, filename: str) -> ast.Module:
    """`ast.parse`, or in a fresh interpreter after CPython 3.11.7's spurious "AST constructor recursion depth
    mismatch" SystemError (gh-106905, fixed in 3.11.8): the depth counter is shared by the process's threads, and a
    traceback formatted in a background thread (3.11 parses source lines to place its carets) can corrupt it while
    this test parses. Seen in full suites on the largest generated table, twice in a row in one process."""
    try:
        return ast.parse(source, filename=filename)
    except SystemError as e:
        if "recursion depth mismatch" not in str(e):
            raise
    child = subprocess.run([sys.executable, "-c", _PARSE_IN_CHILD, filename], input=source.encode("utf-8"),
                           capture_output=True, check=True)
    tree = pickle.loads(child.stdout)
    assert isinstance(tree, ast.Module)
    return tree


_PARSE_IN_CHILD = ("import ast, pickle, sys; "
                   "sys.stdout.buffer.write(pickle.dumps(ast.parse(sys.stdin.buffer.read().decode(), sys.argv[1])))")


def imports_of(path: Path, root: Path = ROOT) -> list[Edge]:
    tree = parse(path.read_text(encoding="utf-8"), str(path))
    me = module_name(path, root)
    src = str(path.relative_to(root))
    package = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    edges = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            edges += [Edge(src, node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            edges.append(Edge(src, node.lineno, target))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module" and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            edges.append(Edge(src, node.lineno, node.args[0].value))
    return edges


def forbidden(edge: Edge) -> str | None:
    """Why an import is not allowed, or None."""
    layer = edge.source.split("/", 1)[0]
    t = edge.target
    top = t.split(".")[0]
    if layer == "impl" and (t.startswith(("kcoord.model", "kcoord.conformance", "kcoord.cli", "kcoord.cmd_"))
                            or top in ("lark", "z3", "pyspark")):
        return "impl/ may only import itself and impl/_generated"
    if layer == "model":
        if t.startswith(("kcoord.impl", "kcoord.conformance", "kcoord.cli", "kcoord.cmd_", "kcoord.specs")):
            return "model/ may only import its own modules"
        name = edge.source.rsplit("/", 1)[-1]
        if top == "pyspark" and not name.startswith("spark"):
            return "pyspark is only imported by the Spark backend (model/spark*.py)"
    if layer == "conformance" and t.startswith(("kcoord.cli", "kcoord.cmd_")):
        return "conformance/ does not use the command line"
    return None


def all_sources() -> list[Path]:
    files = []
    for folder in PACKAGES:
        files += sorted((ROOT / folder).rglob("*.py"))
    return [f for f in files if "__pycache__" not in f.parts]


def test_no_forbidden_imports() -> None:
    problems = []
    for path in all_sources():
        for edge in imports_of(path):
            why = forbidden(edge)
            if why:
                problems.append(f"{edge.source}:{edge.line}: imports {edge.target}: {why}")
    assert problems == []


@pytest.mark.parametrize(("source", "text", "expected"), [
    ("impl/x.py", "from kcoord.model import ir", "impl/ may only import"),
    ("impl/sub/x.py", "from ...model.ir import Machine", "impl/ may only import"),
    ("impl/x.py", "import z3", "impl/ may only import"),
    ("impl/x.py", "importlib.import_module('kcoord.model.loader')", "impl/ may only import"),
    ("model/x.py", "from ..impl import statemachine", "model/ may only import"),
    ("model/typecheck.py", "import pyspark.sql", "pyspark is only imported"),
    ("conformance/x.py", "from kcoord.cli import app", "conformance/ does not"),
])
def test_walker_catches_forbidden_edges(tmp_path: Path, source: str, text: str, expected: str) -> None:
    """The check can fail: a planted forbidden import in each layer is reported."""
    path = tmp_path / source
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")
    reasons = [forbidden(e) for e in imports_of(path, tmp_path)]
    assert any(r and expected in r for r in reasons), reasons


def test_allowed_edges_are_not_reported() -> None:
    assert forbidden(Edge("impl/statemachine.py", 1, "kcoord.impl._generated.transaction")) is None
    assert forbidden(Edge("conformance/x.py", 1, "kcoord.impl.statemachine")) is None
    assert forbidden(Edge("model/spark_backend.py", 1, "pyspark.sql")) is None
    assert forbidden(Edge("kcoord/cli.py", 1, "kcoord.model.loader")) is None


def test_every_package_folder_is_installed() -> None:
    """pyproject's package-dir maps each layer; every folder with modules must be a package there."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    package_dir = config["tool"]["setuptools"]["package-dir"]
    for folder, package in {"model": "kcoord.model", "impl": "kcoord.impl", "conformance": "kcoord.conformance",
                            "spec": "kcoord.spec", "kcoord": "kcoord"}.items():
        assert package_dir.get(package) == folder


# ---------------------------------------------------------------------------------------------- impl/'s own graph


def impl_modules(root: Path = ROOT) -> dict[str, Path]:
    return {module_name(p, root): p for p in sorted((root / "impl").rglob("*.py")) if "__pycache__" not in p.parts}


def _imported_modules(node: ast.Import | ast.ImportFrom, package: str, known: set[str]) -> set[str]:
    """The modules of `known` an import statement loads (`from . import records` loads the module `records`)."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in known}
    base = package.split(".")
    base = base[: len(base) - (node.level - 1)] if node.level else []
    target = ".".join([*base, node.module] if node.module else base) if node.level else (node.module or "")
    out = set()
    for alias in node.names:
        if f"{target}.{alias.name}" in known:
            out.add(f"{target}.{alias.name}")
        elif target in known:
            out.add(target)
    return out


def impl_graph(root: Path = ROOT) -> tuple[dict[str, set[str]], list[str]]:
    """Each impl module's imports of other impl modules (a module's own packages left out: Python loads them first
    anyway), and every import of an impl module made inside a function, as `file:line: module`."""
    modules = impl_modules(root)
    known = set(modules)
    graph: dict[str, set[str]] = {}
    hidden: list[str] = []
    for name, path in modules.items():
        tree = parse(path.read_text(encoding="utf-8"), str(path))
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        graph[name] = set()
        in_functions = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                        for n in ast.walk(f)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            targets = {t for t in _imported_modules(node, package, known) if not name.startswith(t + ".")}
            graph[name] |= targets
            if targets and id(node) in in_functions:
                hidden += [f"{path.relative_to(root)}:{node.lineno}: {t}" for t in sorted(targets)]
    return graph, hidden


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            nxt = next((s for s in successors if s not in index or s in on_stack), None)
            if nxt is not None and nxt not in index:
                index[nxt] = low[nxt] = len(index)
                stack.append(nxt)
                on_stack.add(nxt)
                work.append((nxt, iter(sorted(graph.get(nxt, ())))))
            elif nxt is not None:
                low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_impl_imports_form_no_cycle() -> None:
    graph, hidden = impl_graph()
    assert cycles(graph) == []
    assert hidden == [], "an impl module imported inside a function hides a cycle: import it at the top"


def test_cycle_check_can_fail(tmp_path: Path) -> None:
    """A planted cycle hidden by a function-level import (what consumer.py and consumer_ops.py did) is reported."""
    group = tmp_path / "impl" / "group"
    group.mkdir(parents=True)
    (tmp_path / "impl" / "__init__.py").write_text("")
    (group / "__init__.py").write_text("")
    (group / "ops.py").write_text("def timer():\n    from .handlers import expired\n    return expired\n")
    (group / "handlers.py").write_text("from . import ops\n\ndef expired():\n    return ops\n")
    graph, hidden = impl_graph(tmp_path)
    assert cycles(graph) == [["kcoord.impl.group.handlers", "kcoord.impl.group.ops"]]
    assert hidden == ["impl/group/ops.py:2: kcoord.impl.group.handlers"]

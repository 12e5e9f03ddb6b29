"""The layering of design.md, enforced: a test walks every module's imports and fails on a forbidden edge.

| folder        | may import                                                                 |
|---------------|----------------------------------------------------------------------------|
| model/        | itself, lark, z3, pyspark (pyspark only in Spark backend modules)          |
| impl/         | itself and impl/_generated — never kcoord.model, lark, z3 or pyspark       |
| conformance/  | impl, model (not the CLI)                                                  |
| kcoord/       | everything                                                                 |
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

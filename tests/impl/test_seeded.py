"""Seeded bugs live in one place per coordinator: `impl/seeded.py` (the `SeededBug` switch), `impl/txn/seeded.py` and
`impl/group/seeded.py` (the hooks), wired by the coordinators and the cluster. No handler names a bug: a test walks
impl/ and fails on any identifier about bugs (`bugs`, `bug_kafka_17507`, `SeededBug`, ...) anywhere else."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ..test_layering import parse

ROOT = Path(__file__).resolve().parents[2]
#: where a seeded bug may be named: the switch, the hooks, and what builds the coordinators with them
HOMES = frozenset({"impl/seeded.py", "impl/txn/seeded.py", "impl/group/seeded.py", "impl/cluster.py",
                   "impl/txn/coordinator.py", "impl/group/coordinator.py"})
_BUGGY = re.compile(r"(^|_)bugs?(_|$)|seeded", re.IGNORECASE)
_NOT_ABOUT_SEEDED_BUGS = frozenset({"raise_bugs"})  # our own bugs surfacing, not a seeded one


def _identifiers(tree: ast.AST) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute):
            out.append((node.lineno, node.attr))
        elif isinstance(node, ast.arg):
            out.append((node.lineno, node.arg))
        elif isinstance(node, ast.keyword) and node.arg:
            out.append((node.value.lineno, node.arg))
        elif isinstance(node, ast.alias):
            out.append((getattr(node, "lineno", 0), node.asname or node.name))
    return out


def named_outside_homes(root: Path = ROOT) -> list[str]:
    out = []
    for path in sorted((root / "impl").rglob("*.py")):
        where = str(path.relative_to(root))
        if where in HOMES or "_generated" in path.parts or "__pycache__" in path.parts:
            continue
        tree = parse(path.read_text(encoding="utf-8"), where)
        out += [f"{where}:{line}: {name}" for line, name in _identifiers(tree)
                if _BUGGY.search(name) and name not in _NOT_ABOUT_SEEDED_BUGS]
    return sorted(set(out))


def test_no_handler_names_a_seeded_bug() -> None:
    assert named_outside_homes() == []


def test_the_check_fails_on_a_bug_switch_in_a_handler(tmp_path: Path) -> None:
    """What plans.py did before the hooks: a branch on the context's switched-on bugs."""
    path = tmp_path / "impl" / "txn" / "plans.py"
    path.parent.mkdir(parents=True)
    path.write_text("def fence(ctx, change):\n    if 'fence_without_bump' in ctx.bugs:\n        return change\n")
    assert named_outside_homes(tmp_path) == ["impl/txn/plans.py:2: bugs"]

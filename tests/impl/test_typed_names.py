"""impl/ names states, events and Kafka errors by the generated enums, never by strings.

The enums are generated (`kcoord gen`): `State` and `Event` per machine in `impl/_generated/<machine>.py`, `Errors` in
`impl/_generated/errors.py` (re-exported by `kcoord.impl.errors`). A misspelt member is an AttributeError and a mypy
error; a misspelt string is a comparison that is silently false. This test walks every module of impl/ and fails on:

- a string literal where a state, an event or an error goes (compared with `x["state"]`, `d.to_state`, `row["event"]`,
  `d.error`, ...; the event of a `decide`; the name of a `KafkaError`; `state=` / `"state":` values), whatever its
  value: a value no enum defines is reported as unknown (a misspelling), a known one as to be written as the enum;
- a string literal anywhere (docstrings, f-strings and `__all__` apart) whose value is a state or an error name;
- an attribute of an imported `State`, `Event` or `Errors` enum that the enum does not define.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

from kcoord.impl._generated.errors import Errors

from ..test_layering import parse

ROOT = Path(__file__).resolve().parents[2]
MACHINE_MODULES = ("transaction", "classic_group", "consumer_group", "consumer_group_member", "partition_producer",
                   "producer_client", "streams_task")
KINDS = ("state", "event", "error")
_KEYS = {"state": "state", "from_state": "state", "to_state": "state", "event": "event", "error": "error"}
_AN = {"state": "a", "event": "an", "error": "an"}
_DECIDE = {"decide", "decide_group", "decide_member", "enabled", "try_decide", "first_row"}


def _members(module: str, enum_name: str) -> frozenset[str]:
    return frozenset(m.name for m in getattr(importlib.import_module(f"kcoord.impl._generated.{module}"), enum_name))


def known_names() -> dict[str, frozenset[str]]:
    """Every state, event and error name the generated enums define."""
    return {"state": frozenset().union(*(_members(m, "State") for m in MACHINE_MODULES)),
            "event": frozenset().union(*(_members(m, "Event") for m in MACHINE_MODULES)),
            "error": frozenset(e.name for e in Errors)}


def _kind_of(expr: ast.expr) -> str | None:
    """Whether `expr` holds a state, an event or an error: `x["to_state"]`, `d.error`, `event`, ..."""
    if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
        return _KEYS.get(str(expr.slice.value))
    if isinstance(expr, ast.Attribute):
        return _KEYS.get(expr.attr)
    if isinstance(expr, ast.Name):
        return _KEYS.get(expr.id)
    return None


def _literals(expr: ast.expr | None) -> Iterator[ast.Constant]:
    """The string constants an expression is made of (alternatives of `a if c else b`, members of a collection)."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        yield expr
    elif isinstance(expr, ast.Tuple | ast.List | ast.Set):
        for element in expr.elts:
            yield from _literals(element)
    elif isinstance(expr, ast.IfExp):
        yield from _literals(expr.body)
        yield from _literals(expr.orelse)


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def typed_positions(tree: ast.AST) -> Iterator[tuple[ast.Constant, str]]:
    """Every string literal standing where a state, an event or an error goes, with that kind."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            kinds = {k for k in map(_kind_of, operands) if k}
            for kind in kinds:
                for operand in operands:
                    yield from ((c, kind) for c in _literals(operand))
        elif isinstance(node, ast.Call):
            name = _call_name(node)
            if name in _DECIDE:
                yield from ((c, "event") for arg in node.args for c in _literals(arg))
            elif name == "KafkaError" and node.args:
                yield from ((c, "error") for c in _literals(node.args[0]))
            for keyword in node.keywords:
                if keyword.arg in _KEYS:
                    yield from ((c, _KEYS[keyword.arg]) for c in _literals(keyword.value))
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value in _KEYS:
                    yield from ((c, _KEYS[str(key.value)]) for c in _literals(value))
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for kind in {k for k in map(_kind_of, targets) if k}:
                yield from ((c, kind) for c in _literals(node.value))


def _not_code(tree: ast.AST) -> set[int]:
    """Docstrings, f-string parts and `__all__` entries: text, not names in code."""
    out: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            out.add(id(body[0].value))
        elif isinstance(node, ast.JoinedStr):
            out |= {id(n) for n in ast.walk(node)}
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            out |= {id(n) for n in ast.walk(node.value)}
    return out


def _enum_aliases(tree: ast.AST) -> dict[str, frozenset[str]]:
    """Local names bound to a generated enum by `from ..._generated.<module> import State as X` (or `Errors`)."""
    out: dict[str, frozenset[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            module = node.module.rsplit(".", 1)[-1]
            for alias in node.names:
                local = alias.asname or alias.name
                if alias.name == "Errors" and module in ("errors", "_generated"):
                    out[local] = frozenset(e.name for e in Errors)
                elif alias.name in ("State", "Event") and module in MACHINE_MODULES:
                    out[local] = _members(module, alias.name)
    return out


def problems(path: Path, root: Path, known: dict[str, frozenset[str]]) -> list[str]:
    tree = parse(path.read_text(encoding="utf-8"), str(path))
    where = path.relative_to(root)
    out: list[str] = []
    positioned: set[int] = set()
    for const, kind in typed_positions(tree):
        positioned.add(id(const))
        if const.value == "":
            continue  # no state, event or error at all (a default)
        value = str(const.value)
        what = (f"the {kind} '{value}' written as a string: write it as its enum member" if value in known[kind] else
                f"'{value}' stands where {_AN[kind]} {kind} goes, and no enum defines that {kind} (misspelt?)")
        out.append(f"{where}:{const.lineno}: {what}")
    skip = _not_code(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip | positioned:
            for kind in ("state", "error"):
                if node.value in known[kind]:
                    out.append(f"{where}:{node.lineno}: the {kind} '{node.value}' written as a string: write it as "
                               f"its enum member")
    aliases = _enum_aliases(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                and not node.attr.startswith("_") and node.attr not in aliases[node.value.id]:
            out.append(f"{where}:{node.lineno}: {node.value.id} has no member '{node.attr}'")
    return sorted(set(out), key=lambda line: (line.split(":")[0], int(line.split(":")[1])))


def impl_problems(root: Path = ROOT) -> list[str]:
    known = known_names()
    files = sorted(p for p in (root / "impl").rglob("*.py")
                   if "_generated" not in p.parts and "__pycache__" not in p.parts)
    return [line for path in files for line in problems(path, root, known)]


def test_impl_names_states_events_and_errors_by_the_enums() -> None:
    assert impl_problems() == []


PLANTED = '''
from .._generated.transaction import State as TxnState
from ..errors import Errors, KafkaError


def handler(ctx, instance, d, row, shard, key):
    if instance["state"] == "Ongoign":
        pass
    if d.to_state in ("PrepareCommit", TxnState.PrepareAbort):
        pass
    decision = ctx.decide(shard, key, "AddPartiton", {})
    if d.error != "NOT_COORDINATR":
        raise KafkaError("CONCURENT_TRANSACTIONS", "busy")
    instance.update(state="CompleteComit")
    if row["event"] == "TimeoutExpired":
        pass
    answer = {"state": "Empty", "error": Errors.NONE}
    if instance["state"] == TxnState.Ongoign:
        pass
    return "UNKNOWN_PRODUCER_ID"
'''


def test_the_check_fails_on_each_kind_of_string_name(tmp_path: Path) -> None:
    """Planted in a module of impl/: misspelt names in each position, known names as strings, a misspelt member."""
    path = tmp_path / "impl" / "txn" / "planted.py"
    path.parent.mkdir(parents=True)
    path.write_text(PLANTED)
    found = problems(path, tmp_path, known_names())
    expected = [
        "impl/txn/planted.py:7: 'Ongoign' stands where a state goes, and no enum defines that state (misspelt?)",
        "impl/txn/planted.py:9: the state 'PrepareCommit' written as a string: write it as its enum member",
        "impl/txn/planted.py:11: 'AddPartiton' stands where an event goes, and no enum defines that event (misspelt?)",
        "impl/txn/planted.py:12: 'NOT_COORDINATR' stands where an error goes, and no enum defines that error "
        "(misspelt?)",
        "impl/txn/planted.py:13: 'CONCURENT_TRANSACTIONS' stands where an error goes, and no enum defines that error "
        "(misspelt?)",
        "impl/txn/planted.py:14: 'CompleteComit' stands where a state goes, and no enum defines that state "
        "(misspelt?)",
        "impl/txn/planted.py:15: the event 'TimeoutExpired' written as a string: write it as its enum member",
        "impl/txn/planted.py:17: the state 'Empty' written as a string: write it as its enum member",
        "impl/txn/planted.py:18: TxnState has no member 'Ongoign'",
        "impl/txn/planted.py:20: the error 'UNKNOWN_PRODUCER_ID' written as a string: write it as its enum member",
    ]
    assert found == expected

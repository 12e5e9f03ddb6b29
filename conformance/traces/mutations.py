"""Mutation operators that break a valid trace, for the checkers' tests and benchmarks (`generate` makes the traces).

Owns `MUTATIONS`: drop, duplicate, swap two rows of a key, corrupt a variable, a target that is not an edge, a wrong
error; each takes the rows of one machine, its `Spec` and a seeded `random.Random`, and returns new rows (the input
is not changed), or the same rows when nothing fits. And `mutate_every`: every mutation, in name order, `rounds` times
over each machine's rows (what the checkers' differential tests and benchmarks break their traces with).
Must not import: pyspark, kcoord.cli.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any

from kcoord.model import ir

from .checks import Spec

Row = dict[str, Any]


def _sequence(rows: list[Row], rng: random.Random) -> tuple[str, list[int]] | None:
    """A random key with at least two rows in its sequence, and the indexes of its rows (seq order)."""
    by_key: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        if r["seq"] >= 0:
            by_key.setdefault(r["key"], []).append(i)
    keys = sorted(k for k, ix in by_key.items() if len(ix) >= 2)
    if not keys:
        return None
    key = rng.choice(keys)
    return key, sorted(by_key[key], key=lambda i: rows[i]["seq"])


def drop_row(rows: list[Row], spec: Spec, rng: random.Random) -> list[Row]:
    picked = _sequence(rows, rng)
    if picked is None:
        return rows
    victim = rng.choice(picked[1])
    return [r for i, r in enumerate(rows) if i != victim]


def duplicate_row(rows: list[Row], spec: Spec, rng: random.Random) -> list[Row]:
    picked = _sequence(rows, rng)
    if picked is None:
        return rows
    i = rng.choice(picked[1])
    return [*rows, dict(rows[i])]


def swap_rows(rows: list[Row], spec: Spec, rng: random.Random) -> list[Row]:
    """Two rows of one key trade places (their seq and ts)."""
    picked = _sequence(rows, rng)
    if picked is None:
        return rows
    i, j = rng.sample(picked[1], 2)
    out = [dict(r) for r in rows]
    for f in ("seq", "ts_ms"):
        out[i][f], out[j][f] = rows[j][f], rows[i][f]
    return out


def corrupt_variable(rows: list[Row], spec: Spec, rng: random.Random) -> list[Row]:
    picked = _sequence(rows, rng)
    if picked is None or not spec.machine.variables:
        return rows
    i = rng.choice(picked[1])
    var = rng.choice(spec.machine.variables)
    out = list(rows)
    out[i] = dict(rows[i]) | {var.name: _other_value(var.type, rows[i][var.name], rng)}
    return out


def _other_value(t: ir.Type, old: Any, rng: random.Random) -> Any:
    if isinstance(t, ir.BoolType):
        return not old
    if isinstance(t, ir.IntType):
        return old + 1 if old < t.hi else old - 1
    if isinstance(t, ir.EnumType):
        return next((x for x in t.members if x != old), old)
    if isinstance(t, ir.SetType):
        return frozenset(old) ^ {"zz-corrupt"} if not isinstance(t.element, ir.EnumType | ir.IntType) \
            else frozenset()
    return f"{old}-corrupt"


def non_edge_target(rows: list[Row], spec: Spec, rng: random.Random) -> list[Row]:
    picked = _sequence(rows, rng)
    if picked is None:
        return rows
    i = rng.choice(picked[1])
    r = rows[i]
    bad = sorted(s.name for s in spec.machine.states if (r["from_state"], s.name) not in spec.machine.edges
                 and s.name != r["to_state"])
    if not bad:
        return rows
    out = list(rows)
    out[i] = dict(r) | {"to_state": rng.choice(bad)}
    return out


def change_error(rows: list[Row], spec: Spec, rng: random.Random) -> list[Row]:
    """Another error on a decision (a `load` row answers nothing)."""
    picked = _sequence(rows, rng)
    decisions = [i for i in picked[1] if rows[i]["kind"] != "load"] if picked else []
    if not decisions:
        return rows
    i = rng.choice(decisions)
    errors = sorted(({r.error for r in spec.machine.rejections} | {"NONE", "UNKNOWN_SERVER_ERROR"})
                    - {rows[i]["error"]})
    out = list(rows)
    out[i] = dict(rows[i]) | {"error": rng.choice(errors)}
    return out


Mutation = Callable[[list[Row], Spec, random.Random], list[Row]]
MUTATIONS: dict[str, Mutation] = {
    "drop_row": drop_row, "duplicate_row": duplicate_row, "swap_rows": swap_rows,
    "corrupt_variable": corrupt_variable, "non_edge_target": non_edge_target, "change_error": change_error,
}


def mutate_every(traces: Mapping[str, list[Row]], machines: Mapping[str, ir.Machine], rng: random.Random,
                 rounds: int = 1) -> dict[str, list[Row]]:
    """`traces` (machine -> rows) with every mutation applied `rounds` times to each machine's rows, mutation by
    mutation in name order (the draws of `rng` in that order: the same seed gives the same traces)."""
    out = dict(traces)
    for name in sorted(MUTATIONS):
        for _ in range(rounds):
            out = {m: MUTATIONS[name](rows, Spec.of(machines[m]), rng) for m, rows in out.items()}
    return out

"""Witnesses: the rows around a violation, as JSON (for `kcoord replay`) and as text through the one printer.

Owns: `Segment` (some consecutive rows of one key and the state before them), the window of rows a witness shows
(`BEFORE` rows before the violating row, `AFTER` after it, and the row before the window as the starting state), the
JSON form, and `render` (through `kcoord.model.printer`, so violations read like z3 counterexamples). Both checkers
build witnesses from the same row dicts, so they render identically.
Must not import: pyspark, kcoord.cli.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kcoord.model.printer import Execution, Transition, render_execution
from kcoord.model.traceschema import arg_column

from .checks import Spec

BEFORE = 6
AFTER = 2
MAX_ROWS = 20


@dataclass(frozen=True, slots=True)
class Segment:
    key: str
    at_seq: int
    base: dict[str, Any] | None  # the state before the first row; None: the fresh instance
    rows: tuple[dict[str, Any], ...]


def window(rows: Sequence[dict[str, Any]], pos: int, before: int = BEFORE, after: int = AFTER) -> tuple[
        dict[str, Any] | None, list[dict[str, Any]]]:
    """(the row before the window, the window) around `rows[pos]`."""
    lo = max(0, pos - before)
    return (rows[lo - 1] if lo > 0 else None), list(rows[lo:pos + after + 1])


def base_state(spec: Spec, row_before: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The state the window starts from: the post-state of the row before it, or None (fresh) when there is none
    or it ended in a final state."""
    if row_before is None or row_before["to_state"] in spec.final_states:
        return None
    return post_state(spec, row_before)


def post_state(spec: Spec, row: Mapping[str, Any]) -> dict[str, Any]:
    out = {v.name: _value(row[v.name]) for v in spec.machine.variables}
    out["state"] = row["to_state"]
    return out


def _value(v: Any) -> Any:
    """Sets come back from JSON (and from Spark) as lists: show them as sets."""
    return frozenset(v) if isinstance(v, list) else v


def fresh_state(spec: Spec) -> dict[str, Any]:
    out = dict(spec.defaults)
    out["state"] = spec.initial
    return out


def args_of(spec: Spec, row: Mapping[str, Any]) -> dict[str, Any]:
    out = {p.name: _value(row.get(arg_column(p.name))) for p in spec.event_params(str(row["event"]))}
    out["pending"] = row.get("pending")
    return out


def to_json(machine: str, segments: Sequence[Segment]) -> str:
    doc = {"machine": machine, "segments": [
        {"key": s.key, "at": s.at_seq, "base": _jsonable(s.base), "rows": [_jsonable(r) for r in s.rows]}
        for s in segments]}
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, frozenset | set | list | tuple):
        items = [_jsonable(v) for v in value]
        return sorted(items) if isinstance(value, frozenset | set) else items
    return value


def render(spec: Spec, segments: Sequence[Segment], message: str) -> str:
    """The witness as text: per segment, the states and the rows between them; the violating row is marked."""
    parts = []
    for seg in segments:
        base = {k: _value(v) for k, v in seg.base.items()} if seg.base is not None else fresh_state(spec)
        states: list[Mapping[str, Any]] = [base]
        steps = []
        for row in seg.rows:
            states.append(post_state(spec, row))
            steps.append(Transition(str(row["event"]), args_of(spec, row), _label(spec, row, seg.at_seq)))
        head = f"key {seg.key}" + ("" if seg.base is not None else " (from a fresh instance)")
        parts.append(head + "\n" + render_execution(Execution(states, steps)))
    return "\n".join(parts) + f"\n  => {message}"


def _label(spec: Spec, row: Mapping[str, Any], at_seq: int) -> str:
    spec_row = spec.rows.get(int(row["row"]))
    where = f"row {row['row']}, {spec_row.location}" if spec_row else f"row {row['row']}"
    error = f", error {row['error']}" if row["error"] != "NONE" else ""
    mark = "  <== violation" if row["seq"] == at_seq else ""
    return f"{where}; {row['kind']} {row['from_state']} -> {row['to_state']}{error}; seq {row['seq']}, " \
           f"ts {row['ts_ms']}{mark}"

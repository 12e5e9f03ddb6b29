"""The one printer for executions: z3 counterexamples, Spark and Python trace violations, hypothesis failures.

Owns: `Step` / `Execution` (a sequence of states with the transitions between them) and `render_execution`, which
prints, in the spec's own names:

    state 0
      producer_epoch = 5
      state = Ongoing
    transition EndTxnV2(epoch=5, pid=7, result=COMMIT)  [row 40, spec/transaction.sm:180]
    state 1
      producer_epoch = 6  *
      state = PrepareCommit  *

Variables are sorted naturally (`m2` before `m10`); a `*` marks a variable that changed from the previous state.
Must not import: lark, z3, pyspark.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .pretty import render_value


@dataclass(frozen=True, slots=True)
class Transition:
    event: str
    args: Mapping[str, Any]
    label: str = ""  # e.g. "row 40, spec/transaction.sm:180"


@dataclass(frozen=True, slots=True)
class Execution:
    """states[i] --transitions[i]--> states[i+1]; `notes` are printed after the last state."""

    states: Sequence[Mapping[str, Any]]
    transitions: Sequence[Transition] = ()
    notes: Sequence[str] = field(default_factory=tuple)
    hidden: frozenset[str] = frozenset()  # names not worth printing (e.g. the key when it never matters)


def natural_key(name: str) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def render_args(args: Mapping[str, Any]) -> str:
    shown = {k: v for k, v in args.items() if k != "pending" or v}
    return ", ".join(f"{k}={_value(v)}" for k, v in sorted(shown.items(), key=lambda kv: natural_key(kv[0])))


def render_execution(execution: Execution, indent: str = "  ") -> str:
    lines: list[str] = []
    previous: Mapping[str, Any] | None = None
    for i, state in enumerate(execution.states):
        lines.append(f"{indent}state {i}")
        for name in sorted(state, key=natural_key):
            if name in execution.hidden:
                continue
            value = state[name]
            changed = previous is not None and previous.get(name) != value
            lines.append(f"{indent}  {name} = {_value(value)}{'  *' if changed else ''}")
        if i < len(execution.transitions):
            t = execution.transitions[i]
            where = f"  [{t.label}]" if t.label else ""
            lines.append(f"{indent}transition {t.event}({render_args(t.args)}){where}")
        previous = state
    lines.extend(f"{indent}{note}" for note in execution.notes)
    return "\n".join(lines)


def _value(v: Any) -> str:
    if isinstance(v, str):
        return v if re.fullmatch(r"[A-Z][A-Za-z_]*", v) else render_value(v)
    return render_value(v)

"""What `kcoord verify` says about one obligation: its `Result` (kind, status, spans, counterexample), and
`VerifierBug` (z3 and the Python evaluator disagree: our bug, never the user's).
Must not import: lark, pyspark.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .diagnostics import Span
from .printer import Execution

Kind = Literal["initiation", "consecution", "bounds", "step", "reachability", "deadlock", "overlap", "totality",
               "trace", "persisted"]
Status = Literal["holds", "fails", "unknown", "trace-only"]


class VerifierBug(AssertionError):
    """z3 and the Python evaluator disagree about a counterexample: a bug in a backend, never a user error."""


@dataclass(frozen=True, slots=True)
class Result:
    machine: str
    kind: Kind
    title: str  # e.g. "invariant open_has_partitions preserved by AddPartitions#15"
    status: Status
    span: Span  # the property, row or state the obligation is about
    related: tuple[Span, ...] = ()
    elapsed_ms: float = 0.0
    detail: str = ""  # why it failed / why trace-only / what z3 said
    counterexample: Execution | None = None
    severity: Literal["error", "warning"] = "error"

    @property
    def failed(self) -> bool:
        return self.status == "fails" and self.severity == "error"

"""Checking and lowering: one machine's syntax → `ir.Machine`, with every problem reported as a diagnostic.

Owns: `check_machine`, which runs the checker's passes in order over one shared `Checking` (`check_context`), as
lark's grammar loader runs its transformers:

1. declarations (`check_declarations`): the file name, kind, key, enums, states, constants, definitions, variables;
2. event lowering (`check_events`): each event's ordered `check`s, `reject` and `from` rows into disjoint rows, its
   preconditions and effects (at most one `ensures v' == e` per variable, the frame rule for the rest);
3. properties (`check_properties`): invariants, step properties and trace properties;
4. persistence (`check_persist`): the `persist` declaration and the `writes` clauses;
5. structure (`check_structure`): unreachable and dead-end states, rows that are syntactically both allowed and
   rejected or nondeterministic.

Everything z3 is needed for (disjointness under guards, totality, inductiveness) is the verifier's job.
Must not import: lark, z3, pyspark.
"""

from __future__ import annotations

import hashlib

from . import ir
from . import syntax as s
from .check_context import Checking, snake_case
from .check_declarations import Declarations
from .check_events import EventLowering
from .check_persist import Persistence
from .check_properties import Properties
from .check_structure import Structure
from .diagnostics import Diagnostics

__all__ = ["check_machine", "snake_case"]


def check_machine(syntax: s.MachineSyntax, text: str, diags: Diagnostics) -> ir.Machine | None:
    """Check one parsed machine; returns None when it has errors (all of them are in `diags`).

    When the file already has syntax errors, declarations that failed to parse are missing, so the structural checks
    (unreachable states, dead ends) would only repeat those errors; they are skipped.
    """
    before = len([d for d in diags.items if d.severity == "error"])
    had_syntax_errors = any(d.span.path == syntax.path and d.severity == "error" for d in diags.items)
    ck = Checking(syntax, diags, text, structure=not had_syntax_errors)
    Declarations(ck).run()
    EventLowering(ck).run()
    properties = Properties(ck).run()
    Structure(ck).run()
    persist = Persistence(ck).run()
    machine = ir.Machine(
        name=syntax.name.text, kind=ck.kind, doc=syntax.doc, path=syntax.path,
        source_sha256=hashlib.sha256(text.encode()).hexdigest(), keys=tuple(ck.keys),
        enums=tuple(ck.sym.enums.values()), variables=tuple(ck.variables), states=tuple(ck.states),
        events=tuple(ck.events), transitions=tuple(ck.rows.transitions), rejections=tuple(ck.rows.rejections),
        invariants=properties.invariants, steps=properties.steps, traces=properties.traces, span=syntax.span,
        persist=persist,
    )
    after = len([d for d in diags.items if d.severity == "error"])
    return machine if after == before else None

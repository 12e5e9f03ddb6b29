"""The checker's third pass: properties. Invariants (one state), step properties (two states, of every event or of
one, with its parameters), and trace properties: `exclusive` (a set variable no two instances share), `monotonic`
(an integer variable that never goes down), `within` (from some states to others within a bound), and `before` and
`fenced`, which name this machine first (the other machine is checked once every spec is loaded). Property names are
unique; definitions are type-checked here even when no property uses them.
Must not import: lark, z3, pyspark.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from . import ir
from . import syntax as s
from .check_context import Checking, members
from .diagnostics import unknown_name_message
from .typecheck import INVARIANT, STEP, Scope


@dataclass(frozen=True, slots=True)
class CheckedProperties:
    invariants: tuple[ir.Invariant, ...]
    steps: tuple[ir.StepProperty, ...]
    traces: tuple[ir.TraceProperty, ...]


class Properties:
    def __init__(self, ck: Checking) -> None:
        self.ck = ck

    def run(self) -> CheckedProperties:
        ck, syntax = self.ck, self.ck.syn.members
        invariants = tuple(inv for m in members(syntax, s.InvariantDecl) if (inv := self._invariant(m)))
        steps = tuple(st for m in members(syntax, s.StepDecl) if (st := self._step(m)))
        traces = tuple(tr for m in members(syntax, s.TraceDecl) if (tr := self._trace(m)))
        ck.unique([m.name for m in syntax if isinstance(m, s.InvariantDecl | s.StepDecl | s.TraceDecl)], "property")
        for d in members(syntax, s.DefDecl):
            ck.exprs.check(s.NameSyntax(d.name.text, d.name.span), INVARIANT)  # type-check defs even when unused
        return CheckedProperties(invariants, steps, traces)

    def _invariant(self, m: s.InvariantDecl) -> ir.Invariant | None:
        expr = self.ck.exprs.check_bool(m.expr, INVARIANT)
        return ir.Invariant(m.name.text, expr, m.doc, m.span) if expr is not None else None

    def _step(self, m: s.StepDecl) -> ir.StepProperty | None:
        ck = self.ck
        scope = STEP
        if m.event is not None:
            event = next((e for e in ck.events if e.name == m.event.text), None)
            if event is None:
                message, _ = unknown_name_message("event", m.event.text, [e.name for e in ck.events])
                ck.diags.error(m.event.span, message)
                return None
            scope = Scope(f"step property '{m.name.text}' of {event.name}", primes=True, params=event.params)
        expr = ck.exprs.check_bool(m.expr, scope)
        if expr is None:
            return None
        return ir.StepProperty(m.name.text, expr, m.doc, m.span, m.event.text if m.event is not None else None)

    def _trace(self, m: s.TraceDecl) -> ir.TraceProperty | None:
        if m.form in ("exclusive", "monotonic"):
            return self._over_a_variable(m)
        ck = self.ck
        if m.form == "within":
            src = ck.state_list(m.states_from)
            dst = ck.state_list(m.states_to)
            bound = ck.exprs.check(m.bound, INVARIANT, ir.INT_ANY) if m.bound is not None else None
            if bound is None:
                return None
            return ir.TraceProperty(m.name.text, "within", (), (), src, dst, bound, m.doc, m.span)
        # before / fenced: the first part names this machine; the other machine is checked with all specs loaded
        own = m.subject[0]
        if own.text != ck.syn.name.text:
            ck.diags.error(own.span, f"a `{m.form}` property is declared in the machine it constrains: expected "
                                     f"'{ck.syn.name.text}', got '{own.text}'")
            return None
        if m.form == "before" and m.subject[1].text not in ck.sym.states:
            message, _ = unknown_name_message("state", m.subject[1].text, ck.sym.states)
            ck.diags.error(m.subject[1].span, message)
            return None
        if m.form == "fenced" and not self._fenced_event(m):
            return None
        return ir.TraceProperty(m.name.text, cast(ir.TraceForm, m.form), tuple(x.text for x in m.subject),
                                tuple(p.text for p in m.per), doc=m.doc, span=m.span)

    def _over_a_variable(self, m: s.TraceDecl) -> ir.TraceProperty | None:
        """`exclusive` (of a set variable) or `monotonic` (of an integer one), per key fields or variables."""
        ck = self.ck
        fields = {**ck.sym.keys, **ck.sym.variables}

        def field_named(ident: s.Ident, what: str) -> ir.Field | None:
            if ident.text not in fields:
                message, _ = unknown_name_message(what, ident.text, fields)
                ck.diags.error(ident.span, message)
                return None
            return fields[ident.text]

        subject = field_named(m.subject[0], "variable")
        ok = subject is not None and all(field_named(p, "key field or variable") is not None for p in m.per)
        if subject is not None and m.form == "exclusive" and not isinstance(subject.type, ir.SetType):
            ck.diags.error(m.subject[0].span, f"`exclusive` needs a set variable; '{subject.name}' is {subject.type}")
            ok = False
        if subject is not None and m.form == "monotonic" and not isinstance(subject.type, ir.IntType):
            ck.diags.error(m.subject[0].span, f"`monotonic` needs an integer variable; '{subject.name}' is "
                                              f"{subject.type}")
            ok = False
        if not ok:
            return None
        return ir.TraceProperty(m.name.text, cast(ir.TraceForm, m.form), (m.subject[0].text,),
                                tuple(p.text for p in m.per), doc=m.doc, span=m.span)

    def _fenced_event(self, m: s.TraceDecl) -> bool:
        """`fenced THIS.Event.param by ...`: the event exists here and `param` is one of its integer parameters."""
        ck = self.ck
        event, param = m.subject[1], m.subject[2]
        decl = next((e for e in members(ck.syn.members, s.EventDecl) if e.name.text == event.text), None)
        if decl is None:
            names = [e.name.text for e in members(ck.syn.members, s.EventDecl)]
            message, _ = unknown_name_message("event", event.text, names)
            ck.diags.error(event.span, message)
            return False
        params = {p.name.text: p for p in decl.params}
        if param.text not in params:
            message, _ = unknown_name_message(f"parameter of {event.text}", param.text, params)
            ck.diags.error(param.span, message)
            return False
        return True

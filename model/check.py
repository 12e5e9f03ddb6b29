"""Checking and lowering: one machine's syntax → `ir.Machine`, with every problem reported as a diagnostic.

Owns: declaration checks (duplicates, types, defaults, flags, the single initial state), the lowering of an event's
clauses into disjoint rows (ordered `check`s become rejection rows and are conjoined into the table rows that follow),
effect checks (`ensures v' == e`, at most one per variable, the frame rule for the rest) and structural checks
(unreachable and dead-end states, transitions out of final states, rows that are syntactically both allowed and
rejected or nondeterministic). Everything z3 is needed for (disjointness under guards, totality, inductiveness) is
the verifier's job.
Must not import: lark, z3, pyspark.
"""

from __future__ import annotations

import hashlib
import re
from collections import deque
from dataclasses import dataclass, field, replace
from typing import TypeVar, cast

from . import ir
from . import syntax as s
from .diagnostics import Diagnostics, Span, unknown_name_message
from .kafka_errors import KAFKA_ERRORS
from .pretty import render
from .traceschema import COMMON
from .typecheck import INVARIANT, STEP, ExprChecker, Scope, Symbols

T = TypeVar("T")


def snake_case(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def check_machine(syntax: s.MachineSyntax, text: str, diags: Diagnostics) -> ir.Machine | None:
    """Check one parsed machine; returns None when it has errors (all of them are in `diags`).

    When the file already has syntax errors, declarations that failed to parse are missing, so the structural checks
    (unreachable states, dead ends) would only repeat those errors; they are skipped.
    """
    before = len([d for d in diags.items if d.severity == "error"])
    had_syntax_errors = any(d.span.path == syntax.path and d.severity == "error" for d in diags.items)
    checker = _MachineChecker(syntax, diags, text, structure=not had_syntax_errors)
    machine = checker.run(hashlib.sha256(text.encode()).hexdigest())
    after = len([d for d in diags.items if d.severity == "error"])
    return machine if after == before else None


@dataclass(slots=True)
class _Rows:
    transitions: list[ir.Transition] = field(default_factory=list)
    rejections: list[ir.Rejection] = field(default_factory=list)
    next_index: int = 0

    def index(self) -> int:
        self.next_index += 1
        return self.next_index - 1


class _MachineChecker:
    def __init__(self, syntax: s.MachineSyntax, diags: Diagnostics, text: str, *, structure: bool = True) -> None:
        self.syn = syntax
        self.lines = text.split("\n")
        self.structure = structure
        self.diags = diags
        self.sym = Symbols(syntax.name.text, lost=set(syntax.lost_names))
        self.exprs = ExprChecker(self.sym, diags)
        self.names: dict[str, Span] = {}  # every value-level name, for duplicate detection
        self.kind: ir.MachineKind = "coordinator"
        self.keys: list[ir.Field] = []
        self.variables: list[ir.Field] = []
        self.states: list[ir.State] = []
        self.events: list[ir.Event] = []
        self.rows = _Rows()
        self.rows_incomplete = False  # a row failed to check: structural checks would only repeat that error
        self.writes_spans: list[Span] = []  # every `writes` clause (they need a `persist` declaration)

    # ------------------------------------------------------------ driver

    def run(self, source_sha256: str) -> ir.Machine:
        members = self.syn.members
        self.first_declared = _first_declarations(members)
        self._check_file_name()
        kinds = [m for m in members if isinstance(m, s.KindDecl)]
        for kind in kinds[:1]:
            self._kind(kind)
        for extra in kinds[1:]:
            self.diags.error(extra.span, f"a machine has one `kind` (already declared at {kinds[0].span})")
        self._keys(_of(members, s.KeyDecl))
        for enum in _of(members, s.EnumDecl):
            self._enum(enum)
        for state in _of(members, s.StateDecl):
            self._state(state)
        self.sym.states = tuple(st.name for st in self.states)
        for const in _of(members, s.ConstDecl):
            self._const(const)
        for definition in _of(members, s.DefDecl):
            self._declare(definition.name)
            self.sym.defs[definition.name.text] = definition
        for var in _of(members, s.VarDecl):
            self._var(var)
        self._initial_state()
        event_names: dict[str, Span] = {}
        for event in _of(members, s.EventDecl):
            self._event(event, event_names)
        invariants = [inv for m in members if isinstance(m, s.InvariantDecl) if (inv := self._invariant(m))]
        steps = [st for m in members if isinstance(m, s.StepDecl) if (st := self._step(m))]
        traces = [tr for m in members if isinstance(m, s.TraceDecl) if (tr := self._trace(m))]
        self._unique([m.name for m in members if isinstance(m, s.InvariantDecl | s.StepDecl | s.TraceDecl)],
                     "property")
        for d in (m for m in members if isinstance(m, s.DefDecl)):
            self.exprs.check(s.NameSyntax(d.name.text, d.name.span), INVARIANT)  # type-check defs even when unused
        if self.structure and not self.rows_incomplete:
            self._structure()
        self._conflicts()  # compares only rows that checked, so it is meaningful even after other errors
        persist = self._persist(_of(members, s.PersistDecl))
        return ir.Machine(
            name=self.syn.name.text, kind=self.kind, doc=self.syn.doc, path=self.syn.path,
            source_sha256=source_sha256, keys=tuple(self.keys), enums=tuple(self.sym.enums.values()),
            variables=tuple(self.variables), states=tuple(self.states), events=tuple(self.events),
            transitions=tuple(self.rows.transitions), rejections=tuple(self.rows.rejections),
            invariants=tuple(invariants), steps=tuple(steps), traces=tuple(traces), span=self.syn.span,
            persist=persist,
        )

    # ------------------------------------------------------------ small helpers

    def _text(self, span: Span) -> str:
        """The source text of `span`, whitespace folded (for showing a condition as the user wrote it)."""
        if span.line <= 0:
            return ""
        if span.line == span.end_line:
            piece = self.lines[span.line - 1][span.col - 1: span.end_col - 1]
        else:
            first = self.lines[span.line - 1][span.col - 1:]
            middle = self.lines[span.line: span.end_line - 1]
            last = self.lines[span.end_line - 1][: span.end_col - 1]
            piece = " ".join([first, *middle, last])
        return " ".join(piece.split())

    def _declare(self, ident: s.Ident, what: str = "name") -> bool:
        if ident.text in ("state", "pending"):
            self.diags.error(ident.span, f"'{ident.text}' is a reserved word")
            return False
        first = self.first_declared.get(ident.text, ident.span)
        if ident.text in self.names or first != ident.span:
            self.diags.error(ident.span, f"duplicate {what} '{ident.text}' (first declared at {first})")
            return False
        self.names[ident.text] = ident.span
        return True

    def _unique(self, idents: list[s.Ident], what: str) -> None:
        seen: dict[str, Span] = {}
        for ident in idents:
            if ident.text in seen:
                self.diags.error(ident.span, f"duplicate {what} '{ident.text}' (first declared at {seen[ident.text]})")
            else:
                seen[ident.text] = ident.span

    def _type(self, t: s.TypeSyntax) -> ir.Type | None:
        if isinstance(t, s.RangeTypeSyntax):
            if t.lo > t.hi:
                self.diags.error(t.span, f"empty range {t.lo}..{t.hi}: the lower bound must not exceed the upper")
                return None
            return ir.IntType(f"{t.lo}..{t.hi}", t.lo, t.hi)
        if isinstance(t, s.SetTypeSyntax):
            element = self._type(t.element)
            if element is None:
                return None
            if isinstance(element, ir.SetType):
                self.diags.error(t.span, "sets of sets are not supported")
                return None
            return ir.SetType(element)
        name = t.name.text
        if name == "bool":
            return ir.BOOL
        if name in ir.BUILTIN_INT_TYPES:
            return ir.BUILTIN_INT_TYPES[name]
        if name in ir.STRING_ALIASES:
            return ir.StringType(name)
        if name in self.sym.enums:
            return self.sym.enums[name]
        if name in self.sym.lost:
            return None  # an enum whose declaration failed to parse
        known = ["bool", *ir.BUILTIN_INT_TYPES, *ir.STRING_ALIASES, *self.sym.enums]
        message, _ = unknown_name_message("type", name, known)
        self.diags.error(t.name.span, message)
        return None

    def _constant(self, e: s.ExprSyntax, typ: ir.Type, what: str) -> ir.Lit | None:
        expr = self.exprs.check(e, Scope(f"{what} (a constant)", variables=False))
        if expr is None:
            return None
        value = _fold(expr)
        if value is None:
            self.diags.error(e.span, f"{what} must be a constant (a literal or a `const`)")
            return None
        if not ir.compatible(value.type, typ) and not (isinstance(expr, ir.EnumLit) and expr.type == typ):
            self.diags.error(e.span, f"{what} has type {value.type}, expected {typ}")
            return None
        if isinstance(typ, ir.IntType) and isinstance(value.value, int) and not typ.contains(value.value):
            self.diags.error(e.span, f"{what} {value.value} is outside {_range(typ)}")
            return None
        return ir.Lit(value.value, typ, value.span)

    # ------------------------------------------------------------ declarations

    def _check_file_name(self) -> None:
        path = self.syn.path
        if not path.endswith(".sm"):
            return
        stem = path.rsplit("/", 1)[-1][: -len(".sm")]
        expected = snake_case(self.syn.name.text)
        if stem != expected:
            self.diags.error(self.syn.name.span, f"machine '{self.syn.name.text}' must live in '{expected}.sm', "
                                                 f"not '{stem}.sm' (one machine per file, named after it)")

    def _kind(self, m: s.KindDecl) -> None:
        if m.kind.text not in ir.MACHINE_KINDS:
            message, _ = unknown_name_message("machine kind", m.kind.text, ir.MACHINE_KINDS)
            self.diags.error(m.kind.span, message)
            return
        self.kind = m.kind.text

    def _keys(self, decls: list[s.KeyDecl]) -> None:
        if not decls:
            self.diags.error(self.syn.name.span, f"machine '{self.syn.name.text}' has no `key`: say what identifies "
                                                 "one instance (e.g. `key transactional_id: string`)")
            return
        for decl in decls[1:]:
            self.diags.error(decl.span, "a machine has one `key` declaration (list several fields in it)")
        for f in decls[0].fields:
            if f.name.text in _TRACE_COLUMNS:
                self.diags.error(f.name.span, f"key field '{f.name.text}' would clash with the trace column of that "
                                              "name; rename it")
            t = self._type(f.type)
            if t is None or not self._declare(f.name, "key field"):
                continue
            if isinstance(t, ir.SetType):
                self.diags.error(f.type.span, "a key field cannot be a set")
                continue
            fld = ir.Field(f.name.text, t, f.span)
            self.keys.append(fld)
            self.sym.keys[fld.name] = fld

    def _enum(self, m: s.EnumDecl) -> None:
        if m.name.text in ("bool", "set", *ir.STRING_ALIASES, *ir.BUILTIN_INT_TYPES):
            self.diags.error(m.name.span, f"enum '{m.name.text}' would hide the built-in type of that name")
            self.sym.lost |= {mem.text for mem in m.members}
            return
        if m.name.text in self.sym.enums:
            self.diags.error(m.name.span, f"duplicate type '{m.name.text}'")
            return
        members = tuple(mem.text for mem in m.members if self._declare(mem, "enum member"))
        enum = ir.EnumType(m.name.text, members)
        self.sym.enums[enum.name] = enum
        for mem in members:
            self.sym.enum_members[mem] = enum

    def _state(self, m: s.StateDecl) -> None:
        if not self._declare(m.name, "state") and any(st.name == m.name.text for st in self.states):
            return  # a state declared twice; a state sharing a name with a constant is kept (no cascades)
        flags = [f.text for f in m.flags]
        for i, f in enumerate(m.flags):
            if f.text in flags[:i]:
                self.diags.error(f.span, f"flag '{f.text}' given twice")
        st = ir.State(m.name.text, initial="initial" in flags, final="final" in flags, pending="pending" in flags,
                      expirable="expirable" in flags, doc=m.doc, span=m.span)
        if st.initial and st.pending:
            self.diags.error(m.name.span, f"initial state '{st.name}' cannot be pending-only")
        if st.initial and st.final:
            self.diags.error(m.name.span, f"state '{st.name}' cannot be both initial and final")
        self.states.append(st)

    def _initial_state(self) -> None:
        if not self.structure:
            return  # declarations were lost to syntax errors: "no state" / "no initial state" would only repeat them
        initials = [st for st in self.states if st.initial]
        if not self.states:
            self.diags.error(self.syn.name.span, "a machine needs at least one state")
        elif not initials:
            self.diags.error(self.states[0].span, "no initial state: mark exactly one state `initial`")
        for st in initials[1:]:
            self.diags.error(st.span, f"more than one initial state: '{initials[0].name}' and '{st.name}'")

    def _const(self, m: s.ConstDecl) -> None:
        t = self._type(m.type)
        if t is None or not self._declare(m.name, "constant"):
            return
        value = self._constant(m.value, t, f"constant '{m.name.text}'")
        if value is not None:
            self.sym.consts[m.name.text] = value

    def _var(self, m: s.VarDecl) -> None:
        if m.name.text in _TRACE_COLUMNS or m.name.text.startswith("arg_"):
            self.diags.error(m.name.span, f"variable '{m.name.text}' would clash with the trace column of that name "
                                          "(trace rows carry every variable next to machine, key, seq, ts_ms, node, "
                                          "coordinator_epoch, kind, event, row, error, from_state, to_state, pending "
                                          "and arg_<parameter>); rename it")
        t = self._type(m.type)
        if t is None or not self._declare(m.name, "variable"):
            self.sym.lost.add(m.name.text)
            return
        value = self._constant(m.default, t, f"default of '{m.name.text}'")
        if value is None:
            self.sym.lost.add(m.name.text)
            return
        fld = ir.Field(m.name.text, t, m.span, value.value, m.doc)
        self.variables.append(fld)
        self.sym.variables[fld.name] = fld

    # ------------------------------------------------------------ events and rows

    def _state_list(self, sl: s.StateList | None) -> tuple[str, ...]:
        live = tuple(st.name for st in self.states if not st.final)
        if sl is None or sl.every:
            return live
        out: list[str] = []
        for ident in sl.names:
            if ident.text in self.sym.lost and ident.text not in self.sym.states:
                continue
            if ident.text not in self.sym.states:
                message, _ = unknown_name_message("state", ident.text, self.sym.states)
                self.diags.error(ident.span, message)
            elif ident.text in out:
                self.diags.error(ident.span, f"state '{ident.text}' listed twice")
            else:
                out.append(ident.text)
        order = {name: i for i, name in enumerate(self.sym.states)}
        return tuple(sorted(out, key=order.__getitem__))

    def _error_name(self, ident: s.Ident) -> int | None:
        """The code of a Kafka error name; for client and task machines also a Java exception the client throws
        (`IllegalStateException`: no wire code, -1)."""
        if self.kind in ("client", "task") and re.fullmatch(r"[A-Z][A-Za-z]*Exception", ident.text):
            return -1
        if ident.text not in KAFKA_ERRORS:
            message, _ = unknown_name_message("Kafka error", ident.text, KAFKA_ERRORS)
            self.diags.error(ident.span, message)
            return None
        return KAFKA_ERRORS[ident.text][0]

    def _event(self, m: s.EventDecl, seen: dict[str, Span]) -> None:
        if m.name.text in seen:
            self.diags.error(m.name.span, f"duplicate event '{m.name.text}' (first declared at {seen[m.name.text]})")
            return
        seen[m.name.text] = m.name.span
        params = self._params(m)
        scope = Scope(f"a condition of event '{m.name.text}'", pending=True, params=tuple(params))
        checks: list[ir.Expr] = []
        requires: list[ir.Expr] = []
        table_started = False
        for clause in m.clauses:
            if isinstance(clause, s.LetClause | s.RequiresClause) and table_started:
                what = "let" if isinstance(clause, s.LetClause) else "requires"
                self.diags.error(clause.span, f"`{what}` comes before the event's `from` and `reject` rows")
            if isinstance(clause, s.LetClause):
                scope = self._let(clause, scope, params)
            elif isinstance(clause, s.RequiresClause):
                cond = self.exprs.check_bool(clause.cond, scope)
                if cond is not None:
                    requires.append(cond)
            elif isinstance(clause, s.CheckClause):
                if table_started:
                    self.diags.error(clause.span, "`check` clauses come before the event's `from` and `reject` rows "
                                                  "(they guard every row that follows)")
                cond = self.exprs.check_bool(clause.cond, scope)
                code = self._error_name(clause.error)
                if cond is not None and code is not None:
                    self._check_row(m.name.text, cond, checks, clause, code)
                    checks.append(cond)
            elif isinstance(clause, s.RejectClause):
                table_started = True
                self._reject_row(m.name.text, clause, scope, checks)
            else:
                table_started = True
                self._transition_row(m.name.text, clause, scope, checks)
        self._assign_assumptions(m.name.text, requires)
        self.events.append(ir.Event(m.name.text, tuple(params), m.doc, ir.conj(requires), m.span, m.internal))

    def _assign_assumptions(self, event: str, requires: list[ir.Expr]) -> None:
        """Give each row of `event` the preconditions that concern it: those mentioning no parameter, and those
        mentioning a parameter the row reads (in its guard or its effects)."""
        conjuncts = [c for r in requires for c in ir.conjuncts(r)]

        def share(used: frozenset[str]) -> ir.Expr:
            return ir.conj([c for c in conjuncts if not ir.params_of(c) or ir.params_of(c) & used])

        self.rows.transitions = [
            replace(t, assumes=share(ir.params_of(t.guard).union(*(ir.params_of(ef.value) for ef in t.effects))))
            if t.event == event else t for t in self.rows.transitions]
        self.rows.rejections = [replace(r, assumes=share(ir.params_of(r.guard))) if r.event == event else r
                                for r in self.rows.rejections]

    def _params(self, m: s.EventDecl) -> list[ir.Field]:
        params: list[ir.Field] = []
        for p in m.params:
            t = self._type(p.type)
            if p.name.text in ("state", "pending"):
                self.diags.error(p.name.span, f"'{p.name.text}' is a reserved word")
                continue
            if p.name.text in self.names:
                self.diags.error(p.name.span, f"parameter '{p.name.text}' of event '{m.name.text}' hides the "
                                              f"{self._what(p.name.text)} declared at {self.names[p.name.text]}")
                continue
            if any(q.name == p.name.text for q in params):
                self.diags.error(p.name.span, f"duplicate parameter '{p.name.text}'")
                continue
            if t is not None:
                params.append(ir.Field(p.name.text, t, p.span))
            else:
                self.sym.lost.add(p.name.text)  # its type has an error: uses of it are not reported again
        return params

    def _what(self, name: str) -> str:
        if name in self.sym.variables:
            return "variable"
        if name in self.sym.states:
            return "state"
        return "name"

    def _let(self, clause: s.LetClause, scope: Scope, params: list[ir.Field]) -> Scope:
        name = clause.name.text
        hidden = self.names.get(name) or next((p.span for p in params if p.name == name), None)
        if hidden is not None or any(n == name for n, _ in scope.lets):
            where = f" (declared at {hidden})" if hidden is not None else " (an earlier `let`)"
            self.diags.error(clause.name.span, f"`let {name}` hides another name{where}")
            return scope
        value = self.exprs.check(clause.value, scope)
        return scope.with_let(name, value) if value is not None else scope

    def _check_row(self, event: str, cond: ir.Expr, passed: list[ir.Expr], clause: s.CheckClause, code: int) -> None:
        failed = ir.negate(cond)
        self.rows.rejections.append(ir.Rejection(
            index=self.rows.index(), event=event, sources=self._state_list(None), guard=ir.conj([*passed, failed]),
            local_guard=failed, error=clause.error.text, error_code=code, origin="check", doc=clause.doc,
            span=clause.span, condition_text=_negated_text(self._text(clause.cond.span))))

    def _reject_row(self, event: str, clause: s.RejectClause, scope: Scope, checks: list[ir.Expr]) -> None:
        sources = self._state_list(clause.states)
        cond = self.exprs.check_bool(clause.cond, scope) if clause.cond is not None else ir.TRUE
        code = self._error_name(clause.error)
        self._no_final_sources(clause.states, "a rejection")
        if cond is None or code is None:
            self.rows_incomplete = True
            return
        self.rows.rejections.append(ir.Rejection(
            index=self.rows.index(), event=event, sources=sources, guard=ir.conj([*checks, cond]), local_guard=cond,
            error=clause.error.text, error_code=code, origin="reject", doc=clause.doc, span=clause.span,
            condition_text=self._text(clause.cond.span) if clause.cond is not None else "true"))

    def _transition_row(self, event: str, clause: s.TransitionClause, scope: Scope, checks: list[ir.Expr]) -> None:
        sources = self._state_list(clause.sources)
        stay = clause.target.text == ""
        target_ok = stay or clause.target.text in self.sym.states
        if not target_ok and clause.target.text in self.sym.lost:
            self.rows_incomplete = True
            return
        if not target_ok:
            message, _ = unknown_name_message("state", clause.target.text, self.sym.states)
            self.diags.error(clause.target.span, message)
        self._no_final_sources(clause.sources, "a transition")
        guards = [self.exprs.check_bool(g, scope) for g in clause.guards]  # checked even when the target is bad,
        effects = self._effects(clause, scope)  # so that one run reports every error of the row
        answer, answer_code = "NONE", 0
        for extra in clause.answers[1:]:
            self.diags.error(extra.span, "a transition has at most one `answer`")
        answer_ok = True
        if clause.answers:
            code = self._error_name(clause.answers[0])
            answer_ok = code is not None
            answer, answer_code = clause.answers[0].text, code or 0
        if not target_ok or not answer_ok or any(g is None for g in guards) or effects is None:
            self.rows_incomplete = True
            return
        for repeated in clause.writes[1:]:
            self.diags.error(repeated, "`writes` is given twice")
        if clause.writes and not stay and self._state_named(clause.target.text).pending \
                and not self._state_named(clause.target.text).final:
            self.diags.error(clause.writes[0], f"'{clause.target.text}' is a pending-only state, never written: a "
                                               "transition into it cannot write a record (the one that leaves it does)")
        local = ir.conj([g for g in guards if g is not None])
        self.rows.transitions.append(ir.Transition(
            index=self.rows.index(), event=event, sources=sources, target=None if stay else clause.target.text,
            guard=ir.conj([*checks, local]), local_guard=local, effects=effects, choice=clause.choice,
            doc=clause.doc, span=clause.span, answer=answer, answer_code=answer_code,
            condition_text=_join_conditions([self._text(g.span) for g in clause.guards]),
            writes=bool(clause.writes)))
        if clause.writes:
            self.writes_spans.append(clause.writes[0])

    def _no_final_sources(self, sl: s.StateList | None, what: str) -> None:
        if sl is None or sl.every:
            return
        for ident in sl.names:
            if ident.text in self.sym.states and self._state_named(ident.text).final:
                self.diags.error(ident.span, f"final state '{ident.text}' cannot be the source of {what}")

    def _state_named(self, name: str) -> ir.State:
        return next(st for st in self.states if st.name == name)

    def _effects(self, clause: s.TransitionClause, scope: Scope) -> tuple[ir.Effect, ...] | None:
        effects: list[ir.Effect] = []
        ok = True
        for e in clause.ensures:
            if not (isinstance(e, s.BinarySyntax) and e.op == "==" and isinstance(e.left, s.PrimedSyntax)):
                self.diags.error(e.span, "`ensures` must have the form `name' == expression` (one variable each; "
                                         "variables not mentioned keep their value)")
                ok = False
                continue
            name = e.left.name
            if name in self.sym.lost:
                ok = False
                continue
            if name not in self.sym.variables:
                if name == "state":
                    self.diags.error(e.left.span, "`state'` is set by the transition's target, not by `ensures`")
                elif name in self.sym.keys:
                    self.diags.error(e.left.span, f"key field '{name}' cannot change")
                else:
                    message, _ = unknown_name_message("variable", name, self.sym.variables)
                    self.diags.error(e.left.span, message)
                ok = False
                continue
            if any(ef.var == name for ef in effects):
                self.diags.error(e.left.span, f"'{name}'' is assigned twice in one transition")
                ok = False
                continue
            var_type = self.sym.variables[name].type
            value = self.exprs.check(e.right, Scope(f"the new value of '{name}' (computed from the state before the "
                                                    "transition)", scope.variables, False, True, scope.params,
                                                    scope.lets))
            if value is None:
                ok = False
                continue
            if not ir.compatible(value.type, var_type):
                self.diags.error(e.right.span, f"'{name}' has type {var_type}, but this value has type {value.type}")
                ok = False
                continue
            folded = _fold(value)
            if folded is not None and isinstance(var_type, ir.IntType) and isinstance(folded.value, int) \
                    and not var_type.contains(folded.value):
                self.diags.error(e.right.span, f"'{name}' cannot be {folded.value}: outside {_range(var_type)}")
                ok = False
                continue
            effects.append(ir.Effect(name, value, e.span))
        return tuple(effects) if ok else None

    # ------------------------------------------------------------ persistence

    def _persist(self, decls: list[s.PersistDecl]) -> ir.Persist | None:
        """The `persist` declaration (at most one); `writes` clauses need it, and it needs at least one of them."""
        for extra in decls[1:]:
            self.diags.error(extra.span, f"a machine has one `persist` declaration (already declared at "
                                         f"{decls[0].span})")
        if not decls:
            for span in self.writes_spans:
                self.diags.error(span, "`writes` needs a `persist` declaration naming the record and the variables "
                                       "it carries (see spec/README.md, persistence)")
            return None
        decl = decls[0]
        fields: list[str] = []
        ok = True
        seen: dict[str, Span] = {}
        for ident in decl.fields:
            if ident.text in seen:
                self.diags.error(ident.span, f"'{ident.text}' is listed twice (first at {seen[ident.text]})")
                ok = False
                continue
            seen[ident.text] = ident.span
            if ident.text == "state" or ident.text in self.sym.variables:
                fields.append(ident.text)
            elif ident.text in self.sym.keys:
                self.diags.error(ident.span, f"key field '{ident.text}' is the record's key, not a field of its "
                                             "value: list only variables (and `state`)")
                ok = False
            elif ident.text not in self.sym.lost:
                message, _ = unknown_name_message("variable", ident.text, self.sym.variables)
                self.diags.error(ident.span, message)
                ok = False
        if not self.writes_spans and not self.rows_incomplete:
            self.diags.error(decl.span, f"no transition writes {decl.record.text}: mark the transitions that write it "
                                        "with `writes`")
            ok = False
        if not ok:
            return None
        variables = tuple(v.name for v in self.variables if v.name in fields)
        return ir.Persist(decl.record.text, variables, "state" in fields, decl.doc, decl.span)

    # ------------------------------------------------------------ properties

    def _invariant(self, m: s.InvariantDecl) -> ir.Invariant | None:
        expr = self.exprs.check_bool(m.expr, INVARIANT)
        return ir.Invariant(m.name.text, expr, m.doc, m.span) if expr is not None else None

    def _step(self, m: s.StepDecl) -> ir.StepProperty | None:
        scope = STEP
        if m.event is not None:
            event = next((e for e in self.events if e.name == m.event.text), None)
            if event is None:
                message, _ = unknown_name_message("event", m.event.text, [e.name for e in self.events])
                self.diags.error(m.event.span, message)
                return None
            scope = Scope(f"step property '{m.name.text}' of {event.name}", primes=True, params=event.params)
        expr = self.exprs.check_bool(m.expr, scope)
        if expr is None:
            return None
        return ir.StepProperty(m.name.text, expr, m.doc, m.span, m.event.text if m.event is not None else None)

    def _trace(self, m: s.TraceDecl) -> ir.TraceProperty | None:
        ok = True
        fields = {**self.sym.keys, **self.sym.variables}

        def field_named(ident: s.Ident, what: str) -> ir.Field | None:
            if ident.text not in fields:
                message, _ = unknown_name_message(what, ident.text, fields)
                self.diags.error(ident.span, message)
                return None
            return fields[ident.text]

        per = tuple(p.text for p in m.per)
        if m.form in ("exclusive", "monotonic"):
            subject = field_named(m.subject[0], "variable")
            ok = subject is not None and all(field_named(p, "key field or variable") is not None for p in m.per)
            if subject is not None and m.form == "exclusive" and not isinstance(subject.type, ir.SetType):
                self.diags.error(m.subject[0].span, f"`exclusive` needs a set variable; '{subject.name}' is "
                                                    f"{subject.type}")
                ok = False
            if subject is not None and m.form == "monotonic" and not isinstance(subject.type, ir.IntType):
                self.diags.error(m.subject[0].span, f"`monotonic` needs an integer variable; '{subject.name}' is "
                                                    f"{subject.type}")
                ok = False
            return ir.TraceProperty(m.name.text, cast(ir.TraceForm, m.form), (m.subject[0].text,), per, doc=m.doc,
                                    span=m.span) \
                if ok else None
        if m.form == "within":
            src = self._state_list(m.states_from)
            dst = self._state_list(m.states_to)
            bound = self.exprs.check(m.bound, INVARIANT, ir.INT_ANY) if m.bound is not None else None
            if bound is None:
                return None
            return ir.TraceProperty(m.name.text, "within", (), (), src, dst, bound, m.doc, m.span)
        # before / fenced: the first part names this machine; the other machine is checked with all specs loaded
        own = m.subject[0]
        if own.text != self.syn.name.text:
            self.diags.error(own.span, f"a `{m.form}` property is declared in the machine it constrains: expected "
                                       f"'{self.syn.name.text}', got '{own.text}'")
            return None
        if m.form == "before" and m.subject[1].text not in self.sym.states:
            message, _ = unknown_name_message("state", m.subject[1].text, self.sym.states)
            self.diags.error(m.subject[1].span, message)
            return None
        if m.form == "fenced" and not self._fenced_event(m):
            return None
        return ir.TraceProperty(m.name.text, cast(ir.TraceForm, m.form), tuple(x.text for x in m.subject), per,
                                doc=m.doc, span=m.span)

    def _fenced_event(self, m: s.TraceDecl) -> bool:
        """`fenced THIS.Event.param by ...`: the event exists here and `param` is one of its integer parameters."""
        event, param = m.subject[1], m.subject[2]
        decl = next((e for e in self.syn.members if isinstance(e, s.EventDecl) and e.name.text == event.text), None)
        if decl is None:
            names = [e.name.text for e in self.syn.members if isinstance(e, s.EventDecl)]
            message, _ = unknown_name_message("event", event.text, names)
            self.diags.error(event.span, message)
            return False
        params = {p.name.text: p for p in decl.params}
        if param.text not in params:
            message, _ = unknown_name_message(f"parameter of {event.text}", param.text, params)
            self.diags.error(param.span, message)
            return False
        return True

    # ------------------------------------------------------------ structure

    def _structure(self) -> None:
        if not self.states or sum(st.initial for st in self.states) != 1:
            return
        edges: dict[str, set[str]] = {st.name: set() for st in self.states}
        for t in self.rows.transitions:
            if t.target is None:
                continue  # a `stay` row leads nowhere new
            for src in t.sources:
                edges[src].add(t.target)
        initial = next(st.name for st in self.states if st.initial)
        seen = {initial}
        queue = deque([initial])
        while queue:
            for nxt in sorted(edges[queue.popleft()]):
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
        for st in self.states:
            if st.name not in seen:
                self.diags.error(st.span, f"state '{st.name}' is unreachable: no transition leads to it from the "
                                          f"initial state '{initial}'")
            elif not st.final and not edges[st.name]:
                self.diags.error(st.span, f"state '{st.name}' has no outgoing transition (a dead end): add one, or "
                                          "mark it `final`")

    def _conflicts(self) -> None:
        """Rows that are syntactically both allowed and rejected, or two transitions with the same guard."""
        by_key: dict[tuple[str, str], list[ir.Row]] = {}
        rows: list[ir.Row] = [*self.rows.transitions, *self.rows.rejections]
        for row in sorted(rows, key=lambda r: r.index):
            for src in row.sources:
                by_key.setdefault((src, row.event), []).append(row)
        reported: set[tuple[int, int]] = set()
        final = {st.name for st in self.states if st.final}
        for (state, event), rows in sorted(by_key.items()):
            if state in final:
                continue  # rows out of a final state are already errors
            for i, a in enumerate(rows):
                for b in rows[i + 1:]:
                    if (a.index, b.index) in reported or not _overlap(a, b):
                        continue
                    if isinstance(a, ir.Transition) and isinstance(b, ir.Transition) and a.choice and b.choice:
                        continue
                    reported.add((a.index, b.index))
                    self.diags.error(b.span, _conflict_message(state, event, a, b))


def _of(members: tuple[s.MemberDecl, ...], cls: type[T]) -> list[T]:
    """The declarations of one kind, in source order."""
    return [m for m in members if isinstance(m, cls)]


_TRACE_COLUMNS = frozenset(name for name, _ in COMMON)


def _first_declarations(members: tuple[s.MemberDecl, ...]) -> dict[str, Span]:
    """Where each value-level name is first declared, in source order (for 'first declared at' in duplicates)."""
    first: dict[str, Span] = {}
    for m in members:
        idents: list[s.Ident] = []
        if isinstance(m, s.KeyDecl):
            idents = [f.name for f in m.fields]
        elif isinstance(m, s.EnumDecl):
            idents = list(m.members)
        elif isinstance(m, s.ConstDecl | s.DefDecl | s.VarDecl | s.StateDecl):
            idents = [m.name]
        for ident in idents:
            first.setdefault(ident.text, ident.span)
    return first


def _range(t: ir.IntType) -> str:
    return t.name if ".." in t.name else f"{t.name} ({t.lo}..{t.hi})"


def _join_conditions(texts: list[str]) -> str:
    if not texts:
        return "true"
    if len(texts) == 1:
        return texts[0]
    return " and ".join(f"({t})" if " or " in t or "->" in t else t for t in texts)


def _negated_text(text: str) -> str:
    if text.startswith("not ") and " and " not in text and " or " not in text and "->" not in text:
        return text[len("not "):]
    return f"not ({text})"


def _overlap(a: ir.Row, b: ir.Row) -> bool:
    """Syntactic overlap: one row is unconditional, or both have the same condition as written."""
    if (isinstance(a, ir.Rejection) and a.origin == "check") or (isinstance(b, ir.Rejection) and b.origin == "check"):
        return False  # check rows are disjoint from everything after them by construction
    unconditional = (isinstance(a.local_guard, ir.Lit) and a.local_guard.value is True) or \
        (isinstance(b.local_guard, ir.Lit) and b.local_guard.value is True)
    return unconditional or render(a.local_guard) == render(b.local_guard)


def _conflict_message(state: str, event: str, a: ir.Row, b: ir.Row) -> str:
    if isinstance(a, ir.Transition) and isinstance(b, ir.Transition):
        return (f"{event} in {state} has two transitions that can both fire (to {a.target or state} at {a.span} and "
                f"to {b.target or state} here); make the guards disjoint or mark both `choice`")
    if isinstance(a, ir.Rejection) and isinstance(b, ir.Rejection):
        return (f"{event} in {state} is rejected twice under the same condition ({a.error} at {a.span} and "
                f"{b.error} here)")
    return f"{event} in {state} is both allowed and rejected (the other row is at {a.span})"


def _fold(e: ir.Expr) -> ir.Lit | None:
    """Evaluate a constant expression (literals, negation, set literals, + and -), or None if it is not constant."""
    if isinstance(e, ir.Lit):
        return e
    if isinstance(e, ir.EnumLit):
        return ir.Lit(e.member, e.type, e.span)
    if isinstance(e, ir.Unary) and e.op == "neg":
        inner = _fold(e.operand)
        return ir.Lit(-inner.value, ir.INT_ANY, e.span) if inner is not None and isinstance(inner.value, int) else None
    if isinstance(e, ir.SetLit):
        items = [_fold(i) for i in e.items]
        if any(i is None for i in items):
            return None
        return ir.Lit(frozenset(i.value for i in items if i is not None), e.type, e.span)
    if isinstance(e, ir.Binary) and e.op in ("add", "sub"):
        left, right = _fold(e.left), _fold(e.right)
        if left is None or right is None or not isinstance(left.value, int) or not isinstance(right.value, int):
            return None
        value = left.value + right.value if e.op == "add" else left.value - right.value
        return ir.Lit(value, ir.INT_ANY, e.span)
    return None

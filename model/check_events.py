"""The checker's second pass: event lowering. Each event's parameters and clauses become rows: its ordered `check`s
become rejection rows, each conjoined into the guards of the rows that follow (so that, for each state and event,
exactly one row answers), then its `reject` and `from ... ->` rows; `let`s are scoped over them; `requires` become
each row's preconditions (those about the parameters it reads); effects are `ensures v' == e`, at most one per
variable, every other variable kept (the frame rule).
Must not import: lark, z3, pyspark.
"""

from __future__ import annotations

from dataclasses import replace

from . import ir
from . import syntax as s
from .check_context import Checking, fold, members, range_text
from .diagnostics import Span, unknown_name_message
from .typecheck import Scope


class EventLowering:
    def __init__(self, ck: Checking) -> None:
        self.ck = ck

    def run(self) -> None:
        seen: dict[str, Span] = {}
        for event in members(self.ck.syn.members, s.EventDecl):
            self._event(event, seen)

    def _event(self, m: s.EventDecl, seen: dict[str, Span]) -> None:
        ck = self.ck
        if m.name.text in seen:
            ck.diags.error(m.name.span, f"duplicate event '{m.name.text}' (first declared at {seen[m.name.text]})")
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
                ck.diags.error(clause.span, f"`{what}` comes before the event's `from` and `reject` rows")
            if isinstance(clause, s.LetClause):
                scope = self._let(clause, scope, params)
            elif isinstance(clause, s.RequiresClause):
                cond = ck.exprs.check_bool(clause.cond, scope)
                if cond is not None:
                    requires.append(cond)
            elif isinstance(clause, s.CheckClause):
                if table_started:
                    ck.diags.error(clause.span, "`check` clauses come before the event's `from` and `reject` rows "
                                                "(they guard every row that follows)")
                cond = ck.exprs.check_bool(clause.cond, scope)
                code = ck.error_name(clause.error)
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
        ck.events.append(ir.Event(m.name.text, tuple(params), m.doc, ir.conj(requires), m.span, m.internal))

    def _assign_assumptions(self, event: str, requires: list[ir.Expr]) -> None:
        """Give each row of `event` the preconditions that concern it: those mentioning no parameter, and those
        mentioning a parameter the row reads (in its guard or its effects)."""
        conjuncts = [c for r in requires for c in ir.conjuncts(r)]
        rows = self.ck.rows

        def share(used: frozenset[str]) -> ir.Expr:
            return ir.conj([c for c in conjuncts if not ir.params_of(c) or ir.params_of(c) & used])

        rows.transitions = [
            replace(t, assumes=share(ir.params_of(t.guard).union(*(ir.params_of(ef.value) for ef in t.effects))))
            if t.event == event else t for t in rows.transitions]
        rows.rejections = [replace(r, assumes=share(ir.params_of(r.guard))) if r.event == event else r
                           for r in rows.rejections]

    def _params(self, m: s.EventDecl) -> list[ir.Field]:
        ck = self.ck
        params: list[ir.Field] = []
        for p in m.params:
            t = ck.type_of(p.type)
            if p.name.text in ("state", "pending"):
                ck.diags.error(p.name.span, f"'{p.name.text}' is a reserved word")
                continue
            if p.name.text in ck.names:
                ck.diags.error(p.name.span, f"parameter '{p.name.text}' of event '{m.name.text}' hides the "
                                            f"{self._what(p.name.text)} declared at {ck.names[p.name.text]}")
                continue
            if any(q.name == p.name.text for q in params):
                ck.diags.error(p.name.span, f"duplicate parameter '{p.name.text}'")
                continue
            if t is not None:
                params.append(ir.Field(p.name.text, t, p.span))
            else:
                ck.sym.lost.add(p.name.text)  # its type has an error: uses of it are not reported again
        return params

    def _what(self, name: str) -> str:
        if name in self.ck.sym.variables:
            return "variable"
        if name in self.ck.sym.states:
            return "state"
        return "name"

    def _let(self, clause: s.LetClause, scope: Scope, params: list[ir.Field]) -> Scope:
        name = clause.name.text
        hidden = self.ck.names.get(name) or next((p.span for p in params if p.name == name), None)
        if hidden is not None or any(n == name for n, _ in scope.lets):
            where = f" (declared at {hidden})" if hidden is not None else " (an earlier `let`)"
            self.ck.diags.error(clause.name.span, f"`let {name}` hides another name{where}")
            return scope
        value = self.ck.exprs.check(clause.value, scope)
        return scope.with_let(name, value) if value is not None else scope

    def _check_row(self, event: str, cond: ir.Expr, passed: list[ir.Expr], clause: s.CheckClause, code: int) -> None:
        ck = self.ck
        failed = ir.negate(cond)
        ck.rows.rejections.append(ir.Rejection(
            index=ck.rows.index(), event=event, sources=ck.state_list(None), guard=ir.conj([*passed, failed]),
            local_guard=failed, error=clause.error.text, error_code=code, origin="check", doc=clause.doc,
            span=clause.span, condition_text=_negated_text(ck.text(clause.cond.span))))

    def _reject_row(self, event: str, clause: s.RejectClause, scope: Scope, checks: list[ir.Expr]) -> None:
        ck = self.ck
        sources = ck.state_list(clause.states)
        cond = ck.exprs.check_bool(clause.cond, scope) if clause.cond is not None else ir.TRUE
        code = ck.error_name(clause.error)
        self._no_final_sources(clause.states, "a rejection")
        if cond is None or code is None:
            ck.rows_incomplete = True
            return
        ck.rows.rejections.append(ir.Rejection(
            index=ck.rows.index(), event=event, sources=sources, guard=ir.conj([*checks, cond]), local_guard=cond,
            error=clause.error.text, error_code=code, origin="reject", doc=clause.doc, span=clause.span,
            condition_text=ck.text(clause.cond.span) if clause.cond is not None else "true"))

    def _transition_row(self, event: str, clause: s.TransitionClause, scope: Scope, checks: list[ir.Expr]) -> None:
        ck = self.ck
        sources = ck.state_list(clause.sources)
        stay = clause.target.text == ""
        target_ok = stay or clause.target.text in ck.sym.states
        if not target_ok and clause.target.text in ck.sym.lost:
            ck.rows_incomplete = True
            return
        if not target_ok:
            message, _ = unknown_name_message("state", clause.target.text, ck.sym.states)
            ck.diags.error(clause.target.span, message)
        self._no_final_sources(clause.sources, "a transition")
        guards = [ck.exprs.check_bool(g, scope) for g in clause.guards]  # checked even when the target is bad,
        effects = self._effects(clause, scope)  # so that one run reports every error of the row
        answer, answer_code = "NONE", 0
        for extra in clause.answers[1:]:
            ck.diags.error(extra.span, "a transition has at most one `answer`")
        answer_ok = True
        if clause.answers:
            code = ck.error_name(clause.answers[0])
            answer_ok = code is not None
            answer, answer_code = clause.answers[0].text, code or 0
        if not target_ok or not answer_ok or any(g is None for g in guards) or effects is None:
            ck.rows_incomplete = True
            return
        for repeated in clause.writes[1:]:
            ck.diags.error(repeated, "`writes` is given twice")
        if clause.writes and not stay and ck.state_named(clause.target.text).pending \
                and not ck.state_named(clause.target.text).final:
            ck.diags.error(clause.writes[0], f"'{clause.target.text}' is a pending-only state, never written: a "
                                             "transition into it cannot write a record (the one that leaves it does)")
        local = ir.conj([g for g in guards if g is not None])
        ck.rows.transitions.append(ir.Transition(
            index=ck.rows.index(), event=event, sources=sources, target=None if stay else clause.target.text,
            guard=ir.conj([*checks, local]), local_guard=local, effects=effects, choice=clause.choice,
            doc=clause.doc, span=clause.span, answer=answer, answer_code=answer_code,
            condition_text=_join_conditions([ck.text(g.span) for g in clause.guards]),
            writes=bool(clause.writes)))
        if clause.writes:
            ck.writes_spans.append(clause.writes[0])

    def _no_final_sources(self, sl: s.StateList | None, what: str) -> None:
        if sl is None or sl.every:
            return
        for ident in sl.names:
            if ident.text in self.ck.sym.states and self.ck.state_named(ident.text).final:
                self.ck.diags.error(ident.span, f"final state '{ident.text}' cannot be the source of {what}")

    def _effects(self, clause: s.TransitionClause, scope: Scope) -> tuple[ir.Effect, ...] | None:
        effects: list[ir.Effect] = []
        ok = True
        for e in clause.ensures:
            effect = self._effect(e, scope, effects)
            if effect is None:
                ok = False
            else:
                effects.append(effect)
        return tuple(effects) if ok else None

    def _effect(self, e: s.ExprSyntax, scope: Scope, earlier: list[ir.Effect]) -> ir.Effect | None:
        """One `ensures name' == expression`, or None after reporting why it is not one."""
        ck = self.ck
        if not (isinstance(e, s.BinarySyntax) and e.op == "==" and isinstance(e.left, s.PrimedSyntax)):
            ck.diags.error(e.span, "`ensures` must have the form `name' == expression` (one variable each; "
                                   "variables not mentioned keep their value)")
            return None
        name = e.left.name
        if name in ck.sym.lost:
            return None
        if name not in ck.sym.variables:
            if name == "state":
                ck.diags.error(e.left.span, "`state'` is set by the transition's target, not by `ensures`")
            elif name in ck.sym.keys:
                ck.diags.error(e.left.span, f"key field '{name}' cannot change")
            else:
                message, _ = unknown_name_message("variable", name, ck.sym.variables)
                ck.diags.error(e.left.span, message)
            return None
        if any(ef.var == name for ef in earlier):
            ck.diags.error(e.left.span, f"'{name}'' is assigned twice in one transition")
            return None
        var_type = ck.sym.variables[name].type
        value = ck.exprs.check(e.right, Scope(f"the new value of '{name}' (computed from the state before the "
                                              "transition)", scope.variables, False, True, scope.params, scope.lets))
        if value is None:
            return None
        if not ir.compatible(value.type, var_type):
            ck.diags.error(e.right.span, f"'{name}' has type {var_type}, but this value has type {value.type}")
            return None
        folded = fold(value)
        if folded is not None and isinstance(var_type, ir.IntType) and isinstance(folded.value, int) \
                and not var_type.contains(folded.value):
            ck.diags.error(e.right.span, f"'{name}' cannot be {folded.value}: outside {range_text(var_type)}")
            return None
        return ir.Effect(name, value, e.span)


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

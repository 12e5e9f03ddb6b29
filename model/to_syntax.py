"""Lark tree → syntax nodes: the parser's transformer pass (`parser.py` parses; this names what it parsed).

Owns `ToSyntax` (one method per grammar rule of `spec.lark`, building `kcoord.model.syntax` nodes, each with the span
lark recorded for it) and `LiteralError` (a literal the nodes cannot represent, reported by the parser as a
diagnostic).
Must not import: z3, pyspark, the IR or the checker.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from lark import Token, Transformer, v_args

from . import syntax as s
from .diagnostics import Span


class LiteralError(Exception):
    """A literal the syntax nodes cannot represent (an integer with a misplaced underscore): a diagnostic at `span`."""

    def __init__(self, span: Span, message: str) -> None:
        super().__init__(message)
        self.span = span
        self.message = message


def _unquote(text: str) -> str:
    body = text[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


def _items(children: list[Any]) -> Iterator[Any]:
    return (c for c in children if c is not None)


class ToSyntax(Transformer[Token, Any]):
    """Turns a lark tree into syntax nodes; every node gets the span lark recorded for it."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    # -- helpers
    def _span(self, meta: Any) -> Span:
        return Span(self.path, meta.line, meta.column, meta.end_line, meta.end_column)

    def _tok(self, tok: Token) -> Span:
        assert tok.line is not None and tok.column is not None
        end_line = tok.end_line if tok.end_line is not None else tok.line
        end_col = tok.end_column if tok.end_column is not None else tok.column + len(tok)
        return Span(self.path, tok.line, tok.column, end_line, end_col)

    def _ident(self, tok: Token) -> s.Ident:
        return s.Ident(str(tok), self._tok(tok))

    # -- header and docs
    @v_args(meta=True)
    def machine_header(self, meta: Any, children: list[Any]) -> tuple[s.Ident, str, Span]:
        name, doc = children
        return self._ident(name), doc or "", self._span(meta)

    def doc(self, children: list[Token]) -> str:
        """Adjacent strings concatenate; line breaks and indentation inside a doc fold into single spaces."""
        return " ".join(" ".join(_unquote(str(t)).split()) for t in children)

    def one_member(self, children: list[Any]) -> Any:
        return children[0]

    # -- types
    @v_args(meta=True)
    def named_type(self, meta: Any, children: list[Token]) -> s.NamedTypeSyntax:
        return s.NamedTypeSyntax(self._ident(children[0]), self._span(meta))

    @v_args(meta=True)
    def set_type(self, meta: Any, children: list[Any]) -> s.SetTypeSyntax:
        return s.SetTypeSyntax(children[0], self._span(meta))

    @v_args(meta=True)
    def range_type(self, meta: Any, children: list[int]) -> s.RangeTypeSyntax:
        return s.RangeTypeSyntax(children[0], children[1], self._span(meta))

    def signed_int(self, children: list[Token | None]) -> int:
        sign, digits = children
        assert digits is not None
        value = self._int(digits)
        return -value if sign is not None else value

    def _int(self, tok: Token) -> int:
        text = str(tok)
        if text.endswith("_") or "__" in text:
            raise LiteralError(self._tok(tok), f"malformed integer literal '{text}'")
        return int(text.replace("_", ""))

    # -- declarations
    @v_args(meta=True)
    def typed_name(self, meta: Any, children: list[Any]) -> s.TypedName:
        return s.TypedName(self._ident(children[0]), children[1], self._span(meta))

    @v_args(meta=True)
    def key_decl(self, meta: Any, children: list[s.TypedName]) -> s.KeyDecl:
        return s.KeyDecl(tuple(children), self._span(meta))

    @v_args(meta=True)
    def kind_decl(self, meta: Any, children: list[Token]) -> s.KindDecl:
        return s.KindDecl(self._ident(children[0]), self._span(meta))

    @v_args(meta=True)
    def enum_decl(self, meta: Any, children: list[Any]) -> s.EnumDecl:
        doc = children[-1] if isinstance(children[-1], str) and not isinstance(children[-1], Token) else ""
        toks = [c for c in children if isinstance(c, Token)]
        return s.EnumDecl(self._ident(toks[0]), tuple(self._ident(t) for t in toks[1:]), doc or "", self._span(meta))

    @v_args(meta=True)
    def const_decl(self, meta: Any, children: list[Any]) -> s.ConstDecl:
        name, typ, value, doc = children
        return s.ConstDecl(self._ident(name), typ, value, doc or "", self._span(meta))

    @v_args(meta=True)
    def def_decl(self, meta: Any, children: list[Any]) -> s.DefDecl:
        name, value, doc = children
        return s.DefDecl(self._ident(name), value, doc or "", self._span(meta))

    @v_args(meta=True)
    def var_decl(self, meta: Any, children: list[Any]) -> s.VarDecl:
        name, typ, default, doc = children
        return s.VarDecl(self._ident(name), typ, default, doc or "", self._span(meta))

    def state_flag(self, children: list[Token]) -> s.Ident:
        return self._ident(children[0])

    @v_args(meta=True)
    def state_decl(self, meta: Any, children: list[Any]) -> s.StateDecl:
        flags = tuple(c for c in children if isinstance(c, s.Ident))
        name = next(c for c in children if isinstance(c, Token))
        doc = children[-1] if isinstance(children[-1], str) and not isinstance(children[-1], Token) else ""
        return s.StateDecl(self._ident(name), flags, doc or "", self._span(meta))

    @v_args(meta=True)
    def event_decl(self, meta: Any, children: list[Any]) -> s.EventDecl:
        internal, name = children[0] is not None, children[1]
        children = children[1:]
        params = tuple(c for c in children if isinstance(c, s.TypedName))
        docs = [c for c in children[1:] if isinstance(c, str) and not isinstance(c, Token)]
        clauses = tuple(c for c in children if isinstance(c, s.LetClause | s.RequiresClause | s.CheckClause |
                                                          s.RejectClause | s.TransitionClause))
        return s.EventDecl(self._ident(name), params, docs[0] if docs else "", clauses, self._span(meta), internal)

    @v_args(meta=True)
    def let_clause(self, meta: Any, children: list[Any]) -> s.LetClause:
        return s.LetClause(self._ident(children[0]), children[1], self._span(meta))

    @v_args(meta=True)
    def requires_clause(self, meta: Any, children: list[Any]) -> s.RequiresClause:
        return s.RequiresClause(children[0], self._span(meta), children[1] or "")

    @v_args(meta=True)
    def check_clause(self, meta: Any, children: list[Any]) -> s.CheckClause:
        cond, err, doc = children
        return s.CheckClause(cond, self._ident(err), doc or "", self._span(meta))

    @v_args(meta=True)
    def reject_clause(self, meta: Any, children: list[Any]) -> s.RejectClause:
        states, cond, err, doc = children
        return s.RejectClause(states, cond, self._ident(err), doc or "", self._span(meta))

    @v_args(meta=True)
    def all_states(self, meta: Any, children: list[Token]) -> s.StateList:
        return s.StateList((), True, self._span(meta))

    @v_args(meta=True)
    def named_states(self, meta: Any, children: list[Token]) -> s.StateList:
        return s.StateList(tuple(self._ident(t) for t in children), False, self._span(meta))

    def target_state(self, children: list[Token]) -> s.Ident:
        return self._ident(children[1])

    def target_stay(self, children: list[Token]) -> s.Ident:
        return s.Ident("", self._tok(children[0]))  # "" = stays in its source state (not an edge)

    @v_args(meta=True)
    def transition(self, meta: Any, children: list[Any]) -> s.TransitionClause:
        sources, target, doc, *clauses = children
        guards = tuple(c[1] for c in clauses if c[0] == "when")
        ensures = tuple(e for c in clauses if c[0] == "ensures" for e in c[1])
        choice = any(c[0] == "choice" for c in clauses)
        answers = [c[1] for c in clauses if c[0] == "answer"]
        writes = tuple(c[1] for c in clauses if c[0] == "writes")
        return s.TransitionClause(sources, target, guards, ensures, choice, doc or "", self._span(meta),
                                  tuple(answers), writes)

    def when_clause(self, children: list[Any]) -> tuple[str, Any]:
        return ("when", children[0])

    def ensures_clause(self, children: list[Any]) -> tuple[str, Any]:
        return ("ensures", tuple(children))

    def answer_clause(self, children: list[Token]) -> tuple[str, Any]:
        return ("answer", self._ident(children[0]))

    def choice_clause(self, children: list[Any]) -> tuple[str, Any]:
        return ("choice", None)

    def writes_clause(self, children: list[Token]) -> tuple[str, Any]:
        return ("writes", self._tok(children[0]))

    @v_args(meta=True)
    def persist_decl(self, meta: Any, children: list[Any]) -> s.PersistDecl:
        record, doc, *fields = children
        return s.PersistDecl(self._ident(record), doc or "", tuple(fields), self._span(meta))

    def persist_name(self, children: list[Token]) -> s.Ident:
        return self._ident(children[0])

    @v_args(meta=True)
    def persist_state(self, meta: Any, children: list[Any]) -> s.Ident:
        return s.Ident("state", self._span(meta))

    @v_args(meta=True)
    def invariant_decl(self, meta: Any, children: list[Any]) -> s.InvariantDecl:
        name, doc, expr = children
        return s.InvariantDecl(self._ident(name), doc or "", expr, self._span(meta))

    @v_args(meta=True)
    def step_decl(self, meta: Any, children: list[Any]) -> s.StepDecl:
        name, event, doc, expr = children
        return s.StepDecl(self._ident(name), doc or "", expr, self._span(meta),
                          self._ident(event) if event is not None else None)

    @v_args(meta=True)
    def trace_decl(self, meta: Any, children: list[Any]) -> s.TraceDecl:
        name, doc, body = children
        form, subject, per, states_from, states_to, bound = body
        return s.TraceDecl(self._ident(name), doc or "", form, subject, per, states_from, states_to, bound,
                           self._span(meta))

    def name_list(self, children: list[Token]) -> tuple[s.Ident, ...]:
        return tuple(self._ident(t) for t in children)

    def trace_exclusive(self, children: list[Any]) -> tuple[Any, ...]:
        return ("exclusive", (self._ident(children[0]),), children[1], None, None, None)

    def trace_monotonic(self, children: list[Any]) -> tuple[Any, ...]:
        return ("monotonic", (self._ident(children[0]),), children[1], None, None, None)

    def trace_within(self, children: list[Any]) -> tuple[Any, ...]:
        src, _arrow, dst, bound = children
        return ("within", (), (), src, dst, bound)

    def trace_before(self, children: list[Any]) -> tuple[Any, ...]:
        a, b, c, d, on = children
        return ("before", tuple(self._ident(t) for t in (a, b, c, d)), on, None, None, None)

    def trace_fenced(self, children: list[Any]) -> tuple[Any, ...]:
        *names, on = children  # this machine, its event, the epoch parameter, the other machine, its variable
        return ("fenced", tuple(self._ident(t) for t in names), on, None, None, None)

    # -- expressions
    @v_args(meta=True)
    def int_lit(self, meta: Any, children: list[Token]) -> s.IntSyntax:
        return s.IntSyntax(self._int(children[0]), self._span(meta))

    @v_args(meta=True)
    def true_lit(self, meta: Any, children: list[Token]) -> s.BoolSyntax:
        return s.BoolSyntax(True, self._span(meta))

    @v_args(meta=True)
    def false_lit(self, meta: Any, children: list[Token]) -> s.BoolSyntax:
        return s.BoolSyntax(False, self._span(meta))

    @v_args(meta=True)
    def string_lit(self, meta: Any, children: list[Token]) -> s.StringSyntax:
        return s.StringSyntax(_unquote(str(children[0])), self._span(meta))

    @v_args(meta=True)
    def name_ref(self, meta: Any, children: list[Token]) -> s.NameSyntax:
        return s.NameSyntax(str(children[0]), self._span(meta))

    @v_args(meta=True)
    def primed_ref(self, meta: Any, children: list[Token]) -> s.PrimedSyntax:
        return s.PrimedSyntax(str(children[0])[:-1], self._span(meta))

    @v_args(meta=True)
    def state_ref(self, meta: Any, children: list[Token]) -> s.StateSyntax:
        return s.StateSyntax(self._span(meta))

    @v_args(meta=True)
    def pending_ref(self, meta: Any, children: list[Token]) -> s.PendingSyntax:
        return s.PendingSyntax(self._span(meta))

    @v_args(meta=True)
    def set_lit(self, meta: Any, children: list[Any]) -> s.SetLitSyntax:
        return s.SetLitSyntax(tuple(_items(children)), self._span(meta))

    @v_args(meta=True)
    def call(self, meta: Any, children: list[Any]) -> s.CallSyntax:
        return s.CallSyntax(self._ident(children[0]), tuple(_items(children[1:])), self._span(meta))

    @v_args(meta=True)
    def ite(self, meta: Any, children: list[Any]) -> s.IteSyntax:
        return s.IteSyntax(children[0], children[1], children[2], self._span(meta))

    @v_args(meta=True)
    def not_(self, meta: Any, children: list[Any]) -> s.UnarySyntax:
        return s.UnarySyntax("not", children[0], self._span(meta))

    @v_args(meta=True)
    def neg(self, meta: Any, children: list[Any]) -> s.UnarySyntax | s.IntSyntax:
        operand = children[1]
        if isinstance(operand, s.IntSyntax):  # fold `-1` into a literal so defaults and ranges stay constants
            return s.IntSyntax(-operand.value, self._span(meta))
        return s.UnarySyntax("neg", operand, self._span(meta))

    def _binary(self, meta: Any, op: str, left: Any, right: Any, op_span: Span | None = None) -> s.BinarySyntax:
        span = self._span(meta)
        return s.BinarySyntax(op, left, right, span, op_span or span)

    @v_args(meta=True)
    def implies(self, meta: Any, c: list[Any]) -> s.BinarySyntax:
        return self._binary(meta, "->", c[0], c[2], self._tok(c[1]))

    @v_args(meta=True)
    def or_(self, meta: Any, c: list[Any]) -> s.BinarySyntax:
        return self._binary(meta, "or", c[0], c[1])

    @v_args(meta=True)
    def and_(self, meta: Any, c: list[Any]) -> s.BinarySyntax:
        return self._binary(meta, "and", c[0], c[1])

    @v_args(meta=True)
    def compare(self, meta: Any, c: list[Any]) -> s.BinarySyntax:
        return self._binary(meta, str(c[1]), c[0], c[2], self._tok(c[1]))

    @v_args(meta=True)
    def member(self, meta: Any, c: list[Any]) -> s.BinarySyntax:
        return self._binary(meta, "in", c[0], c[1])

    @v_args(meta=True)
    def not_member(self, meta: Any, c: list[Any]) -> s.BinarySyntax:
        return self._binary(meta, "not in", c[0], c[1])

    @v_args(meta=True)
    def subset(self, meta: Any, c: list[Any]) -> s.BinarySyntax:
        return self._binary(meta, "subset", c[0], c[1])

    @v_args(meta=True)
    def add(self, meta: Any, c: list[Any]) -> s.BinarySyntax:
        return self._binary(meta, "+", c[0], c[2], self._tok(c[1]))

    @v_args(meta=True)
    def sub(self, meta: Any, c: list[Any]) -> s.BinarySyntax:
        return self._binary(meta, "-", c[0], c[2], self._tok(c[1]))

    @v_args(meta=True)
    def union(self, meta: Any, c: list[Any]) -> s.BinarySyntax:
        return self._binary(meta, "|", c[0], c[2], self._tok(c[1]))

    @v_args(meta=True)
    def intersect(self, meta: Any, c: list[Any]) -> s.BinarySyntax:
        return self._binary(meta, "&", c[0], c[2], self._tok(c[1]))


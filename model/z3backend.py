"""The z3 backend of the expression language: IR expressions → z3 terms, and z3 models → concrete Python values.

Owns: the sorts of a machine (enums and states as z3 enumeration sorts, strings as z3 strings, sets as z3 sets —
unbounded — and integers as mathematical integers with their type's bounds asserted), `Frame` (one copy of a
machine's variables, keys, parameters and `pending`: pre-state, post-state, or step i of a path), the translation
`Encoder.expr(e, env)`, the effect of a transition as a post-state frame, and `Encoder.value` to read a model back
into the values the Python evaluator uses (so every counterexample can be re-checked there).
Must not import: lark, pyspark.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import z3

from . import ir

_ENCODER_IDS = itertools.count()


@dataclass(slots=True)
class Frame:
    """Named z3 terms for one state of an instance (plus the arguments of the event fired from it)."""

    state: z3.ExprRef
    variables: dict[str, z3.ExprRef]
    keys: dict[str, z3.ExprRef]
    params: dict[str, z3.ExprRef] = field(default_factory=dict)
    pending: z3.ExprRef | None = None


class Encoder:
    """Translates one machine's expressions to z3 (sorts are created once per encoder)."""

    def __init__(self, machine: ir.Machine, tag: str | None = None) -> None:
        self.m = machine
        # Each encoder has its own z3 context, so a run's models (and counterexamples) do not depend on what other
        # runs in the same process declared before it. Sort names still carry a number for readable debugging; a
        # caller whose output must not depend on how many encoders came before (a derivation: z3's answers depend
        # on the names) gives its own `tag`.
        self.ctx = z3.Context()
        tag = tag if tag is not None else str(next(_ENCODER_IDS))
        self.state_sort, state_consts = z3.EnumSort(f"{machine.name}State#{tag}", [s.name for s in machine.states],
                                                    ctx=self.ctx)
        self.state_values = {s.name: c for s, c in zip(machine.states, state_consts, strict=True)}
        self.enum_sorts: dict[str, z3.SortRef] = {}
        self.enum_values: dict[str, z3.ExprRef] = {}
        for e in machine.enums:
            sort, consts = z3.EnumSort(f"{machine.name}_{e.name}#{tag}", list(e.members), ctx=self.ctx)
            self.enum_sorts[e.name] = sort
            self.enum_values.update(zip(e.members, consts, strict=True))
        self.string_sort = z3.StringSort(ctx=self.ctx)
        self._memo: dict[tuple[int, int, int], tuple[ir.Expr, Frame, Frame | None, Any]] = {}

    # ------------------------------------------------------------ sorts and frames

    def sort(self, t: ir.Type) -> z3.SortRef:
        if isinstance(t, ir.BoolType):
            return z3.BoolSort(ctx=self.ctx)
        if isinstance(t, ir.IntType):
            return z3.IntSort(ctx=self.ctx)
        if isinstance(t, ir.StringType):
            return self.string_sort
        if isinstance(t, ir.EnumType):
            return self.enum_sorts[t.name]
        if isinstance(t, ir.StateType):
            return self.state_sort
        # z3.SetSort would build its Bool range in the main context; an array to Bool in ours is the same sort
        if isinstance(t, ir.SetType):
            return z3.ArraySort(self.sort(t.element), z3.BoolSort(ctx=self.ctx))
        return z3.ArraySort(self.string_sort, z3.BoolSort(ctx=self.ctx))  # `{}` with no context

    def const(self, name: str, t: ir.Type) -> z3.ExprRef:
        return z3.Const(name, self.sort(t))

    def frame(self, tag: str, event: ir.Event | None = None, keys: dict[str, z3.ExprRef] | None = None) -> Frame:
        """Fresh constants for a state (`tag` distinguishes copies), sharing `keys` if given."""
        variables = {v.name: self.const(f"{v.name}{tag}", v.type) for v in self.m.variables}
        key_terms = keys if keys is not None else {k.name: self.const(k.name, k.type) for k in self.m.keys}
        f = Frame(z3.Const(f"state{tag}", self.state_sort), variables, key_terms)
        if event is not None:
            self.bind_event(f, event, tag)
        return f

    def bind_event(self, f: Frame, event: ir.Event, tag: str) -> None:
        f.params = {p.name: self.const(f"{event.name}.{p.name}{tag}", p.type) for p in event.params}
        f.pending = z3.Bool(f"pending{tag}", ctx=self.ctx)

    def bounds(self, f: Frame) -> list[z3.BoolRef]:
        """Type bounds of the frame's integer variables and key fields."""
        out = [self._in_range(f.variables[v.name], v.type) for v in self.m.variables if isinstance(v.type, ir.IntType)]
        out += [self._in_range(f.keys[k.name], k.type) for k in self.m.keys if isinstance(k.type, ir.IntType)]
        return out

    def all_of(self, terms: list[z3.BoolRef]) -> z3.BoolRef:
        """`And(terms)` in this encoder's context (z3's own `And()` of nothing lands in the main context)."""
        return z3.And(terms) if terms else z3.BoolVal(True, ctx=self.ctx)

    def param_bounds(self, f: Frame, event: ir.Event) -> list[z3.BoolRef]:
        """Type bounds of the event's integer parameters."""
        return [self._in_range(f.params[p.name], p.type) for p in event.params if isinstance(p.type, ir.IntType)]

    def event_facts(self, f: Frame, event: ir.Event) -> list[z3.BoolRef]:
        """What holds whenever `event` is handled from frame `f`: parameter bounds, the pending axiom, `requires`."""
        return [*self.param_bounds(f, event), self.pending_axiom(f), self.expr(event.requires, f)]

    def row_facts(self, f: Frame, event: ir.Event, row: ir.Transition | ir.Rejection) -> list[z3.BoolRef]:
        """What holds when `row` answers `event`: parameter bounds, the pending axiom, the row's `assumes`."""
        return [*self.param_bounds(f, event), self.pending_axiom(f), self.expr(row.assumes, f)]

    def _in_range(self, term: z3.ExprRef, t: ir.Type) -> z3.BoolRef:
        assert isinstance(t, ir.IntType)
        return z3.And(term >= t.lo, term <= t.hi)

    def pending_axiom(self, f: Frame) -> z3.BoolRef:
        """In a pending-only state the runtime always reports a write in flight."""
        assert f.pending is not None
        pending_states = [self.state_values[s.name] for s in self.m.states if s.pending]
        if not pending_states:
            return z3.BoolVal(True, ctx=self.ctx)
        return z3.Implies(z3.Or([f.state == s for s in pending_states]), f.pending)

    def in_states(self, f: Frame, names: tuple[str, ...] | list[str]) -> z3.BoolRef:
        return z3.Or([f.state == self.state_values[n] for n in names]) if names else z3.BoolVal(False, ctx=self.ctx)

    def initial(self, f: Frame) -> list[z3.BoolRef]:
        """The frame is a fresh instance: initial state, every variable at its default."""
        out = [f.state == self.state_values[self.m.initial.name]]
        for v in self.m.variables:
            out.append(f.variables[v.name] == self.literal(v.default, v.type))
        return out

    # ------------------------------------------------------------ transitions

    def post(self, pre: Frame, t: ir.Transition) -> Frame:
        """The post-state of `t` from `pre`, as terms over the pre-state (frame rule for unassigned variables)."""
        assigned = {ef.var: self.expr(ef.value, pre) for ef in t.effects}
        variables = {name: assigned.get(name, term) for name, term in pre.variables.items()}
        state = pre.state if t.target is None else self.state_values[t.target]
        return Frame(state, variables, pre.keys, pre.params, pre.pending)

    # ------------------------------------------------------------ expressions

    def literal(self, value: object, t: ir.Type) -> z3.ExprRef:
        if isinstance(t, ir.BoolType):
            return z3.BoolVal(bool(value), ctx=self.ctx)
        if isinstance(t, ir.IntType):
            assert isinstance(value, int)
            return z3.IntVal(value, ctx=self.ctx)
        if isinstance(t, ir.StringType):
            return z3.StringVal(str(value), ctx=self.ctx)
        if isinstance(t, ir.EnumType):
            return self.enum_values[str(value)]
        if isinstance(t, ir.StateType):
            return self.state_values[str(value)]
        element = t.element if isinstance(t, ir.SetType) else ir.STRING
        out = z3.EmptySet(self.sort(element))
        assert isinstance(value, frozenset | set), f"a set literal needs a set, not {value!r}"
        for item in sorted(value, key=str):
            out = z3.SetAdd(out, self.literal(item, element))
        return out

    def expr(self, e: ir.Expr, pre: Frame, post: Frame | None = None) -> Any:
        """`e` as a z3 term over `pre` (and `post` for primed names); memoised per (expression, frames)."""
        key = (id(e), id(pre), id(post))
        hit = self._memo.get(key)
        if hit is not None and hit[0] is e and hit[1] is pre and hit[2] is post:
            return hit[3]
        term = self._expr(e, pre, post)
        self._memo[key] = (e, pre, post, term)  # the entry keeps e and the frames alive, so ids stay unique
        return term

    def substitute_post(self, term: z3.ExprRef, pre: Frame, post: Frame) -> z3.ExprRef:
        """A term over `pre`, re-read over `post` (z3 substitutes in C: much cheaper than translating again)."""
        pairs = [(pre.variables[v], post.variables[v]) for v in pre.variables
                 if post.variables[v] is not pre.variables[v]]
        pairs.append((pre.state, post.state))
        return z3.substitute(term, *pairs)

    def _expr(self, e: ir.Expr, pre: Frame, post: Frame | None = None) -> Any:
        if isinstance(e, ir.Lit):
            return self.literal(e.value, e.type)
        if isinstance(e, ir.EnumLit):
            return self.state_values[e.member] if isinstance(e.type, ir.StateType) else self.enum_values[e.member]
        if isinstance(e, ir.VarRef):
            frame = post if e.primed else pre
            assert frame is not None, f"primed {e.name} without a post-state"
            return frame.variables[e.name]
        if isinstance(e, ir.KeyRef):
            return pre.keys[e.name]
        if isinstance(e, ir.ParamRef):
            return pre.params[e.name]
        if isinstance(e, ir.StateRef):
            frame = post if e.primed else pre
            assert frame is not None
            return frame.state
        if isinstance(e, ir.PendingRef):
            assert pre.pending is not None
            return pre.pending
        if isinstance(e, ir.SetLit):
            element = e.type.element if isinstance(e.type, ir.SetType) else ir.STRING
            out = z3.EmptySet(self.sort(element))
            for item in e.items:
                out = z3.SetAdd(out, self.expr(item, pre, post))
            return out
        if isinstance(e, ir.Ite):
            return z3.If(self.expr(e.cond, pre, post), self.expr(e.then, pre, post), self.expr(e.orelse, pre, post))
        if isinstance(e, ir.Unary):
            inner = self.expr(e.operand, pre, post)
            return z3.Not(inner) if e.op == "not" else -inner
        if isinstance(e, ir.Call):
            a, b = (self.expr(x, pre, post) for x in e.args)
            return z3.If(a <= b, a, b) if e.function == "min" else z3.If(a >= b, a, b)
        return self._binary(e, pre, post)

    def _binary(self, e: ir.Binary, pre: Frame, post: Frame | None) -> Any:
        if e.op == "in" and isinstance(e.right, ir.SetLit):
            x = self.expr(e.left, pre, post)
            return z3.Or([x == self.expr(i, pre, post) for i in e.right.items]) if e.right.items \
                else z3.BoolVal(False, ctx=self.ctx)
        left = self._operand(e.left, e.right, pre, post)
        right = self._operand(e.right, e.left, pre, post)
        op = e.op
        if op == "implies":
            return z3.Implies(left, right)
        if op == "and":
            return z3.And(left, right)
        if op == "or":
            return z3.Or(left, right)
        if op == "eq":
            return left == right
        if op == "ne":
            return left != right
        if op in ("lt", "le", "gt", "ge"):
            return {"lt": left < right, "le": left <= right, "gt": left > right, "ge": left >= right}[op]
        if op == "in":
            return z3.IsMember(left, right)
        if op == "subset":
            return z3.IsSubset(left, right)
        if op == "add":
            return left + right
        if op == "sub" or op == "diff":
            return z3.SetDifference(left, right) if op == "diff" else left - right
        if op == "union":
            return z3.SetUnion(left, right)
        return z3.SetIntersect(left, right)

    def _operand(self, e: ir.Expr, other: ir.Expr, pre: Frame, post: Frame | None) -> Any:
        """An empty set literal takes its element sort from the other operand."""
        if isinstance(e, ir.SetLit) and not e.items and isinstance(other.type, ir.SetType):
            return z3.EmptySet(self.sort(other.type.element))
        if isinstance(e, ir.Lit) and isinstance(e.value, frozenset) and not e.value and \
                isinstance(other.type, ir.SetType):
            return z3.EmptySet(self.sort(other.type.element))
        return self.expr(e, pre, post)

    # ------------------------------------------------------------ models back to Python values

    def value(self, model: z3.ModelRef, term: z3.ExprRef, t: ir.Type) -> Any:
        v = model.eval(term, model_completion=True)
        if isinstance(t, ir.BoolType):
            return z3.is_true(v)
        if isinstance(t, ir.IntType):
            return v.as_long()
        if isinstance(t, ir.StringType):
            return v.as_string()
        if isinstance(t, ir.EnumType | ir.StateType):
            return str(v)
        return frozenset(self._set_members(model, v, t))

    def _set_members(self, model: z3.ModelRef, v: z3.ExprRef, t: ir.Type) -> set[Any]:
        """Members of a set value, among the values its elements can take in a counterexample: the readable pool
        for strings (`finite_sets` and `readable_strings` force every string into it), every member for enums."""
        element = t.element if isinstance(t, ir.SetType) else ir.STRING
        if isinstance(element, ir.StringType):
            candidates = [z3.StringVal(x, ctx=self.ctx) for x in POOL.get(element.name, POOL["string"])]
        elif isinstance(element, ir.EnumType):
            candidates = [self.enum_values[x] for x in element.members]
        elif isinstance(element, ir.StateType):
            candidates = list(self.state_values.values())
        else:
            raise ValueError(f"cannot read a {t} out of a z3 model")
        return {self.value(model, c, element) for c in candidates
                if z3.is_true(model.eval(z3.IsMember(c, v), model_completion=True))}


#: Readable values for strings in counterexamples, by the string alias the spec used.
POOL: dict[str, list[str]] = {  # "" included: specs use it for "none" (no leader, an idempotent producer's key)
    "partition": ["", "t-0", "t-1", "t-2", "t-3", "t-4", "t-5"],
    "member": ["", "m-1", "m-2", "m-3", "m-4", "m-5", "m-6"],
    "topic": ["", "topic-a", "topic-b", "topic-c", "topic-d"],
    "string": ["", "s1", "s2", "s3", "s4", "s5", "s6"],
}


def frame_values(enc: Encoder, model: z3.ModelRef, f: Frame, event: ir.Event | None = None) -> tuple[
        dict[str, Any], dict[str, Any]]:
    """(state: variables + keys + 'state', args: parameters + 'pending') of a frame under a model."""
    state: dict[str, Any] = {v.name: enc.value(model, f.variables[v.name], v.type) for v in enc.m.variables}
    state.update({k.name: enc.value(model, f.keys[k.name], k.type) for k in enc.m.keys})
    state["state"] = str(model.eval(f.state, model_completion=True))
    args: dict[str, Any] = {}
    if event is not None:
        args = {p.name: enc.value(model, f.params[p.name], p.type) for p in event.params}
        assert f.pending is not None
        args["pending"] = z3.is_true(model.eval(f.pending, model_completion=True))
    return state, args


def set_terms(enc: Encoder, f: Frame, event: ir.Event | None) -> list[tuple[z3.ExprRef, ir.Type]]:
    """Every set-valued term of a frame (variables, keys, parameters)."""
    out: list[tuple[z3.ExprRef, ir.Type]] = [(f.variables[v.name], v.type) for v in enc.m.variables
                                             if isinstance(v.type, ir.SetType)]
    if event is not None:
        out += [(f.params[p.name], p.type) for p in event.params if isinstance(p.type, ir.SetType)]
    return out


def string_terms(enc: Encoder, f: Frame, event: ir.Event | None) -> list[tuple[z3.ExprRef, ir.Type]]:
    out: list[tuple[z3.ExprRef, ir.Type]] = [(f.variables[v.name], v.type) for v in enc.m.variables
                                             if isinstance(v.type, ir.StringType)]
    out += [(f.keys[k.name], k.type) for k in enc.m.keys if isinstance(k.type, ir.StringType)]
    if event is not None:
        out += [(f.params[p.name], p.type) for p in event.params if isinstance(p.type, ir.StringType)]
    return out


def readable_strings(enc: Encoder, terms: list[tuple[z3.ExprRef, ir.Type]]) -> list[z3.BoolRef]:
    """Every string term takes a value from the readable pool of its alias."""
    out = []
    for term, t in terms:
        assert isinstance(t, ir.StringType)
        out.append(z3.Or([term == z3.StringVal(x, ctx=enc.ctx) for x in POOL.get(t.name, POOL["string"])]))
    return out


def finite_sets(enc: Encoder, terms: list[tuple[z3.ExprRef, ir.Type]], width: int, prefix: str = "") -> tuple[
        list[z3.BoolRef], list[z3.ExprRef]]:
    """Constraints forcing each set to hold at most `width` elements drawn from the readable pool.

    Returns the constraints and the 0/1 terms counting elements (to minimise).
    """
    constraints: list[z3.BoolRef] = []
    sizes: list[z3.ExprRef] = []
    for n, (term, t) in enumerate(terms):
        assert isinstance(t, ir.SetType)
        element_sort = enc.sort(t.element)
        value = z3.EmptySet(element_sort)
        for i in range(width):
            item = z3.Const(f"__w{prefix}{n}_{i}", element_sort)
            present = z3.Bool(f"__b{prefix}{n}_{i}", ctx=enc.ctx)
            if isinstance(t.element, ir.StringType):  # set elements are real names, never ""
                names = [x for x in POOL.get(t.element.name, POOL["string"]) if x]
                constraints.append(z3.Or([item == z3.StringVal(x, ctx=enc.ctx) for x in names]))
            value = z3.Store(value, item, z3.Or(present, z3.Select(value, item)))
            sizes.append(z3.If(present, z3.IntVal(1, ctx=enc.ctx), z3.IntVal(0, ctx=enc.ctx)))
        constraints.append(term == value)
    return constraints, sizes

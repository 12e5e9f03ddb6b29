"""`kcoord verify`: z3 proofs about a machine, one obligation at a time, with re-checked counterexamples.

Owns: the obligations and how each is decided —
  initiation   a fresh instance satisfies every invariant;
  consecution  every invariant is preserved by every transition, assuming all invariants before it (the
               conjunction is the inductive invariant; sets unbounded, integers bounded by their types);
  bounds       a transition keeps every integer variable it assigns inside its type;
  step         every step property holds for every transition, under the invariants;
  reachability every state is reachable from the initial one (bounded model checking, `depth` steps);
  deadlock     in every non-final state allowed by the invariants, some transition can fire;
  overlap      no state × event × condition is answered by two rows (allowed and rejected, two errors, or two
               transitions unless both are marked `choice`);
  totality     every request event is answered in every non-final state (an error for coordinator machines,
               a warning for the others);
  trace        trace-level properties, listed as "checked on traces only" with the reason;
  persisted    every record the spec can write lands in the persisted-step relation (`verify_persisted`).
A failed obligation comes with a minimal concrete counterexample (finite sets, readable strings, small numbers),
re-evaluated by the Python evaluator; if that evaluator disagrees with z3, it is an internal error, not a report.
`MachineVerifier` decides the obligations about transitions and reachability itself; deadlock, overlap and totality
are `verify_states.py`'s, the counterexamples `verify_counterexamples.py`'s, `Result` is `verify_result.py`'s.
Must not import: lark, pyspark.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import z3

from . import ir
from .diagnostics import Span
from .printer import Execution
from .pyexpr import PythonEvaluator, initial_state
from .steprel import Relation
from .verify_counterexamples import Counterexamples
from .verify_result import Kind, Result, VerifierBug
from .verify_states import StateObligations
from .z3backend import POOL, Encoder, Frame, finite_sets, frame_values, readable_strings


@dataclass(frozen=True, slots=True)
class Options:
    timeout_ms: int = 10_000
    depth: int = 8  # bounded model checking steps for reachability
    set_width: int = 3  # at most this many elements per set in a counterexample
    minimize: bool = True
    persisted: bool = True  # also the persisted-step relation's obligations (machines with `persist`)


@dataclass(slots=True)
class _Query:
    """Assumptions on one pre-state frame with one event's arguments."""

    frame: Frame
    event: ir.Event | None
    facts: list[z3.BoolRef] = field(default_factory=list)


class MachineVerifier:
    def __init__(self, machine: ir.Machine, options: Options | None = None, tag: str | None = None) -> None:
        self.m = machine
        self.opts = options or Options()
        self.enc = Encoder(machine, tag=tag)
        self.py = PythonEvaluator()
        self.pre = self.enc.frame("")
        self.frames = {e.name: self._event_frame(e) for e in machine.events}
        self.invariant_terms = {i.name: self.enc.expr(i.expr, self.pre) for i in machine.invariants}
        self.invariants = z3.And(list(self.invariant_terms.values())) \
            if machine.invariants else z3.BoolVal(True, ctx=self.enc.ctx)
        self._facts: dict[int, tuple[Frame, Frame, list[z3.BoolRef], ir.Event]] = {}
        self._assumed: dict[int, int] = {}  # transition index -> how many of its fact layers `run` has asserted
        self._enable_solvers: dict[int, z3.Solver] = {}
        self.solver = z3.Solver(ctx=self.enc.ctx)
        self.solver.set("timeout", self.opts.timeout_ms)
        self.solver.add(self.enc.bounds(self.pre))
        self.solver.add(self.invariants)
        self.cx = Counterexamples(machine, self.enc, self.solver, self.frames, self.py, timeout_ms=self.opts.timeout_ms,
                                  set_width=self.opts.set_width, minimize=self.opts.minimize)
        self.states = StateObligations(self.cx, self.pre, self.invariants, self.solver, self._check,
                                       timeout_ms=self.opts.timeout_ms)

    def _event_frame(self, e: ir.Event) -> Frame:
        f = Frame(self.pre.state, self.pre.variables, self.pre.keys)
        self.enc.bind_event(f, e, "")
        return f

    # ------------------------------------------------------------ driver

    def run(self) -> list[Result]:
        results = [self.initiation()]
        for t in self.m.transitions:
            with self._assuming(t, post_bounds=False):  # a transition's facts are asserted once for all its checks
                results += self.bounds(t)
                with self._assuming(t, post_bounds=True):
                    results += [self.consecution(inv, t) for inv in self.m.invariants]
                    results += [self.step(st, t) for st in self.m.steps if st.applies_to(t)]
        results += self.reachability()
        results += [self.states.deadlock(s) for s in self.m.states if not s.final]
        results += self.states.overlaps_and_totality()
        results += [self.trace_only(p) for p in self.m.traces]
        return results

    @contextlib.contextmanager
    def _assuming(self, t: ir.Transition, *, post_bounds: bool) -> Iterator[None]:
        """Assert what holds when `t` fires (and, with `post_bounds`, that its post-state is within its types) for
        the obligations checked inside; each obligation then only adds its negated property."""
        _, post, facts, _ = self._transition_facts(t)
        self.solver.push()
        self.solver.add(self.enc.all_of(self.enc.bounds(post) if post_bounds else facts))
        self._assumed[t.index] = self._assumed.get(t.index, 0) + 1
        try:
            yield
        finally:
            self._assumed[t.index] -= 1
            self.solver.pop()

    def _facts_unless_assumed(self, t: ir.Transition, facts: list[z3.BoolRef], post: Frame,
                              post_bounds: bool) -> list[z3.BoolRef]:
        """The facts an obligation about `t` must add itself (none when `run` already asserted them)."""
        depth = self._assumed.get(t.index, 0)
        if depth >= (2 if post_bounds else 1):
            return []
        extra = [] if depth >= 1 else list(facts)
        return [*extra, *self.enc.bounds(post)] if post_bounds else extra

    def _check(self, solver: z3.Solver, goal: list[z3.BoolRef]) -> tuple[z3.CheckSatResult, float]:
        solver.push()
        solver.add(goal)
        start = time.perf_counter()
        verdict = solver.check()
        elapsed = (time.perf_counter() - start) * 1000
        solver.pop()
        return verdict, elapsed

    # ------------------------------------------------------------ initiation, consecution, bounds, steps

    def initiation(self) -> Result:
        solver = z3.Solver(ctx=self.enc.ctx)
        solver.set("timeout", self.opts.timeout_ms)
        solver.add(self.enc.bounds(self.pre))
        solver.add(self.enc.initial(self.pre))
        failing = [inv for inv in self.m.invariants
                   if self._check(solver, [z3.Not(self.enc.expr(inv.expr, self.pre))])[0] != z3.unsat]
        title = "the initial state satisfies every invariant"
        if not failing:
            return Result(self.m.name, "initiation", title, "holds", self.m.initial.span)
        names = ", ".join(inv.name for inv in failing)
        state = initial_state(self.m)
        for inv in failing:
            if self.py.holds(inv.expr, state):
                raise VerifierBug(f"z3 says the initial state violates {inv.name}; the Python evaluator disagrees")
        return Result(self.m.name, "initiation", title, "fails", failing[0].span,
                      detail=f"the initial state violates {names}", counterexample=Execution([state]))

    def _transition_facts(self, t: ir.Transition) -> tuple[Frame, Frame, list[z3.BoolRef], ir.Event]:
        """(pre frame, post frame, what holds when `t` fires, its event) — built once per transition."""
        if t.index not in self._facts:
            event = self.m.event(t.event)
            f = self.frames[t.event]
            facts = [*self.enc.row_facts(f, event, t), self.enc.in_states(f, t.sources), self.enc.expr(t.guard, f)]
            self._facts[t.index] = (f, self.enc.post(f, t), facts, event)
        return self._facts[t.index]

    def consecution(self, inv: ir.Invariant, t: ir.Transition) -> Result:
        _, post, facts, event = self._transition_facts(t)
        # the post-state is assumed within its types: leaving them is the separate `bounds` obligation
        goal = [*self._facts_unless_assumed(t, facts, post, True),
                z3.Not(self.enc.substitute_post(self.invariant_terms[inv.name], self.pre, post))]
        title = f"invariant {inv.name} preserved by {t.label}"
        return self._decide("consecution", title, inv.span, (t.span,), goal, lambda: self.cx.transition(
            t, event, goal, lambda pre, args, post_state: not self.py.holds(inv.expr, post_state),
            f"invariant {inv.name} is false after the transition"))

    def bounds(self, t: ir.Transition) -> list[Result]:
        out = []
        _, post, facts, event = self._transition_facts(t)
        for ef in t.effects:
            var = self.m.variable(ef.var)
            if not isinstance(var.type, ir.IntType) or isinstance(ef.value, ir.Lit):
                continue
            lo, hi = var.type.lo, var.type.hi
            value = post.variables[ef.var]
            goal = [*self._facts_unless_assumed(t, facts, post, False), z3.Or(value < lo, value > hi)]
            out.append(self._bounds_result(t, event, ef, var.type, goal))
        return out

    def _bounds_result(self, t: ir.Transition, event: ir.Event, ef: ir.Effect, typ: ir.IntType,
                       goal: list[z3.BoolRef]) -> Result:
        range_text = str(typ) if ".." in str(typ) else f"{typ} ({typ.lo}..{typ.hi})"

        def out_of_range(pre: dict[str, Any], args: dict[str, Any], post: dict[str, Any]) -> bool:
            return not typ.lo <= post[ef.var] <= typ.hi

        return self._decide("bounds", f"{t.label} keeps {ef.var} within {typ}", ef.span, (t.span,), goal,
                            lambda: self.cx.transition(t, event, goal, out_of_range, f"{ef.var} leaves {range_text}"))

    def step(self, prop: ir.StepProperty, t: ir.Transition) -> Result:
        f, post, facts, event = self._transition_facts(t)
        goal = [*self._facts_unless_assumed(t, facts, post, True), z3.Not(self.enc.expr(prop.expr, f, post))]
        title = f"step {prop.name} holds for {t.label}"
        return self._decide("step", title, prop.span, (t.span,), goal, lambda: self.cx.transition(
            t, event, goal, lambda pre, args, post_state: not self.py.holds(prop.expr, pre, args, post_state),
            f"step property {prop.name} is false for this transition"))

    def _decide(self, kind: Kind, title: str, span: Span, related: tuple[Span, ...], goal: list[z3.BoolRef],
                counterexample: Callable[[], Execution]) -> Result:
        verdict, elapsed = self._check(self.solver, goal)
        if verdict == z3.unsat:
            return Result(self.m.name, kind, title, "holds", span, related, elapsed)
        if verdict == z3.unknown:
            return Result(self.m.name, kind, title, "unknown", span, related, elapsed,
                          detail=f"z3: {self.solver.reason_unknown()}")
        cx = counterexample()
        return Result(self.m.name, kind, title, "fails", span, related, elapsed, detail=cx.notes[-1] if cx.notes
                      else "", counterexample=cx)

    # ------------------------------------------------------------ reachability (bounded model checking)

    def reachability(self) -> list[Result]:
        """Every state is reachable: first a concolic search (concrete states, z3 only picks arguments that enable a
        transition, the Python evaluator fires it), then bounded model checking for whatever it did not reach."""
        start = time.perf_counter()
        reached, paths, visited = self._concolic_search()
        missing = [st for st in self.m.states if st.name not in reached]
        unknown: set[str] = set()
        if missing:  # short unrollings from every concrete state visited, then (if needed) from the initial state
            found, unknown = self._bounded_search(missing, visited, max_depth=min(3, self.opts.depth))
            reached.update({name: reached_depth + 1 for name, reached_depth in found.items()})
            still = [st for st in missing if st.name not in found]
            if still:
                found, unknown = self._bounded_search(still, None, max_depth=self.opts.depth)
                reached.update(found)
        share = (time.perf_counter() - start) * 1000 / len(self.m.states)
        results: list[Result] = []
        for st in self.m.states:
            title = f"state {st.name} is reachable"
            if st.name in reached:
                results.append(Result(self.m.name, "reachability", title, "holds", st.span, (), share,
                                      detail=f"in {reached[st.name]} step(s)" + (f": {paths[st.name]}"
                                                                                  if st.name in paths else "")))
            elif st.name in unknown:
                results.append(Result(self.m.name, "reachability", title, "unknown", st.span, (), share,
                                      detail=f"z3 gave up within {self.opts.depth} steps"))
            else:
                results.append(Result(self.m.name, "reachability", title, "fails", st.span, (), share,
                                      detail=f"no path from {self.m.initial.name} reaches {st.name} within "
                                             f"{self.opts.depth} steps"))
        return results

    def _concolic_search(self, frontier_cap: int = 48) -> tuple[dict[str, int], dict[str, str],
                                                                 list[tuple[dict[str, Any], int]]]:
        """Breadth-first over concrete states; returns the depth and the event path of the first visit of each
        state, and the concrete states visited (with their depth)."""
        start = initial_state(self.m, {k.name: _readable_key(k) for k in self.m.keys})
        reached: dict[str, int] = {start["state"]: 0}
        paths: dict[str, str] = {}
        frontier: list[tuple[dict[str, Any], list[str]]] = [(start, [])]
        seen = {_fingerprint(start)}
        visited: list[tuple[dict[str, Any], int]] = [(start, 0)]
        per_state = max(4, frontier_cap // len(self.m.states))  # every control state keeps some of the frontier
        for depth in range(1, self.opts.depth + 1):
            nxt: list[tuple[dict[str, Any], list[str]]] = []
            counts: dict[str, int] = {}
            for pre, path in frontier:
                for t in self.m.transitions:
                    if pre["state"] not in t.sources:
                        continue
                    args = self._enabling_args(t, pre)
                    if args is None:
                        continue
                    post = self.py.fire(t, pre, args)
                    if post["state"] not in reached:
                        reached[post["state"]] = depth
                        paths[post["state"]] = " -> ".join([*path, t.event])
                    fingerprint = _fingerprint(post)
                    if fingerprint not in seen and counts.get(post["state"], 0) < per_state:
                        seen.add(fingerprint)
                        counts[post["state"]] = counts.get(post["state"], 0) + 1
                        nxt.append((post, [*path, t.event]))
                        visited.append((post, depth))
            if len(reached) == len(self.m.states) or not nxt:
                break
            frontier = nxt
        return reached, paths, visited

    def _enabling_args(self, t: ir.Transition, pre: dict[str, Any]) -> dict[str, Any] | None:
        """Arguments (and `pending`) under which `t` fires from the concrete state `pre`, or None."""
        event = self.m.event(t.event)
        f = self.frames[t.event]
        solver = self._enable_solvers.get(t.index)
        if solver is None:  # what enables `t`, built once; each concrete state is then one assertion
            solver = self._enable_solvers[t.index] = z3.Solver(ctx=self.enc.ctx)
            solver.set("timeout", min(self.opts.timeout_ms, 2_000))
            solver.add(z3.And([*self.enc.row_facts(f, event, t), self.enc.expr(t.guard, f),
                               *readable_strings(self.enc, [(f.params[p.name], p.type) for p in event.params
                                                            if isinstance(p.type, ir.StringType)]),
                               *finite_sets(self.enc, [(f.params[p.name], p.type) for p in event.params
                                                       if isinstance(p.type, ir.SetType)], self.opts.set_width,
                                            prefix="a")[0]]))
        solver.push()
        solver.add(self._equals(f, pre))
        verdict = solver.check()
        model = solver.model() if verdict == z3.sat else None
        solver.pop()
        if model is None:
            return None
        _, args = frame_values(self.enc, model, f, event)
        if not (self.py.holds(t.guard, pre, args) and self.py.holds(t.assumes, pre, args)):
            raise VerifierBug(f"z3 enabled {t.label} from a concrete state, the Python evaluator does not: "
                              f"{pre} {args}")
        return args

    def _bounded_search(self, missing: list[ir.State], starts: list[tuple[dict[str, Any], int]] | None,
                        max_depth: int) -> tuple[dict[str, int], set[str]]:
        """Bounded model checking for states not reached yet, from the initial state (`starts` None) or from any of
        the given concrete states: (found → depth from the start, unknown)."""
        solver = z3.Solver(ctx=self.enc.ctx)
        solver.set("timeout", self.opts.timeout_ms)
        frames = [self.enc.frame("@0")]
        solver.add(self.enc.bounds(frames[0]))
        if starts is None:
            solver.add(self.enc.initial(frames[0]))
        else:
            solver.add(z3.Or([self._equals(frames[0], concrete) for concrete, _ in starts]))
        relation, template_cur, template_nxt, params = self._transition_relation(frames[0].keys)
        found: dict[str, int] = {}
        unknown: set[str] = set()
        for depth in range(1, max_depth + 1):
            todo = [st for st in missing if st.name not in found]
            if not todo:
                break
            nxt = self.enc.frame(f"@{depth}", keys=frames[0].keys)
            solver.add(self.enc.bounds(nxt))
            solver.add(self._unroll(relation, (template_cur, frames[-1]), (template_nxt, nxt), params, depth))
            frames.append(nxt)
            for st in todo:
                verdict = self._check(solver, [nxt.state == self.enc.state_values[st.name]])[0]
                if verdict == z3.sat:
                    found[st.name] = depth
                    unknown.discard(st.name)
                elif verdict == z3.unknown:
                    unknown.add(st.name)
        return found, unknown

    def _equals(self, f: Frame, concrete: dict[str, Any]) -> z3.BoolRef:
        return z3.And([f.state == self.enc.state_values[concrete["state"]],
                       *[f.variables[v.name] == self.enc.literal(concrete[v.name], v.type) for v in self.m.variables],
                       *[f.keys[k.name] == self.enc.literal(concrete[k.name], k.type) for k in self.m.keys]])

    def _transition_relation(self, keys: dict[str, z3.ExprRef]) -> tuple[z3.BoolRef, Frame, Frame,
                                                                          list[z3.ExprRef]]:
        """Some transition leads from a template frame to the next one; translated once, then unrolled by
        substitution. Returns the relation, both template frames and the parameter constants to refresh."""
        cur = self.enc.frame("@cur", keys=keys)
        nxt = self.enc.frame("@nxt", keys=keys)
        options, params = [], []
        for t in self.m.transitions:
            event = self.m.event(t.event)
            f = Frame(cur.state, cur.variables, cur.keys)
            self.enc.bind_event(f, event, f"@t#{t.index}")
            assert f.pending is not None
            params += [*f.params.values(), f.pending]
            post = self.enc.post(f, t)
            options.append(z3.And(
                self.enc.in_states(f, t.sources), *self.enc.row_facts(f, event, t), self.enc.expr(t.guard, f),
                nxt.state == post.state, *[nxt.variables[v] == post.variables[v] for v in nxt.variables]))
        relation = z3.Or(options) if options else z3.BoolVal(False, ctx=self.enc.ctx)
        return relation, cur, nxt, params

    def _unroll(self, relation: z3.BoolRef, cur: tuple[Frame, Frame], nxt: tuple[Frame, Frame],
                params: list[z3.ExprRef], depth: int) -> z3.BoolRef:
        pairs: list[tuple[z3.ExprRef, z3.ExprRef]] = []
        for template, actual in (cur, nxt):
            pairs.append((template.state, actual.state))
            pairs += [(template.variables[v], actual.variables[v]) for v in template.variables]
        pairs += [(p, z3.Const(f"{p}@{depth}", p.sort())) for p in params]
        return z3.substitute(relation, *pairs)

    # ------------------------------------------------------------ trace-level properties

    def trace_only(self, p: ir.TraceProperty) -> Result:
        reasons = {
            "exclusive": "it relates several instances at the same moment (one partition, two members); z3 verifies "
                         "one instance at a time",
            "monotonic": "it compares rows of different instances in trace order; z3 verifies one instance at a time",
            "within": "it bounds the time between two states; the model has no clock",
            "before": "it orders events of two machines; z3 verifies one machine at a time",
            "fenced": "it compares two machines' epochs over time; z3 verifies one machine at a time",
        }
        return Result(self.m.name, "trace", f"trace property {p.name}", "trace-only", p.span,
                      detail=f"checked on traces only: {reasons[p.form]}")


def _readable_key(k: ir.Field) -> Any:
    """A key value for concrete searches: the first real name of its kind (an empty id is usually rejected)."""
    if isinstance(k.type, ir.StringType):
        return next(x for x in POOL.get(k.type.name, POOL["string"]) if x)
    if isinstance(k.type, ir.IntType):
        return max(k.type.lo, min(1, k.type.hi))
    return False if isinstance(k.type, ir.BoolType) else None


def _fingerprint(state: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(sorted((k, tuple(sorted(v)) if isinstance(v, frozenset) else v) for k, v in state.items()))


def verify_machine(machine: ir.Machine, options: Options | None = None,
                   relation: Relation | None = None) -> list[Result]:
    """Every obligation of `machine`; with a `persist` declaration also its persisted-step relation's (`relation`,
    the committed one, or derived here when not given)."""
    results = MachineVerifier(machine, options).run()
    if machine.persist is not None and (options or Options()).persisted:
        from .persisted import DerivationError, derive
        from .verify_persisted import persisted_results

        opts = options or Options()
        try:
            relation = relation or derive(machine)
        except DerivationError as e:
            return [*results, Result(machine.name, "persisted", f"the persisted-step relation of {machine.name} "
                                     "can be derived", "fails", machine.persist.span, detail=str(e))]
        results += persisted_results(machine, relation, opts.timeout_ms)
    return results


def verify(machines: list[ir.Machine], options: Options | None = None) -> Iterator[list[Result]]:
    """Results per machine, in order (a generator, so the caller can show progress)."""
    for m in machines:
        yield verify_machine(m, options)

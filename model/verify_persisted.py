"""`kcoord verify`'s obligations about a persisted-step relation: every way the spec can write a record lands in it.

Owns: `persisted_results(machine, relation)`. For every path of up to `relation.depth + 1` transitions of which only
the last writes (one transition longer than the relation was derived from, so a longer path that would add a pair
shows up), from every state a record can hold: the pre-state satisfying the invariants, each row's guard and
`assumes`, the post-state satisfying the invariants (consecution proves they do) ⇒ some clause of the two records'
states holds. It checks the relation as written (the committed generated one when the caller passes it), not how it
was derived. A failure carries the path as a counterexample, re-checked by the Python evaluator.
Must not import: lark, pyspark.
"""

from __future__ import annotations

import time
from typing import Any

import z3

from . import ir
from .persisted import path_formula, path_label, writing_paths
from .printer import Execution, Transition
from .pyexpr import PythonEvaluator
from .steprel import Relation
from .verify_result import Result, VerifierBug
from .z3backend import Encoder, finite_sets, frame_values, readable_strings, set_terms, string_terms


def persisted_results(m: ir.Machine, relation: Relation, timeout_ms: int = 10_000) -> list[Result]:
    assert m.persist is not None
    enc = Encoder(m)
    solver = z3.Solver(ctx=enc.ctx)
    solver.set("timeout", timeout_ms)
    out = []
    final = {s.name for s in m.states if s.final}
    for start, rows in writing_paths(m, relation.depth + 1):
        f = path_formula(enc, m.persist, start, rows)
        tombstone = f.target in final
        clauses = relation.between(start, f.target, tombstone)
        covered = z3.Or([enc.all_of([enc.expr(a, f.pre, f.post) for a in c.atoms]) for c in clauses]) \
            if clauses else z3.BoolVal(False, ctx=enc.ctx)
        facts = list(f.body)
        if not tombstone:
            facts += [enc.expr(i.expr, f.post) for i in m.invariants]
        longer = " (one transition longer than derived)" if len(rows) == relation.depth + 2 else ""
        title = f"{relation.record} written by {path_label(rows)} from {start} is in the persisted-step relation" \
                f"{longer}"
        solver.push()
        solver.add(facts)
        solver.add(z3.Not(covered))
        started = time.perf_counter()
        verdict = solver.check()
        elapsed = (time.perf_counter() - started) * 1000
        last = rows[-1]
        if verdict == z3.unsat:
            out.append(Result(m.name, "persisted", title, "holds", last.span, (m.persist.span,), elapsed))
        elif verdict == z3.unknown:
            out.append(Result(m.name, "persisted", title, "unknown", last.span, (m.persist.span,), elapsed,
                              detail=f"z3: {solver.reason_unknown()}"))
        else:
            cx = _counterexample(enc, m, _readable_model(enc, solver, f), f, relation, tombstone)
            out.append(Result(m.name, "persisted", title, "fails", last.span, (m.persist.span,), elapsed,
                              detail="no clause of the relation explains the record this path writes",
                              counterexample=cx))
        solver.pop()
    return out


def _readable_model(enc: Encoder, solver: z3.Solver, f: Any) -> z3.ModelRef:
    """A model whose strings come from the readable pool and whose sets are small (what the Python evaluator can
    read back exactly), as the verifier's other counterexamples."""
    sets: list[tuple[z3.ExprRef, ir.Type]] = []
    strings: list[tuple[z3.ExprRef, ir.Type]] = []
    for i, (step, event, _) in enumerate(f.steps):
        frame_sets = set_terms(enc, step, event)
        sets += frame_sets if i == 0 else frame_sets[len(set_terms(enc, step, None)):]
        frame_strings = string_terms(enc, step, event)
        strings += frame_strings if i == 0 else frame_strings[len(string_terms(enc, step, None)):]
    solver.add(readable_strings(enc, strings))
    for width in range(4):
        solver.push()
        solver.add(finite_sets(enc, sets, width, prefix=f"w{width}")[0])
        if solver.check() == z3.sat:
            return solver.model()
        solver.pop()
    raise VerifierBug("no counterexample with small sets for a persisted-step obligation")


def _counterexample(enc: Encoder, m: ir.Machine, model: z3.ModelRef, f: Any, relation: Relation,
                    tombstone: bool) -> Execution:
    """The path on concrete values, each step re-fired by the Python evaluator; the relation re-checked too."""
    py = PythonEvaluator()
    states: list[dict[str, Any]] = []
    transitions = []
    for step, event, t in f.steps:
        state, args = frame_values(enc, model, step, event)
        if not states:
            states.append(state)
        if not (py.holds(t.guard, states[-1], args)):
            raise VerifierBug(f"z3 fires {t.label} on a state where the Python evaluator finds its guard false")
        states.append(py.fire(t, states[-1], args))
        transitions.append(Transition(t.event, {k: v for k, v in args.items() if k != "pending"},
                                      f"row {t.index}, {t.span.path}:{t.span.line}"))
    before, after = states[0], states[-1]
    explained = [c for c in relation.between(before["state"], after["state"], tombstone)
                 if all(py.holds(a, before, {}, after) for a in c.atoms)]
    if explained:
        raise VerifierBug(f"z3 finds a record no clause explains; the Python evaluator finds {explained[0].label}")
    note = f"no clause of {relation.record}'s relation from {before['state']} to {after['state']} holds"
    return Execution(states, transitions, notes=(note,))

"""The persisted-step relation of a machine, derived from its spec: which value of a key's record may follow which.

A machine with a `persist` declaration stores each instance as one record carrying some of its variables (and maybe
its state); the transitions marked `writes` write it. Between two consecutive records of one key the coordinator took
a sequence of transitions of which only the last wrote (e.g. Transaction's PrepareEpochFence, never written, then the
PrepareAbort that is), with event arguments and in-memory variables the log does not show. This module computes, for
every such sequence of up to `depth` non-writing transitions followed by one writing transition, the exact condition
on the two records, with everything the log does not show eliminated:

    ∃ hidden pre-state variables, every event argument, `pending`:
        pre-state = (v, hidden) ∧ invariants(pre) ∧ each row's guard and `assumes` ∧ persisted(post) = v'

Elimination: a set-valued unknown is replaced by a witness term (`v'.partitions`, `v'.partitions - v.partitions`, ...)
that z3 proves works whenever any value works (so the replacement is exact); the integer, boolean and enum unknowns
go to z3's quantifier elimination (`qe`), which is exact. The result is read back into the spec's expression
language (`kcoord.model.z3read`), simplified (what the types of the two records already guarantee is dropped), and
split into clauses: one conjunction of atoms per (path, source state, target state) — so a violation can name the
closest rows and the atom that fails.

`kcoord gen` writes the relation with the other artefacts (`kcoord.model.gen.persisted`); `kcoord verify` proves it
sound against the spec (every writing path of up to `depth + 1` steps, so one longer than derived, lands in it:
`persisted_obligations`), independently of how it was derived. The checkers evaluate it on consecutive records.
Must not import: lark, pyspark.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import z3

from . import ir
from .steprel import Clause, Relation
from .z3backend import Encoder, Frame
from .z3read import Reader, ReadError, tidy

DEPTH = 2  # non-writing transitions before the writing one (Transaction needs 1: a fence, or a failed fence)


class DerivationError(ValueError):
    """The relation cannot be derived exactly (an unknown with no witness, a result the language cannot say)."""


# ---------------------------------------------------------------- paths


def writing_paths(m: ir.Machine, depth: int) -> Iterator[tuple[str, tuple[ir.Transition, ...]]]:
    """(start state, rows): up to `depth` non-writing transitions, then a writing one, each from the state the
    previous one left. Start states are those a record can hold (targets of writing rows, and the initial state)."""
    final = {s.name for s in m.states if s.final}
    writing = [t for t in m.transitions if t.writes]
    quiet = [t for t in m.transitions if not t.writes]
    starts = sorted({m.initial.name} | {t.target for t in writing if t.target is not None and t.target not in final}
                    | ({s for t in writing if t.target is None for s in t.sources}))

    def walk(state: str, prefix: tuple[ir.Transition, ...]) -> Iterator[tuple[ir.Transition, ...]]:
        for w in writing:
            if state in w.sources:
                yield (*prefix, w)
        if len(prefix) < depth:
            for q in quiet:
                if state in q.sources:
                    yield from walk(q.target_from(state), (*prefix, q))

    for start in starts:
        for rows in walk(start, ()):
            yield start, rows


def path_label(rows: tuple[ir.Transition, ...]) -> str:
    return " ; ".join(t.label for t in rows)


# ---------------------------------------------------------------- the path formula


@dataclass(slots=True)
class PathFormula:
    """The facts of one path from a concrete start state: `body` over the pre-state frame `pre` (persisted variables
    are the previous record), the events' arguments (`unknowns`, with the hidden pre-state variables) and `post`."""

    pre: Frame
    post: Frame
    target: str
    body: list[z3.BoolRef]
    unknowns: list[z3.ExprRef]
    steps: list[tuple[Frame, ir.Event, ir.Transition]]  # each row's pre-state frame (with its arguments)


def path_formula(enc: Encoder, persist: ir.Persist, start: str, rows: tuple[ir.Transition, ...]) -> PathFormula:
    m = enc.m
    pre = enc.frame("@0")
    pre.state = enc.state_values[start]
    body: list[z3.BoolRef] = [*enc.bounds(pre), *(enc.expr(i.expr, pre) for i in m.invariants)]
    unknowns = [pre.variables[v.name] for v in m.variables if v.name not in persist.fields]
    frame, state = pre, start
    steps = []
    for i, t in enumerate(rows):
        event = m.event(t.event)
        step = Frame(frame.state, frame.variables, pre.keys)
        enc.bind_event(step, event, f"@{i}")
        body += [*enc.row_facts(step, event, t), enc.expr(t.guard, step)]
        assert step.pending is not None
        unknowns += [*step.params.values(), step.pending]
        steps.append((step, event, t))
        frame, state = enc.post(step, t), t.target_from(state)
    return PathFormula(pre, frame, state, body, unknowns, steps)


# ---------------------------------------------------------------- derivation


class Deriver:
    """Derives one machine's relation (one encoder, so every z3 term shares one context)."""

    def __init__(self, machine: ir.Machine, depth: int = DEPTH, timeout_ms: int = 30_000) -> None:
        if machine.persist is None:
            raise DerivationError(f"{machine.name} has no `persist` declaration")
        self.m = machine
        self.persist = machine.persist
        self.depth = depth
        self.enc = Encoder(machine, tag="derive")  # a fixed name: the same spec derives the same bytes
        self.timeout_ms = timeout_ms
        self.final = {s.name for s in machine.states if s.final}
        probe = self.enc.frame("@0")
        self.v1 = {name: probe.variables[name] for name in self.persist.fields}
        self.v2 = {name: self.enc.const(f"{name}@next", machine.variable(name).type) for name in self.persist.fields}
        self.keys = probe.keys
        names: dict[str, ir.Expr] = {str(self.v1[n]): ir.VarRef(n, False, machine.variable(n).type) for n in self.v1}
        names |= {str(self.v2[n]): ir.VarRef(n, True, machine.variable(n).type) for n in self.v2}
        names |= {str(term): ir.KeyRef(k.name, k.type) for k in machine.keys for term in [self.keys[k.name]]}
        self.reader = Reader(names, machine)
        self.elapsed_s = 0.0
        self._solvers: dict[tuple[str, str, bool] | None, z3.Solver] = {}
        self._terms: dict[Clause, z3.BoolRef] = {}

    def relation(self) -> Relation:
        start_time = time.perf_counter()
        clauses: list[Clause] = []
        for start, rows in writing_paths(self.m, self.depth):
            clauses += self.clauses(start, rows)
        self.elapsed_s = time.perf_counter() - start_time
        return Relation(self.m.name, self.persist.record, self.persist.fields, self.persist.state, self.depth,
                        _numbered(self._without_subsumed(clauses)))

    def clauses(self, start: str, rows: tuple[ir.Transition, ...]) -> list[Clause]:
        f = path_formula(self.enc, self.persist, start, rows)
        tombstone = f.target in self.final
        body = list(f.body)
        if not tombstone:
            body += [self.v2[n] == f.post.variables[n] for n in self.persist.fields]
        if self._check(body) == z3.unsat:
            return []  # the path cannot be taken
        within = (start, f.target, tombstone)
        minimal = [kept for case in self._cases(body)
                   for conjuncts in self._dnf(self._eliminate(case, f.unknowns), within)
                   if (kept := self._minimal(conjuncts, within)) is not None]
        found: list[tuple[ir.Expr, ...]] = []
        for kept in self._expanded(minimal, within) if minimal else []:
            atoms = self._atoms(kept)
            if atoms not in found:
                found.append(atoms)
        label = path_label(rows)
        return [Clause(label, tuple(t.index for t in rows), start, f.target, tombstone, atoms) for atoms in found]

    def _cases(self, body: list[z3.BoolRef]) -> Iterator[list[z3.BoolRef]]:
        """The body split on the conditions of its `if`s (each case has none left, and its condition as a fact):
        the elimination of each case is a plain conjunction, which reads as the spec's rows do."""
        seen: set[int] = set()
        cond = next((c for b in body if (c := _ite_condition(b, seen)) is not None), None)
        if cond is None:
            yield body
            return
        for value in (True, False):
            # the condition holds (or not) in this case: replacing it by its value everywhere is exact
            fixed = z3.BoolVal(value, ctx=self.enc.ctx)
            case = [z3.simplify(z3.substitute(b, (cond, fixed))) for b in body]
            case.append(cond if value else z3.Not(cond))
            if self._check(case) != z3.unsat:
                yield from self._cases(case)

    # ------------------------------------------------------------ elimination

    def _eliminate(self, body: list[z3.BoolRef], unknowns: list[z3.ExprRef]) -> z3.BoolRef:
        scalars = []
        for u in unknowns:
            if z3.is_array(u):
                witness = self._witness(body, u)
                body = [z3.substitute(b, (u, witness)) for b in body]
            elif u.sort() == self.enc.string_sort:
                raise DerivationError(f"{self.m.name}: cannot eliminate the string {u} (no witness)")
            else:
                scalars.append(u)
        formula = self.enc.all_of(body)
        if scalars:
            formula = z3.Exists(scalars, formula)
        goal = z3.Goal(ctx=self.enc.ctx)
        goal.add(formula)
        tactic = z3.Then(z3.Tactic("qe", ctx=self.enc.ctx), z3.Tactic("simplify", ctx=self.enc.ctx),
                         ctx=self.enc.ctx)
        result = tactic(goal).as_expr()
        if _has_quantifier(result):
            raise DerivationError(f"{self.m.name}: quantifier elimination left a quantifier: {result}")
        return result

    def _witness(self, body: list[z3.BoolRef], unknown: z3.ExprRef) -> z3.ExprRef:
        """A term that satisfies the body whenever some value of `unknown` does (proved by z3)."""
        for w in self._candidates(unknown.sort()):
            replaced = [z3.substitute(b, (unknown, w)) for b in body]
            if self._check([*body, z3.Not(self.enc.all_of(replaced))]) == z3.unsat:
                return w
        raise DerivationError(f"{self.m.name}: no witness term for the set {unknown}")

    def _candidates(self, sort: z3.SortRef) -> list[z3.ExprRef]:
        nxt = [self.v2[n] for n in self.persist.fields if self.v2[n].sort() == sort]
        prev = [self.v1[n] for n in self.persist.fields if self.v1[n].sort() == sort]
        diffs = [z3.SetDifference(a, b) for a in nxt for b in prev]
        return [*nxt, *diffs, z3.EmptySet(sort.domain()), *prev]

    def _check(self, facts: list[z3.BoolRef], within: tuple[str, str, bool] | None = None) -> z3.CheckSatResult:
        """Whether `facts` are satisfiable (with the records' context of `within`: source, target, tombstone)."""
        solver = self._solver(within)
        solver.push()
        solver.add(facts)
        verdict = solver.check()
        solver.pop()
        if verdict == z3.unknown:
            raise DerivationError(f"{self.m.name}: z3 could not decide ({solver.reason_unknown()})")
        return verdict

    def _solver(self, within: tuple[str, str, bool] | None) -> z3.Solver:
        solver = self._solvers.get(within)
        if solver is None:
            solver = self._solvers[within] = z3.Solver(ctx=self.enc.ctx)
            solver.set("timeout", self.timeout_ms)
            if within is not None:
                solver.add(self._context(*within))
        return solver

    # ------------------------------------------------------------ simplification

    def _context(self, source: str, target: str, tombstone: bool) -> list[z3.BoolRef]:
        """What a pair of records satisfies whatever the relation says: the declared types of their fields and keys,
        and the invariants that read only what a record carries (the checkers check every record's invariants:
        the clauses do not repeat them)."""
        out = []
        for values in (self.v1, self.v2):
            out += [self.enc._in_range(values[n], self.m.variable(n).type) for n in self.persist.fields
                    if isinstance(self.m.variable(n).type, ir.IntType)]
        out += [self.enc._in_range(self.keys[k.name], k.type) for k in self.m.keys if isinstance(k.type, ir.IntType)]
        out += self._invariants(source, self.v1)
        if not tombstone:
            out += self._invariants(target, self.v2)
        return out

    def _invariants(self, state: str, values: dict[str, z3.ExprRef]) -> list[z3.BoolRef]:
        """What the invariants say about one record in `state`: the invariants with the unwritten variables
        eliminated (z3's qe; exact), or, when that fails, their conjuncts that read only what the record carries."""
        tag = "@1" if values is self.v1 else "@2"  # named, never fresh: z3's answers depend on names (determinism)
        hidden = {v.name: self.enc.const(f"{v.name}{tag}hidden", v.type) for v in self.m.variables
                  if v.name not in self.persist.fields}
        frame = Frame(self.enc.state_values[state], {**hidden, **values}, self.keys)
        terms = [self.enc.expr(i.expr, frame) for i in self.m.invariants]
        bounds = [self.enc._in_range(hidden[v.name], v.type) for v in self.m.variables
                  if v.name in hidden and isinstance(v.type, ir.IntType)]
        goal = z3.Goal(ctx=self.enc.ctx)
        goal.add(z3.Exists(list(hidden.values()), self.enc.all_of([*bounds, *terms])) if hidden
                 else self.enc.all_of(terms))
        projected = z3.Tactic("qe", ctx=self.enc.ctx)(goal).as_expr()
        if not _has_quantifier(projected):
            return [projected]
        out = []
        for part in (c for inv in self.m.invariants for c in ir.conjuncts(inv.expr)):
            names = {n.name for n in ir.walk(part) if isinstance(n, ir.VarRef)}
            stateful = any(isinstance(n, ir.StateRef) for n in ir.walk(part))
            if names <= set(self.persist.fields) and (self.persist.state or not stateful):
                out.append(self.enc.expr(part, frame))
        return out

    def _dnf(self, formula: z3.BoolRef, within: tuple[str, str, bool]) -> list[list[z3.BoolRef]]:
        """The formula as a disjunction of conjunctions of literals, dropping the conjunctions the context rules
        out (a quantifier elimination's result nests small disjunctions inside a conjunction)."""
        nnf = self._simplify(z3.Tactic("nnf", ctx=self.enc.ctx)(formula).as_expr(), within)
        out: list[list[z3.BoolRef]] = [[]]
        for part in (nnf.children() if z3.is_and(nnf) else [nnf]):
            options = self._dnf_part(part)
            grown = []
            for conj in out:
                for option in options:
                    candidate = [*conj, *option]
                    if self._check(candidate, within) != z3.unsat:
                        grown.append(candidate)
            out = grown
        return out

    def _simplify(self, f: z3.BoolRef, within: tuple[str, str, bool]) -> z3.BoolRef:
        """`f` with every disjunction the context makes true replaced by true (bottom-up; exact under it)."""
        if z3.is_or(f) or z3.is_and(f):
            if self._check([z3.Not(f)], within) == z3.unsat:
                return z3.BoolVal(True, ctx=self.enc.ctx)
            children = [self._simplify(c, within) for c in f.children()]
            if z3.is_and(f):
                kept = [c for c in children if not z3.is_true(c)]
                return self.enc.all_of(kept)
            return z3.Or(children)
        return f

    def _dnf_part(self, f: z3.BoolRef) -> list[list[z3.BoolRef]]:
        if z3.is_or(f) and f.num_args() == 2 and self.reader.not_equal(f.arg(0), f.arg(1)) is not None:
            return [[f]]  # `x != c`, which z3 writes as two inequalities: one atom
        if z3.is_or(f):
            return [c for child in f.children() for c in self._dnf_part(child)]
        if z3.is_and(f):
            out: list[list[z3.BoolRef]] = [[]]
            for child in f.children():
                out = [[*a, *b] for a in out for b in self._dnf_part(child)]
            return out
        return [[f]]

    def _minimal(self, conjuncts: list[z3.BoolRef], within: tuple[str, str, bool]) -> list[z3.BoolRef] | None:
        """The conjuncts that neither the context nor the other conjuncts imply; None when the conjunction
        contradicts the context."""
        if self._check(conjuncts, within) == z3.unsat:
            return None
        kept = [c for c in conjuncts if self._check([z3.Not(c)], within) != z3.unsat]
        i = 0
        while i < len(kept):
            others = kept[:i] + kept[i + 1:]
            if self._check([*others, z3.Not(kept[i])], within) == z3.unsat:
                kept = others
            else:
                i += 1
        return kept

    def _expanded(self, conjunctions: list[list[z3.BoolRef]], within: tuple[str, str, bool]
                  ) -> list[list[z3.BoolRef]]:
        """The same disjunction with fewer atoms: an atom is dropped from a conjunction when the rest stays inside
        the disjunction (a case split the relation does not need, e.g. `x < c` in one case and `x >= c` in the
        other), then a conjunction another one implies is dropped (logic minimisation's expand and cover steps)."""
        whole = z3.Or([self.enc.all_of(c) for c in conjunctions])
        out: list[list[z3.BoolRef]] = []
        for conj in conjunctions:
            kept = list(conj)
            for atom in list(conj):
                fewer = [x for x in kept if not x.eq(atom)]
                if self._check([*fewer, z3.Not(whole)], within) == z3.unsat:
                    kept = fewer
            out.append(kept)
        cover: list[list[z3.BoolRef]] = []
        for i, conj in enumerate(out):
            others = [self.enc.all_of(c) for j, c in enumerate(out) if j != i and (j > i or c in cover)]
            if others and self._check([*conj, z3.Not(z3.Or(others))], within) == z3.unsat:
                continue
            cover.append(conj)
        return cover

    def _atoms(self, kept: list[z3.BoolRef]) -> tuple[ir.Expr, ...]:
        """The conjuncts in spec terms."""
        try:
            atoms = tidy([self.reader.expr(c) for c in kept])
        except ReadError as e:
            raise DerivationError(f"{self.m.name}: {e}") from e
        return tuple(sorted(atoms, key=_atom_order))

    def _without_subsumed(self, clauses: list[Clause]) -> list[Clause]:
        """Drop a clause another clause of the same states implies (keeping the first of equal ones)."""
        kept: list[Clause] = []
        for c in clauses:
            same = [k for k in kept if (k.source, k.target, k.tombstone) == (c.source, c.target, c.tombstone)]
            if any(self._implies(c, k) for k in same):
                continue
            kept = [k for k in kept if k not in same or not self._implies(k, c)]
            kept.append(c)
        return kept

    def _implies(self, a: Clause, b: Clause) -> bool:
        within = (a.source, a.target, a.tombstone)
        return bool(self._check([self._term(a), z3.Not(self._term(b))], within) == z3.unsat)

    def _term(self, c: Clause) -> z3.BoolRef:
        term = self._terms.get(c)
        if term is None:
            term = self._terms[c] = self.clause_term(c)
        return term

    def clause_term(self, c: Clause, pre: Frame | None = None, post: Frame | None = None) -> z3.BoolRef:
        """A clause as a z3 term over `pre` and `post` (default: the two records' constants)."""
        pre = pre or Frame(self.enc.state_values[c.source], dict(self.v1), self.keys)
        post = post or Frame(self.enc.state_values[c.target], dict(self.v2), self.keys)
        return self.enc.all_of([self.enc.expr(a, pre, post) for a in c.atoms])


def _ite_condition(t: z3.ExprRef, seen: set[int]) -> z3.BoolRef | None:
    """The condition of an `if` inside `t` that has no `if` itself (a term shared in the DAG is visited once)."""
    if t.get_id() in seen:
        return None
    seen.add(t.get_id())
    if z3.is_app_of(t, z3.Z3_OP_ITE):
        inner = _ite_condition(t.arg(0), seen)
        return inner if inner is not None else t.arg(0)
    for c in t.children():
        found = _ite_condition(c, seen)
        if found is not None:
            return found
    return None


def _numbered(clauses: list[Clause]) -> tuple[Clause, ...]:
    """Clauses sorted by (source, target, path), the cases of one path and states numbered in that order."""
    ordered = sorted(clauses, key=lambda c: (c.source, c.tombstone, c.target, c.rows, [_atom_order(a) for a in
                                                                                    c.atoms]))
    count: dict[tuple[str, str, str], int] = {}
    for c in ordered:
        count[(c.source, c.target, c.label)] = count.get((c.source, c.target, c.label), 0) + 1
    seen: dict[tuple[str, str, str], int] = {}
    out = []
    for c in ordered:
        k = (c.source, c.target, c.label)
        seen[k] = seen.get(k, 0) + 1
        label = c.label if count[k] == 1 else f"{c.label} (case {seen[k]})"
        out.append(Clause(label, c.rows, c.source, c.target, c.tombstone, c.atoms))
    return tuple(out)


def _has_quantifier(t: z3.ExprRef) -> bool:
    if z3.is_quantifier(t):
        return True
    return any(_has_quantifier(c) for c in t.children())


def _atom_order(e: ir.Expr) -> tuple[int, str]:
    from .pretty import render

    text = render(e)
    return (0 if "'" in text else 1, text)


def derive(machine: ir.Machine, depth: int = DEPTH) -> Relation:
    """The machine's persisted-step relation (see the module's doc)."""
    return Deriver(machine, depth).relation()


def derive_all(machines: Iterable[ir.Machine], depth: int = DEPTH) -> dict[str, Relation]:
    """The relation of every machine with a `persist` declaration, by machine name."""
    return {m.name: derive(m, depth) for m in machines if m.persist is not None}

"""What conformance coverage means, per machine, and what is left out on purpose.

Owns: the coverage items of a machine — every state, every (transition row, source state), every (rejection row,
source state), and every pair of consecutive transition rows of one instance that the spec allows (found by a
concolic search over the spec alone) — and the items that are unreachable by construction, each with its reason:
- `pending-only`: a request event in a pending-only state. The coordinator enters such a state and leaves it in the
  same write (the spec says so of `pending` states), so no request ever finds an instance there;
- `invariants`: z3 proves that no state satisfying the machine's invariants answers the event with that row from
  that state (e.g. VerifyPartition's `p in partitions` in Empty, where `idle_has_no_partitions` holds);
- `load-only`: events the implementation realises as a load of the state (`LOAD_ONLY`);
- `blank-key`: rows that answer only the empty key (e.g. INVALID_GROUP_ID) in a state that no transition
  satisfiable with the empty key leads to (z3, from the initial state on);
- `forgotten`: source states in which the driver says the implementation drops the instance;
- `implementation`: rows the driver says the implementation never takes in a state, each with the reason (its
  `unreachable`: e.g. a write completion the coordinator decides in the same step as the request, so that the
  group can never have moved on), checked against the spec by `declared_unreachable`;
- explicit entries in `UNREACHABLE` (none are needed for the coordinator machines today).
Also owns `CoverageReport` (what a test run visited against the universe, rendered as the table the test session
prints) and the requirement: 100% of states, transitions and rejections of every coordinator machine.
Must not import: kcoord.cli.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import z3

from kcoord.model import ir
from kcoord.model.verify import MachineVerifier, Options

from .argsolver import ArgSolver
from .lockstep import Item, Observation
from .reference_model import ReferenceMachine

COORDINATOR_MACHINES = ("Transaction", "ClassicGroup", "ConsumerGroup", "ConsumerGroupMember")
PAIR_MACHINES = ("Transaction", "ClassicGroup")
KINDS = ("state", "transition", "rejection", "pair")

#: items unreachable for a reason the two rules above cannot see: machine -> item -> reason
UNREACHABLE: Mapping[str, Mapping[Item, str]] = {}
#: (machine, event) the implementation realises as a load (a `load` trace row installing the state read back from
#: the log), never as an event: its rows cannot be visited as transitions, the states they lead to are (as loads)
LOAD_ONLY: Mapping[tuple[str, str], str] = {
    ("ConsumerGroupMember", "ReplayUnknownState"):
        "load-only: the coordinator reads a record with an unknown MemberState byte back as a load row (the state "
        "Unknown is visited that way, by the driver's ReplayUnknown step), not as a ReplayUnknownState event",
}


@dataclass(frozen=True, slots=True)
class Universe:
    machine: str
    items: frozenset[Item]
    excluded: Mapping[Item, str]

    def wanted(self, kinds: Iterable[str] = KINDS) -> set[Item]:
        chosen = set(kinds)
        return {i for i in self.items if i[0] in chosen and i not in self.excluded}

    def of_kind(self, kind: str) -> list[Item]:
        return sorted((i for i in self.items if i[0] == kind), key=repr)


def row_items(m: ir.Machine) -> set[Item]:
    out: set[Item] = {("state", m.name, s.name) for s in m.states}
    for r in m.rows:
        kind = "transition" if isinstance(r, ir.Transition) else "rejection"
        out.update((kind, m.name, r.index, s) for s in r.sources)
    return out


def universe(m: ir.Machine, *, pairs: bool = False, pair_depth: int = 6,
             forgotten: frozenset[str] = frozenset(), unreachable: Mapping[Item, str] | None = None) -> Universe:
    items = row_items(m)
    if pairs:
        items |= spec_pairs(m, depth=pair_depth)
    return Universe(m.name, frozenset(items), excluded_items(m, forgotten=forgotten, unreachable=unreachable))


#: a driver's declaration of rows its implementation never takes: (row index, event, the row's answer for a rejection
#: or its target (None: stay) for a transition, the source states, the reason)
UnreachableRow = tuple[int, str, str | None, tuple[str, ...], str]


class StaleDeclarationError(ValueError):
    """A driver declares unreachable a row the spec no longer has as declared (renumbered or changed)."""


def declared_unreachable(m: ir.Machine, rows: Sequence[UnreachableRow]) -> dict[Item, str]:
    """A driver's `unreachable` rows of `m` as items with their reasons (`implementation: ...`). Each entry names
    its row by index, event and answer (or target) and its states; an entry the spec no longer matches (the rows
    were renumbered, the row changed) is an error, so that a spec change never excludes the wrong item silently."""
    by_index = {r.index: r for r in m.rows}
    out: dict[Item, str] = {}
    for index, event, outcome, states, reason in rows:
        r = by_index.get(index)
        actual = None if r is None else (r.target if isinstance(r, ir.Transition) else r.error)
        if r is None or r.event != event or actual != outcome or not set(states) <= set(r.sources):
            raise StaleDeclarationError(f"{m.name}: the driver declares row {index} ({event}, {outcome}, in {states}) "
                             f"unreachable, but the spec's row {index} is "
                             f"{'missing' if r is None else (r.event, actual, r.sources)}")
        kind = "transition" if isinstance(r, ir.Transition) else "rejection"
        out.update({(kind, m.name, index, s): f"implementation: {reason}" for s in states})
    return out


def excluded_items(m: ir.Machine, *, forgotten: frozenset[str] = frozenset(),
                   unreachable: Mapping[Item, str] | None = None) -> dict[Item, str]:
    """Row items no execution can visit, with the reason (see the module docstring). `forgotten`: states in which
    the implementation drops the instance (the driver says which), so that no event ever finds one there."""
    out: dict[Item, str] = {}
    pending = {s.name for s in m.states if s.pending}
    prover = RowProver(m)
    blank_states = prover.blank_key_states()
    for r in m.rows:
        kind = "transition" if isinstance(r, ir.Transition) else "rejection"
        event = m.event(r.event)
        for s in r.sources:
            item = (kind, m.name, r.index, s)
            if s in forgotten:
                out[item] = (f"forgotten: the implementation drops an instance that reaches {s} (the driver's "
                             f"`forgotten`), so no {r.event} ever finds one there")
            elif blank_states is not None and s not in blank_states and prover.only_blank(r):
                out[item] = (f"blank-key: row {r.index} answers only the empty key, and no transition takes an "
                             f"instance with that key to {s} (z3)")
            elif (m.name, r.event) in LOAD_ONLY:
                out[item] = LOAD_ONLY[(m.name, r.event)]
            elif s in pending and not event.internal:
                out[item] = (f"pending-only: {s} is entered and left within one write, so no {r.event} request "
                             "ever finds an instance in it")
            elif not prover.possible(r, s):
                out[item] = (f"invariants: no state satisfying the invariants of {m.name} answers {r.event} with "
                             f"row {r.index} in {s} (z3)")
    out.update(UNREACHABLE.get(m.name, {}))
    out.update(unreachable or {})
    return out


class RowProver(MachineVerifier):
    """Is a row's guard satisfiable in a state, under the invariants and the row's assumptions?"""

    def __init__(self, m: ir.Machine) -> None:
        super().__init__(m, Options(timeout_ms=5_000))

    def blank_key_states(self) -> frozenset[str] | None:
        """The states an instance whose (single, string) key is "" can reach — an over-approximation: a state is
        in when some transition row from a state already in, satisfiable with the blank key, leads to it. None when
        the machine has no such key."""
        if len(self.m.keys) != 1 or not isinstance(self.m.keys[0].type, ir.StringType):
            return None
        name = self.m.keys[0].name
        reached = {self.m.initial.name}
        changed = True
        while changed:
            changed = False
            for t in self.m.transitions:
                target = t.target
                if target is None or target in reached:
                    continue
                f = self.frames[t.event]
                sources = [self.enc.state_values[s] for s in t.sources if s in reached]
                if not sources:
                    continue
                goal = [*self.enc.row_facts(f, self.m.event(t.event), t), self.enc.expr(t.guard, f),
                        z3.Or([f.state == v for v in sources]), f.keys[name] == z3.StringVal("", ctx=self.enc.ctx)]
                verdict, _ = self._check(self.solver, goal)
                if verdict != z3.unsat:
                    reached.add(target)
                    changed = True
        return frozenset(reached)

    def only_blank(self, row: ir.Row) -> bool:
        """Does `row` answer only the blank key (its guard implies `key == ""`)?"""
        f = self.frames[row.event]
        name = self.m.keys[0].name
        goal = [*self.enc.row_facts(f, self.m.event(row.event), row), self.enc.expr(row.guard, f),
                f.keys[name] != z3.StringVal("", ctx=self.enc.ctx)]
        verdict, _ = self._check(self.solver, goal)
        return bool(verdict == z3.unsat)

    def reached_where_changed(self, row: ir.Row, state: str, earlier: Sequence[ir.Row], negated: bool) -> bool:
        """Can `decide` reach `row` in `state` (no row before it, `earlier` in the runtime's order, matches) where a
        guard mutant would answer otherwise: anywhere for a negated condition (`negated`), where the row's own
        condition is false for a condition made true. Under the invariants and the rows' preconditions (an argument
        a row reads satisfies its event's `requires`)."""
        event = self.m.event(row.event)
        f = self.frames[row.event]
        goal = [*self.enc.row_facts(f, event, row), f.state == self.enc.state_values[state]]
        for r in earlier:
            goal += [self.enc.expr(r.assumes, f), z3.Not(self.enc.expr(r.local_guard, f))]
        if not negated:
            goal.append(z3.Not(self.enc.expr(row.local_guard, f)))
        verdict, _ = self._check(self.solver, goal)
        return bool(verdict != z3.unsat)

    def possible(self, row: ir.Row, state: str) -> bool:
        event = self.m.event(row.event)
        f = self.frames[row.event]
        goal = [*self.enc.row_facts(f, event, row), self.enc.expr(row.guard, f),
                f.state == self.enc.state_values[state]]
        verdict, _ = self._check(self.solver, goal)
        return bool(verdict != z3.unsat)


def spec_pairs(m: ir.Machine, *, depth: int = 6, per_state: int = 8) -> set[Item]:
    """Pairs (row, next row) of consecutive transitions of one instance that the spec allows: a breadth-first
    search over concrete states of the spec alone (z3 picks enabling arguments, as the verifier's concolic search)."""
    solver = ArgSolver(m)
    ref = ReferenceMachine(m)
    key = tuple(_key_value(k) for k in m.keys)
    start = ref.fresh(key)
    frontier: list[tuple[dict[str, Any], int | None]] = [(start, None)]
    seen: set[Any] = set()
    pairs: set[Item] = set()
    for _ in range(depth):
        nxt: list[tuple[dict[str, Any], int | None]] = []
        counts: dict[tuple[str, int | None], int] = {}
        for pre, last in frontier:
            for r in m.transitions:
                if pre["state"] not in r.sources:
                    continue
                args = solver.enabling(r, pre)
                if args is None:
                    continue
                post = solver.py.fire(r, pre, args)
                if last is not None:
                    pairs.add(("pair", m.name, last, r.index))
                if m.state(post["state"]).final:
                    continue
                fp = (_fingerprint(post), r.index)
                control = (str(post["state"]), r.index)
                if fp not in seen and counts.get(control, 0) < per_state:
                    seen.add(fp)
                    counts[control] = counts.get(control, 0) + 1
                    nxt.append((post, r.index))
        frontier = nxt
        if not frontier:
            break
    return pairs


def _key_value(k: ir.Field) -> Any:
    if isinstance(k.type, ir.StringType):
        return "s1"
    return 1 if isinstance(k.type, ir.IntType) else False


def _fingerprint(state: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(sorted((k, tuple(sorted(v)) if isinstance(v, frozenset) else v) for k, v in state.items()))


# ---------------------------------------------------------------------------------------------- reports


@dataclass(slots=True)
class Tally:
    covered: int = 0
    total: int = 0
    missing: list[Item] = field(default_factory=list)

    @property
    def percent(self) -> float:
        return 100.0 * self.covered / self.total if self.total else 100.0


def visited_items(observation: Observation) -> set[Item]:
    out: set[Item] = {("state", m, s) for (m, s) in observation.states}
    out |= {("transition", m, r, s) for (m, r, s) in observation.transitions}
    out |= {("rejection", m, r, s) for (m, r, s) in observation.rejections}
    out |= {("pair", m, a, b) for (m, a, b) in observation.pairs}
    return out


def tally(u: Universe, visited: set[Item]) -> dict[str, Tally]:
    out = {}
    for kind in KINDS:
        wanted = [i for i in u.of_kind(kind) if i not in u.excluded]
        t = Tally(total=len(wanted))
        for i in wanted:
            if i in visited:
                t.covered += 1
            else:
                t.missing.append(i)
        out[kind] = t
    return out


def render_table(rows: list[tuple[str, dict[str, Tally], int]]) -> str:
    """machine, per kind covered/total (%), excluded count — one line per machine."""
    lines = [f"{'machine':<22}" + "".join(f"{k + 's':>22}" for k in KINDS) + f"{'excluded':>10}"]
    for name, tallies, excluded in rows:
        cells = []
        for kind in KINDS:
            t = tallies[kind]
            cells.append(f"{t.covered}/{t.total} ({t.percent:.0f}%)" if t.total else "-")
        lines.append(f"{name:<22}" + "".join(f"{c:>22}" for c in cells) + f"{excluded:>10}")
    return "\n".join(lines)

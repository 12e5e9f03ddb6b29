"""What a trace check is: the check names, their exact meaning, and the spec facts both checkers compile from.

Owns: `CHECKS` (names shared by the Python reference checker `pycheck` and the Spark checker `sparkcheck`, which
implement each of them in a function of the same name), `Violation`, `violation_id`, the spec tables (`table_rows`:
every legal (from_state, event, to_state, row, kind); `row_kinds`; locations) and the machine-level facts (`Spec`).

Rows and pre-states. The rows of one (machine, key) with `seq >= 0` form the key's sequence, ordered by `seq` and,
between rows with equal `seq`, by every other column in schema order but `machine` (so both checkers see duplicates
in the same order; names order as their codes do). A row's *pre-state* is the previous row's post-state (its
`to_state` and variables), or the *fresh instance* (the initial state, every variable at its default, the row's
key fields) when there is no previous row, the previous row ended in a final state (the instance was removed, a new
one starts), or the previous row ended in a *terminal* state and this row starts from the initial state. A terminal
state is a non-final state whose only edges lead back to itself (ClassicGroup's Dead: the group coordinator forgets a
deleted group once its tombstone is written, and the same group id may later be created again from Empty; rows in
Dead itself continue the old instance). Rows with
`seq == -1` answer requests about instances that do not exist: their pre-state is the fresh instance and only the
error-table checks apply to them (`illegal_transition`, `discontinuity`, `reject_changed_state`, `wrong_error`).
`pending` is the row's `pending` column, or true when the pre-state is a pending-only state (as the runtime passes it).

An event argument may be null: the runtime computes some arguments only when the chosen row reads them (a fresh
producer id is allocated only by the rows that use it) and records null for one it never computed. A precondition
(`requires`) that reads a null argument is not evaluated, as in the runtime.

A null in a condition (a guard, a precondition, an invariant, a step property) means unknown, as in SQL: the checkers
evaluate conditions with SQL's three-valued logic, Python (`nullexpr`) as the SQL checkers do (a comparison or any
other operation on a null is unknown; `and`/`or`/`not` are Kleene's, so `x >= 0 or y` and `y or x >= 0` with x null
are both true when y is, else unknown; `if` takes its else branch on unknown). A guard, a rejection's
condition, an invariant and a step property hold only when true (unknown fails them: nothing on the row shows them
true); a transition's precondition fails only when false (unknown — it read an argument the runtime never computed —
is the precondition not evaluated, above). One rule for both kinds of checker, since the SQL trees are shared by the
DuckDB and the Spark SQL engines, and none that depends on the order of a condition's parts. The runtime never sees a
null, so its evaluation (Python's operators) is not changed.

`load` rows are snapshots, not transitions. A coordinator that loads a partition installs each key's latest value
(and a log reader turns every record value into one): the value may summarise several transitions (states that are
never written, values superseded before a compaction) and the loading coordinator may not have known the key at all
(after a failover its `from_state` is the fresh instance's). So a `load` row is legal when its `to_state` can be
reached from its `from_state` along the table's edges (zero or more), its `from_state` is either the pre-state's
state or the initial state, and it has no guard, effect, frame or step to check; its post-state must satisfy the
invariants and the trace properties, and it is the next row's pre-state. The first row of a key that is a `load`
has no known pre-state.

The row checks (one violation per row and check; `invariant` and `step` one per property):

- `illegal_transition`: (from_state, event, to_state, row, kind) is not a tuple of the generated table: a
  transition row `i` from each of its sources to its target (kind `transition`), a row without target to its source
  (kind `stay`), a rejection `i` from each source to itself (kind `reject`), and for `load` rows (event `Load`, row -1)
  every pair of states joined by a path of edges (every state to itself included).
- `discontinuity`: `from_state` differs from the pre-state's state (a `load` may also start from the initial
  state); a first row (or the first of a new instance) that is not `load` does not start from the initial state;
  `seq` is not the previous row's `seq + 1` although both rows have the same `coordinator_epoch` (a lost or
  duplicated row); a `seq == -1` row that is not a rejection from the initial state.
- `guard_false`: the row's spec row (the row its `row` index names, if that row has the row's event and kind) is a
  transition or stay whose guard and precondition share (`assumes`) are false on the pre-state and arguments.
- `effect_mismatch`: a variable the spec row assigns differs from the effect evaluated on the pre-state.
- `frame_mismatch`: a variable the spec row does not assign differs from the pre-state (frame rule).
- `reject_changed_state`: a `reject` row whose variables differ from the pre-state (the state itself is
  `illegal_transition`'s business).
- `wrong_error`: the row's `error` is not its spec row's error (a rejection's error, a transition's answer), or a
  rejection's condition (guard and `assumes`) is false.
- `invariant`: each invariant on the post-state (variables, key fields, `to_state`), every row of the sequence.
- `step`: each step property on (pre-state, post-state) of every transition and stay whose row index names a spec
  row of its event and kind, as for the guard (rejections change nothing and `load` rows are snapshots: neither is a
  step; a row naming no such spec row is an `illegal_transition`, not a known step).

The trace properties (`trace` declarations; one violation per row and property; seq -1 rows never take part):

- `exclusive V per K`: each row of a key holds its value of V from its time until the key's next row (or for ever);
  a row's time is the running maximum of `ts_ms` along the key's sequence (so a key's own intervals never overlap),
  and a row in a final state holds nothing. A row is violating when one element of V is also held by another key
  with equal K at an overlapping time: precisely, ordering the intervals of each (K, element) by (start, key, seq),
  an interval that starts before the latest end among the intervals before it (empty intervals are ignored).
- `monotonic V per K`: ordering the rows with equal K (post-state values) by (ts_ms, seq, key), a row whose V is
  below the maximum V of the rows before it. Rejections take no part: a rejected row changes nothing and carries its
  instance's unchanged values, which may be older than what another instance with equal K already holds (a zombie's
  refused write to a partition that never saw the new epoch). A load is compared with the rows of its own key
  only: it restates what its instance's log holds, which may be older than what another instance already holds (a
  partition reloaded while a Transactions V2 marker fan-out has reached other partitions but not it yet, seen in
  `kcoord simulate --seed 1 --events 1000000`); it goes backwards only if it goes below its own key's history.
- `within A -> B by BOUND`: a row *enters* A when its `to_state` is in A and its pre-state's state is not (or is
  unknown). Its deadline is its `ts_ms` plus BOUND evaluated on its post-state. It is violating when the first row of
  the same key at or after it (in sequence order) whose `to_state` is in B has `ts_ms` after the deadline, or, when
  there is none, when the trace goes on past the deadline (the latest `ts_ms` of the machine's rows is after it).
- `before M.S requires N.E on K`: a row entering S (as for `within`) needs an accepted (`transition` or `stay`) row
  of machine N with event E whose K (its post-state values) equal the entering row's K *as they were before it*
  (its pre-state's values; its post-state's when the pre-state is unknown: the obligation belongs to the state being
  left — a TV2 commit on an exhausted epoch moves CompleteCommit to the next producer id, while the markers carried
  the old one) *in the entering row's window*: at or after the time
  the instance entered the state it now leaves (the `ts_ms` of the first row of the run of consecutive rows that
  ended in the pre-state's state; rejections and stays in between do not move it; no lower bound for a key's first
  row) and at or before the entering row's `ts_ms`. The window is what makes the KAFKA-17507 ordering checkable:
  Complete* must follow a marker of *this* transaction, written after its Prepare*; an older event of the same K
  (the previous transaction's) does not count. Rows of different machines in one millisecond are unordered, and a
  property only fails on an order it can prove.
- `fenced M.E.p by N.v on K`: an accepted row of M with event E whose argument p is below the latest value of N.v for
  equal K, latest among N's rows with `ts_ms` strictly before the row's (ties in `ts_ms` broken by seq, then key).
  A null p (an argument never computed) is compared with nothing.

On coordinator logs (`logcheck`), besides the rows their records become:

- `persisted_step`: a record of a machine with a `persist` declaration that follows its key's previous record (or the
  fresh instance) and that no clause of the machine's persisted-step relation explains; named by the record's place.

`before` and `fenced` need the other machine's rows: when the input has none, the property is reported as not
checked (in the summary), never as passed.
Must not import: pyspark, kcoord.cli.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kcoord.model import ir

CHECKS: tuple[str, ...] = (
    "illegal_transition", "discontinuity", "guard_false", "effect_mismatch", "frame_mismatch",
    "reject_changed_state", "wrong_error", "invariant", "step",
    "exclusive", "monotonic", "within", "before", "fenced",
    "persisted_step",
)
ROW_CHECKS = CHECKS[:9]
TRACE_FORMS = CHECKS[9:14]
LOG_CHECKS = CHECKS[14:]  # on coordinator logs' records, not on rows (`logcheck`)
LOAD_EVENT = "Load"
ACCEPTED_KINDS = ("transition", "stay")
NEVER = 2**63 - 1  # an interval end meaning "for ever" (no later row)


@dataclass(frozen=True, slots=True)
class Violation:
    """One violated check on one row. `name` says which property or row (`invariant`: its name; `effect_mismatch`:
    the variables); `seq_from`..`seq_to` is the range of rows involved; `witness_rows` the rows shown around it."""

    machine: str
    key: str
    check: str
    name: str
    seq: int
    seq_from: int
    seq_to: int
    location: str
    message: str
    witness: str = ""
    witness_rows: str = ""  # JSON: {"base": state or null, "segments": [{"key":..., "rows": [...], "at": seq}]}

    @property
    def id(self) -> str:
        return violation_id(self.machine, self.key, self.check, self.name, self.seq)

    @property
    def identity(self) -> tuple[str, str, str, str, int]:
        return self.machine, self.key, self.check, self.name, self.seq


def violation_id(machine: str, key: str, check: str, name: str, seq: int) -> str:
    """A short stable id (the same in both checkers: Spark computes `substring(sha1(...), 1, 12)`)."""
    text = "|".join((machine, key, check, name, str(seq)))
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def location(span: Any) -> str:
    return f"{span.path}:{span.line}"


@dataclass(frozen=True, slots=True)
class SpecRow:
    index: int
    event: str
    kind: str  # transition | stay | reject
    error: str
    location: str
    label: str


@dataclass(frozen=True, slots=True)
class Spec:
    """The facts of one machine both checkers compile from (computed once, from the IR)."""

    machine: ir.Machine
    rows: dict[int, SpecRow] = field(default_factory=dict)
    table: frozenset[tuple[str, str, str, int, str]] = frozenset()
    final_states: frozenset[str] = frozenset()
    terminal_states: frozenset[str] = frozenset()
    pending_states: frozenset[str] = frozenset()
    initial: str = ""
    defaults: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, m: ir.Machine) -> Spec:
        return cls(m, {r.index: spec_row(m, r) for r in m.rows}, frozenset(table_rows(m)),
                   frozenset(s.name for s in m.states if s.final), terminal_states(m),
                   frozenset(s.name for s in m.states if s.pending),
                   m.initial.name, {v.name: v.default for v in m.variables})

    @property
    def name(self) -> str:
        return self.machine.name

    def event_params(self, event: str) -> tuple[ir.Field, ...]:
        return next((e.params for e in self.machine.events if e.name == event), ())

    def transition(self, index: int) -> ir.Transition:
        return next(t for t in self.machine.transitions if t.index == index)

    def rejection(self, index: int) -> ir.Rejection:
        return next(r for r in self.machine.rejections if r.index == index)


def spec_row(m: ir.Machine, r: ir.Row) -> SpecRow:
    if isinstance(r, ir.Transition):
        kind = "stay" if r.is_stay else "transition"
        return SpecRow(r.index, r.event, kind, r.answer, location(r.span), r.label)
    return SpecRow(r.index, r.event, "reject", r.error, location(r.span), r.label)


def table_rows(m: ir.Machine) -> Iterable[tuple[str, str, str, int, str]]:
    """Every legal (from_state, event, to_state, row, kind)."""
    for t in m.transitions:
        for s in t.sources:
            yield s, t.event, t.target_from(s), t.index, "stay" if t.is_stay else "transition"
    for r in m.rejections:
        for s in r.sources:
            yield s, r.event, s, r.index, "reject"
    for a, reachable in reachability(m).items():
        for b in sorted(reachable):
            yield a, LOAD_EVENT, b, -1, "load"


def reachability(m: ir.Machine) -> dict[str, frozenset[str]]:
    """Every state → the states reachable from it along the edges, itself included (a `load` row's legal targets)."""
    succ: dict[str, set[str]] = {s.name: set() for s in m.states}
    for a, b in m.edges:
        succ[a].add(b)
    out: dict[str, frozenset[str]] = {}
    for start in succ:
        seen, todo = {start}, [start]
        while todo:
            for nxt in succ[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        out[start] = frozenset(seen)
    return out


def terminal_states(m: ir.Machine) -> frozenset[str]:
    """Non-final states whose every edge leads back to themselves (a row from the initial state after one of them
    starts a new instance of the key)."""
    return frozenset(s.name for s in m.states
                     if not s.final and all(b == s.name for a, b in m.edges if a == s.name))


def trace_location(m: ir.Machine, prop: ir.TraceProperty) -> str:
    return location(prop.span)


def row_check_location(spec: Spec, check: str, row_index: int, event: str) -> str:
    """Where a row check points: the spec row, else the event, else the machine."""
    r = spec.rows.get(row_index)
    if r is not None and check != "discontinuity":
        return r.location
    ev = next((e for e in spec.machine.events if e.name == event), None)
    if ev is not None and check == "illegal_transition":
        return location(ev.span)
    return location(spec.machine.span)


def other_machine(prop: ir.TraceProperty) -> str:
    """The machine a `before` / `fenced` property reads besides its own (`before M.S N.E`, `fenced M.E.p N.v`)."""
    return prop.subject[-2]

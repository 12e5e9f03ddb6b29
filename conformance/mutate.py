"""Mutation testing of the generated suite: mutants of the runtime tables (`impl/_generated`) and the seeded-bug
variants, each run against the generated cases in process; the score is the share of non-equivalent mutants some
case kills.

Owns: `Mutant`, `table_mutants` (single-edge and single-guard mutants of one machine's table), `patched` (a context
manager that makes `MachineTable.load` return the mutated table: every coordinator built inside it runs the mutant,
while the reference model, built from the IR, does not), `seeded_bug_mutants` (the variants of
`kcoord.conformance.bugs`, imported defensively: the report says when the module is absent), `run_mutation` and
`render_report` (the Markdown written to `conformance/MUTATION.md`).

Mutant kinds (one change each, everything else the generated table):
- `edge-retarget`: a transition row goes to another state (the table's valid-previous sets follow, so the runtime's
  own edge check does not give it away);
- `edge-drop`: a transition row loses one of its source states (the event is no longer answered there);
- `guard-true` / `guard-false`: a row's own condition (what `decide` evaluates, rows in declaration order) is
  replaced by true / false; `guard-negate`: by its negation. A guard-true mutant of a row that is already the last
  row of every (state, event) it answers is not generated: the verifier proves the rows total, so the last row's
  condition is already implied there (an equivalent mutant by construction).
Survivors are listed with the reason the generator can state, or "not distinguished by any case" otherwise.

Equivalent mutants (the usual definition: no execution of the implementation can tell them from the original) are
listed apart and left out of the score: a mutant that only makes a row never match (guard-false), go elsewhere
(edge-retarget) or lose a source state (edge-drop), where every item of the row it changes — (row, source state) —
is one the generated universe excludes with a stated reason (the implementation drops the instance there, the state
is pending-only, a driver's `unreachable` entry, ...; see the coverage report), changes no run: `decide` takes the
first matching row, and that row never matches in a reachable situation. A row left out for any other reason (a
coverage gap) keeps its mutants in the score. A few survivors are equivalent for a reason these rules cannot see (a
guard the reachable states always satisfy): `EQUIVALENT_SURVIVORS` names them with the reason, and they are left out
of the score only when they survive. A surviving guard-true or guard-negate mutant is also equivalent when z3 proves
(`shadowed`) that no state the invariants allow reaches its row — no row before it in the runtime's order matching —
where the mutated condition differs from the row's own: every request then takes the same row either way.
Must not import: kcoord.cli.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kcoord.impl.statemachine import MachineTable, Row
from kcoord.model import ir
from kcoord.model.loader import bundled_machines

from .coverage import RowProver
from .lockstep import Item
from .pytest_plugin import load_universes
from .runner import Session
from .suite import SuiteCase, load_cases, run_suite

#: the generated table module of each machine
MODULES = {"Transaction": "transaction", "ClassicGroup": "classic_group", "ConsumerGroup": "consumer_group",
           "ConsumerGroupMember": "consumer_group_member", "PartitionProducer": "partition_producer"}
KINDS = ("edge-retarget", "edge-drop", "guard-true", "guard-false", "guard-negate")
#: why a seeded bug can survive the generated suite (shown only if it does; each is caught elsewhere, as named)
SURVIVOR_NOTES = {
    "KAFKA-17507": "needs a TxnOffsetCommit inside the transaction and a marker race: the Transaction driver's "
                   "programs add data partitions only (caught by tests/impl/group/test_kafka_17507.py and the trace "
                   "checkers)",
    "endtxn-retry-commits-later": "needs a stale-epoch EndTxnV2 after the next TV2 transaction opened (three steps "
                                  "past the first visit of every item; caught by the trace checkers' seeded-bug "
                                  "tests)",
}

_TIMER_EPOCH = ("the implementation cancels a member's rebalance timer whenever it leaves UnrevokedPartitions and "
                "replaces it whenever its epoch changes there (the driver's `unreachable` reason for row 66), so "
                "RebalanceTimeout fires only in UnrevokedPartitions at the member's own epoch, where row 65 matches "
                "first either way")
#: table mutants that survive and that no execution of the implementation can tell from the original, for a reason
#: the rules of `equivalent` cannot see (a guard the states the implementation reaches always satisfy): shown as
#: equivalent, and left out of the score, only when they survive (a killed one is killed)
EQUIVALENT_SURVIVORS = {
    "ConsumerGroup:guard-true:row28:MemberJoined: `not bump and group_epoch > assignment_epoch` -> true":
        "row 28 answers only Empty and Assigning; in Assigning group_epoch > assignment_epoch holds (invariant "
        "derived_state), and an Empty group with group_epoch == assignment_epoch is never reached by the "
        "implementation (the driver's `unreachable` reason for row 29 in Empty), so the guard is true wherever "
        "row 27 (the bump) does not match first",
    "ConsumerGroupMember:guard-true:row65:RebalanceTimeout: `member_epoch == epoch` -> true": _TIMER_EPOCH,
    "ConsumerGroupMember:guard-negate:row66:RebalanceTimeout: "
    "not (`not (state == UnrevokedPartitions and member_epoch == epoch)`)": _TIMER_EPOCH,
}


@dataclass(frozen=True, slots=True)
class Mutant:
    machine: str
    kind: str
    row: int  # -1 for a seeded bug
    detail: str
    apply: Callable[[], contextlib.AbstractContextManager[None]] = field(compare=False, repr=False)

    @property
    def name(self) -> str:
        return f"{self.machine}:{self.kind}:row{self.row}:{self.detail}" if self.row >= 0 else \
            f"{self.machine}:{self.kind}:{self.detail}"


@dataclass(slots=True)
class Verdict:
    mutant: Mutant
    killed: bool
    by: str = ""  # the killing case
    cases_run: int = 0
    reason: str = ""  # why a survivor survived (when known), or why it is equivalent
    seconds: float = 0.0
    equivalent: bool = False  # no execution can tell it from the original: left out of the score


@dataclass(slots=True)
class MutationResult:
    verdicts: list[Verdict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def killed(self) -> int:
        return sum(v.killed for v in self.verdicts)

    @property
    def equivalent(self) -> int:
        return sum(v.equivalent for v in self.verdicts)

    @property
    def scored(self) -> int:
        """Mutants the score counts: all but the equivalent ones."""
        return len(self.verdicts) - self.equivalent

    @property
    def score(self) -> float:
        return 100.0 * self.killed / self.scored if self.scored else 100.0

    @property
    def raw_score(self) -> float:
        """Killed over every mutant, equivalent ones included."""
        return 100.0 * self.killed / len(self.verdicts) if self.verdicts else 100.0


# ---------------------------------------------------------------------------------------------- table mutants


def _copy_table(module: str) -> MachineTable:
    return MachineTable(importlib.import_module(f"kcoord.impl._generated.{module}"))


def _reindex(table: MachineTable, rows: Sequence[Row]) -> None:
    table.rows = tuple(rows)
    by_index = {r.index: r for r in rows}
    index: dict[tuple[str, str], tuple[Row, ...]] = {}
    for key, old in table.index.items():
        kept = tuple(by_index[r.index] for r in old if r.index in by_index and key[0] in by_index[r.index].sources)
        if kept:
            index[key] = kept
    table.index = index
    previous: dict[str, set[str]] = {s: set() for s in table.states}
    for r in rows:
        if r.kind == "transition" and r.target is not None:
            previous[r.target] |= set(r.sources)
    table.valid_previous = {s: frozenset(v) for s, v in previous.items()}


@contextlib.contextmanager
def patched(module: str, change: Callable[[MachineTable], None]) -> Iterator[None]:
    """Inside the block, `MachineTable.load(module)` returns a fresh copy of the table changed by `change`."""
    original = MachineTable.__dict__["load"]

    def load(cls: type[MachineTable], name: str) -> MachineTable:
        table: MachineTable = original.__func__(cls, name)
        if name == module:
            table = _copy_table(name)
            change(table)
        return table

    MachineTable.load = classmethod(load)  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        MachineTable.load = original  # type: ignore[method-assign]


def _row_change(module: str, index: int, edit: Callable[[Row], Row | None]) -> Callable[[], Any]:
    def change(table: MachineTable) -> None:
        rows = []
        for r in table.rows:
            if r.index == index:
                new = edit(r)
                if new is not None:
                    rows.append(new)
            else:
                rows.append(r)
        _reindex(table, rows)
    return lambda: patched(module, change)


def _const(value: bool) -> Callable[[Mapping[str, Any], Mapping[str, Any]], bool]:
    return lambda s, a: value


def _negate(g: Callable[[Mapping[str, Any], Mapping[str, Any]], bool]
            ) -> Callable[[Mapping[str, Any], Mapping[str, Any]], bool]:
    return lambda s, a: not g(s, a)


def _retarget(state: str) -> Callable[[Row], Row | None]:
    return lambda r: dataclasses.replace(r, target=state)


def _drop_source(state: str) -> Callable[[Row], Row | None]:
    """The row without `state` among its sources (a row with no source left is gone)."""
    return lambda r: dataclasses.replace(r, sources=r.sources - {state}) if len(r.sources) > 1 else None


def _last_everywhere(table: MachineTable, row: Row) -> bool:
    return all(table.index.get((s, row.event), ())[-1:] == (row,) for s in row.sources)


def table_mutants(machine: str, kinds: Sequence[str] = KINDS) -> list[Mutant]:
    module = MODULES[machine]
    table = MachineTable.load(module)
    out: list[Mutant] = []
    for row in table.rows:
        if "edge-retarget" in kinds and row.kind == "transition" and row.target is not None:
            for other in table.states:
                if other == row.target or (other in table.final_states and row.target not in table.final_states):
                    continue
                out.append(Mutant(machine, "edge-retarget", row.index, f"{row.event}->{other} (spec: {row.target})",
                                  _row_change(module, row.index, _retarget(other))))
        if "edge-drop" in kinds and row.kind != "reject":
            for source in sorted(row.sources):
                out.append(Mutant(machine, "edge-drop", row.index, f"{row.event} not from {source}",
                                  _row_change(module, row.index, _drop_source(source))))
        if "guard-true" in kinds and row.condition.strip() not in ("", "true") and not _last_everywhere(table, row):
            out.append(Mutant(machine, "guard-true", row.index, f"{row.event}: `{row.condition}` -> true",
                              _row_change(module, row.index, lambda r: dataclasses.replace(
                                  r, guard=_const(True), local=_const(True)))))
        if "guard-false" in kinds:
            out.append(Mutant(machine, "guard-false", row.index, f"{row.event}: `{row.condition or 'true'}` -> false",
                              _row_change(module, row.index, lambda r: dataclasses.replace(
                                  r, guard=_const(False), local=_const(False)))))
        if "guard-negate" in kinds and row.condition.strip() not in ("", "true"):
            out.append(Mutant(machine, "guard-negate", row.index, f"{row.event}: not (`{row.condition}`)",
                              _row_change(module, row.index, lambda r: dataclasses.replace(
                                  r, guard=_negate(r.guard), local=_negate(r.local)))))
    return out


# ---------------------------------------------------------------------------------------------- seeded bugs


def seeded_bug_mutants() -> tuple[list[Mutant], str]:
    """The seeded-bug variants of `kcoord.conformance.bugs` (another task's module, imported defensively: the note
    says when it is absent). Each `SeededBug` switches its bug on through `enable(config)`; the mutant applies it to
    the `ClusterConfig` of every cluster a driver builds while the mutant is active."""
    try:
        bugs = importlib.import_module("kcoord.conformance.bugs")
    except ImportError as e:
        return [], f"seeded bugs: kcoord.conformance.bugs is absent ({e}); only table mutants were run"
    registry: Any = getattr(bugs, "BUGS", None)
    if not isinstance(registry, Mapping):
        return [], "seeded bugs: kcoord.conformance.bugs has no BUGS registry; none were run"
    out = []
    skipped = []
    for name, bug in sorted(registry.items()):
        if not callable(getattr(bug, "enable", None)):
            skipped.append(str(name))
            continue
        out.append(Mutant(str(getattr(bug, "machine", "any")), "seeded-bug", -1, str(name), _bug_switch(bug)))
    note = f"seeded bugs: {len(out)} from kcoord.conformance.bugs ({', '.join(sorted(registry))})"
    if skipped:
        note += f"; skipped (no `enable`): {', '.join(skipped)}"
    return out, note


def _bug_switch(bug: Any) -> Callable[[], contextlib.AbstractContextManager[None]]:
    @contextlib.contextmanager
    def switched_on() -> Iterator[None]:
        from .drivers import base

        names = vars(base)  # the name the drivers' `ClusterDriver` builds its cluster with
        original = names["Cluster"]

        def build(workdir: Any, clock: Any, *, config: Any, **kwargs: Any) -> Any:
            return original(workdir, clock, config=bug.enable(config), **kwargs)

        names["Cluster"] = build
        try:
            yield
        finally:
            names["Cluster"] = original
    return switched_on


# ---------------------------------------------------------------------------------------------- running


Fires = dict[str, frozenset[tuple[str, int, str]]]


def profile(cases: Sequence[SuiteCase], session: Session) -> Fires:
    """Case id → every (machine, row, source state) any step of the unmutated run took (the order hint, and the
    proof that a mutant of a row no case takes changes nothing)."""
    out: Fires = {}
    obs = session.observation
    for case in cases:
        before = obs.transitions + obs.rejections
        run_suite([case], session=session)
        after = obs.transitions + obs.rejections
        out[case.id] = frozenset(k for k in after if after[k] > before.get(k, 0))
    return out


def untouched(mutant: Mutant, fires: Fires) -> str | None:
    """Why `mutant` provably changes no case's run, or None. A row that no step of any case takes cannot change a
    run by going elsewhere (edge-retarget), by never matching (guard-false), or by losing a source state in which it
    never matched (edge-drop): `decide` takes the first matching row in declaration order, and it never matched."""
    if mutant.row < 0 or mutant.kind not in ("edge-retarget", "guard-false", "edge-drop"):
        return None
    taken = {(r, s) for f in fires.values() for (m, r, s) in f if m == mutant.machine}
    if mutant.kind == "edge-drop":
        state = mutant.detail.rsplit(" not from ", 1)[1]
        if (mutant.row, state) in taken:
            return None
        return f"equivalent for the suite: row {mutant.row} is never taken in {state} by a generated case " \
               "(a coverage gap of the suite, listed in its coverage report)"
    if any(r == mutant.row for r, _ in taken):
        return None
    return f"equivalent for the suite: row {mutant.row} is never taken by a generated case (a coverage gap)"


def equivalent(mutant: Mutant, excluded: Mapping[Item, str]) -> str | None:
    """Why `mutant` is equivalent (see the module docstring), or None: every item it changes is excluded from the
    universe as unreachable, so no execution takes the mutated row there."""
    if mutant.row < 0 or mutant.kind not in ("edge-retarget", "guard-false", "edge-drop"):
        return None
    table = MachineTable.load(MODULES[mutant.machine])
    row = next((r for r in table.rows if r.index == mutant.row), None)
    if row is None:
        return None
    kind = "rejection" if row.kind == "reject" else "transition"  # a `stay` row's items are transitions too
    states = [mutant.detail.rsplit(" not from ", 1)[1]] if mutant.kind == "edge-drop" else list(row.sources)
    reasons = [excluded.get((kind, mutant.machine, mutant.row, s)) for s in states]
    if not states or any(r is None for r in reasons):
        return None
    shown = "; ".join(sorted({f"{s}: {r}" for s, r in zip(states, reasons, strict=True)}))
    return f"equivalent: row {mutant.row} can never be taken where the mutant changes it ({shown})"


@functools.cache
def _prover(machine: str) -> tuple[RowProver, dict[int, ir.Row]]:
    m = bundled_machines()[machine]
    return RowProver(m), {r.index: r for r in m.rows}


def shadowed(mutant: Mutant) -> str | None:
    """Why a surviving guard-true or guard-negate mutant is equivalent, proved with z3, or None: in no state the
    invariants allow does `decide` reach the row (no row before it in the runtime's order matches) where the mutated
    condition differs from the row's own — everywhere for a negation, where the condition is false for `true` — so
    every request takes the same row with the mutant as without it."""
    if mutant.row < 0 or mutant.kind not in ("guard-true", "guard-negate"):
        return None
    prover, rows = _prover(mutant.machine)
    row = rows.get(mutant.row)
    if row is None:
        return None
    index = MachineTable.load(MODULES[mutant.machine]).index
    for state in row.sources:
        order = [r.index for r in index.get((state, row.event), ())]
        if row.index not in order:
            return None
        earlier = [rows[i] for i in order[:order.index(row.index)]]
        if prover.reached_where_changed(row, state, earlier, negated=mutant.kind == "guard-negate"):
            return None
    where = "anywhere" if mutant.kind == "guard-negate" else "where its condition is false"
    return (f"equivalent: in no state the invariants of {mutant.machine} allow is row {mutant.row} reached {where} "
            f"(a row before it matches first in {', '.join(row.sources)}; z3), so every {row.event} takes the same "
            "row")


def _touches(mutant: Mutant, fires: Fires) -> Callable[[SuiteCase], bool]:
    def first(case: SuiteCase) -> bool:
        return any(m == mutant.machine and r == mutant.row for m, r, _ in fires.get(case.id, ()))
    return first


def _driver_of(machine: str) -> str:
    return "ConsumerGroup" if machine == "ConsumerGroupMember" else machine


def run_mutation(mutants: Sequence[Mutant], cases: Sequence[SuiteCase] | None = None, *,
                 progress: Callable[[int, int, Verdict], None] | None = None) -> MutationResult:
    """Run the cases against every mutant, stopping at the first kill (cases of the mutant's own driver and those
    visiting its row first; a table mutant that survives them, then the other drivers' cases)."""
    cases = list(cases) if cases is not None else load_cases()
    start = time.perf_counter()
    result = MutationResult()
    session = Session()
    fires = profile(cases, session)
    excluded = {item: why for u in load_universes().values() for item, why in u.excluded.items()}
    for i, mutant in enumerate(mutants, 1):
        t0 = time.perf_counter()
        why = untouched(mutant, fires)
        if why is not None:
            same = equivalent(mutant, excluded)
            result.verdicts.append(Verdict(mutant, False, reason=same or why, equivalent=same is not None))
            if progress is not None:
                progress(i, len(mutants), result.verdicts[-1])
            continue
        own = _driver_of(mutant.machine)
        mine = [c for c in cases if c.driver == own]
        others = [c for c in cases if c.driver != own] if mutant.row < 0 else []  # a seeded bug: every driver's
        with mutant.apply():
            run = run_suite(mine + others, session=session, stop_at_first_failure=True,
                            first=_touches(mutant, fires))
            ran = run.ran
            if not run.failures and mutant.row >= 0:
                # the table is consulted by other drivers' implementations too (a ClassicGroup converted back from
                # a consumer group is the ConsumerGroup driver's): a survivor of its own driver's cases meets theirs
                run = run_suite([c for c in cases if c.driver != own], session=session, stop_at_first_failure=True)
                ran += run.ran
        verdict = Verdict(mutant, bool(run.failures), run.failures[0][0].id if run.failures else "", ran,
                          seconds=time.perf_counter() - t0)
        same = None if verdict.killed else shadowed(mutant)
        if same is not None:
            verdict.reason, verdict.equivalent = same, True
        elif not verdict.killed and mutant.name in EQUIVALENT_SURVIVORS:
            verdict.reason, verdict.equivalent = f"equivalent: {EQUIVALENT_SURVIVORS[mutant.name]}", True
        elif not verdict.killed:
            verdict.reason = SURVIVOR_NOTES.get(mutant.detail, "not distinguished by any generated case")
        result.verdicts.append(verdict)
        if progress is not None:
            progress(i, len(mutants), verdict)
    result.seconds = time.perf_counter() - start
    return result


def render_report(result: MutationResult, *, command: str = "kcoord mutate") -> str:
    lines = ["# Mutation score of the generated conformance suite", "",
             f"Written by `{command}` (do not edit by hand). Each mutant changes one thing in a runtime table "
             "(`impl/_generated`) or switches on one seeded Kafka bug; the generated cases "
             "(`conformance/generated/`) run against it in process, and it is killed when one of them fails.", "",
             f"**Score: {result.killed}/{result.scored} killed ({result.score:.1f}%)**, leaving out "
             f"{result.equivalent} equivalent mutants (listed below with the reason; {result.killed}/"
             f"{len(result.verdicts)} = {result.raw_score:.1f}% counting them), in {result.seconds:.0f} s.", ""]
    lines += [f"- {n}" for n in result.notes]
    lines += ["", "| machine | kind | mutants | equivalent | killed | score |", "|---|---|---:|---:|---:|---:|"]
    groups: dict[tuple[str, str], list[Verdict]] = {}
    for v in result.verdicts:
        groups.setdefault((v.mutant.machine, v.mutant.kind), []).append(v)
    for (machine, kind), vs in sorted(groups.items()):
        killed = sum(v.killed for v in vs)
        same = sum(v.equivalent for v in vs)
        score = 100.0 * killed / (len(vs) - same) if len(vs) > same else 100.0
        lines.append(f"| {machine} | {kind} | {len(vs)} | {same} | {killed} | {score:.1f}% |")
    survivors = [v for v in result.verdicts if not v.killed and not v.equivalent]
    lines += ["", f"## Survivors ({len(survivors)})", ""]
    if not survivors:
        lines.append("None.")
    for v in survivors:
        lines.append(f"- `{v.mutant.name}` — {v.reason}")
    same_ones = [v for v in result.verdicts if v.equivalent]
    lines += ["", f"## Equivalent mutants ({len(same_ones)}, not in the score)", ""]
    if not same_ones:
        lines.append("None.")
    for v in same_ones:
        lines.append(f"- `{v.mutant.name}` — {v.reason}")
    return "\n".join(lines) + "\n"

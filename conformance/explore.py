"""The path search behind the generated tests: shortest action programs that make the implementation take every
row of a machine, found by a breadth-first search that runs the implementation in lockstep with the spec.

Owns: `explore` and `Case`. It is the verifier's concolic reachability search (`MachineVerifier._concolic_search`:
breadth-first over concrete states, z3 picking the arguments that enable a row, a few concrete states kept per
control state) with one change: a step is not fired on the model alone but performed on a fresh implementation
through its driver, replaying the whole program from a fresh coordinator, with the reference model checking every
step. So each program it keeps is known to be drivable through the public API, the internal events the coordinator
fires by itself (a fence's abort, the end of a join phase) come out as they really happen, and any disagreement
found on the way is reported.

At each node (a program and the concrete states it leads to) the driver's search hooks propose the next actions:
for every row of the machine that the current state could answer, `ArgSolver.enabling` finds arguments (with what the
environment fixes pinned), and the hooks turn the event and arguments into an action (or decline: an argument the
implementation computes cannot be forced); the hooks may add environment steps (a reload, an exhausted epoch).
Every item a step visits (see `Observation`) that no earlier program visited becomes a `Case`: the program up to
and including that step. The search stops when every wanted item has a case, or at `max_depth`; then the hooks'
targeted programs (known ways to items the search's budget does not reach) are run, unexpanded.
`probe_cases` then adds a case per probe item (`("probe", machine, row, state)`, from the driver's `probes`): the
shortest case program that leaves an instance in `state`, then the action that sends a declared-unreachable row's
event, whose step must not fire that row there.
Must not import: kcoord.cli.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kcoord.model import ir

from .argsolver import ArgSolver
from .drivers.base import Action, Driver
from .lockstep import Divergence, Item, Lockstep, StepReport
from .reference_model import Fired, ReferenceMachine

Key = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Case:
    """A program that visits `item` in its last step; `expect` is what the last step fired (machine, event, row,
    from, to, answer) on the driver's machines, as the spec decided it."""

    machine: str
    item: Item
    path: tuple[Action, ...]
    expect: tuple[tuple[str, str, int, str, str, str], ...]

    @property
    def kind(self) -> str:
        return str(self.item[0])


@dataclass(slots=True)
class Context:
    """What the search hooks see at a node."""

    refs: Mapping[str, ReferenceMachine]
    solvers: Mapping[str, ArgSolver]
    now_ms: int
    last_rows: Mapping[tuple[str, Key], int]
    wanted: set[Item]
    env: Mapping[str, Any] = field(default_factory=dict)  # the driver's `search_env()`: facts beyond the spec

    def view(self, machine: str, key: Key) -> dict[str, Any]:
        return self.refs[machine].view(key)

    def solve(self, machine: str, row: ir.Row, pre: Mapping[str, Any], *, pins: Mapping[str, Any] | None = None,
              prefer: Mapping[str, Any] | None = None, strings: Iterable[str] = ()) -> dict[str, Any] | None:
        return self.solvers[machine].enabling(row, pre, pins=pins, prefer=prefer, strings=strings)

    def rows_from(self, machine: str, state: str) -> list[ir.Row]:
        return [r for r in self.refs[machine].ir.rows if state in r.sources]

    def worth(self, machine: str, row: ir.Row, state: str, key: Key) -> bool:
        """Whether trying `row` from `state` could visit something wanted (transitions are always worth it: they
        lead to new states)."""
        if isinstance(row, ir.Transition):
            return True
        return ("rejection", machine, row.index, state) in self.wanted


class Hooks(Protocol):
    def candidates(self, ctx: Context) -> list[Action]: ...


@dataclass(slots=True)
class Exploration:
    cases: dict[Item, Case] = field(default_factory=dict)
    failures: list[tuple[tuple[Action, ...], str]] = field(default_factory=list)
    runs: int = 0
    nodes: int = 0
    seconds: float = 0.0


@dataclass(slots=True)
class _Run:
    reports: list[StepReport]
    refs_state: tuple[Any, ...]
    now_ms: int
    last_rows: dict[tuple[str, Key], int]
    failure: str | None = None
    env: dict[str, Any] = field(default_factory=dict)


def run_program(factory: Callable[[], Driver], refs: Mapping[str, ReferenceMachine], path: Sequence[Action]
                ) -> _Run:
    driver = factory()
    try:
        lock = Lockstep(driver, refs)
        reports: list[StepReport] = []
        failure = None
        try:
            for action in path:
                reports.append(lock.step(action))
        except Divergence as e:
            failure = str(e)
        except Exception as e:  # the implementation (or the driver) broke: a finding, not the end of the search
            failure = f"{type(e).__name__}: {e}"
        state = tuple((name, tuple((k, _freeze(ref.get(k))) for k in ref.instance_keys())) for name, ref in
                      sorted(lock.refs.items()))
        now = int(driver.clock.now_ms())  # type: ignore[attr-defined]
        env = driver.search_env() if hasattr(driver, "search_env") and failure is None else {}
        return _Run(reports, state, now, dict(lock._last_row), failure, env)
    finally:
        driver.close()


def _freeze(values: Mapping[str, Any] | None) -> Any:
    if values is None:
        return None
    return tuple(sorted((k, tuple(sorted(v)) if isinstance(v, frozenset) else v) for k, v in values.items()))


def explore(factory: Callable[[], Driver], hooks: Hooks, machines: Mapping[str, ir.Machine], *, covered: Sequence[str],
            wanted: set[Item], max_depth: int = 6, per_state: int = 4, max_runs: int = 6_000,
            progress: Callable[[str], None] | None = None) -> Exploration:
    """Breadth-first search for programs visiting every item of `wanted` (items of the machines in `covered`).

    The search starts from the empty program and from the hooks' `seeds(factory, refs)` when they have any
    (programs that put deep structures, e.g. a static member in a reconciled group, at depth 0); after it, the
    hooks' `programs(factory, refs)` (targeted programs, see `_run_programs`) fill what it left. It is bounded by
    `max_depth` and by `max_runs` programs run (a count, not a time: the output must not depend on the machine)."""
    start = time.perf_counter()
    probe = factory()
    names = tuple(probe.machines)
    probe.close()
    refs = {n: ReferenceMachine(machines[n]) for n in names}
    solvers = {n: ArgSolver(machines[n]) for n in names}
    out = Exploration()
    todo = set(wanted)
    seeds: list[tuple[Action, ...]] = [tuple(p) for p in hooks.seeds(factory, refs)] if hasattr(hooks, "seeds") \
        else []
    _run_programs(factory, refs, seeds, out, todo, covered)  # what a seed visits on its way is covered by its prefixes
    frontier: list[tuple[Action, ...]] = [(), *seeds]
    seen: set[Any] = set()
    for depth in range(max_depth + 1):
        nxt: list[tuple[Action, ...]] = []
        per: dict[Any, int] = {}
        for path in frontier:
            if not todo or out.runs >= max_runs:
                break
            base = run_program(factory, refs, path)
            out.runs += 1
            out.nodes += 1
            if base.failure is not None:
                continue
            ctx = Context(refs, solvers, base.now_ms, base.last_rows, todo, base.env)  # refs hold the path's end
            actions = _dedupe(hooks.candidates(ctx))
            for action in actions:
                child = (*path, action)
                run = _run_and_record(factory, refs, child, out, todo, covered)
                if run is None:
                    continue
                fingerprint = (run.refs_state, tuple(sorted(run.last_rows.items())), repr(sorted(run.env.items())))
                control = _control(run.refs_state)
                if fingerprint not in seen and per.get(control, 0) < per_state:
                    seen.add(fingerprint)
                    per[control] = per.get(control, 0) + 1
                    nxt.append(child)
        if progress is not None:
            progress(f"depth {depth}: {len(out.cases)} items covered, {len(todo)} to go, {out.runs} runs, "
                     f"{time.perf_counter() - start:.0f}s")
        frontier = nxt
        if not todo or not frontier:
            break
    if todo and hasattr(hooks, "programs"):
        _run_programs(factory, refs, hooks.programs(factory, refs), out, todo, covered)
    out.seconds = time.perf_counter() - start
    return out


def _run_programs(factory: Callable[[], Driver], refs: Mapping[str, ReferenceMachine],
                  programs: Iterable[Sequence[Action]], out: Exploration, todo: set[Item], covered: Sequence[str]
                  ) -> None:
    """Run whole programs and record what they visit that no earlier program did: the hooks' seeds before the
    search, and their targeted programs after it (each a known way to items the breadth-first search does not reach
    within its budget: a deep group structure, then the request). Neither is expanded here; a targeted program runs
    only while items are left, so a shorter program found by the search always wins."""
    for program in programs:
        if not todo:
            return
        _run_and_record(factory, refs, tuple(program), out, todo, covered)


def _run_and_record(factory: Callable[[], Driver], refs: Mapping[str, ReferenceMachine], path: tuple[Action, ...],
                    out: Exploration, todo: set[Item], covered: Sequence[str]) -> _Run | None:
    """Run one program and count it; keep its failure, or record what it visited. The run, when it did not fail."""
    run = run_program(factory, refs, path)
    out.runs += 1
    if run.failure is not None:
        out.failures.append((path, run.failure))
        return None
    _record(out, todo, path, run.reports, covered)
    return run


def _control(refs_state: tuple[Any, ...]) -> tuple[Any, ...]:
    """The control states of every instance (the search keeps a few concrete states per combination)."""
    out = []
    for name, keys in refs_state:
        states = []
        for key, values in keys:
            state = dict(values)["state"] if values is not None else None
            states.append((key, state))
        out.append((name, tuple(states)))
    return tuple(out)


def single_key_candidates(ctx: Context, machine: str, key: Key, hooks: Any) -> list[Action]:
    """The usual proposal for a machine with one instance under test: for every row its state could answer (and
    that is worth trying), the enabling arguments with the hooks' pins and preferences, as the hooks' action; then
    the hooks' environment steps."""
    pre = ctx.view(machine, key)
    out = []
    for row in ctx.rows_from(machine, pre["state"]):
        if not ctx.worth(machine, row, pre["state"], key):
            continue
        args = ctx.solve(machine, row, pre, pins=hooks.pins(row.event, pre, ctx.now_ms),
                         prefer=hooks.prefer(row.event, pre), strings=hooks.strings(pre))
        if args is None:
            continue
        action = hooks.action_for(row, args, pre)
        if action is not None:
            out.append(action)
    extra: list[Action] = hooks.extra_actions(pre)
    return out + extra


def _dedupe(actions: Iterable[Action]) -> list[Action]:
    seen: set[Any] = set()
    out = []
    for a in actions:
        key = repr(a.frozen())
        if key not in seen:
            seen.add(key)
            out.append(a)
    return out


def _record(out: Exploration, todo: set[Item], path: tuple[Action, ...], reports: Sequence[StepReport],
            covered: Sequence[str]) -> None:
    for i, report in enumerate(reports):
        for item in report.items:
            if item[1] not in covered or item in out.cases:
                continue
            out.cases[item] = Case(str(item[1]), item, path[:i + 1], _expect(report.fired))
            todo.discard(item)


def _expect(fired: Sequence[Fired]) -> tuple[tuple[str, str, int, str, str, str], ...]:
    return tuple((f.machine, f.event, f.row.index, f.from_state, f.to_state, f.answer) for f in fired)


def probe_cases(factory: Callable[[], Driver], machines: Mapping[str, ir.Machine], cases: Iterable[Case],
                probes: Mapping[Item, Action]) -> tuple[dict[Item, Case], list[tuple[tuple[Action, ...], str]]]:
    """A case per probe item `("probe", machine, row, state)`: the shortest of `cases`' programs (then in item
    order) that leaves an instance of `machine` in `state`, followed by the probe's action; its step must not fire
    `row` from `state`. Returns the cases and the failures (no program reaches the state, a divergence, the row
    fired)."""
    probe = factory()
    names = tuple(probe.machines)
    probe.close()
    refs = {n: ReferenceMachine(machines[n]) for n in names}
    bases = sorted(cases, key=lambda c: (len(c.path), repr(c.item)))
    found: dict[Item, Case] = {}
    failures: list[tuple[tuple[Action, ...], str]] = []
    ends: dict[int, _Run] = {}  # id of a base case -> its run (actions hold dicts: not hashable)
    for item, action in sorted(probes.items(), key=repr):
        _, machine, row, state = item
        for base in bases:
            if not any(f[0] == machine for f in base.expect):
                continue
            if id(base) not in ends:
                ends[id(base)] = run_program(factory, refs, base.path)
            run = ends[id(base)]
            if run.failure is None and _in_state(run.refs_state, machine, state):
                break
        else:
            failures.append(((action,), f"{item}: no generated case leaves a {machine} instance in {state}"))
            continue
        path = (*base.path, action)
        probed = run_program(factory, refs, path)
        if probed.failure is not None:
            failures.append((path, probed.failure))
            continue
        fired = probed.reports[-1].fired
        if any(f.machine == machine and f.row.index == row and f.from_state == state for f in fired):
            failures.append((path, f"{item}: row {row}, declared unreachable in {state}, fired there"))
            continue
        found[item] = Case(machine, item, path, _expect(fired))
    return found, failures


def _in_state(refs_state: tuple[Any, ...], machine: str, state: str) -> bool:
    return any(values is not None and dict(values)["state"] == state
               for name, keys in refs_state if name == machine for _, values in keys)

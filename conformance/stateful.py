"""Lockstep model-based testing with hypothesis: one `RuleBasedStateMachine` per driver, whose rules are the spec's
events, running the implementation (through the driver) and the `transitions`-based reference model side by side.

Owns: `lockstep_machine(driver)` — builds the state machine class. Each rule is named after a spec event of the
driver's machines (plus the driver's documented environment steps, e.g. `FastForward` for epoch exhaustion,
`Reload`); it asks the driver's search hooks for the requests that make that event's rows answer from the current
state (z3 picks the arguments, as for the generated tests), draws one, and performs it through `Lockstep.step`, which
checks after every step that the rows, states, variables and answers agree and every invariant and step property
holds. An `@invariant` re-checks every live instance of the implementation against the spec's invariants.

Deep states are reached by swarm testing (an `@initialize` rule draws the subset of rules enabled for the run, so some
runs never, say, end a transaction and instead fence it) and by targeting (`hypothesis.target` on the number of
distinct control states and transitions a run visited). Visits are counted into the `Observation` the caller passes,
for the report.
Must not import: kcoord.cli.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, ClassVar

import z3
from hypothesis import strategies as st
from hypothesis import target
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kcoord.model import ir
from kcoord.model.z3backend import Frame

from .argsolver import ArgSolver
from .coverage import row_items
from .drivers import driver_spec
from .drivers.base import Action, Driver
from .explore import Context
from .lockstep import Lockstep, Observation
from .reference_model import ReferenceMachine
from .runner import Session

#: environment steps of each driver that get a rule of their own (their search hooks propose them)
ENV_STEPS: Mapping[str, tuple[str, ...]] = {
    "Transaction": ("FastForward", "Reload"),
    "ClassicGroup": ("EndTxn",),
    "ConsumerGroup": ("ReplayUnknown", "EndTxn"),
}


#: spec events left out of a driver's rules, with why
SKIPPED: Mapping[str, Mapping[str, str]] = {
    "ClassicGroup": {"AssignmentWriteFailed": "the driver's answer check expects NOT_COORDINATOR even when the "
                                              "leader's SyncGroup is refused before any append (a known driver gap; "
                                              "the generated cases cover the row from CompletingRebalance)"},
}
#: a read-only request per driver whose rule is always enabled (whatever the swarm and the weights say)
FALLBACK: Mapping[str, str] = {"Transaction": "Describe", "ClassicGroup": "OffsetFetch", "ConsumerGroup": "OffsetFetch"}


def consumer_event(action: Action) -> str:
    """The spec event a ConsumerGroup driver action stands for (its rule's name)."""
    if action.name == "Heartbeat":
        epoch = int(action.args["epoch"])
        bad = any(action.args.get(f) is not None for f in ("rack", "regex", "assignor")) or (
            epoch == 0 and (not action.args.get("topics") or action.args.get("owned")))
        if bad:
            return "InvalidHeartbeat"
        return {0: "Join", -1: "Leave", -2: "StaticLeave"}.get(epoch, "Heartbeat")
    return {"Reload": "Unload", "ExpireOffsets": "Expire", "TxnOffsetCommit": "OffsetCommit"}.get(action.name,
                                                                                                  action.name)


def _frozen(value: Any) -> Hashable:
    """A hashable stand-in for a solver query's part (mappings and sets by content, in a stable order)."""
    if isinstance(value, Mapping):
        return tuple(sorted(((repr(k), _frozen(v)) for k, v in value.items()), key=lambda kv: kv[0]))
    if isinstance(value, (set, frozenset)):
        return ("set", tuple(sorted(repr(_frozen(v)) for v in value)))
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if hasattr(value, "__dataclass_fields__"):  # the argsolver's pins (Avoid, Lookup, AtLeast, NonEmpty)
        return (type(value).__name__, _frozen({f: getattr(value, f) for f in value.__dataclass_fields__}))
    return value if isinstance(value, Hashable) else repr(value)


class _EventContext(Context):
    """A search context that offers the hooks only the rows of one event (so a rule proposes only its own)."""

    only: str = ""
    only_row: int = -1
    no_solver: bool = False  # z3's choice can depend on the solver's history: hypothesis needs repeatable draws
    #: the z3 answers of this driver's runs, by query: the derandomized runs ask the same questions from the same
    #: states again and again (every run starts from a fresh coordinator), and one answer per query also makes the
    #: draws repeatable
    memo: dict[Hashable, dict[str, Any] | None] | None = None

    def solve(self, machine: str, row: ir.Row, pre: Mapping[str, Any], *, pins: Mapping[str, Any] | None = None,
              prefer: Mapping[str, Any] | None = None, strings: Any = ()) -> dict[str, Any] | None:
        if self.no_solver:
            return None
        strings = tuple(strings)
        if self.memo is None:
            return super().solve(machine, row, pre, pins=pins, prefer=prefer, strings=strings)
        query = (machine, row.index, _frozen(pre), _frozen(pins or {}), _frozen(prefer or {}), _frozen(strings))
        if query not in self.memo:
            self.memo[query] = super().solve(machine, row, pre, pins=pins, prefer=prefer, strings=strings)
        answer = self.memo[query]
        return None if answer is None else dict(answer)

    def rows_from(self, machine: str, state: str) -> list[ir.Row]:
        rows = super().rows_from(machine, state)
        if self.only_row >= 0:
            return [r for r in rows if r.index == self.only_row]
        return [r for r in rows if r.event == self.only] if self.only else rows


class _OneShotArgSolver(ArgSolver):
    """The argument search with a new z3 solver for every query. The generator's search reuses one incremental
    solver per row; over the thousands of queries of the lockstep runs such a solver's state grows, and in the whole
    suite one `push` on it once ran for over 25 minutes (a push is not bounded by the check timeout). A new solver per
    query also answers a query the same way whatever was asked before."""

    def _solver_for(self, row: ir.Row, f: Frame, event: ir.Event) -> z3.Solver:
        solver = z3.Solver(ctx=self.enc.ctx)
        solver.set("timeout", self.opts.timeout_ms)
        solver.add(*self.enc.row_facts(f, event, row), self.enc.expr(row.guard, f))
        return solver


class LockstepMachine(RuleBasedStateMachine):
    """The shared part; `lockstep_machine` adds one rule per spec event."""

    driver_name: ClassVar[str] = ""
    session: ClassVar[Session]
    solvers: ClassVar[dict[str, ArgSolver]]
    answers: ClassVar[dict[Hashable, dict[str, Any] | None]]
    wanted: ClassVar[set[Any]]
    observation: ClassVar[Observation]
    rule_names: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        super().__init__()
        spec = driver_spec(self.driver_name)
        self.driver: Driver = spec.factory()()
        self.refs: dict[str, ReferenceMachine] = self.session.refs(self.driver.machines)
        self.lock = Lockstep(self.driver, self.refs, self.observation)
        self.hooks = spec.hooks()
        self.enabled: frozenset[str] = frozenset(self.rule_names)
        self.seen: set[tuple[str, str]] = set()
        self._cache: dict[tuple[str, int], tuple[list[Action], list[Action]]] = {}
        self.tried: Counter[tuple[str, str]] = Counter()
        self._alphabet: tuple[int, list[Action]] = (-1, [])
        self.repeat_limit = 2
        #: events with no transition at all (only answers): enabled whenever a request is possible
        self.rejection_only = frozenset(e.name for m in self.refs.values() for e in m.ir.events
                                        if not any(r.event == e.name for r in m.ir.transitions))

    @initialize(subset=st.data())
    def swarm(self, subset: st.DataObject) -> None:
        """Swarm testing: most runs enable only a random subset of the rules."""
        if subset.draw(st.integers(0, 2), label="swarm") == 0:
            chosen = subset.draw(st.sets(st.sampled_from(self.rule_names), min_size=max(1, len(self.rule_names) // 2)),
                                 label="enabled rules")
            self.enabled = frozenset(chosen)

    def can_move(self, event: str) -> bool:
        """Targeted weights: a spec event is only tried where some request for it is possible now, and then a
        request that moves the instance is preferred (its rejections are still drawn, one time in five)."""
        if event == FALLBACK.get(self.driver_name):  # a read-only request, always possible: the rule of last resort
            rivals = [e for e in self.rule_names if e != event and e in self.enabled]
            return self.tried[(event, self.control())] < 1 or not any(self.can_move(e) for e in rivals)
        if self.tried[(event, self.control())] >= self.repeat_limit:
            return False  # targeted: this run already tried the event here; spend the steps elsewhere
        moves, others = self.cached_candidates(event)
        return bool(moves or others) and (bool(moves) or event in self.rejection_only)

    def control(self) -> str:
        """What the weights look at: the main instance's state and variables (the group's, for KIP-848)."""
        key = self.hooks.key if hasattr(self.hooks, "key") else ("g1",)
        view = self.refs[self.driver.main].view(key)
        return repr(sorted((k, sorted(v) if isinstance(v, frozenset) else v) for k, v in view.items()))

    def cached_candidates(self, event: str) -> tuple[list[Action], list[Action]]:
        key = (event, len(self.lock.program))
        if key not in self._cache:
            self._cache = {k: v for k, v in self._cache.items() if k[1] == key[1]}
            self._cache[key] = self.candidates(event)
        return self._cache[key]

    def context(self, event: str) -> Context:
        ctx = _EventContext(self.refs, self.solvers, int(self.driver.clock.now_ms()),  # type: ignore[attr-defined]
                            dict(self.lock._last_row), self.wanted,
                            self.driver.search_env() if hasattr(self.driver, "search_env") else {})
        ctx.only = event
        ctx.memo = self.answers
        return ctx

    def candidates(self, event: str) -> tuple[list[Action], list[Action]]:
        """(requests whose row is a transition, the others) for `event` from the current state."""
        if self.driver_name == "ConsumerGroup":  # one alphabet per step, shared by every rule
            step = len(self.lock.program)
            if self._alphabet[0] != step:
                ctx = self.context("")
                assert isinstance(ctx, _EventContext)
                ctx.no_solver = True  # the fixed per-member alphabet only (repeatable)
                self._alphabet = (step, self.hooks.candidates(ctx))
            return [a for a in self._alphabet[1] if consumer_event(a) == event], []
        if event in ENV_STEPS.get(self.driver_name, ()):
            view = self.refs[self.driver.main].view(self.hooks.key)
            return [a for a in self.hooks.extra_actions(view) if a.name == event] or \
                ([Action(event)] if event == "Reload" else []), []
        env = ENV_STEPS.get(self.driver_name, ())
        moves: list[Action] = []
        others: list[Action] = []
        machine = self.refs[self.driver.main]
        state = machine.view(self.hooks.key)["state"]
        for row in machine.ir.rows:
            if row.event != event or state not in row.sources:
                continue
            ctx = self.context(event)
            assert isinstance(ctx, _EventContext)
            ctx.only_row = row.index
            found = [a for a in self.hooks.candidates(ctx) if a.name not in env]
            (moves if isinstance(row, ir.Transition) else others).extend(found)
        return moves, others

    def fire(self, event: str, data: st.DataObject) -> None:
        self.tried[(event, self.control())] += 1
        moves, others = self.cached_candidates(event)
        if not moves and not others:
            return  # the event cannot be requested here (e.g. nothing to expire): a no-op step, not a discarded run
        # targeted weights: a request that moves the instance is drawn four times out of five when there is one
        pool = moves if moves and (not others or data.draw(st.integers(0, 4), label="weight") > 0) else others
        action = data.draw(st.sampled_from(pool), label=event)
        report = self.lock.step(action)
        for f in report.fired:
            self.seen.add((f.machine, f.to_state))
            self.seen.add((f.machine, f"{f.row.index}@{f.from_state}"))

    def teardown(self) -> None:
        try:
            target(float(len(self.seen)), label="states and transitions visited")
        finally:
            self.driver.close()

    @invariant()
    def spec_invariants_hold(self) -> None:
        for name, ref in self.refs.items():
            for key, values in self.driver.instances(name).items():
                broken = ref.violated_invariants(values)
                assert not broken, f"{name} {key}: invariants {broken} are false in the implementation's instance"


def _rule(event: str) -> Callable[[LockstepMachine, st.DataObject], None]:
    def fire_event(self: LockstepMachine, data: st.DataObject) -> None:
        self.fire(event, data)

    fire_event.__name__ = event  # before decorating: hypothesis prints the rule by this name
    fire_event.__qualname__ = event
    return precondition(lambda self: (event in self.enabled or event == FALLBACK.get(self.driver_name))
                        and self.can_move(event))(rule(data=st.data())(fire_event))


def rule_events(driver: str, machines: Mapping[str, ir.Machine]) -> tuple[str, ...]:
    spec = driver_spec(driver)
    if driver == "ConsumerGroup":
        return ("Join", "Heartbeat", "Leave", "StaticLeave", "SessionTimeout", "RebalanceTimeout",
                "Delete", "OffsetCommit", "OffsetFetch", "OffsetDelete", "Expire", "Unload", *ENV_STEPS[driver])
    skipped = SKIPPED.get(driver, {})
    events = [e.name for e in machines[spec.machine].events if e.name not in skipped]
    return (*events, *ENV_STEPS.get(driver, ()))


def lockstep_machine(driver: str, session: Session, observation: Observation | None = None
                     ) -> type[LockstepMachine]:
    """The hypothesis state machine of `driver`; visits go to `observation` (default: `session.explored`)."""
    spec = driver_spec(driver)
    events = rule_events(driver, session.machines)
    wanted: set[Any] = set()
    for name in spec.observes:
        wanted |= row_items(session.machines[name])
    attrs: dict[str, Any] = {e: _rule(e) for e in events}
    attrs.update(driver_name=driver, session=session, wanted=wanted, rule_names=tuple(events),
                 observation=observation if observation is not None else session.explored,
                 solvers={n: _OneShotArgSolver(session.machines[n]) for n in spec.observes}, answers={})
    return type(f"{driver}Lockstep", (LockstepMachine,), attrs)


def visits(observation: Observation, machine: str) -> tuple[dict[str, int], dict[str, int]]:
    """(state → visits, `row@state` → visits) of one machine."""
    states = {s: n for (m, s), n in observation.states.items() if m == machine}
    rows = {f"{r}@{s}": n for (m, r, s), n in observation.transitions.items() if m == machine}
    return states, rows


__all__: Sequence[str] = ("LockstepMachine", "consumer_event", "lockstep_machine", "rule_events", "visits")

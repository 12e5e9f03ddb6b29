"""Lockstep: the implementation (through a driver) and the reference model, side by side, one action at a time.

Owns: `Lockstep.step(action)` and what it checks after every action —
  1. every trace row the implementation wrote is replayed on the reference model (`ReferenceMachine.fire` with the
     row's event, arguments and `pending`; a `load` row installs the state read back from the log), and the two
     must agree on the row, its kind, the answer, the target state and every variable;
  2. every invariant holds after every accepted row, every step property on every transition, and the chosen row's
     precondition held (the implementation passed legal arguments);
  3. afterwards, every instance the implementation holds equals the reference's (missing on both sides alike; the
     driver's `forgotten` states and `dropped_with` owners say which instances the implementation drops);
  4. the driver's own checks: the answers the client got, the records written to the coordinator log, and that
     the trace carries the request's own arguments.
A disagreement raises `Divergence`, whose message is the test as a program in the spec's event names, then the
instance's recent history through the one printer (`kcoord.model.printer`), then what differed.
Also owns `Observation` (what was visited: states entered, transitions and rejections by source state, pairs of
consecutive transitions of one instance, with counts), which coverage reports and the path search use.
Must not import: kcoord.cli.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kcoord.model import ir

from .drivers.base import Action, Driver, Key, Outcome, TraceRow
from .reference_model import Fired, ReferenceError, ReferenceMachine


class Divergence(AssertionError):
    """The implementation and the spec disagree (or the implementation broke an invariant)."""


Item = tuple[Any, ...]


@dataclass(slots=True)
class Observation:
    """What executions visited, per machine: items with how often they were seen."""

    states: Counter[tuple[str, str]] = field(default_factory=Counter)  # (machine, state entered)
    transitions: Counter[tuple[str, int, str]] = field(default_factory=Counter)  # (machine, row, from state)
    rejections: Counter[tuple[str, int, str]] = field(default_factory=Counter)
    pairs: Counter[tuple[str, int, int]] = field(default_factory=Counter)  # (machine, row, next row)

    def merge(self, other: Observation) -> None:
        self.states.update(other.states)
        self.transitions.update(other.transitions)
        self.rejections.update(other.rejections)
        self.pairs.update(other.pairs)


@dataclass(frozen=True, slots=True)
class StepReport:
    action: Action
    fired: tuple[Fired, ...]
    outcome: Outcome
    items: tuple[Item, ...] = ()  # what this step visited: see `Observation` (kinds state, transition, ...)


def row_args(event: ir.Event, row: Mapping[str, Any]) -> dict[str, Any]:
    """The event's arguments as a trace row records them (sets back to frozensets; None: never computed)."""
    out: dict[str, Any] = {}
    for p in event.params:
        value = row.get(f"arg_{p.name}")
        out[p.name] = frozenset(value) if isinstance(p.type, ir.SetType) and value is not None else value
    return out


def row_values(machine: ir.Machine, row: Mapping[str, Any]) -> dict[str, Any]:
    """The instance a trace row describes after the event: variables, key fields and the state."""
    out: dict[str, Any] = {k.name: row[k.name] for k in machine.keys}
    for v in machine.variables:
        value = row[v.name]
        out[v.name] = frozenset(value) if isinstance(v.type, ir.SetType) else value
    out["state"] = row["to_state"]
    return out


class Lockstep:
    """Drive `driver` and the reference machines together; `step` raises `Divergence` on any disagreement."""

    def __init__(self, driver: Driver, refs: Mapping[str, ReferenceMachine],
                 observation: Observation | None = None) -> None:
        self.driver = driver
        self.refs = {name: refs[name] for name in driver.machines}
        self._forgotten: Mapping[str, frozenset[str]] = getattr(driver, "forgotten", {})
        self._dropped_with: Mapping[str, str] = getattr(driver, "dropped_with", {})
        for ref in self.refs.values():
            ref.reset()
        self.observation = observation if observation is not None else Observation()
        self.program: list[Action] = []
        self._last_row: dict[tuple[str, Key], int] = {}
        self.trace: list[TraceRow] = []
        self._items: list[Item] = []

    def run(self, actions: Iterable[Action]) -> list[StepReport]:
        return [self.step(a) for a in actions]

    def step(self, action: Action) -> StepReport:
        self.program.append(action)
        self._items = []
        outcome = self.driver.perform(action)
        self.trace.extend(outcome.rows)
        fired: list[Fired] = []
        for row in outcome.rows:
            ref = self.refs.get(row["machine"])
            if ref is not None:
                done = self._replay(ref, row)
                if done is not None:
                    fired.append(done)
        self._compare_instances()
        problems = self.driver.check(action, fired, outcome)
        if problems:
            key = fired[0].key if fired else ()
            machine = fired[0].machine if fired else self.driver.main
            raise Divergence(self.explain(machine, key, problems))
        return StepReport(action, tuple(fired), outcome, tuple(self._items))

    # ------------------------------------------------------------ one trace row

    def _replay(self, ref: ReferenceMachine, row: TraceRow) -> Fired | None:
        m = ref.ir
        key = tuple(row[k.name] for k in m.keys)
        if row["kind"] == "load":
            final = m.state(row["to_state"]).final
            ref.install(key, None if final else row_values(m, row))
            self._last_row.pop((m.name, key), None)
            if not final:  # a state read back from the log is a state the instance is in (e.g. Unknown, only so)
                self.observation.states[(m.name, row["to_state"])] += 1
                self._items.append(("state", m.name, row["to_state"]))
            return None
        event = m.event(row["event"])
        args = row_args(event, row)
        try:
            fired = ref.fire(key, event.name, args, pending=bool(row["pending"]))
        except ReferenceError as e:
            raise Divergence(self.explain(m.name, key, [f"the spec cannot answer the implementation's "
                                                        f"{event.name}: {e}"])) from None
        problems = self._row_problems(ref, fired, row)
        if problems:
            raise Divergence(self.explain(m.name, key, problems))
        self._observe(fired)
        if fired.accepted and fired.to_state in self._forgotten.get(m.name, ()):
            ref.forget(key)
            self._last_row.pop((m.name, key), None)
        if fired.accepted and m.state(fired.to_state).final:
            self._drop_owned(m.name, key)
        return fired

    def _drop_owned(self, owner: str, key: Key) -> None:
        """The instances the driver says are dropped with an instance of `owner` that reached a final state (its
        `dropped_with`: machine -> owner machine; an instance is owned when the owner's key prefixes its own)."""
        for name, of in self._dropped_with.items():
            ref = self.refs.get(name)
            if of != owner or ref is None:
                continue
            for k in ref.instance_keys():
                if tuple(k[:len(key)]) == tuple(key):
                    ref.forget(k)
                    self._last_row.pop((name, k), None)

    def _row_problems(self, ref: ReferenceMachine, fired: Fired, row: TraceRow) -> list[str]:
        m = ref.ir
        out = []
        if fired.row.index != row["row"]:
            out.append(f"{fired.event}: the implementation took row {row['row']} ({_describe(m, row['row'])}), the "
                       f"spec takes row {fired.row.index} ({_describe(m, fired.row.index)})")
        for what, impl, spec in (("kind", row["kind"], fired.kind), ("answer", row["error"], fired.answer),
                                 ("from state", row["from_state"], fired.from_state),
                                 ("target state", row["to_state"], fired.to_state)):
            if impl != spec:
                out.append(f"{fired.event}: {what} {impl} in the implementation, {spec} in the spec")
        written = row_values(m, row)
        for v in m.variables:
            if written[v.name] != fired.post[v.name]:
                out.append(f"{fired.event}: {v.name} = {_show(written[v.name])} in the implementation, "
                           f"{_show(fired.post[v.name])} in the spec")
        if fired.accepted:
            out += [f"invariant {name} is false after {fired.event}" for name in ref.violated_invariants(fired.post)]
            out += [f"step property {name} is false for {fired.event}" for name in ref.violated_steps(fired)]
        if ref.assumption_broken(fired):
            out.append(f"{fired.event}: the implementation broke the precondition of row {fired.row.index} "
                       f"(args {_show(dict(fired.args))})")
        return out

    def _observe(self, fired: Fired) -> None:
        obs, name, items = self.observation, fired.machine, self._items
        if not fired.existed:
            obs.states[(name, fired.from_state)] += 1
            items.append(("state", name, fired.from_state))
        if fired.accepted:
            obs.transitions[(name, fired.row.index, fired.from_state)] += 1
            obs.states[(name, fired.to_state)] += 1
            items += [("transition", name, fired.row.index, fired.from_state), ("state", name, fired.to_state)]
            previous = self._last_row.get((name, fired.key))
            if previous is not None:
                obs.pairs[(name, previous, fired.row.index)] += 1
                items.append(("pair", name, previous, fired.row.index))
            self._last_row[(name, fired.key)] = fired.row.index
            if self.refs[name].ir.state(fired.to_state).final:
                self._last_row.pop((name, fired.key), None)
        else:
            obs.rejections[(name, fired.row.index, fired.from_state)] += 1
            items.append(("rejection", name, fired.row.index, fired.from_state))

    def last_row(self, machine: str, key: Key) -> int | None:
        """The row of the latest accepted event of an instance (what a next transition would pair with)."""
        return self._last_row.get((machine, key))

    # ------------------------------------------------------------ instances

    def _compare_instances(self) -> None:
        for name, ref in self.refs.items():
            impl = self.driver.instances(name)
            for key in sorted(set(ref.keys()) | set(impl), key=repr):
                mine, spec = impl.get(key), ref.get(key)
                if mine == spec:
                    continue
                if mine is None or spec is None:
                    where = "the spec" if mine is None else "the implementation"
                    raise Divergence(self.explain(name, key, [f"instance {_key(key)} exists only in {where}"]))
                diff = [f"{k} = {_show(mine.get(k))} in the implementation, {_show(spec.get(k))} in the spec"
                        for k in sorted(set(mine) | set(spec)) if mine.get(k) != spec.get(k)]
                raise Divergence(self.explain(name, key, [f"instance {_key(key)} differs after the step: " +
                                                          "; ".join(diff)]))

    # ------------------------------------------------------------ messages

    def explain(self, machine: str, key: Key, problems: Sequence[str]) -> str:
        lines = ["the implementation and the spec disagree", "", "program (spec events; environment steps in "
                 "their driver's words):"]
        lines += [f"  {i}. {a.render()}" for i, a in enumerate(self.program, 1)]
        ref = self.refs.get(machine)
        if ref is not None and key:
            lines += ["", f"{machine} {_key(key)}, as the spec runs it:", ref.render_history(key)]
        lines += ["", "what differs:"] + [f"  - {p}" for p in problems]
        return "\n".join(lines)


def _describe(m: ir.Machine, index: int) -> str:
    for r in m.rows:
        if r.index == index:
            if isinstance(r, ir.Transition):
                return f"{r.event} -> {r.target or 'stay'}, line {r.span.line}"
            return f"{r.event} with {r.error}, line {r.span.line}"
    return "no such row"


def _key(key: Key) -> str:
    return "/".join(str(k) for k in key)


def _show(value: Any) -> str:
    if isinstance(value, frozenset | set):
        return "{" + ", ".join(sorted(repr(v) for v in value)) + "}"
    return repr(value)


def replay_program(driver: Driver, refs: Mapping[str, ReferenceMachine], actions: Sequence[Action],
                   observation: Observation | None = None) -> tuple[Lockstep, list[StepReport]]:
    """A fresh lockstep run of `actions` (the driver is the caller's to close)."""
    lock = Lockstep(driver, refs, observation)
    return lock, lock.run(actions)


__all__ = ["Divergence", "Lockstep", "Observation", "Outcome", "StepReport", "replay_program", "row_args",
           "row_values"]

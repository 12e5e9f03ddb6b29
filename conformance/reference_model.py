"""The executable reference model: a spec machine as a `transitions` state machine, built from the IR.

Owns: `ReferenceMachine` — one shared `transitions.Machine` per spec machine whose transitions are the spec's rows
(a transition row is an edge to its target, a `stay` row and a rejection are internal transitions that keep the
state), whose conditions are the rows' guards evaluated by the model's `PythonEvaluator` on the IR (never the
generated tables the implementation runs), and whose models are the instances, one per key (few: ~15 KB each);
`Fired` (what one event did: the row, the pre- and post-state, the answer); `ReferenceError` (the spec has no row,
or two rows, for a concrete state and arguments: a bug in the spec or in the arguments, never a conformance
verdict). Every accepted row's post-state is checked against the invariants and its step properties.

A missing instance is a fresh one (initial state, defaults); a rejection does not create it and a final state
removes it, as the runtime does. Arguments are the spec's parameters plus `pending`; an argument whose value is None
was never computed (the implementation supplies some arguments lazily, e.g. a fresh producer id) and a guard that
reads it is undetermined, not false.
Must not import: kcoord.cli, kcoord.impl (the reference must not share code with what it checks).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from transitions import EventData, Machine

from kcoord.model import ir
from kcoord.model.printer import Execution, Transition, render_execution
from kcoord.model.pyexpr import PythonEvaluator, initial_state

Key = tuple[Any, ...]
Values = dict[str, Any]


class ReferenceError(AssertionError):
    """The spec answers a concrete event with no row or with two: the spec (or the arguments) is at fault."""


class _Missing(Exception):
    """A guard read an argument that was never computed (None)."""


class _Args(dict[str, Any]):
    def __getitem__(self, name: str) -> Any:
        value = super().__getitem__(name)
        if value is None:
            raise _Missing(name)
        return value


@dataclass(frozen=True, slots=True)
class Fired:
    """One event on one instance, as the spec decides it."""

    machine: str
    key: Key
    event: str
    row: ir.Row
    pre: Mapping[str, Any]
    post: Mapping[str, Any]  # the pre-state for a rejection
    args: Mapping[str, Any]
    existed: bool  # the instance existed before the event

    @property
    def accepted(self) -> bool:
        return isinstance(self.row, ir.Transition)

    @property
    def answer(self) -> str:
        return self.row.answer if isinstance(self.row, ir.Transition) else self.row.error

    @property
    def kind(self) -> str:
        if isinstance(self.row, ir.Rejection):
            return "reject"
        return "stay" if self.row.target is None else "transition"

    @property
    def to_state(self) -> str:
        return str(self.post["state"])

    @property
    def from_state(self) -> str:
        return str(self.pre["state"])


class _Model:
    """A `transitions` model: the control state (`state`, managed by the Machine) and the spec variables."""

    def __init__(self, values: Values) -> None:
        self.values = {k: v for k, v in values.items() if k != "state"}
        self.state = str(values["state"])
        self.last: Fired | None = None

    def snapshot(self) -> Values:
        return {**self.values, "state": self.state}


@dataclass(slots=True)
class _History:
    states: list[Values] = field(default_factory=list)
    transitions: list[Transition] = field(default_factory=list)


class ReferenceMachine:
    """The spec machine `machine`, executable; `fire` runs one event on one instance."""

    def __init__(self, machine: ir.Machine, *, history_steps: int = 12) -> None:
        self.ir = machine
        self.name = machine.name
        self.py = PythonEvaluator()
        self.history_steps = history_steps
        self._final = frozenset(s.name for s in machine.states if s.final)
        self._pending = frozenset(s.name for s in machine.states if s.pending)
        self._key_names = tuple(k.name for k in machine.keys)
        self._events = {e.name: e for e in machine.events}
        self._rows: dict[tuple[str, str], tuple[ir.Row, ...]] = {}
        for row in machine.rows:
            for source in row.sources:
                self._rows[(source, row.event)] = (*self._rows.get((source, row.event), ()), row)
        self.machine = Machine(model=[], states=[s.name for s in machine.states], initial=machine.initial.name,
                               send_event=True, auto_transitions=False, ignore_invalid_triggers=False)
        for row in machine.rows:
            dest = row.target if isinstance(row, ir.Transition) else None
            self.machine.add_transition(row.event, list(row.sources), dest,
                                        conditions=[functools.partial(self._guard, row)],
                                        before=[functools.partial(self._apply, row)])
        self._instances: dict[Key, _Model] = {}
        self._history: dict[Key, _History] = {}

    # ------------------------------------------------------------ reading

    def keys(self) -> list[Key]:
        return sorted(self._instances)

    def instance_keys(self) -> list[Key]:
        """The keys of the instances that exist, sorted (as `keys`; a name no linter takes for a dict's)."""
        return self.keys()

    def get(self, key: Key) -> Values | None:
        """The instance's state and variables (with its key fields), or None when it does not exist."""
        model = self._instances.get(key)
        return model.snapshot() if model is not None else None

    def view(self, key: Key) -> Values:
        """The instance, or the fresh instance a missing key stands for."""
        found = self.get(key)
        return found if found is not None else self.fresh(key)

    def fresh(self, key: Key) -> Values:
        return initial_state(self.ir, dict(zip(self._key_names, key, strict=True)))

    def key_of(self, values: Mapping[str, Any]) -> Key:
        return tuple(values[k] for k in self._key_names)

    # ------------------------------------------------------------ changing

    def reset(self) -> None:
        """Forget every instance (the shared Machine stays: building it is the expensive part)."""
        for key in list(self._instances):
            self._drop(key)
        self._history.clear()

    def forget(self, key: Key) -> None:
        """The implementation forgets the instance (a state the spec does not mark final; see the driver)."""
        self._drop(key)

    def install(self, key: Key, values: Mapping[str, Any] | None) -> None:
        """A load: the log says the instance is `values` now (None: removed). Not a transition."""
        self._drop(key)
        if values is not None and values["state"] not in self._final:
            model = _Model({**values, **dict(zip(self._key_names, key, strict=True))})
            self.machine.add_model(model, initial=model.state)
            self._instances[key] = model
        self._note(key, self.view(key), Transition("Load", {}, "read back from the log"))

    def fire(self, key: Key, event: str, args: Mapping[str, Any], *, pending: bool = False) -> Fired:
        """Run `event` with `args` on the instance `key`: exactly one row must answer (else `ReferenceError`)."""
        if event not in self._events:
            raise ReferenceError(f"{self.name} has no event {event!r}")
        model = self._instances.get(key)
        existed = model is not None
        if model is None:
            model = _Model(self.fresh(key))
            self.machine.add_model(model, initial=model.state)
        pre = model.snapshot()
        full = _Args({**args, "pending": pending or pre["state"] in self._pending})
        row = self.choose(pre, event, full)
        model.last = None
        done = model.trigger(event, args=full)  # type: ignore[attr-defined]  # added by Machine.add_model  # added by transitions.Machine.add_model
        fired = model.last
        if not done or fired is None or fired.row is not row:
            taken = fired.row.index if fired is not None else None
            raise ReferenceError(f"{self.name}: the transitions machine took row {taken} of {event} in "
                                 f"{pre['state']}, the evaluator chose row {row.index}")
        fired = Fired(self.name, key, event, row, pre, fired.post, dict(full), existed)
        if not fired.accepted:
            if not existed:
                self.machine.remove_model(model)
        elif fired.to_state in self._final:
            self.machine.remove_model(model)
            self._instances.pop(key, None)
        else:
            self._instances[key] = model
        self._note(key, fired.post, Transition(event, dict(full), _label(row)))
        return fired

    def _drop(self, key: Key) -> None:
        model = self._instances.pop(key, None)
        if model is not None:
            self.machine.remove_model(model)

    # ------------------------------------------------------------ the rows

    def candidates(self, state: str, event: str) -> tuple[ir.Row, ...]:
        return self._rows.get((state, event), ())

    def choose(self, pre: Mapping[str, Any], event: str, args: Mapping[str, Any]) -> ir.Row:
        """The one row answering `event` with `args` in `pre` (every row is evaluated: two matches are an error)."""
        wrapped = args if isinstance(args, _Args) else _Args(args)
        matches, undetermined = [], []
        for row in self.candidates(pre["state"], event):
            verdict = self._holds(row.guard, pre, wrapped)
            if verdict is None:
                undetermined.append(row.index)
            elif verdict:
                matches.append(row)
        if len(matches) == 1:
            return matches[0]
        choice = [r for r in matches if isinstance(r, ir.Transition) and r.choice]
        if matches and len(choice) == len(matches):
            return matches[0]
        what = f"rows {[r.index for r in matches]} all match" if matches else "no row answers"
        extra = f" (rows {undetermined} read an argument that was not computed)" if undetermined else ""
        raise ReferenceError(f"{self.name}.{event} in {pre['state']}: {what}{extra}; args {_plain(args)}")

    def _holds(self, e: ir.Expr, pre: Mapping[str, Any], args: Mapping[str, Any]) -> bool | None:
        try:
            return self.py.holds(e, pre, args)
        except _Missing:
            return None

    def _guard(self, row: ir.Row, ev: EventData) -> bool:
        """The transition's condition: the row's full guard on the model's pre-state (undetermined counts false;
        `choose` has already made sure exactly one row holds)."""
        model: _Model = ev.model  # type: ignore[assignment]
        return self._holds(row.guard, model.snapshot(), ev.kwargs["args"]) is True

    def _apply(self, row: ir.Row, ev: EventData) -> None:
        model: _Model = ev.model  # type: ignore[assignment]
        pre = model.snapshot()
        args = ev.kwargs["args"]
        if isinstance(row, ir.Transition):
            try:
                post = self.py.fire(row, pre, args)
            except _Missing as e:
                raise ReferenceError(f"{self.name} row {row.index}: its effect reads {e.args[0]}, which the event "
                                     "did not carry") from None
            model.values = {k: v for k, v in post.items() if k != "state"}
        else:
            post = pre
        model.last = Fired(self.name, self.key_of(pre), row.event, row, pre, post, dict(args), True)

    # ------------------------------------------------------------ properties

    def violated_invariants(self, values: Mapping[str, Any]) -> list[str]:
        return [i.name for i in self.ir.invariants if not self.py.holds(i.expr, values)]

    def violated_steps(self, fired: Fired) -> list[str]:
        if not isinstance(fired.row, ir.Transition):
            return []
        out = []
        for prop in self.ir.steps:
            if prop.applies_to(fired.row):
                try:
                    ok = self.py.holds(prop.expr, fired.pre, _Args(fired.args), fired.post)
                except _Missing:
                    continue
                if not ok:
                    out.append(prop.name)
        return out

    def assumption_broken(self, fired: Fired) -> bool:
        """The chosen row's share of the event's `requires` is false (the caller broke the precondition)."""
        verdict = self._holds(fired.row.assumes, fired.pre, _Args(fired.args))
        return verdict is False

    # ------------------------------------------------------------ printing

    def _note(self, key: Key, state: Values, transition: Transition) -> None:
        h = self._history.get(key)
        if h is None:
            h = self._history[key] = _History([self.fresh(key)])
        h.transitions.append(transition)
        h.states.append(dict(state))
        if len(h.transitions) > self.history_steps:
            del h.states[0]
            del h.transitions[0]

    def render_history(self, key: Key, notes: tuple[str, ...] = ()) -> str:
        """The recent steps of one instance, through the one printer (spec names, changed values starred)."""
        h = self._history.get(key)
        if h is None:
            return render_execution(Execution([self.view(key)], (), notes, frozenset(self._key_names)))
        return render_execution(Execution(h.states, h.transitions, notes, frozenset(self._key_names)))

    def history(self) -> Iterator[tuple[Key, list[Transition]]]:
        for key, h in sorted(self._history.items()):
            yield key, list(h.transitions)


def _label(row: ir.Row) -> str:
    return f"row {row.index}, {row.span.path}:{row.span.line}"


def _plain(args: Mapping[str, Any]) -> dict[str, Any]:
    return {k: dict.__getitem__(args, k) if isinstance(args, dict) else args[k] for k in args}


def reference_machines(machines: Mapping[str, ir.Machine], names: tuple[str, ...]
                       ) -> dict[str, ReferenceMachine]:
    return {name: ReferenceMachine(machines[name]) for name in names}


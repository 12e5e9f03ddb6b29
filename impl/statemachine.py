"""The runtime view of a generated machine table, and `decide`: the one place the implementation consults the spec.

Owns: `MachineTable` (built from an `impl/_generated/<machine>.py` module), `Row`, `Decision`, and the checks the
runtime applies to every decision: the event's precondition, exactly the rows of the current state, a transition's
target allowed by the table, integer variables within their declared bounds. A request that no row answers, or a
post-state out of bounds, is an `IllegalStateError` (a bug in the spec or the caller), never a silent default.

An instance is a plain dict: every variable, every key field, and `state`. `decide` never mutates it; the caller
applies `Decision.post` only after the records describing it are durable (the runtime's `replay`).
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal, NoReturn

from .errors import IllegalStateError

Guard = Callable[[Mapping[str, Any], Mapping[str, Any]], bool]
Effect = Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]
Instance = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Row:
    index: int
    kind: Literal["transition", "stay", "reject"]  # stay: variables change, the state does not (not an edge)
    event: str
    sources: frozenset[str]
    target: str | None
    error: str  # for a transition: the error the request is answered with (usually NONE)
    error_code: int
    guard: Guard
    effect: Effect | None
    line: int
    condition: str  # as written in the spec
    assumes: Guard  # the event's preconditions that concern this row (the caller guarantees them)
    origin: Literal["check", "reject", "transition"]  # a front-door `check`, a `reject` row, or a transition
    local: Guard  # the row's own condition: enough once the earlier rows of its (state, event) did not match

    @property
    def is_transition(self) -> bool:
        """A transition or a stay: the instance changes (records are written)."""
        return self.kind != "reject"


@dataclass(frozen=True, slots=True)
class Variable:
    name: str
    type: str
    default: Any
    lo: int | None
    hi: int | None


@dataclass(slots=True)
class Decision:
    """What the spec says about one event on one instance: the matching row and, for a transition, the post-state.

    Treated as immutable (a deviation is a new Decision, `dataclasses.replace`); not `frozen` because every
    decision builds one and a frozen dataclass's constructor costs four times as much."""

    machine: str
    event: str
    row: Row
    pre: Mapping[str, Any]
    post: Instance | None  # None for a rejection (nothing changes)

    @property
    def accepted(self) -> bool:
        return self.row.is_transition

    @property
    def error(self) -> str:
        return self.row.error

    @property
    def error_code(self) -> int:
        return self.row.error_code

    @property
    def from_state(self) -> str:
        return str(self.pre["state"])

    @property
    def to_state(self) -> str:
        return str(self.post["state"]) if self.post is not None else self.from_state


class MachineTable:
    """A machine's generated table, ready for `decide`."""

    def __init__(self, module: ModuleType) -> None:
        self.module = module
        self.name: str = module.MACHINE
        self.kind: str = module.KIND
        self.spec_path: str = module.SPEC_PATH
        self.spec_sha256: str = module.SPEC_SHA256
        self.State = module.State
        self.initial: str = module.INITIAL
        self.states: tuple[str, ...] = module.STATES
        self.final_states: frozenset[str] = module.FINAL_STATES
        self.pending_states: frozenset[str] = module.PENDING_STATES
        self.expirable_states: frozenset[str] = module.EXPIRABLE_STATES
        self.keys: tuple[tuple[str, str], ...] = module.KEYS
        self.variables: tuple[Variable, ...] = tuple(Variable(*v) for v in module.VARIABLES)
        self.events: dict[str, tuple[tuple[tuple[str, str], ...], bool]] = module.EVENTS
        fields = module.ROW_FIELDS
        self.rows: tuple[Row, ...] = tuple(Row(**dict(zip(fields, r, strict=True))) for r in module.ROWS)
        self.requires: dict[str, Guard] = module.REQUIRES
        self._valid_previous: dict[str, frozenset[str]] = module.VALID_PREVIOUS
        self._index: dict[tuple[str, str], tuple[Row, ...]] = {
            key: tuple(self.rows[i] for i in ixs) for key, ixs in module.INDEX.items()
        }
        self._precompute()
        self.invariants: tuple[tuple[str, Callable[[Mapping[str, Any]], bool], int], ...] = module.INVARIANTS
        self.steps: tuple[tuple[str, Callable[[Mapping[str, Any], Mapping[str, Any], Mapping[str, Any]], bool], int,
                                str | None], ...] = module.STEPS
        self._bounds: tuple[tuple[str, int, int], ...] = tuple(
            (v.name, v.lo, v.hi) for v in self.variables if v.lo is not None and v.hi is not None)
        self._in_bounds = _bounds_check(self.name, self._bounds)
        self.properties_hold = _properties_check(self.name, self.invariants, self.steps)
        self._defaults = {v.name: v.default for v in self.variables}

    @property
    def index(self) -> dict[tuple[str, str], tuple[Row, ...]]:
        """Per (state, event), the rows that may answer, in declaration order."""
        return self._index

    @index.setter
    def index(self, index: dict[tuple[str, str], tuple[Row, ...]]) -> None:
        self._index = index
        self._precompute()

    @property
    def valid_previous(self) -> dict[str, frozenset[str]]:
        """Per state, the states with a transition (not a stay) into it."""
        return self._valid_previous

    @valid_previous.setter
    def valid_previous(self, valid_previous: dict[str, frozenset[str]]) -> None:
        self._valid_previous = valid_previous
        self._precompute()

    def _precompute(self) -> None:
        """decide's hot path, built once (again whenever the index or the edges are replaced, as the mutation tool's
        mutants do): per (state, event), the rows to try in order as (own condition, row, precondition or None when
        it is literally `True`, whether the row's edge from this state is in the table)."""
        previous = self._valid_previous
        self._tries: dict[tuple[str, str], tuple[tuple[Guard, Row, Guard | None, bool], ...]] = {
            (state, event): tuple(
                (row.local, row, None if _is_always_true(row.assumes) else row.assumes,
                 row.target is None or state in previous.get(row.target, ()))
                for row in rows)
            for (state, event), rows in self._index.items()}

    @classmethod
    def load(cls, module_name: str) -> MachineTable:
        """The table of `impl/_generated/<module_name>.py`."""
        return cls(importlib.import_module(f"kcoord.impl._generated.{module_name}"))

    def fresh(self, key: Mapping[str, Any]) -> Instance:
        """A new instance: initial state, every variable at its default, the key fields as given."""
        instance: Instance = dict(self._defaults)
        for name, _ in self.keys:
            if name not in key:
                raise IllegalStateError(f"{self.name}: key field '{name}' missing from {dict(key)}")
            instance[name] = key[name]
        instance["state"] = self.initial
        return instance

    def decide(self, instance: Mapping[str, Any], event: str, args: Mapping[str, Any], *,
               pending: bool = False, strict: bool = False, lazy: bool | None = None) -> Decision:
        """The spec's answer to `event` with `args` on `instance` (never mutated).

        `pending` says a write for this instance is in flight; in a pending-only state it is always true. With
        `strict`, every row is evaluated and exactly one must match (tests use it; the verifier proves it). `lazy`
        says whether some argument is a callable computed on first use (None: look).
        """
        state = instance["state"]
        tries = self._tries.get((state, event))
        if tries is None and event not in self.events:
            raise IllegalStateError(f"{self.name} has no event '{event}'")
        if not pending and state in self.pending_states:
            pending = True
        if lazy is None:
            lazy = any(map(callable, args.values()))
        env: dict[str, Any] = _Args(args, pending) if lazy else {**args, "pending": pending}
        if strict:  # every full guard: exactly one must hold (the verifier proves it; tests check it)
            row = self._only_row(state, event, args, instance, env)
            edge = row.target is None or state in self.valid_previous[row.target]
            post = None if row.kind == "reject" else self._post(instance, env, row, edge)
            self._check_assumes(event, row, instance, env)
            return Decision(self.name, event, row, instance, post)
        # rows in declaration order, checks first: a row's own condition suffices once the earlier ones failed
        for entry in tries or ():
            if entry[0](instance, env):  # the row's own condition
                _, row, assumes, edge = entry
                break
        else:
            self._no_single_row(state, event, args, [])
        post = None if row.kind == "reject" else self._post(instance, env, row, edge)
        if assumes is not None:  # after the effect: a lazy argument it computed is checked too
            self._check_assumes(event, row, instance, env)
        return Decision(self.name, event, row, instance, post)

    def _only_row(self, state: str, event: str, args: Mapping[str, Any], instance: Mapping[str, Any],
                  env: Mapping[str, Any]) -> Row:
        """`strict`: the one row whose full guard holds (apart: its comprehension would cost every call cells)."""
        matches = [row for row in self.index.get((state, event), ()) if row.guard(instance, env)]
        if len(matches) != 1:
            self._no_single_row(state, event, args, matches)
        return matches[0]

    def _no_single_row(self, state: str, event: str, args: Mapping[str, Any], matches: list[Row]) -> NoReturn:
        what = "no row answers" if not matches else f"rows {[r.index for r in matches]} all match"
        raise IllegalStateError(f"{self.name}.{event} in {state}: {what} (args {dict(args)}; spec {self.spec_path})")

    def _check_assumes(self, event: str, row: Row, instance: Mapping[str, Any], env: dict[str, Any]) -> None:
        """The preconditions of the chosen row, over the arguments computed so far (never forcing a lazy one: a
        precondition about an argument the row never read is not this row's concern)."""
        if not isinstance(env, _Args):
            ok = row.assumes(instance, env)
        else:
            env.forcing = False
            try:
                ok = row.assumes(instance, env)
            except _Unresolved:
                ok = True
            finally:
                env.forcing = True
        if not ok:
            self._assumption_failed(event, row, instance, env)

    def _assumption_failed(self, event: str, row: Row, instance: Mapping[str, Any],
                           env: Mapping[str, Any]) -> NoReturn:
        raise IllegalStateError(f"{self.name}.{event} row {row.index}: precondition violated by {dict(env)} in "
                                f"{instance['state']} ({self.spec_path}:{row.line})")

    def _post(self, instance: Mapping[str, Any], env: Mapping[str, Any], row: Row, edge: bool) -> Instance:
        """The post-state of a transition or stay row; `edge`: its edge from the instance's state is in the table."""
        assert row.effect is not None
        post: Instance = {**instance, **row.effect(instance, env)}
        target = row.target
        if target is not None:
            if not edge:
                raise IllegalStateError(f"{self.name}: {instance['state']} -> {target} is not in the table")
            post["state"] = target
        if not self._in_bounds(post):
            self._out_of_bounds(row, post)
        return post

    def _out_of_bounds(self, row: Row, post: Mapping[str, Any]) -> NoReturn:
        for name, lo, hi in self._bounds:
            if not lo <= post[name] <= hi:
                raise IllegalStateError(f"{self.name}.{row.event} (row {row.index}, {self.spec_path}:{row.line}) "
                                        f"puts {name} = {post[name]} outside {self._type_of(name)}")
        raise AssertionError("a bound group failed but no variable is out of its bounds")

    def _type_of(self, name: str) -> str:
        return next(v.type for v in self.variables if v.name == name)

    def violated_invariants(self, instance: Mapping[str, Any]) -> list[str]:
        return [name for name, holds, _ in self.invariants if not holds(instance)]

    def violated_steps(self, pre: Mapping[str, Any], post: Mapping[str, Any], event: str | None = None,
                       args: Mapping[str, Any] | None = None) -> list[str]:
        """The step properties that `event` (with `args`) from `pre` to `post` breaks; without an event, only the
        properties of every event are checked."""
        return [name for name, holds, _, only in self.steps
                if (only is None or only == event) and not holds(pre, post, args or {})]


def _properties_check(machine: str, invariants: tuple[tuple[str, Callable[..., bool], int], ...],
                      steps: tuple[tuple[str, Callable[..., bool], int, str | None], ...]
                      ) -> Callable[[Mapping[str, Any], Mapping[str, Any]], bool]:
    """`properties_hold(pre, post)`: every invariant holds on `post` and every step property of every event holds
    on (`pre`, `post`) — `not violated_invariants(post) + violated_steps(pre, post)` as one compiled call, without
    the lists (an applied change asks this; the lists are built only to name what broke)."""
    namespace: dict[str, Any] = {"_no_args": {}}
    tests = []
    for i, (_, holds, _) in enumerate(invariants):
        namespace[f"_invariant_{i}"] = holds
        tests.append(f"_invariant_{i}(n)")
    for i, (_, holds, _, only) in enumerate(steps):
        if only is None:
            namespace[f"_step_{i}"] = holds
            tests.append(f"_step_{i}(s, n, _no_args)")
    test = " and ".join(tests) or "True"
    exec(compile(f"def properties_hold(s, n):\n    return bool({test})\n", f"<properties of {machine}>", "exec"),
         namespace)
    check: Callable[[Mapping[str, Any], Mapping[str, Any]], bool] = namespace["properties_hold"]
    return check


def _always_true_code() -> Any:
    """The bytecode of `def _(s, a): return True`, compiled from text so that it exists when this module is itself
    compiled ahead of time (a compiled function has no `__code__`; benchmarks/compile_hot.py)."""
    namespace: dict[str, Any] = {}
    exec(compile("def _always_true(s, a):\n    return True\n", "<always true>", "exec"), namespace)
    return namespace["_always_true"].__code__


_ALWAYS_TRUE_CODE = _always_true_code()


def _is_always_true(fn: Guard) -> bool:
    """`fn`'s code is `return True` (what the generator writes for a row without preconditions): decide skips it."""
    code, true = getattr(fn, "__code__", None), _ALWAYS_TRUE_CODE
    return code is not None and code.co_code == true.co_code and code.co_consts == true.co_consts


def _bounds_check(machine: str, bounds: tuple[tuple[str, int, int], ...]) -> Callable[[Mapping[str, Any]], bool]:
    """One function testing every bounded variable of an instance (`lo <= value <= hi`, the table's bounds), compiled
    once per table: a decision then costs one call, not a loop over the variables."""
    test = " and ".join(f"{lo!r} <= s[{name!r}] <= {hi!r}" for name, lo, hi in bounds) or "True"
    namespace: dict[str, Any] = {}
    exec(compile(f"def in_bounds(s):\n    return {test}\n", f"<bounds of {machine}>", "exec"), namespace)
    check: Callable[[Mapping[str, Any]], bool] = namespace["in_bounds"]
    return check


class _Unresolved(Exception):
    """A lazy argument was read while lazy arguments must not be computed (precondition checks)."""


class _Args(dict[str, Any]):
    """Event arguments plus `pending`. A callable argument is computed on first use and then kept (e.g. a fresh
    producer id is only allocated when the chosen row's effect reads it)."""

    def __init__(self, args: Mapping[str, Any], pending: bool) -> None:
        super().__init__(args)
        self["pending"] = pending
        self.forcing = True

    def __getitem__(self, key: str) -> Any:
        value = super().__getitem__(key)
        if callable(value):
            if not self.forcing:
                raise _Unresolved(key)
            value = value()
            self[key] = value
        return value

"""Random valid traces of the spec's machines (the mutation operators that break them are `mutations.py`'s, the
writers `writers.py`'s).

Owns: `generate` (random walks over the enabled rows of every machine, many keys interleaved on one clock, random
arguments drawn from the values at hand, occasional rejections, `load` rows and answers about instances that do not
exist; deterministic from the seed), the trace-property bookkeeping that keeps the walks valid across keys (`Ledger`:
monotonic maxima, exclusive holders, `within` deadlines, `before` and `fenced` history), and `scripted` (the rows the
spec produces for given steps on one instance: tests, examples).

Validity: every emitted row is re-checked by the reference checker's row checks before it is kept (a candidate that
breaks an invariant or a step is dropped and counted in `Stats.dropped`, which is how a non-inductive spec shows up
here); the global clock strictly increases, so trace order is generation order.
Must not import: pyspark, kcoord.cli.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kcoord.model import ir
from kcoord.model.pyexpr import PythonEvaluator
from kcoord.model.traceschema import arg_column
from kcoord.model.z3backend import POOL

from .checks import ACCEPTED_KINDS, LOAD_EVENT, Spec
from .readers import columns

Row = dict[str, Any]


@dataclass(slots=True)
class Stats:
    rows: int = 0
    dropped: dict[str, int] = field(default_factory=dict)  # candidates dropped because a row check failed

    def drop(self, why: str) -> None:
        self.dropped[why] = self.dropped.get(why, 0) + 1


@dataclass(slots=True)
class Options:
    keys: int = 20  # keys per machine
    rows: int = 400  # rows per machine (about)
    reject_ratio: float = 0.15  # how often a rejection is kept when a transition was possible
    orphan_ratio: float = 0.02  # answers about instances that do not exist (seq -1)
    load_ratio: float = 0.02  # `load` rows (a state read back after a failover: new coordinator epoch)
    pending_ratio: float = 0.05


# ---------------------------------------------------------------- one key's walk


@dataclass(slots=True)
class Walk:
    key: str
    key_fields: dict[str, Any]
    state: dict[str, Any]
    seq: int
    epoch: int
    node: int
    deadline: tuple[int, frozenset[str]] | None = None  # within: (deadline, targets) while an obligation is open
    entered_ts: int | None = None  # ts_ms of the row that entered the key's current state (a `before` window)
    last_state: str | None = None  # the latest row's to_state


class Generator:
    def __init__(self, machines: Mapping[str, ir.Machine], seed: int, options: Options) -> None:
        self.rng = random.Random(seed)
        self.specs = {n: Spec.of(m) for n, m in sorted(machines.items())}
        self.options = options
        self.ev = PythonEvaluator()
        self.clock = 1_000
        self.ledger = Ledger(self.specs, self.ev)
        self.walks: dict[str, dict[str, Walk]] = {n: {} for n in self.specs}
        self.out: dict[str, list[Row]] = {n: [] for n in self.specs}
        self.stats = Stats()
        self.consts = {n: _int_constants(s.machine) for n, s in self.specs.items()}
        self.ghosts = 0
        self._row_index: dict[str, dict[tuple[str, str], list[ir.Row]]] = {}
        self.hints: set[int] = set()  # integers arguments are drawn from while providing a `before` event

    def run(self) -> dict[str, list[Row]]:
        total = self.options.rows * len(self.specs)
        attempts = 0
        while sum(len(v) for v in self.out.values()) < total and attempts < total * 20:
            attempts += 1
            self.clock += self.rng.randint(1, 40)
            name = self.rng.choice(list(self.specs))
            if len(self.out[name]) >= self.options.rows:
                continue
            self._step(name)
        self._drain()
        self.stats.rows = sum(len(v) for v in self.out.values())
        return self.out

    def _step(self, name: str) -> None:
        spec, o = self.specs[name], self.options
        if self.rng.random() < o.orphan_ratio:
            self._orphan(spec)
            return
        walk = self._pick_walk(spec)
        if self.rng.random() < o.load_ratio and walk.seq > 0:
            self._load(spec, walk)
        else:
            self._advance(spec, walk)

    def _pick_walk(self, spec: Spec) -> Walk:
        walks = self.walks[spec.name]
        urgent = [w for w in walks.values() if w.deadline and w.deadline[0] - self.clock < 20_000]
        if urgent:
            return min(urgent, key=lambda w: w.deadline[0] if w.deadline else 0)
        if len(walks) < self.options.keys and (not walks or self.rng.random() < 0.3):
            return self._new_walk(spec, f"{spec.name[:3].lower()}-{len(walks)}")
        return walks[self.rng.choice(sorted(walks))]

    def _new_walk(self, spec: Spec, key: str) -> Walk:
        fields = {k.name: self._key_value(k, key, i) for i, k in enumerate(spec.machine.keys)}
        state = dict(spec.defaults) | fields | {"state": spec.initial}
        walk = Walk(_key_text(spec, fields), fields, state, self.rng.randint(0, 5) * 100, self.rng.randint(0, 3),
                    self.rng.randint(0, 2))
        self.walks[spec.name][walk.key] = walk
        return walk

    def _key_value(self, k: ir.Field, key: str, i: int) -> Any:
        if isinstance(k.type, ir.IntType):
            return self.rng.randint(max(k.type.lo, 0), min(k.type.hi, 10**9))
        if isinstance(k.type, ir.EnumType):
            return self.rng.choice(k.type.members)
        return f"{key}" if i == 0 else f"{key}.{k.name}"

    # -- rows

    def _advance(self, spec: Spec, walk: Walk) -> None:
        prefer_targets = walk.deadline[1] if walk.deadline else None
        fallback: tuple[Row, ir.Row] | None = None
        for _ in range(16):
            candidate = self._candidate(spec, walk)
            if candidate is None:
                continue
            row, rule = candidate
            accepted = isinstance(rule, ir.Transition)
            if prefer_targets and row["to_state"] not in prefer_targets and fallback is None:
                fallback = candidate
                continue
            if not accepted and self.rng.random() > self.options.reject_ratio:
                fallback = fallback or candidate
                continue
            self._emit(spec, walk, row)
            return
        if fallback is not None:
            self._emit(spec, walk, fallback[0])

    def _candidate(self, spec: Spec, walk: Walk, only: str | None = None) -> tuple[Row, ir.Row] | None:
        m, pre = spec.machine, walk.state
        events = [e for e in m.events if (only is None or e.name == only) and self._rows_for(m, pre["state"], e.name)]
        if not events:
            return None
        event = self.rng.choice(events)
        args = self._args(spec, event, pre)
        pending = pre["state"] in spec.pending_states or self.rng.random() < self.options.pending_ratio
        env = dict(args) | {"pending": pending}
        if not self._true(event.requires, pre, env):
            return None
        rows = [r for r in self._rows_for(m, pre["state"], event.name) if self._true(r.guard, pre, env)]
        if not rows:
            return None
        rule = self.rng.choice(rows)
        if isinstance(rule, ir.Transition):
            post = self.ev.fire(rule, pre, env)
            if not _in_bounds(m, post):
                return None
            kind, error, to = ("stay" if rule.is_stay else "transition"), rule.answer, post["state"]
        else:
            post, kind, error, to = dict(pre), "reject", rule.error, pre["state"]
        row = self._row(spec, walk, event.name, rule.index, kind, error, pre["state"], to, pending, args, post)
        return row, rule

    def _rows_for(self, m: ir.Machine, state: str, event: str) -> tuple[ir.Row, ...]:
        """`m.rows_for`, indexed once per machine (it is the generator's hot path)."""
        index = self._row_index.get(m.name)
        if index is None:
            index = self._row_index[m.name] = {}
            for r in m.rows:
                for s in r.sources:
                    index.setdefault((s, r.event), []).append(r)
        return tuple(index.get((state, event), ()))

    def _true(self, e: ir.Expr, pre: Mapping[str, Any], env: Mapping[str, Any]) -> bool:
        try:
            return self.ev.eval(e, pre, env) is True
        except (TypeError, KeyError, ValueError):
            return False

    def _row(self, spec: Spec, walk: Walk, event: str, index: int, kind: str, error: str, frm: str, to: str,
             pending: bool, args: Mapping[str, Any], post: Mapping[str, Any]) -> Row:
        row: Row = {name: None for name, _ in columns(spec.machine)}
        row.update(machine=spec.name, key=walk.key, seq=walk.seq, ts_ms=self.clock, node=walk.node,
                   coordinator_epoch=walk.epoch, kind=kind, event=event, row=index, error=error, from_state=frm,
                   to_state=to, pending=pending)
        row.update(walk.key_fields)
        row.update({arg_column(n): v for n, v in args.items()})
        row.update({v.name: post[v.name] for v in spec.machine.variables})
        return row

    def _emit(self, spec: Spec, walk: Walk, row: Row) -> None:
        problem = self.ledger.problem(spec, walk, row, self.clock)
        if problem:
            self.stats.drop(problem)
            if problem.startswith("before ") and not self.hints:
                self._provide(spec, walk, row)
            return
        self.ledger.record(spec, walk, row, self.clock)
        self.out[spec.name].append(row)
        if walk.entered_ts is None or row["to_state"] != walk.last_state:
            walk.entered_ts = row["ts_ms"]
        walk.last_state = row["to_state"]
        walk.seq += 1
        walk.epoch = row["coordinator_epoch"]
        if row["to_state"] in spec.final_states:
            walk.state = dict(spec.defaults) | walk.key_fields | {"state": spec.initial}
        else:
            walk.state = {v.name: row[v.name] for v in spec.machine.variables} | walk.key_fields | \
                {"state": row["to_state"]}

    def _provide(self, spec: Spec, walk: Walk, row: Row) -> None:
        """A `before` property refused `row`: let the other machine do the required event with the row's values of
        the matched fields (its key fields taken from them, its integer arguments drawn from them), so that a later
        attempt of the row can pass."""
        for prop in spec.machine.traces:
            if prop.form != "before" or prop.subject[2] not in self.specs or row["to_state"] != prop.subject[1]:
                continue
            other, event = self.specs[prop.subject[2]], prop.subject[3]
            want = {k: walk.state[k] for k in prop.per}  # the entering row's pre-state values
            provider = self._walk_with(other, want)
            self.hints = {v for v in want.values() if isinstance(v, int) and not isinstance(v, bool)}
            try:
                for _ in range(24):
                    candidate = self._candidate(other, provider, only=event)
                    if candidate is None:
                        continue
                    made = candidate[0]
                    if made["kind"] in ACCEPTED_KINDS and all(made.get(k) == v for k, v in want.items()):
                        self._emit(other, provider, made)
                        break
            finally:
                self.hints = set()

    def _walk_with(self, spec: Spec, fields: Mapping[str, Any]) -> Walk:
        """A walk of `spec` whose key fields include `fields` (an existing one, else a new one)."""
        mine = {k.name: fields[k.name] for k in spec.machine.keys if k.name in fields}
        for w in self.walks[spec.name].values():
            if all(w.key_fields[k] == v for k, v in mine.items()):
                return w
        walk = self._new_walk(spec, f"{spec.name[:3].lower()}-{len(self.walks[spec.name])}")
        del self.walks[spec.name][walk.key]
        walk.key_fields.update(mine)
        walk.state.update(mine)
        walk.key = _key_text(spec, walk.key_fields)
        self.walks[spec.name][walk.key] = walk
        return walk

    def _load(self, spec: Spec, walk: Walk) -> None:
        """A failover: the state read back by a new coordinator (its epoch is higher, its offsets jump)."""
        if walk.state["state"] in spec.final_states or "coordinator_epoch" in spec.defaults:
            return
        walk.epoch += 1
        walk.seq += self.rng.randint(1, 50)
        state = walk.state
        row = self._row(spec, walk, LOAD_EVENT, -1, "load", "NONE", state["state"], state["state"], False, {}, state)
        self._emit(spec, walk, row)

    def _orphan(self, spec: Spec) -> None:
        """A request about an instance that does not exist: answered by a rejection from the fresh instance."""
        self.ghosts += 1
        ghost = self._new_walk(spec, f"ghost-{spec.name[:3].lower()}-{self.ghosts}")
        del self.walks[spec.name][ghost.key]
        for _ in range(8):
            candidate = self._candidate(spec, ghost)
            if candidate and isinstance(candidate[1], ir.Rejection):
                row = candidate[0]
                row["seq"] = -1
                self.out[spec.name].append(row)
                return

    def _drain(self) -> None:
        """Close every open `within` obligation: step the waiting keys (time moves on) until they arrive."""
        for name, walks in self.walks.items():
            for walk in walks.values():
                for _ in range(200):
                    if walk.deadline is None:
                        break
                    self.clock += 1
                    self._advance(self.specs[name], walk)

    # -- arguments

    def _args(self, spec: Spec, event: ir.Event, pre: Mapping[str, Any]) -> dict[str, Any]:
        return {p.name: self._value(spec, p, pre) for p in event.params}

    def _value(self, spec: Spec, p: ir.Field, pre: Mapping[str, Any]) -> Any:
        t = p.type
        if isinstance(t, ir.BoolType):
            return self.rng.random() < 0.5
        if isinstance(t, ir.EnumType):
            return self.rng.choice(t.members)
        if isinstance(t, ir.IntType):
            return self._int(spec, p.name, t, pre)
        if isinstance(t, ir.SetType):
            pool = sorted({*self._strings(t.element, pre), *_set_items(pre)}, key=str)
            return frozenset(self.rng.sample(pool, self.rng.randint(0, min(3, len(pool)))))
        return self.rng.choice(sorted(self._strings(t, pre)))

    def _int(self, spec: Spec, name: str, t: ir.IntType, pre: Mapping[str, Any]) -> int:
        if self.hints and self.rng.random() < 0.7:
            candidates = sorted(self.hints)
        elif name.endswith("_ms") and self.rng.random() < 0.5:
            candidates = [self.clock]
        else:
            near = [v for v in pre.values() if isinstance(v, int) and not isinstance(v, bool)]
            candidates = [*near, *(v + 1 for v in near), *(v - 1 for v in near), *self.consts[spec.name],
                          self.clock, self.rng.randint(0, 10**6), self.rng.randint(1, 60_000)]
        ok = [c for c in candidates if t.lo <= c <= t.hi]
        return self.rng.choice(ok) if ok else t.lo

    def _strings(self, t: ir.Type, pre: Mapping[str, Any]) -> set[Any]:
        if isinstance(t, ir.EnumType):
            return set(t.members)
        if isinstance(t, ir.IntType):
            return {0, 1, 2}
        alias = t.name if isinstance(t, ir.StringType) else "string"
        pool = {x for x in POOL.get(alias, POOL["string"]) if x}
        return pool | {v for v in pre.values() if isinstance(v, str) and v} | {""}


def _set_items(pre: Mapping[str, Any]) -> set[Any]:
    return {x for v in pre.values() if isinstance(v, frozenset) for x in v}


def _int_constants(m: ir.Machine) -> list[int]:
    exprs = [r.guard for r in m.rows] + [ef.value for t in m.transitions for ef in t.effects]
    values = {n.value for e in exprs for n in ir.walk(e)
              if isinstance(n, ir.Lit) and isinstance(n.value, int) and not isinstance(n.value, bool)}
    return sorted({v + d for v in values for d in (-1, 0, 1)})


def _in_bounds(m: ir.Machine, post: Mapping[str, Any]) -> bool:
    return all(v.type.contains(post[v.name]) for v in m.variables if isinstance(v.type, ir.IntType))


def _key_text(spec: Spec, fields: Mapping[str, Any]) -> str:
    return "/".join(str(fields[k.name]) for k in spec.machine.keys)


# ---------------------------------------------------------------- trace properties, incrementally


class Ledger:
    """What the trace properties remember while traces are generated, to refuse rows that would break them (and to
    check invariants and steps of each candidate, as the checker will)."""

    def __init__(self, specs: Mapping[str, Spec], ev: PythonEvaluator) -> None:
        self.specs = specs
        self.ev = ev
        self.maxima: dict[tuple[Any, ...], int] = {}
        self.holders: dict[tuple[Any, ...], str] = {}
        self.held: dict[tuple[str, str, str], list[tuple[Any, ...]]] = {}
        self.seen_events: dict[tuple[Any, ...], int] = {}  # (machine, property, K...) -> latest ts_ms
        self.latest: dict[tuple[Any, ...], int] = {}

    def problem(self, spec: Spec, walk: Walk, row: Row, now: int) -> str | None:
        pre, post = walk.state, _post(spec, row, walk)
        m = spec.machine
        for inv in m.invariants:
            if not self._true(inv.expr, post, {}, None):
                return f"invariant {m.name}.{inv.name}"
        if row["kind"] not in ("reject", "load"):
            args = {p.name: row[arg_column(p.name)] for p in spec.event_params(row["event"])}
            args["pending"] = row["pending"] or pre["state"] in spec.pending_states
            for st in m.steps:
                if st.event in (None, row["event"]) and not self._true(st.expr, pre, args, post):
                    return f"step {m.name}.{st.name}"
        for prop in m.traces:
            why = self._trace_problem(spec, prop, walk, row, post, now)
            if why:
                return f"{prop.form} {m.name}.{prop.name}"
        return None

    def _true(self, e: ir.Expr, s: Mapping[str, Any], a: Mapping[str, Any], n: Mapping[str, Any] | None) -> bool:
        try:
            return self.ev.eval(e, s, a, n) is True
        except (TypeError, KeyError, ValueError):
            return False

    def _trace_problem(self, spec: Spec, prop: ir.TraceProperty, walk: Walk, row: Row, post: Mapping[str, Any],
                       now: int) -> bool:
        per = tuple(row[k] for k in prop.per)
        if prop.form == "monotonic":
            top = self.maxima.get((spec.name, prop.name, *per))
            return top is not None and row["kind"] != "reject" and row[prop.subject[0]] < top
        if prop.form == "exclusive":
            return any(self.holders.get((spec.name, prop.name, *per, x), walk.key) != walk.key
                       for x in row[prop.subject[0]]) and row["to_state"] not in spec.final_states
        if prop.form == "within":
            entering = row["to_state"] in prop.states_from and walk.state["state"] not in prop.states_from
            if entering and row["to_state"] not in prop.states_to:
                assert prop.bound is not None
                bound = self.ev.eval(prop.bound, post)
                return not isinstance(bound, int) or bound < 30_000
            return False
        if prop.form == "before":
            _, state, other, event = prop.subject
            if other not in self.specs:
                return False  # the checker reports the property as not checked without the other machine's rows
            per = tuple(walk.state[k] for k in prop.per)  # matched on the pre-state's values
            entering = row["to_state"] == state and walk.state["state"] != state
            own = other == spec.name and row["event"] == event and row["kind"] in ACCEPTED_KINDS
            seen = self.seen_events.get((other, prop.name, *per))
            in_window = seen is not None and (walk.entered_ts is None or seen >= walk.entered_ts)
            return entering and not own and not in_window
        _, event, param, other, _ = prop.subject
        if row["event"] != event or row["kind"] not in ACCEPTED_KINDS:
            return False
        latest = self.latest.get((other, prop.name, *per))
        return latest is not None and row[arg_column(param)] < latest

    def record(self, spec: Spec, walk: Walk, row: Row, now: int) -> None:
        for prop in spec.machine.traces:
            per = tuple(row[k] for k in prop.per)
            if prop.form == "monotonic" and row["kind"] != "reject":
                k = (spec.name, prop.name, *per)
                self.maxima[k] = max(self.maxima.get(k, row[prop.subject[0]]), row[prop.subject[0]])
            elif prop.form == "exclusive":
                self._hold(spec, prop, walk, row, per)
            elif prop.form == "within":
                self._obligation(prop, walk, row, now)
        for other in self.specs.values():  # `before` / `fenced` of any machine that reads this one
            for prop in other.machine.traces:
                per = tuple(row.get(k) for k in prop.per)
                if prop.form == "before" and prop.subject[2] == spec.name and row["event"] == prop.subject[3] \
                        and row["kind"] in ACCEPTED_KINDS:
                    self.seen_events[(spec.name, prop.name, *per)] = row["ts_ms"]
                if prop.form == "fenced" and prop.subject[3] == spec.name:
                    self.latest[(spec.name, prop.name, *per)] = row[prop.subject[4]]

    def _hold(self, spec: Spec, prop: ir.TraceProperty, walk: Walk, row: Row, per: tuple[Any, ...]) -> None:
        mine = (spec.name, prop.name, walk.key)
        for k in self.held.pop(mine, []):
            if self.holders.get(k) == walk.key:
                del self.holders[k]
        if row["to_state"] in spec.final_states:
            return
        keys = [(spec.name, prop.name, *per, x) for x in sorted(row[prop.subject[0]], key=str)]
        for k in keys:
            self.holders[k] = walk.key
        self.held[mine] = keys

    def _obligation(self, prop: ir.TraceProperty, walk: Walk, row: Row, now: int) -> None:
        if walk.deadline is not None and row["to_state"] in walk.deadline[1]:
            walk.deadline = None
        entering = row["to_state"] in prop.states_from and walk.state["state"] not in prop.states_from
        if entering and row["to_state"] not in prop.states_to:
            assert prop.bound is not None
            spec = next(s for s in self.specs.values() if prop in s.machine.traces)
            bound = self.ev.eval(prop.bound, _post(spec, row, walk))
            deadline = now + bound
            if walk.deadline is None or deadline < walk.deadline[0]:
                walk.deadline = (deadline, frozenset(prop.states_to))


def _post(spec: Spec, row: Row, walk: Walk) -> dict[str, Any]:
    return {v.name: row[v.name] for v in spec.machine.variables} | walk.key_fields | {"state": row["to_state"]}


def generate(machines: Mapping[str, ir.Machine], seed: int, options: Options | None = None) -> tuple[
        dict[str, list[Row]], Stats]:
    """Random valid traces of `machines` (rows per machine, in generation order), and what was dropped."""
    g = Generator(machines, seed, options or Options())
    return g.run(), g.stats


# ---------------------------------------------------------------- scripted traces (tests, examples)


def scripted(m: ir.Machine, key: Mapping[str, Any], steps: list[tuple[str, Mapping[str, Any], int]],
             seq: int = 0, pending: bool = False) -> list[Row]:
    """The rows the spec produces for `steps` — (event, arguments, ts_ms) — on one fresh instance of `m`."""
    spec, ev = Spec.of(m), PythonEvaluator()
    fields = dict(key)
    state: dict[str, Any] = dict(spec.defaults) | fields | {"state": spec.initial}
    out: list[Row] = []
    for i, (event, args, ts) in enumerate(steps):
        env = dict(args) | {"pending": pending or state["state"] in spec.pending_states}
        (rule,) = [r for r in m.rows_for(state["state"], event) if ev.eval(r.guard, state, env) is True]
        post = ev.fire(rule, state, env) if isinstance(rule, ir.Transition) else dict(state)
        kind = "reject" if isinstance(rule, ir.Rejection) else "stay" if rule.is_stay else "transition"
        row: Row = {name: None for name, _ in columns(m)}
        row.update(machine=m.name, key=_key_text(spec, fields), seq=seq + i, ts_ms=ts, node=0, coordinator_epoch=0,
                   kind=kind, event=event, row=rule.index,
                   error=rule.error if isinstance(rule, ir.Rejection) else rule.answer, from_state=state["state"],
                   to_state=post["state"], pending=pending)
        row.update(fields)
        row.update({arg_column(n): v for n, v in args.items()})
        row.update({v.name: post[v.name] for v in m.variables})
        out.append(row)
        state = post if post["state"] not in spec.final_states else dict(spec.defaults) | fields | \
            {"state": spec.initial}
    return out

"""The reference checker's cross-key trace properties (`exclusive`, `monotonic`, `before`, `fenced`; see `checks`).

Owns `CrossKey` (one machine's cross-key properties: tuples mapped from each bucket's `MachineChecker` and from the
other machine's rows, kept per group in memory or in spill files by the group's hash, then reduced a bucket of
groups at a time), the `_<form>_local` / `_<form>_reduce` pairs in `_CROSS_KEY`, and `OtherRows` (another machine's
rows, re-read on demand for `before` and `fenced`).
Must not import: pyspark, kcoord.cli.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kcoord.model import ir

from .checks import ACCEPTED_KINDS, NEVER, Spec
from .pyrowcheck import Ctx, Found, MachineChecker, Row, entering, orderable
from .pyspill import Spill
from .readers import Quarantine, Source, read_rows


@dataclass(slots=True)
class OtherRows:
    """Another machine's rows, re-read on demand (for `before` and `fenced`)."""

    specs: dict[str, Spec]
    sources: dict[str, list[Source]]

    def has(self, machine: str) -> bool:
        return machine in self.sources and machine in self.specs

    def rows(self, machine: str) -> Iterator[Row] | None:
        if not self.has(machine):
            return None
        return read_rows(self.specs[machine], machine, self.sources[machine], Quarantine())


def _fields(r: Mapping[str, Any], names: Sequence[str]) -> tuple[Any, ...]:
    return tuple(orderable(r[n]) for n in names)


def _running_max(values: list[int]) -> list[int]:
    out, top = [], None
    for v in values:
        top = v if top is None else max(top, v)
        out.append(top)
    return out


# The cross-key properties, each a map/reduce pair over tuples (the same code in memory and from spill files):
# `local` maps a checker's keys to (group, item) pairs, `remote` maps the other machine's rows (`before`, `fenced`),
# `reduce` takes one group's items and yields (key, pos, payload) for the rows that break the property, and `finish`
# turns all the hits of one property into findings (key, pos, Found). Items sort on their whole tuple, the position in
# the key's sequence last, so ties between equal rows resolve the same way whatever order the buckets came in.

Group = tuple[Any, ...]
Item = tuple[Any, ...]
Hit = tuple[str, int, Any]  # key, position in the key's sequence, payload


def _exclusive_local(k: MachineChecker, prop: ir.TraceProperty) -> Iterator[tuple[Group, Item]]:
    (var,) = prop.subject
    for key, cs in k.ctx.items():
        starts = _running_max([c.row["ts_ms"] for c in cs])
        for i, c in enumerate(cs):
            end = starts[i + 1] if i + 1 < len(cs) else NEVER
            if c.row["to_state"] in k.spec.final_states or end <= starts[i]:
                continue
            for x in c.row[var]:
                yield (*_fields(c.row, prop.per), x), (starts[i], key, c.row["seq"], end, i)


def _exclusive_reduce(prop: ir.TraceProperty, group: Group, items: list[Item]) -> Iterator[Hit]:
    items.sort()
    latest = -1
    for start, key, _, end, pos in items:
        if start < latest:
            yield key, pos, group[-1]
        latest = max(latest, end)


def _exclusive_finish(prop: ir.TraceProperty, hits: list[Hit]) -> list[tuple[str, int, Found]]:
    """One finding per row: the least element it shares."""
    (var,) = prop.subject
    least: dict[tuple[str, int], Any] = {}
    for key, pos, x in hits:
        least[(key, pos)] = min(least[(key, pos)], x) if (key, pos) in least else x
    per = ", ".join(prop.per)
    return [(key, pos, ("exclusive", prop.name, f"{var} element {x} is also held by another instance with equal "
                                                f"{per}")) for (key, pos), x in least.items()]


def _monotonic_local(k: MachineChecker, prop: ir.TraceProperty) -> Iterator[tuple[Group, Item]]:
    (var,) = prop.subject
    for key, cs in k.ctx.items():
        for c in cs:
            if c.row["kind"] != "reject":  # a rejection changes nothing (see checks.py)
                yield _fields(c.row, prop.per), (c.row["ts_ms"], c.row["seq"], key, c.row[var], c.pos,
                                                 c.row["kind"] == "load")


def _monotonic_reduce(prop: ir.TraceProperty, group: Group, items: list[Item]) -> Iterator[Hit]:
    (var,) = prop.subject
    items.sort()
    top = None
    own: dict[str, Any] = {}  # the maximum of each key's own rows so far (a load is compared with these only)
    for _, _, key, v, pos, load in items:
        seen = own.get(key) if load else top
        if seen is not None and v < seen:
            where = "held before by this instance (a load)" if load else f"seen before for equal {', '.join(prop.per)}"
            yield key, pos, ("monotonic", prop.name, f"{var} = {v} is below {seen}, {where}")
        top = v if top is None else max(top, v)
        own[key] = v if key not in own else max(own[key], v)


def _before_times(rows: Iterable[Mapping[str, Any]], prop: ir.TraceProperty) -> Iterator[tuple[Group, Item]]:
    _, _, _, event = prop.subject
    for r in rows:
        if r["event"] == event and r["kind"] in ACCEPTED_KINDS and r["seq"] != -1:
            yield _fields(r, prop.per), (0, r["ts_ms"])


def _before_local(k: MachineChecker, prop: ir.TraceProperty) -> Iterator[tuple[Group, Item]]:
    _, state, other, _ = prop.subject
    for key, cs in k.ctx.items():
        if other == k.m.name:
            yield from _before_times((c.row for c in cs), prop)
        entered = _state_entered(cs)
        for i, c in enumerate(cs):
            if entering(k, c, (state,)):
                since = entered[i - 1] if i > 0 else None
                yield _fields(c.pre if c.pre is not None else c.row, prop.per), (1, since, c.row["ts_ms"], key, i)


def _before_reduce(prop: ir.TraceProperty, group: Group, items: list[Item]) -> Iterator[Hit]:
    _, state, other, event = prop.subject
    times = sorted(t[1] for t in items if t[0] == 0)
    for item in items:
        if item[0] != 1:
            continue
        _, since, ts, key, pos = item
        j = bisect_left(times, since) if since is not None else 0
        if j >= len(times) or times[j] > ts:
            window = f"since ts {since}" if since is not None else "before it"
            yield key, pos, ("before", prop.name, f"entered {state} at ts {ts} without a {other}.{event} on "
                                                  f"{', '.join(prop.per)} {window}")


def _state_entered(cs: list[Ctx]) -> list[int]:
    """Per row of a key's sequence: the `ts_ms` of the row that entered its `to_state` (the first row of the run of
    consecutive rows ending in that state)."""
    out: list[int] = []
    for i, c in enumerate(cs):
        same = i > 0 and cs[i - 1].row["to_state"] == c.row["to_state"]
        out.append(out[-1] if same else c.row["ts_ms"])
    return out


def _fenced_latest(rows: Iterable[Mapping[str, Any]], prop: ir.TraceProperty) -> Iterator[tuple[Group, Item]]:
    var = prop.subject[4]
    for r in rows:
        if r["seq"] != -1:
            yield _fields(r, prop.per), (r["ts_ms"], 1, r["seq"], r["key"], r[var], -1)


def _fenced_local(k: MachineChecker, prop: ir.TraceProperty) -> Iterator[tuple[Group, Item]]:
    _, event, param, other, _ = prop.subject
    for key, cs in k.ctx.items():
        if other == k.m.name:
            yield from _fenced_latest((c.row for c in cs), prop)
        for c in cs:
            r = c.row
            # (an argument the runtime never computed is null: nothing to compare, as in Spark, where `value <
            # latest` is null; it was compared with an int here and raised a TypeError)
            if r["event"] == event and r["kind"] in ACCEPTED_KINDS and r[f"arg_{param}"] is not None:
                yield _fields(r, prop.per), (r["ts_ms"], 0, r["seq"], key, r[f"arg_{param}"], c.pos)


def _fenced_reduce(prop: ir.TraceProperty, group: Group, items: list[Item]) -> Iterator[Hit]:
    _, event, param, other, var = prop.subject
    items.sort()
    latest = None
    for _, flag, _, key, value, pos in items:
        if flag == 1:
            latest = value
        elif latest is not None and value < latest:
            yield key, pos, ("fenced", prop.name, f"{event}.{param} = {value} is below the latest {other}.{var} = "
                                                  f"{latest}")


@dataclass(frozen=True, slots=True)
class _Form:
    local: Callable[[MachineChecker, ir.TraceProperty], Iterator[tuple[Group, Item]]]
    reduce: Callable[[ir.TraceProperty, Group, list[Item]], Iterator[Hit]]
    remote: Callable[[Iterable[Mapping[str, Any]], ir.TraceProperty], Iterator[tuple[Group, Item]]] | None = None
    other_at: int | None = None  # where the other machine's name is in the property's subject
    finish: Callable[[ir.TraceProperty, list[Hit]], list[tuple[str, int, Found]]] = lambda _, hits: hits


_CROSS_KEY = {
    "exclusive": _Form(_exclusive_local, _exclusive_reduce, finish=_exclusive_finish),
    "monotonic": _Form(_monotonic_local, _monotonic_reduce),
    "before": _Form(_before_local, _before_reduce, _before_times, 2),
    "fenced": _Form(_fenced_local, _fenced_reduce, _fenced_latest, 3),
}


class CrossKey:
    """One machine's cross-key properties: tuples mapped from each bucket's checker and from the other machine's rows,
    kept per group (in memory, or in `spill`'s files by the group's hash), then reduced a bucket of groups at a time."""

    def __init__(self, spec: Spec, other: OtherRows, spill: Spill | None) -> None:
        self.name = spec.machine.name
        self.other = other
        self.spill = spill
        self.groups: dict[tuple[int, Group], list[Item]] = defaultdict(list)
        self.not_checked: list[str] = []
        self.props: dict[int, ir.TraceProperty] = {}
        for i, prop in enumerate(spec.machine.traces):
            form = _CROSS_KEY.get(prop.form)
            if form is None:
                continue
            theirs = self._other(prop)
            if theirs is not None and theirs != self.name and not other.has(theirs):
                self.not_checked.append(f"{self.name}.{prop.name}: no {theirs} rows in the input")
                continue
            self.props[i] = prop

    def _other(self, prop: ir.TraceProperty) -> str | None:
        at = _CROSS_KEY[prop.form].other_at
        return None if at is None else str(prop.subject[at])

    def _add(self, i: int, pairs: Iterable[tuple[Group, Item]]) -> None:
        if self.spill is None:
            for group, item in pairs:
                self.groups[(i, group)].append(item)
        else:
            for group, item in pairs:
                self.spill.add(hash((i, group)) % self.spill.n, (i, group, item))

    def map(self, k: MachineChecker) -> None:
        for i, prop in self.props.items():
            self._add(i, _CROSS_KEY[prop.form].local(k, prop))

    def map_other(self) -> None:
        for i, prop in self.props.items():
            theirs, remote = self._other(prop), _CROSS_KEY[prop.form].remote
            if theirs is not None and theirs != self.name and remote is not None:
                rows = self.other.rows(theirs)
                assert rows is not None
                self._add(i, remote(rows, prop))

    def _bucketed(self) -> Iterator[dict[tuple[int, Group], list[Item]]]:
        if self.spill is None:
            yield self.groups
            return
        for b in range(self.spill.n):
            groups: dict[tuple[int, Group], list[Item]] = defaultdict(list)
            for i, group, item in self.spill.read(b):
                groups[(i, group)].append(item)
            yield groups

    def reduce(self) -> list[tuple[str, int, Found]]:
        """Every property's findings, in property order, then by key and position."""
        hits: dict[int, list[Hit]] = defaultdict(list)
        for groups in self._bucketed():
            for (i, group), items in groups.items():
                hits[i] += _CROSS_KEY[self.props[i].form].reduce(self.props[i], group, items)
        out = []
        for i in sorted(hits):
            found = _CROSS_KEY[self.props[i].form].finish(self.props[i], hits[i])
            out += sorted(found, key=lambda t: (t[0], t[1]))
        return out

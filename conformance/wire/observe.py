"""What a scenario saw, recorded so that two brokers' runs of it can be compared side by side.

Owns: `Observation` (one named thing a scenario looked at: the form compared and the value as seen), `Observations`
(the ordered record of one scenario run, with one method per comparison rule) and `shape` (the rule for values whose
exact form is the broker's own choice: ids, node ids, timestamps).

The comparison rules, chosen per observation by the scenario that makes it:
- `exact`: error codes, group states, committed offsets, what a read_committed reader saw, fencing outcomes,
  assignment balance and exclusivity — a Kafka-compatible broker must answer these the same.
- `shape`: producer and member ids, node ids, timestamps, coordinator epochs — only their kind is compared (a
  non-negative int, -1, an empty or non-empty string), never their value.
- `progress`: generations and epochs as a group or producer moves on — compared as how each value relates to the
  previous one of the same series (first, same, advanced, went back), so one extra rebalance caused by timing is
  not a difference but a generation going back or staying put where the other broker's advanced is.
Observation names are unique within a scenario run (a repeated name gets `#2`, `#3`, ...), so the two runs align by
name.
Must not import: `kcoord.impl`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Observation:
    name: str
    compared: str  # the form the comparison uses
    seen: str  # the value as the broker answered it (ids and timestamps as they were)


def shape(value: object) -> str:
    """The kind of `value`, never the value: what `shape` observations compare."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return "-1" if value == -1 else "int>=0" if value >= 0 else "int<0"
    if isinstance(value, str | bytes):
        return "empty" if not value else "non-empty"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {shape(v)}" for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))) + "}"
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(map(shape, value)) if isinstance(value, set | frozenset) else [shape(v) for v in value]
        return "[" + ", ".join(items) + "]"
    return type(value).__name__


def _progress(previous: int | None, value: int) -> str:
    if previous is None:
        return "first"
    if value == previous:
        return "same"
    return "advanced" if value > previous else "went back"


@dataclass(slots=True)
class Observations:
    items: list[Observation] = field(default_factory=list)
    _series: dict[str, int] = field(default_factory=dict)
    _names: dict[str, int] = field(default_factory=dict)

    def _add(self, name: str, compared: str, seen: str) -> None:
        count = self._names.get(name, 0) + 1
        self._names[name] = count
        self.items.append(Observation(name if count == 1 else f"{name} #{count}", compared, seen))

    def exact(self, name: str, value: object) -> None:
        """`value` must be the same on both brokers (its `repr` is compared; sort sets before recording them)."""
        text = _text(value)
        self._add(name, text, text)

    def shape(self, name: str, value: object) -> None:
        """Only the kind of `value` is compared (see `shape`)."""
        self._add(name, shape(value), _text(value))

    def progress(self, name: str, series: str, value: int) -> None:
        """A generation or epoch of `series`: compared as its step from the series' previous value."""
        step = _progress(self._series.get(series), value)
        self._series[series] = value
        self._add(name, step, str(value))

    def as_dict(self) -> dict[str, Observation]:
        return {o.name: o for o in self.items}


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, set | frozenset):
        return repr(sorted(value, key=repr))
    return value if isinstance(value, str) else repr(value)

"""The spec's tables generated as Rust (`impl/_generated/rust/`, for the compiled server) held to the Python ones:
random cases for the compiled server's `check-tables`, which decides each with the generated Rust and exits 1 on the
first answer that differs from `MachineTable.decide`'s. ``python -m kcoord.conformance.rust_tables MACHINE N [SEED]
| build/native/release/check-tables MACHINE``; `check` runs the two for a test. Each case names the machine and
holds an instance of it (any state; key fields and variables drawn from the machine's pools), an event with
arguments, `pending`, and what `MachineTable.decide` answered — the row and the post-state, or why it refused (no
row, a bound, a precondition), in the generated Rust's words.

The pools are the machine's own: the integer and string constants its rows' conditions, preconditions and effects and
its variables' defaults name (walked from the IR: `""`, `"consumer"`, an epoch's 32766 ...), integers beside each (a
guard's `>=` is decided there), a few values of no meaning, and each integer type's bounds (a sum beyond them is the
bounds refusal); within a case, values drawn before come again, so that fields are equal and sets meet. Half the cases
are drawn whole; the other half are mutants (one or two fields drawn again) of earlier cases that matched a row, the
rows matched least the likeliest parents: a row behind many checks is reached from the cases that passed all but the
last one. Of ClassicGroup's 143 rows, 100,000 cases reached 116 with the earlier pools of fixed values, 130-133 with
these pools drawn whole (seeds 31 and 1-4), 141-143 with mutants.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kcoord.impl.errors import IllegalStateError
from kcoord.impl.statemachine import MachineTable
from kcoord.model import ir
from kcoord.model.gen.common import module_name
from kcoord.model.loader import bundled_machines

INTS = (-1, 0, 1, 2, 3, 100, 32766, 32767, 60_000)
STRINGS = ("t-0", "t-1", "t-2")
#: How often a case's integer or string is one it drew before (or, an integer, beside one)
REUSE = 0.45
#: How often a case is a mutant of an earlier one; how many parents each row keeps (the first ones, then each later
#: case RENEW of the time in place of one)
MUTATE, KEEP, RENEW = 0.5, 20, 0.1
#: Why `MachineTable.decide` refused (its error's words) -> the same refusal in the generated Rust's words.
REFUSALS = {": no row answers": "no row answers", " outside ": "a variable out of its type's bounds",
            ": precondition violated": "a precondition fails"}
#: The row a refusal names (`MachineTable.decide` names it when the row matched: a bound, a precondition)
ROW_REFUSED = re.compile(r"\brow (\d+)\b")

class Pools:
    """The values cases of one machine are drawn from. An integer is most often one of the machine's constants, else
    one beside a constant or of no meaning, now and then its type's bound; a string one of the machine's constants or
    of no meaning. Within a case, a value drawn is drawn again (an integer, or one beside it) often enough that rows
    asking two fields to be equal, a member to be in a set or two sets to meet are reached too. `start` begins a case,
    `remember` puts a value into it."""

    def __init__(self, machine: ir.Machine) -> None:
        ints, strings = constants(machine)
        self.constants = sorted(ints)
        self.ints = sorted(set(INTS) | {v + d for v in ints for d in (-1, 1)})
        self.strings = sorted(set(STRINGS) | strings)
        self.start()

    def start(self) -> None:
        self.drawn_ints: list[int] = []
        self.drawn_strings: list[str] = []

    def remember(self, t: ir.Type, value: Any) -> None:
        """`value`, of type `t`, is in the case (drawn, or a parent's)."""
        if isinstance(t, ir.IntType):
            self.drawn_ints.append(value)
        elif isinstance(t, ir.StringType):
            self.drawn_strings.append(value)
        elif isinstance(t, ir.SetType):
            for v in sorted(value):  # not the set's order: it varies with the process's string hashes
                self.remember(t.element, v)

    def draw(self, t: ir.Type, rng: random.Random) -> Any:
        value = self._draw(t, rng)
        if not isinstance(t, ir.SetType):  # a set's elements remembered as drawn
            self.remember(t, value)
        return value

    def _draw(self, t: ir.Type, rng: random.Random) -> Any:
        if isinstance(t, ir.BoolType):
            return rng.random() < 0.5
        if isinstance(t, ir.IntType):
            again = [v + d for v in self.drawn_ints for d in (0, 0, 0, -1, 1) if t.lo <= v + d <= t.hi]
            known = [v for v in self.constants if t.lo <= v <= t.hi]
            other = [v for v in self.ints if t.lo <= v <= t.hi]
            roll = rng.random()  # REUSE of the time one drawn before, to 65 % a constant, to 95 % another, else a bound
            if again and roll < REUSE:
                return rng.choice(again)
            if known and roll < 0.65:
                return rng.choice(known)
            return rng.choice(other) if other and roll < 0.95 else rng.choice((t.lo, t.hi))
        if isinstance(t, ir.StringType):
            return rng.choice(self.drawn_strings if self.drawn_strings and rng.random() < REUSE else self.strings)
        if isinstance(t, ir.EnumType | ir.StateType):
            return rng.choice(t.members)
        if isinstance(t, ir.SetType):
            return frozenset(self.draw(t.element, rng) for _ in range(rng.randrange(0, 3)))
        raise TypeError(f"cannot draw a {t}")


def constants(machine: ir.Machine) -> tuple[set[int], set[str]]:
    """The integer and the string constants the machine's rows (conditions, preconditions, effects) and its variables'
    defaults name, a set constant's elements too."""
    values: list[tuple[ir.Type, object]] = [(v.type, v.default) for v in machine.variables]
    for row in machine.rows:
        effects = [e.value for e in row.effects] if isinstance(row, ir.Transition) else []
        for e in (row.local_guard, row.assumes, *effects):
            values += [(n.type, n.value) for n in ir.walk(e) if isinstance(n, ir.Lit)]
    ints: set[int] = set()
    strings: set[str] = set()
    for t, value in values:
        if isinstance(t, ir.SetType) and isinstance(value, frozenset):
            t, items = t.element, value
        else:
            items = frozenset((value,))
        if isinstance(t, ir.IntType):
            ints |= {v for v in items if isinstance(v, int)}
        elif isinstance(t, ir.StringType):
            strings |= {v for v in items if isinstance(v, str)}
    return ints, strings


def plain(value: Any) -> Any:
    return sorted(value) if isinstance(value, frozenset) else value


def refusal(message: str) -> str:
    found = [rust for python, rust in REFUSALS.items() if python in message]
    if len(found) != 1:
        raise SystemExit(f"table_cases: a refusal of no known kind: {message}")
    return found[0]


Case = tuple[dict[str, Any], ir.Event, dict[str, Any], bool]  # instance, event, arguments, pending


def fresh(machine: ir.Machine, pools: Pools, rng: random.Random) -> Case:
    """A case drawn whole: any state, any event."""
    pools.start()
    instance = {"state": rng.choice([s.name for s in machine.states])}
    instance |= {f.name: pools.draw(f.type, rng) for f in (*machine.keys, *machine.variables)}
    event = rng.choice(machine.events)
    return instance, event, {p.name: pools.draw(p.type, rng) for p in event.params}, rng.random() < 0.1


def mutate(machine: ir.Machine, parent: Case, pools: Pools, rng: random.Random) -> Case:
    """`parent` with one or two of its fields (its state, a key field, a variable, an argument, `pending`) drawn
    again, from the pools and the parent's own values."""
    instance, event, args, pending = dict(parent[0]), parent[1], dict(parent[2]), parent[3]
    fields: list[tuple[str, ir.Type, dict[str, Any] | None]] = [("state", machine.state_type, instance)]
    fields += [(f.name, f.type, instance) for f in (*machine.keys, *machine.variables)]
    fields += [(p.name, p.type, args) for p in event.params] + [("pending", ir.BOOL, None)]
    pools.start()
    for name, t, where in fields:
        if where is not None:
            pools.remember(t, where[name])
    for name, t, where in rng.sample(fields, min(len(fields), rng.randint(1, 2))):
        if where is None:
            pending = not pending
        else:
            where[name] = pools.draw(t, rng)
    return instance, event, args, pending


def cases(machine: ir.Machine, count: int, rng: random.Random) -> Iterator[dict[str, Any]]:
    """`count` cases of `machine`, each with the Python table's answer; half of them mutants of earlier ones."""
    table = MachineTable.load(module_name(machine))
    pools = Pools(machine)
    parents: dict[int, list[Case]] = {}  # per row reached, KEEP of the cases that reached it
    matched: dict[int, int] = {}  # per row, how many cases matched it (refused by a bound or a precondition or not)
    for _ in range(count):
        if parents and rng.random() < MUTATE:
            rows = list(parents)  # the parent's row: the fewer cases matched it so far, the likelier
            row = rng.choices(rows, [1 / matched[r] for r in rows])[0]
            case = mutate(machine, rng.choice(parents[row]), pools, rng)
        else:
            case = fresh(machine, pools, rng)
        instance, event, args, pending = case
        try:
            decision = table.decide(instance, event.name, args, pending=pending)
        except IllegalStateError as error:
            expected: dict[str, Any] = {"refused": refusal(str(error))}
            named = ROW_REFUSED.search(str(error))  # a row matched, its post-state or its precondition refused
            reached = None if named is None else int(named.group(1))
        else:
            post = None if decision.post is None else {k: plain(v) for k, v in decision.post.items()}
            expected = {"row": decision.row.index, "post": post}
            reached = decision.row.index
        if reached is not None:
            matched[reached] = matched.get(reached, 0) + 1
            kept = parents.setdefault(reached, [])
            if len(kept) < KEEP:
                kept.append(case)
            elif rng.random() < RENEW:
                kept[rng.randrange(KEEP)] = case
        yield {"machine": machine.name, "instance": {k: plain(v) for k, v in instance.items()},
               "event": event.name, "args": {k: plain(v) for k, v in args.items()}, "pending": pending,
               "expected": expected}


def check(binary: Path, machine: ir.Machine, count: int, seed: int = 31) -> subprocess.CompletedProcess[str]:
    """`count` cases of `machine` (drawn with `seed`) decided by `binary` (`check-tables`): its exit status (0 every
    answer equal, 1 a difference, 2 a malformed case) and what it printed."""
    lines = "".join(json.dumps(case) + "\n" for case in cases(machine, count, random.Random(seed)))
    return subprocess.run([str(binary), machine.name], input=lines, capture_output=True, text=True, check=False)


def main() -> None:
    if len(sys.argv) < 3:
        raise SystemExit("usage: python -m kcoord.conformance.rust_tables MACHINE N [SEED]")
    name, count = sys.argv[1], int(sys.argv[2])
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 31)
    machines = bundled_machines()
    if name not in machines:
        raise SystemExit(f"rust_tables: no machine {name!r} in spec/ (there are: {', '.join(sorted(machines))})")
    try:
        for case in cases(machines[name], count, rng):
            print(json.dumps(case))
    except BrokenPipeError:  # check-tables stopped reading: it found a difference and says which
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)


if __name__ == "__main__":
    main()

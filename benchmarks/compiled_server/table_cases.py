"""Random cases for `check_tables` (the generated Rust table against kcoord's Python one): ``python table_cases.py
MACHINE N [SEED] > cases.jsonl``. Each case is an instance of the machine (every state; variables drawn from small
pools around the values its guards compare with), an event with arguments, `pending`, and what
`MachineTable.decide` answered — the row and the post-state, or an error (no row, a bound, a precondition).
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

from kcoord.impl.statemachine import MachineTable
from kcoord.model import ir
from kcoord.model.gen.common import module_name
from kcoord.model.loader import bundled_machines

INTS = (-1, 0, 1, 2, 3, 100, 32766, 32767, 60_000)
STRINGS = ("t-0", "t-1", "t-2")


def draw(t: ir.Type, rng: random.Random) -> Any:
    if isinstance(t, ir.BoolType):
        return rng.random() < 0.5
    if isinstance(t, ir.IntType):
        return rng.choice([v for v in INTS if t.lo <= v <= t.hi] or [t.lo])
    if isinstance(t, ir.StringType):
        return rng.choice(STRINGS)
    if isinstance(t, ir.EnumType | ir.StateType):
        return rng.choice(t.members)
    if isinstance(t, ir.SetType):
        return frozenset(draw(t.element, rng) for _ in range(rng.randrange(0, 3)))
    raise TypeError(f"cannot draw a {t}")


def plain(value: Any) -> Any:
    return sorted(value) if isinstance(value, frozenset) else value


def main() -> None:
    name, count = sys.argv[1], int(sys.argv[2])
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 31)
    machine = bundled_machines()[name]
    table = MachineTable.load(module_name(machine))
    for _ in range(count):
        instance = {"state": rng.choice([s.name for s in machine.states])}
        instance |= {f.name: draw(f.type, rng) for f in (*machine.keys, *machine.variables)}
        event = rng.choice(machine.events)
        args = {p.name: draw(p.type, rng) for p in event.params}
        pending = rng.random() < 0.1
        try:
            decision = table.decide(instance, event.name, args, pending=pending)
        except Exception as error:  # IllegalStateError: no row, a bound, a precondition — refused
            expected: dict[str, Any] = {"error": type(error).__name__}
        else:
            post = None if decision.post is None else {k: plain(v) for k, v in decision.post.items()}
            expected = {"row": decision.row.index, "post": post}
        print(json.dumps({"instance": {k: plain(v) for k, v in instance.items()}, "event": event.name,
                          "args": {k: plain(v) for k, v in args.items()}, "pending": pending, "expected": expected}))


if __name__ == "__main__":
    main()

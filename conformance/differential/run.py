"""Run the differential fuzzer: hypothesis draws programs, `Lockstep` runs each on both brokers, and the first
program whose answers differ is shrunk to a minimal one.

Owns: `ProgramDiffers` (a program and its difference: what hypothesis shrinks), `fuzz` (up to `examples` programs
from a seed; returns the `Totals` and, if any program differed, the shrunk program and its difference) and `replay`
(one fixed program, as the regression tests run them).
Must not import: `kcoord.cli`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hypothesis import HealthCheck, given, seed, settings
from hypothesis.errors import FlakyFailure

from .channel import BrokerSide
from .lockstep import Difference, Lockstep, ProgramResult, Timing, Totals, describe_program
from .steps import Step, programs


class ProgramDiffers(AssertionError):
    def __init__(self, steps: Sequence[Step], difference: Difference) -> None:
        super().__init__(f"{describe_program(steps)}\n{difference.describe()}\nas sent: {difference.as_seen()}")
        self.steps = list(steps)
        self.difference = difference


@dataclass(slots=True)
class FuzzResult:
    totals: Totals
    shrunk: ProgramDiffers | None = None
    reproducible: bool = True


def sides(tested: str, reference: str) -> tuple[BrokerSide, BrokerSide]:
    out = (BrokerSide("tested", tested), BrokerSide("reference", reference))
    for side in out:
        side.refresh()
    return out


def fuzz(tested: BrokerSide, reference: BrokerSide, examples: int, seed_value: int, max_steps: int = 16,
         timing: Timing | None = None, log: Callable[[str], None] | None = None) -> FuzzResult:
    """Up to `examples` programs (fewer once one differs: hypothesis then shrinks it)."""
    totals = Totals()
    lockstep = Lockstep(tested, reference, f"fz{uuid.uuid4().hex[:6]}", timing)
    say = log or (lambda _: None)

    @seed(seed_value)
    @settings(max_examples=examples, deadline=None, database=None, derandomize=False, print_blob=False,
              suppress_health_check=list(HealthCheck))
    @given(programs(max_steps))
    def one(program: tuple[str, list[Step]]) -> None:
        focus, steps = program
        result = lockstep.run(steps)
        totals.add(result)
        say(f"{focus:<12} {len(steps):>2} steps: {_outcome(result)}")
        if result.difference is not None:
            raise ProgramDiffers(steps[: result.difference.index + 1], result.difference)

    try:
        one()
    except ProgramDiffers as shrunk:
        return FuzzResult(totals, shrunk)
    except FlakyFailure as flaky:  # differed once, not when hypothesis ran it again: a timing-dependent difference
        first = next(e for e in flaky.exceptions if isinstance(e, ProgramDiffers))
        return FuzzResult(totals, first, reproducible=False)
    return FuzzResult(totals)


def replay(tested: BrokerSide, reference: BrokerSide, steps: Sequence[Step],
           timing: Timing | None = None) -> ProgramResult:
    return Lockstep(tested, reference, f"rg{uuid.uuid4().hex[:6]}", timing).run(steps)


def _outcome(result: ProgramResult) -> str:
    if result.difference is not None:
        return f"DIFFERS at {result.difference.describe()}"
    return f"{result.answers_compared} answers equal" + (" (cut short: slow)" if result.truncated else "")

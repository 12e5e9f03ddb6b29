"""Run the differential fuzzer: hypothesis draws programs, `Lockstep` runs each on both brokers, and the first
program whose answers differ is shrunk to a minimal one.

Owns: `ProgramDiffers` (a program and its difference: what hypothesis shrinks), `fuzz` (up to `examples` programs
from a seed, or fewer once a time budget is spent; returns the `Totals` and, if any program differed, the shrunk
program and its difference) and `replay` (one fixed program, as the regression tests run them).
Must not import: `kcoord.cli`.
"""

from __future__ import annotations

import time
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
         timing: Timing | None = None, log: Callable[[str], None] | None = None, *, seconds: float | None = None,
         at_least: int = 1) -> FuzzResult:
    """Up to `examples` programs (fewer once one differs: hypothesis then shrinks it). With `seconds`, no program is
    started once that many seconds have passed and `at_least` programs have run: a program's time depends on its
    waits (session timeouts, back-offs), so a fixed count takes from one to two minutes depending on the seed."""
    totals = Totals()
    stop_at = None if seconds is None else time.monotonic() + seconds
    lockstep = Lockstep(tested, reference, f"fz{uuid.uuid4().hex[:6]}", timing)
    say = log or (lambda _: None)

    @seed(seed_value)
    @settings(max_examples=examples, deadline=None, database=None, derandomize=False, print_blob=False,
              suppress_health_check=list(HealthCheck))
    @given(programs(max_steps))
    def one(program: tuple[str, list[Step]]) -> None:
        focus, steps = program
        if stop_at is not None and totals.programs >= at_least and time.monotonic() >= stop_at:
            totals.skipped += 1  # (hypothesis still draws the rest; drawing costs nothing next to running)
            return
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

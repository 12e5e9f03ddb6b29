"""Clocks: the runtime never reads the system time directly, so simulation and tests are deterministic.

Owns: the `Clock` protocol (`now_ms`), `SystemClock` (wall time) and `ManualClock` (advanced by the caller).
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int: ...


class SystemClock:
    """Milliseconds since the epoch, from the operating system."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that only moves when told to (simulation, tests)."""

    def __init__(self, start_ms: int = 0) -> None:
        self._now_ms = start_ms

    def now_ms(self) -> int:
        return self._now_ms

    def advance(self, delta_ms: int) -> int:
        assert delta_ms >= 0, f"a clock does not go back by {delta_ms} ms (use jump for clock-jump faults)"
        self._now_ms += delta_ms
        return self._now_ms

    def jump(self, delta_ms: int) -> int:
        """Move the clock by any amount, backwards included (the simulator's clock-jump fault)."""
        self._now_ms += delta_ms
        return self._now_ms

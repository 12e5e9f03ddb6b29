"""The discrete-event scheduler: callbacks at simulated times, on the injectable clock.

Owns: `Scheduler`, a heap of (time, sequence, callback). Events at the same time run in the order they were
scheduled, so a run depends only on the seed. Bounded: scheduling beyond `max_pending` events is our bug (a client
that schedules without limit), raised as IllegalStateError. No threads, no wall clock.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

from ..errors import IllegalStateError
from ..runtime.clock import ManualClock


class Scheduler:
    def __init__(self, clock: ManualClock, max_pending: int = 1_000_000) -> None:
        self.clock = clock
        self.max_pending = max_pending
        self._heap: list[tuple[int, int, Callable[[], None]]] = []
        self._seq = itertools.count()

    def after(self, delay_ms: int, callback: Callable[[], None]) -> None:
        """Run `callback` `delay_ms` from now (0: at the next step, after what is already due now)."""
        if len(self._heap) >= self.max_pending:
            raise IllegalStateError(f"more than {self.max_pending} simulated events pending")
        heapq.heappush(self._heap, (self.clock.now_ms() + max(0, delay_ms), next(self._seq), callback))

    def next_time_ms(self) -> int | None:
        return self._heap[0][0] if self._heap else None

    def run_due(self, limit: int = 100_000) -> int:
        """Run every event due now (including those they schedule for now); returns how many ran."""
        ran = 0
        now = self.clock.now_ms()
        while self._heap and self._heap[0][0] <= now and ran < limit:
            _, _, callback = heapq.heappop(self._heap)
            callback()
            ran += 1
        return ran

    def __len__(self) -> int:
        return len(self._heap)

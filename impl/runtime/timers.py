"""Timers keyed by name, fired in deadline order — session timeouts, rebalance timeouts, transaction aborts.

Owns: `Timers`, a heap of (deadline, sequence) so that timers with the same deadline fire in the order they were
scheduled (deterministic simulation). Scheduling a key again replaces its timer (`schedule` is idempotent per key,
like Kafka's timer keys); cancelled timers are skipped lazily, and the heap is rebuilt from the live ones once the
cancelled ones are most of it (a session timer rescheduled by every heartbeat would otherwise leave one dead entry
per heartbeat for a whole session timeout: 450,000 at 10,000 heartbeats/s, each pushed and walked by the garbage
collector). Bounded: one live timer per key, and fewer dead entries than live ones plus 64.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field


@dataclass(order=True, slots=True)
class _Entry:
    deadline_ms: int
    seq: int
    key: Hashable = field(compare=False)
    callback: Callable[[], None] = field(compare=False)
    live: bool = field(default=True, compare=False)


_COMPACT_AT = 64


def _ignore(deadline_ms: int) -> None:
    pass


class Timers:
    def __init__(self, on_schedule: Callable[[int], None] = _ignore) -> None:
        """`on_schedule(deadline_ms)` is told of every timer scheduled (an owner polling many `Timers` keeps the
        earliest deadline any of them may have, and looks at none of them before then)."""
        self._heap: list[_Entry] = []
        self._dead = 0  # cancelled entries still in the heap
        self._by_key: dict[Hashable, _Entry] = {}
        self._seq = itertools.count()
        self.on_schedule = on_schedule

    def schedule(self, key: Hashable, deadline_ms: int, callback: Callable[[], None]) -> None:
        """Run `callback` once the clock reaches `deadline_ms`; replaces any timer with the same key."""
        self.cancel(key)
        entry = _Entry(deadline_ms, next(self._seq), key, callback)
        self._by_key[key] = entry
        heapq.heappush(self._heap, entry)
        self.on_schedule(deadline_ms)
        if self._dead > _COMPACT_AT and self._dead > len(self._by_key):
            self._heap = [e for e in self._heap if e.live]
            heapq.heapify(self._heap)  # (the (deadline, seq) order, so the firing order, is unchanged)
            self._dead = 0

    def cancel(self, key: Hashable) -> bool:
        entry = self._by_key.pop(key, None)
        if entry is None:
            return False
        entry.live = False
        self._dead += 1
        return True

    def deadline(self, key: Hashable) -> int | None:
        entry = self._by_key.get(key)
        return entry.deadline_ms if entry is not None else None

    def next_deadline_ms(self) -> int | None:
        while self._heap and not self._heap[0].live:
            heapq.heappop(self._heap)
            self._dead -= 1
        return self._heap[0].deadline_ms if self._heap else None

    def fire_due(self, now_ms: int, limit: int = 10_000) -> int:
        """Fire every timer due at `now_ms` (at most `limit`); returns how many fired. A callback may schedule more."""
        fired = 0
        while fired < limit and self._heap and self._heap[0].deadline_ms <= now_ms:
            entry = heapq.heappop(self._heap)
            if not entry.live:
                self._dead -= 1
                continue
            del self._by_key[entry.key]
            entry.live = False
            entry.callback()
            fired += 1
        return fired

    def __len__(self) -> int:
        return len(self._by_key)

    def clear(self) -> None:
        for entry in self._by_key.values():
            entry.live = False
        self._by_key.clear()
        self._heap.clear()
        self._dead = 0

"""Timers keyed by name, fired in deadline order — session timeouts, rebalance timeouts, transaction aborts.

Owns: `Timers`, a heap of (deadline, sequence) so that timers with the same deadline fire in the order they were
scheduled (deterministic simulation). Scheduling a key again replaces its timer (`schedule` is idempotent per key,
like Kafka's timer keys); a timer put off to a later deadline keeps its heap entry until that entry comes to the top
(no push per heartbeat); cancelled timers are skipped lazily, and the heap is rebuilt from the live ones once the
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
    deadline_ms: int  # its place in the heap
    seq: int
    key: Hashable = field(compare=False)
    callback: Callable[[], None] = field(compare=False)
    live: bool = field(default=True, compare=False)
    # the timer's real deadline and sequence: later than its place when it was scheduled again for later (it moves
    # there once it comes to the top of the heap)
    due_ms: int = field(default=0, compare=False)
    due_seq: int = field(default=0, compare=False)


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
        """Run `callback` once the clock reaches `deadline_ms`; replaces any timer with the same key.

        A timer scheduled again for the same or a later deadline (a session timer at every heartbeat) keeps its
        place in the heap and moves to the new one when it comes to the top (`_settle`): it fires at the new
        deadline, in the same order as if it had been pushed anew (its sequence is taken now)."""
        entry = self._by_key.get(key)
        if entry is not None and deadline_ms >= entry.deadline_ms:
            entry.due_ms, entry.due_seq, entry.callback = deadline_ms, next(self._seq), callback
            return  # (its place comes no later than the new deadline: the owner was told of an earlier one)
        self.cancel(key)
        seq = next(self._seq)
        entry = _Entry(deadline_ms, seq, key, callback, True, deadline_ms, seq)
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
        return entry.due_ms if entry is not None else None

    def _settle(self) -> None:
        """Drop the cancelled entries at the top of the heap and move the rescheduled ones to their deadlines, until
        the top is a live timer in its place (or the heap is empty)."""
        heap = self._heap
        while heap:
            top = heap[0]
            if not top.live:
                heapq.heappop(heap)
                self._dead -= 1
            elif top.seq != top.due_seq:
                top.deadline_ms, top.seq = top.due_ms, top.due_seq
                heapq.heapreplace(heap, top)
            else:
                return

    def next_deadline_ms(self) -> int | None:
        self._settle()
        return self._heap[0].deadline_ms if self._heap else None

    def fire_due(self, now_ms: int, limit: int = 10_000) -> int:
        """Fire every timer due at `now_ms` (at most `limit`); returns how many fired. A callback may schedule more."""
        fired = 0
        while fired < limit and self._heap and self._heap[0].deadline_ms <= now_ms:
            self._settle()
            if not self._heap or self._heap[0].deadline_ms > now_ms:
                break
            entry = heapq.heappop(self._heap)
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

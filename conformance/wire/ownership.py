"""Client-side partition ownership: every assignment and revocation each member's client reported, in one total
order, and the check that no partition is ever owned by two members at once.

Owns: `OwnershipLog` (thread-safe; members of every client library append to it from their callbacks) and its
checks: `violations()` (a partition assigned to a member while another still owns it) and `owners()` (the current
owner of every partition). Members that stop record a revocation of everything they own *before* they close, so a
client whose close does not call its revocation callback cannot be blamed for a partition it no longer reads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Event:
    seq: int
    t_s: float
    member: str
    kind: str  # "assign" | "revoke"
    partitions: frozenset[int]


@dataclass(slots=True)
class OwnershipLog:
    events: list[Event] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, member: str, kind: str, partitions: Iterable[int]) -> None:
        assert kind in ("assign", "revoke"), kind
        with self._lock:
            self.events.append(Event(len(self.events), time.monotonic(), member, kind, frozenset(partitions)))

    def snapshot(self) -> list[Event]:
        with self._lock:
            return list(self.events)

    def count(self, member: str) -> int:
        """Events (with at least one partition) reported by `member` so far."""
        return sum(1 for e in self.snapshot() if e.member == member and e.partitions)

    def owners(self) -> dict[int, str]:
        owner: dict[int, str] = {}
        for e in self.snapshot():
            for p in e.partitions:
                if e.kind == "assign":
                    owner[p] = e.member
                elif owner.get(p) == e.member:
                    del owner[p]
        return owner

    def violations(self) -> list[str]:
        """Every assignment of a partition that another member still owned at that point of the order."""
        owner: dict[int, str] = {}
        found = []
        for e in self.snapshot():
            for p in sorted(e.partitions):
                if e.kind == "assign":
                    if p in owner and owner[p] != e.member:
                        found.append(f"event {e.seq}: partition {p} assigned to {e.member} while {owner[p]} owns it")
                    owner[p] = e.member
                elif owner.get(p) == e.member:
                    del owner[p]
        return found

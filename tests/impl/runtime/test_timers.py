"""`Timers` against a plain reference: whatever is scheduled, put off, brought forward or cancelled, the same timers
fire at the same clock readings in the same order, `deadline` and `next_deadline_ms` say the same, and the heap stays
bounded (a timer put off at every heartbeat keeps one entry)."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from kcoord.impl.runtime.timers import Timers


class Reference:
    """Every timer in a dict; the due ones fire by (deadline, the sequence of their last scheduling)."""

    def __init__(self) -> None:
        self.timers: dict[str, tuple[int, int, Callable[[], None]]] = {}
        self.seq = 0

    def schedule(self, key: str, deadline_ms: int, callback: Callable[[], None]) -> None:
        self.timers[key] = (deadline_ms, self.seq, callback)
        self.seq += 1

    def cancel(self, key: str) -> bool:
        return self.timers.pop(key, None) is not None

    def deadline(self, key: str) -> int | None:
        found = self.timers.get(key)
        return found[0] if found is not None else None

    def next_deadline_ms(self) -> int | None:
        return min((d for d, _, _ in self.timers.values()), default=None)

    def fire_due(self, now_ms: int) -> int:
        fired = 0
        while True:
            due = sorted((d, s, k) for k, (d, s, _) in self.timers.items() if d <= now_ms)
            if not due:
                return fired
            _, _, key = due[0]
            _, _, callback = self.timers.pop(key)
            callback()
            fired += 1


KEYS = st.sampled_from(["a", "b", "c", "d"])
OPS = st.lists(st.one_of(
    st.tuples(st.just("schedule"), KEYS, st.integers(0, 12)),  # deadline = now + this (ties are common)
    st.tuples(st.just("cancel"), KEYS, st.just(0)),
    st.tuples(st.just("advance"), KEYS, st.integers(0, 6)),
), max_size=80)


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_timers_fire_as_the_reference_does(ops: list[tuple[str, str, int]]) -> None:
    timers, reference = Timers(), Reference()
    fired: dict[str, list[tuple[int, str, int]]] = {"timers": [], "reference": []}
    clock = [0]  # read by the callbacks when they fire
    for i, (op, key, n) in enumerate(ops):
        now = clock[0]
        if op == "schedule":
            for name, t in (("timers", timers), ("reference", reference)):
                log = fired[name]
                t.schedule(key, now + n, lambda log=log, key=key, i=i: log.append((clock[0], key, i)))
        elif op == "cancel":
            assert timers.cancel(key) == reference.cancel(key)
        else:
            clock[0] = now = now + n
            assert timers.fire_due(now) == reference.fire_due(now)
        assert fired["timers"] == fired["reference"]
        assert timers.next_deadline_ms() == reference.next_deadline_ms()
        for k in "abcd":
            assert timers.deadline(k) == reference.deadline(k)
        assert len(timers) == len(reference.timers)


def test_a_timer_put_off_at_every_heartbeat_keeps_one_heap_entry_and_fires_once_at_its_last_deadline() -> None:
    timers = Timers()
    fired: list[int] = []
    for now in range(0, 10_000, 10):  # a heartbeat every 10 ms, a 45 s session timeout
        timers.schedule("session", now + 45_000, lambda now=now: fired.append(now))
        assert timers.fire_due(now) == 0
    assert len(timers._heap) == 1  # (the internals: no entry per heartbeat)
    assert timers.next_deadline_ms() == 9_990 + 45_000
    assert timers.fire_due(9_990 + 44_999) == 0
    assert timers.fire_due(9_990 + 45_000) == 1
    assert fired == [9_990]  # the last scheduling's callback, once
    assert timers.next_deadline_ms() is None


def test_a_timer_brought_forward_fires_at_the_earlier_deadline() -> None:
    timers = Timers()
    told: list[int] = []
    timers.on_schedule = told.append
    fired: list[str] = []
    timers.schedule("k", 100, lambda: fired.append("late"))
    timers.schedule("k", 200, lambda: fired.append("later"))  # put off: the owner is not told again
    timers.schedule("k", 50, lambda: fired.append("early"))  # brought forward: the owner is told
    assert told == [100, 50]
    assert timers.fire_due(60) == 1
    assert fired == ["early"]
    assert timers.fire_due(1_000) == 0


def test_timers_due_together_fire_in_the_order_of_their_last_scheduling() -> None:
    """A timer put off keeps its heap entry, but takes its place among equal deadlines from its last scheduling, as
    one pushed anew would (the deterministic simulation's order)."""
    timers = Timers()
    fired: list[str] = []
    timers.schedule("a", 5, lambda: fired.append("a (first)"))
    timers.schedule("b", 10, lambda: fired.append("b"))
    timers.schedule("a", 10, lambda: fired.append("a"))  # put off to b's deadline, after b was scheduled
    timers.schedule("c", 10, lambda: fired.append("c"))
    assert timers.fire_due(20) == 3
    assert fired == ["b", "a", "c"]

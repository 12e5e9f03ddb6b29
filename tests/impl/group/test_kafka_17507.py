"""KAFKA-17507 (kafka-reference.md §8): a WriteTxnMarkers answer for a `__consumer_offsets` partition must not be
given before the producer's pending transactional offsets are materialised (COMMIT) or dropped (ABORT), and the next
transaction's offsets must never be touched by the previous one's completion.

The materialisation step is held by a hook and released by the test. With the fix the answer waits for it; with
the seeded KAFKA-17507 (the old Scala coordinator's order) the answer comes first — and the held completion then
takes the next transaction's offsets too."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kcoord.impl.group.messages import OffsetCommitPartition, TxnOffsetCommitRequest
from kcoord.impl.interfaces import TopicPartition, TxnMarker
from kcoord.impl.seeded import SeededBug

from .helpers import Harness
from .test_offsets import FakeVerifier, txn_commit

TP = TopicPartition("__consumer_offsets", 0)


def setup(tmp_path: Path, *, bug: bool) -> tuple[Harness, list[Callable[[], None]], list[str]]:
    held: list[Callable[[], None]] = []
    events: list[str] = []

    def hold(step: Callable[[], None]) -> None:
        events.append("materialisation held")

        def run() -> None:
            step()
            events.append("materialised")
        held.append(run)

    seeded = frozenset({SeededBug.KAFKA_17507}) if bug else frozenset()
    h = Harness(tmp_path, verifier=FakeVerifier(), seeded_bugs=seeded, materialize_hook=hold)
    return h, held, events


def next_txn_commit(h: Harness, offset: int) -> object:
    req = TxnOffsetCommitRequest("txn-7", 7, 0, "g", (("orders", (OffsetCommitPartition(0, offset),)),))
    return h.c.txn_offset_commit(req)


def write_markers(h: Harness, events: list[str]) -> object:
    """WriteTxnMarkers; the answer is logged with what the committed view held when the answer was given."""
    store = h.shard("g").spec.offsets
    answer = h.c.write_txn_markers([TxnMarker(7, 0, "COMMIT", 0, (TP,))])
    committed = store.get("g", "orders", 0)
    if answer.done:  # answered within the call: log it as of then
        events.insert(0, f"answered {answer.result()[0][TP]} with committed {_offset(committed)}")
    else:
        answer.then(lambda c: events.append(
            f"answered {c.result()[0][TP]} with committed {_offset(store.get('g', 'orders', 0))}"))
    return answer


def _offset(entry: object) -> int | None:
    return getattr(entry, "offset", None)


def write_marker_rows(h: Harness) -> int:
    return len([r for r in h.rows("PartitionProducer") if r["event"] == "WriteMarker"])


def test_fixed_the_answer_waits_for_materialisation(tmp_path: Path) -> None:
    h, held, events = setup(tmp_path, bug=False)
    txn_commit(h, "g", {("orders", 0): 9}, pid=7)
    answer = write_markers(h, events)
    h.c.poll()
    assert h.records()[-1] == ("MARKER", (7, "COMMIT")), "the marker itself is durable"
    assert not answer.done and events == ["materialisation held"]  # type: ignore[attr-defined]
    assert write_marker_rows(h) == 0
    assert h.fetched("g", ("orders", 0), require_stable=True) == {("orders", 0): "UNSTABLE_OFFSET_COMMIT"}
    # the next transaction's offset commit arrives early (a real transaction coordinator would not verify it yet)
    early = next_txn_commit(h, 20)
    assert not early.done, "it waits for the previous transaction's offsets to be settled"  # type: ignore[attr-defined]
    held.pop()()
    assert events == ["materialisation held", "answered NONE with committed 9", "materialised"]
    assert write_marker_rows(h) == 1
    assert early.result().topics[0][1][0][1] == "NONE"  # type: ignore[attr-defined]
    assert h.fetched("g", ("orders", 0)) == {("orders", 0): 9}, "txn N committed; txn N+1 still pending"
    assert h.fetched("g", ("orders", 0), require_stable=True) == {("orders", 0): "UNSTABLE_OFFSET_COMMIT"}
    second = h.c.write_txn_markers([TxnMarker(7, 0, "COMMIT", 0, (TP,))])
    held.pop()()
    assert second.result()[0][TP] == "NONE" and h.fetched("g", ("orders", 0)) == {("orders", 0): 20}  # type: ignore[attr-defined]


def test_fixed_ordering_without_a_hook_is_synchronous(tmp_path: Path) -> None:
    h = Harness(tmp_path, verifier=FakeVerifier())
    txn_commit(h, "g", {("orders", 0): 9}, pid=7)
    answer = h.c.write_txn_markers([TxnMarker(7, 0, "ABORT", 0, (TP,))])
    assert answer.result() == [{TP: "NONE"}]
    assert h.fetched("g", ("orders", 0), require_stable=True) == {("orders", 0): -1}


def test_bug_switch_answers_before_materialising_and_misapplies_the_next_transaction(tmp_path: Path) -> None:
    h, held, events = setup(tmp_path, bug=True)
    txn_commit(h, "g", {("orders", 0): 9}, pid=7)
    answer = write_markers(h, events)
    assert answer.done and events == ["answered NONE with committed None", "materialisation held"]  # type: ignore[attr-defined]
    assert write_marker_rows(h) == 0, "the trace shows no WriteMarker yet although the marker was answered"
    early = next_txn_commit(h, 20)
    assert early.result().topics[0][1][0][1] == "NONE"  # type: ignore[attr-defined]
    held.pop()()
    assert write_marker_rows(h) == 1
    # the held completion of txn N took txn N+1's offset: committed before its own marker
    assert h.fetched("g", ("orders", 0), require_stable=True) == {("orders", 0): 20}


def test_bug_switch_without_a_hook_materialises_on_the_next_poll(tmp_path: Path) -> None:
    h = Harness(tmp_path, verifier=FakeVerifier(), seeded_bugs=frozenset({SeededBug.KAFKA_17507}))
    txn_commit(h, "g", {("orders", 0): 9}, pid=7)
    answer = h.c.write_txn_markers([TxnMarker(7, 0, "COMMIT", 0, (TP,))])
    assert answer.result() == [{TP: "NONE"}]  # type: ignore[attr-defined]
    assert h.fetched("g", ("orders", 0), require_stable=True) == {("orders", 0): "UNSTABLE_OFFSET_COMMIT"}
    h.c.poll()
    assert h.fetched("g", ("orders", 0), require_stable=True) == {("orders", 0): 9}

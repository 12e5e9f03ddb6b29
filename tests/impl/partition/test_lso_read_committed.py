"""kafka-reference §4.3: the last stable offset, the aborted-transaction index and read_committed, across
interleaved transactions of several producers; Fetch and ListOffsets bounds; durability and the high watermark."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kcoord.impl.interfaces import TxnMarker
from kcoord.impl.partition import AbortedTransaction, AbortedTxn, IsolationLevel, committed_records
from kcoord.impl.storage.log import Durability

from .helpers import TOPIC, TP, Env, batch, make_env, read_all, values

A, B, C = 100, 200, 300  # A and B transactional, C idempotent
RC, RU = IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED


class Producers:
    """Sequence bookkeeping so the scenario reads like the log it writes."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.next_seq: dict[int, int] = {}
        self.count: dict[str, int] = {}

    def send(self, producer_id: int, *, txn: bool, tag: str) -> int:
        if txn:
            self.env.verifier.add(producer_id)
        seq = self.next_seq.get(producer_id, 0)
        n = self.count.get(tag, 0)
        self.count[tag] = n + 1
        result = self.env.produce(batch(producer_id, 0, seq=seq, txn=txn, names=[f"{tag}-{n}"]))
        assert result.error == "NONE", result
        self.next_seq[producer_id] = seq + 1
        return result.base_offset

    def end(self, producer_id: int, result: str) -> None:
        assert self.env.marker(producer_id, 0, result) == {TP: "NONE"}
        self.env.verifier.remove(producer_id)


def lso(env: Env) -> int:
    return env.part.last_stable_offset


def test_interleaved_transactions_lso_index_and_read_committed(env: Env) -> None:
    p = Producers(env)
    assert [p.send(A, txn=True, tag="a"), p.send(C, txn=False, tag="c"), p.send(B, txn=True, tag="b"),
            p.send(A, txn=True, tag="a"), env.produce(batch(tag="d")).base_offset] == [0, 1, 2, 3, 4]
    assert (lso(env), env.part.high_watermark) == (0, 5)
    assert read_all(env.manager, RC)[0] == []
    assert values(read_all(env.manager, RU)[0]) == ["a-0", "c-0", "b-0", "a-1", "d-0"]

    p.end(A, "ABORT")  # marker at 5; B is still open at 2, so the index entry's LSO is 2
    assert env.part.states.aborted_index == (AbortedTxn(A, 0, 5, 2),)
    assert lso(env) == 2
    records, fetches = read_all(env.manager, RC)
    assert values(records) == ["c-0"]
    assert fetches[0].aborted_transactions == (AbortedTransaction(A, 0),)

    assert [p.send(B, txn=True, tag="b"), p.send(C, txn=False, tag="c")] == [6, 7]
    p.end(B, "COMMIT")  # marker at 8
    assert lso(env) == env.part.high_watermark == 9
    assert values(read_all(env.manager, RC)[0]) == ["c-0", "b-0", "d-0", "b-1", "c-1"]

    assert p.send(A, txn=True, tag="a") == 9
    p.end(A, "ABORT")  # marker at 10, nothing else open: LSO in the index is 11
    assert [p.send(B, txn=True, tag="b"), p.send(A, txn=True, tag="a")] == [11, 12]
    assert lso(env) == 11
    p.end(A, "COMMIT")  # marker at 13; B still holds the LSO at 11
    assert lso(env) == 11
    assert values(read_all(env.manager, RC)[0]) == ["c-0", "b-0", "d-0", "b-1", "c-1"]
    p.end(B, "ABORT")  # marker at 14
    assert env.part.states.aborted_index == (AbortedTxn(A, 0, 5, 2), AbortedTxn(A, 9, 10, 11),
                                             AbortedTxn(B, 11, 14, 15))
    assert lso(env) == 15
    assert values(read_all(env.manager, RC)[0]) == ["c-0", "b-0", "d-0", "b-1", "c-1", "a-3"]
    assert values(read_all(env.manager, RU)[0]) == ["a-0", "c-0", "b-0", "a-1", "d-0", "b-1", "c-1", "a-2",
                                                    "b-2", "a-3"]
    # read_committed from any offset never shows an aborted or open record
    aborted_or_open = {"a-0", "a-1", "a-2", "b-2"}
    for offset in range(env.part.log_end_offset + 1):
        fetched = env.manager.fetch(TOPIC, 0, offset, 1, RC)
        assert not aborted_or_open & set(values(committed_records(fetched))), offset


def test_read_committed_stops_at_the_lso_and_reports_the_overlapping_aborts(env: Env) -> None:
    p = Producers(env)
    p.send(A, txn=True, tag="a")  # 0
    p.end(A, "ABORT")  # 1
    p.send(C, txn=False, tag="c")  # 2
    p.send(B, txn=True, tag="b")  # 3: open
    p.send(C, txn=False, tag="c")  # 4: committed, but above the LSO
    result = env.manager.fetch(TOPIC, 0, 0, 1 << 20, RC)
    assert (result.error, result.high_watermark, result.last_stable_offset) == ("NONE", 5, 3)
    assert [b.base_offset for b in result.batches] == [0, 1, 2]
    assert result.aborted_transactions == (AbortedTransaction(A, 0),)
    assert values(committed_records(result)) == ["c-0"]
    later = env.manager.fetch(TOPIC, 0, 2, 1 << 20, RC)  # starts after A's marker: A's abort does not overlap
    assert later.aborted_transactions == () and values(committed_records(later)) == ["c-0"]
    uncommitted = env.manager.fetch(TOPIC, 0, 0, 1 << 20, RU)
    assert uncommitted.aborted_transactions is None and len(uncommitted.batches) == 5
    assert values(committed_records(uncommitted)) == ["a-0", "c-0", "b-0", "c-1"]
    assert env.manager.fetch(TOPIC, 0, 3, 1 << 20, RC).batches == ()  # at the LSO: nothing yet, no error


def test_fetch_offset_bounds_and_max_bytes(env: Env) -> None:
    for i in range(3):
        assert env.produce(batch(tag=f"p{i}")).error == "NONE"
    end = env.part.log_end_offset
    assert env.manager.fetch(TOPIC, 0, end + 1).error == "OFFSET_OUT_OF_RANGE"
    assert env.manager.fetch(TOPIC, 0, -1).error == "OFFSET_OUT_OF_RANGE"
    at_end = env.manager.fetch(TOPIC, 0, end)
    assert (at_end.error, at_end.batches, at_end.records) == ("NONE", (), b"")
    one = env.manager.fetch(TOPIC, 0, 0, max_bytes=1)  # the first batch always comes back whole
    assert [b.base_offset for b in one.batches] == [0]
    assert env.manager.fetch("nope", 0, 0).error == "UNKNOWN_TOPIC_OR_PARTITION"
    full = env.manager.fetch(TOPIC, 0, 0)
    assert full.records == (env.path / str(TP) / "00000000000000000000.log").read_bytes()  # the segment's bytes


def test_list_offsets_latest_is_the_lso_under_read_committed(env: Env) -> None:
    p = Producers(env)
    p.send(C, txn=False, tag="c")
    p.send(A, txn=True, tag="a")
    p.send(C, txn=False, tag="c")
    lo = env.manager.list_offsets
    assert (lo(TOPIC, 0, -2).offset, lo(TOPIC, 0, -1, RU).offset, lo(TOPIC, 0, -1, RC).offset) == (0, 3, 1)
    assert lo(TOPIC, 0, -1, RU).leader_epoch == env.part.leader_epoch
    first_ts = env.on_disk()[2].records[0].timestamp_ms
    assert (lo(TOPIC, 0, first_ts, RU).offset, lo(TOPIC, 0, first_ts, RC).offset) == (0, 0)
    assert lo(TOPIC, 0, first_ts + 1, RU).offset == -1  # every record has the same timestamp in this test
    assert lo(TOPIC, 0, -3, RU).offset == 0  # max timestamp: the first record holding it
    assert lo(TOPIC, 0, -4).error == "INVALID_REQUEST"
    assert lo("nope", 0, -1).error == "UNKNOWN_TOPIC_OR_PARTITION"


# ---------------------------------------------------------------------------------------------- durability


@pytest.fixture
def grouped(tmp_path: Path) -> Iterator[Env]:
    yield from make_env(tmp_path, durability=Durability.group(50, 1 << 30))


def test_high_watermark_is_the_durable_end_and_acks_wait_for_it(grouped: Env) -> None:
    env = grouped
    waiting = env.manager.produce(TOPIC, 0, batch(C, 0, seq=0), acks=-1)
    leader_only = env.manager.produce(TOPIC, 0, batch(C, 0, seq=1), acks=1)
    fire_and_forget = env.manager.produce(TOPIC, 0, batch(C, 0, seq=2), acks=0)
    assert (waiting.done, leader_only.done, fire_and_forget.done) == (False, True, True)
    assert (env.part.high_watermark, env.part.log_end_offset) == (0, 3)
    assert env.manager.fetch(TOPIC, 0, 0).batches == ()  # nothing is visible above the high watermark
    assert env.manager.next_deadline_ms() == env.clock.now_ms() + 50
    env.clock.advance(49)
    env.manager.poll()
    assert not waiting.done
    env.clock.advance(1)
    env.manager.poll()
    assert waiting.done and waiting.result().base_offset == 0
    assert env.part.high_watermark == 3 and len(env.manager.fetch(TOPIC, 0, 0).batches) == 3


def test_a_completed_transaction_stays_unstable_until_its_marker_is_durable(grouped: Env) -> None:
    env = grouped
    env.verifier.add(A)
    env.manager.produce(TOPIC, 0, batch(A, 0, seq=0, txn=True), acks=1, transactional_id="t")
    env.manager.flush()
    answered = env.manager.write_txn_markers([TxnMarker(A, 0, "COMMIT", 0, (TP,))])
    assert not answered.done  # markers are written with acks=-1
    assert env.state(A)["state"] == "Known"  # type: ignore[index]
    assert (env.part.high_watermark, env.part.last_stable_offset) == (1, 0)  # the marker at 1 is not durable
    env.manager.flush()
    assert answered.result() == [{TP: "NONE"}]
    assert env.part.last_stable_offset == 2

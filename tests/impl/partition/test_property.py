"""Random interleavings of idempotent and transactional produces, retries, commits, aborts and restarts from several
producers (a Hypothesis state machine whose rules are named like the spec's events). After every step: a
read_committed read returns exactly the committed records below the LSO, in offset order; the LSO is the first open
transaction's first offset, else the high watermark; a read_uncommitted read returns everything. At the end every
transaction is committed and read_committed returns every committed record."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kcoord.impl.interfaces import TopicPartition, TxnMarker
from kcoord.impl.partition import IsolationLevel, PartitionConfig, PartitionManager
from kcoord.impl.runtime.clock import ManualClock
from kcoord.impl.runtime.trace import MemorySink, Tracer
from kcoord.impl.storage.batch import RecordBatch

from .helpers import T0_MS, TOPIC, FakeVerifier, batch, read_all, values
from .test_traces import replay

TP = TopicPartition(TOPIC, 0)
TRANSACTIONAL = (1, 2, 3)
IDEMPOTENT = (4, 5)


class PartitionProducers(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="kcoord-partition-"))
        self.clock = ManualClock(T0_MS)
        self.sink = MemorySink()
        self.verifier = FakeVerifier()
        self.manager = self._open()
        assert self.manager.create_topic(TOPIC, 1) == "NONE"
        self.seq = dict.fromkeys(TRANSACTIONAL + IDEMPOTENT, 0)
        self.epoch = dict.fromkeys(TRANSACTIONAL + IDEMPOTENT, 0)
        self.last: dict[int, tuple[RecordBatch, int]] = {}
        self.committed: list[tuple[int, str]] = []  # (offset, value)
        self.everything: list[tuple[int, str]] = []
        self.open: dict[int, list[tuple[int, str]]] = {}
        self.counter = 0

    def _open(self) -> PartitionManager:
        return PartitionManager(self.dir, clock=self.clock, tracer=Tracer(self.sink), verifier=self.verifier,
                                config=PartitionConfig())

    def _send(self, producer_id: int, n: int, txn: bool) -> list[tuple[int, str]]:
        names = [f"p{producer_id}-{self.counter + i}" for i in range(n)]
        self.counter += n
        b = batch(producer_id, self.epoch[producer_id], seq=self.seq[producer_id], txn=txn, names=names,
                  ts_ms=self.clock.now_ms())
        result = self.manager.produce(TOPIC, 0, b, transactional_id=f"t{producer_id}").result()
        assert result.error == "NONE", result
        self.seq[producer_id] += n
        self.last[producer_id] = (b, result.base_offset)
        written = [(result.base_offset + i, name) for i, name in enumerate(names)]
        self.everything += written
        return written

    @rule(producer_id=st.sampled_from(IDEMPOTENT), n=st.integers(1, 3))
    def Append(self, producer_id: int, n: int) -> None:  # the spec's event names, as hypothesis rules
        self.committed += self._send(producer_id, n, txn=False)

    @rule(producer_id=st.sampled_from(TRANSACTIONAL), n=st.integers(1, 3))
    def AppendTransactional(self, producer_id: int, n: int) -> None:
        self.verifier.add(producer_id)  # the client's AddPartitionsToTxn
        self.open.setdefault(producer_id, []).extend(self._send(producer_id, n, txn=True))

    def _retriable(self) -> list[int]:
        """Producers that may retry their last batch: a client only retries before it ends the transaction."""
        return sorted(p for p in self.last if p in IDEMPOTENT or self.open.get(p))

    @precondition(lambda self: bool(self._retriable()))
    @rule(data=st.data())
    def AppendDuplicate(self, data: st.DataObject) -> None:
        producer_id = data.draw(st.sampled_from(self._retriable()))
        b, offset = self.last[producer_id]
        before = self.manager.partition(TP).log_end_offset  # type: ignore[union-attr]
        result = self.manager.produce(TOPIC, 0, b, transactional_id=f"t{producer_id}").result()
        assert (result.error, result.base_offset) == ("NONE", offset)
        assert self.manager.partition(TP).log_end_offset == before  # type: ignore[union-attr]

    @rule(producer_id=st.sampled_from(TRANSACTIONAL), result=st.sampled_from(["COMMIT", "ABORT"]),
          bump=st.booleans())
    def WriteMarker(self, producer_id: int, result: str, bump: bool) -> None:
        epoch = self.epoch[producer_id] + (1 if bump else 0)  # TV2 markers carry the next epoch
        marker = TxnMarker(producer_id, epoch, result, 0, (TP,))  # type: ignore[arg-type]
        assert self.manager.write_txn_markers([marker]).result() == [{TP: "NONE"}]
        self.verifier.remove(producer_id)
        written = self.open.pop(producer_id, [])
        if result == "COMMIT":
            self.committed = sorted(self.committed + written)
        if bump:
            self.epoch[producer_id], self.seq[producer_id] = epoch, 0
            self.last.pop(producer_id, None)

    @rule()
    def Restart(self) -> None:
        self.manager.close()
        self.manager = self._open()

    @rule(ms=st.integers(0, 10_000))
    def Tick(self, ms: int) -> None:
        self.clock.advance(ms)
        self.manager.poll()

    @invariant()
    def read_committed_is_exactly_the_committed_records_below_the_lso(self) -> None:
        part = self.manager.partition(TP)
        assert part is not None
        firsts = [w[0][0] for w in self.open.values() if w]
        assert part.last_stable_offset == (min(firsts) if firsts else part.high_watermark)
        lso = part.last_stable_offset
        records, _ = read_all(self.manager, IsolationLevel.READ_COMMITTED)
        assert [(r.offset, r.value.decode()) for r in records if r.value] == [c for c in self.committed
                                                                              if c[0] < lso]
        assert values(read_all(self.manager, IsolationLevel.READ_UNCOMMITTED)[0]) == [
            name for _, name in sorted(self.everything)]

    def teardown(self) -> None:
        try:
            for producer_id in sorted(self.open):
                self.WriteMarker(producer_id, "COMMIT", False)
            records, _ = read_all(self.manager, IsolationLevel.READ_COMMITTED)
            assert [(r.offset, r.value.decode()) for r in records if r.value] == self.committed
            replay(self.sink.rows.get("PartitionProducer", []))
        finally:
            self.manager.close()
            shutil.rmtree(self.dir, ignore_errors=True)


def _settings(examples: int) -> settings:
    return settings(max_examples=examples, stateful_step_count=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


class TestPartitionProducers(PartitionProducers.TestCase):  # type: ignore[misc,name-defined]
    settings = _settings(15)


@pytest.mark.slow
class TestPartitionProducersLong(PartitionProducers.TestCase):  # type: ignore[misc,name-defined]
    settings = _settings(300)

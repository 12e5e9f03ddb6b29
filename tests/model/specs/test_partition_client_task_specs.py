"""The PartitionProducer, ProducerClient and StreamsTask specs: they load clean, are documented, match Kafka's
valid-previous tables, and walk real flows with the Python evaluator (exactly one row per step).

Small-domain enumeration stands in for the z3 verifier until it exists: on every pre-state of a small domain that
satisfies the invariants, the rows of each event are disjoint (and, for the partition's requests, total), and every
enabled transition keeps the invariants and the step properties.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any

import pytest

from kcoord.model import ir
from kcoord.model.loader import load_files, spec_dir
from kcoord.model.pyexpr import PythonEvaluator, initial_state
from tests.model.kafka_tables import producer_client as producer_client_table
from tests.model.kafka_tables import streams_task as streams_task_table

SPEC_FILES = ("partition_producer.sm", "producer_client.sm", "streams_task.sm")
MAX_SEQ = 2**31 - 1
EV = PythonEvaluator()

State = dict[str, Any]


@pytest.fixture(scope="module")
def machines() -> dict[str, ir.Machine]:
    loaded, diags = load_files([spec_dir() / name for name in SPEC_FILES])
    assert len(diags) == 0, diags.render()
    return {m.name: m for m in loaded}


@pytest.fixture(scope="module")
def pp(machines: dict[str, ir.Machine]) -> ir.Machine:
    return machines["PartitionProducer"]


@pytest.fixture(scope="module")
def pc(machines: dict[str, ir.Machine]) -> ir.Machine:
    return machines["ProducerClient"]


@pytest.fixture(scope="module")
def st(machines: dict[str, ir.Machine]) -> ir.Machine:
    return machines["StreamsTask"]


# ---------------------------------------------------------------- stepping helpers


def step(machine: ir.Machine, pre: State, event: str, /, **args: Any) -> tuple[ir.Row, State]:
    """Fire `event`: exactly one row must match; returns it and the post-state (the pre-state for a rejection)."""
    full = {**args, "pending": False}
    assert set(args) == {p.name for p in machine.event(event).params}, f"arguments of {event}: {sorted(args)}"
    assert EV.holds(machine.event(event).requires, pre, full), f"{event}{args} violates its `requires` in {pre}"
    rows = EV.enabled_rows(machine, pre, event, full)
    assert len(rows) == 1, f"{event}{args} in {pre['state']}: {[r.label for r in rows]} match, expected exactly one"
    row = rows[0]
    post = EV.fire(row, pre, full) if isinstance(row, ir.Transition) else dict(pre)
    for inv in machine.invariants:
        assert EV.holds(inv.expr, post), f"invariant {inv.name} broken after {row.label}: {post}"
    for prop in machine.steps:
        assert EV.holds(prop.expr, pre, full, post), f"step property {prop.name} broken by {row.label}"
    return row, post


def accept(machine: ir.Machine, pre: State, event: str, target: str, /, **args: Any) -> State:
    row, post = step(machine, pre, event, **args)
    assert isinstance(row, ir.Transition), f"{event} was rejected with {getattr(row, 'error', '?')}"
    assert post["state"] == target
    return post


def reject(machine: ir.Machine, pre: State, event: str, error: str, /, **args: Any) -> None:
    row, post = step(machine, pre, event, **args)
    assert isinstance(row, ir.Rejection), f"{event} was accepted by {row.label}"
    assert row.error == error
    assert post == pre


def no_row(machine: ir.Machine, pre: State, event: str, /, **args: Any) -> None:
    """An internal event the client or task never fires now: no row of the spec matches."""
    assert machine.event(event).internal, f"{event} is a call: every state answers it (with an exception, say)"
    assert EV.enabled_rows(machine, pre, event, {**args, "pending": False}) == []


# ---------------------------------------------------------------- loading, docs, Kafka's tables


def test_specs_load_clean_and_declare_their_kind_and_key(machines: dict[str, ir.Machine]) -> None:
    expected = {
        "PartitionProducer": ("partition", ("partition", "producer_id")),
        "ProducerClient": ("client", ("transactional_id",)),
        "StreamsTask": ("task", ("task_id",)),
    }
    for name, (kind, keys) in expected.items():
        assert machines[name].kind == kind
        assert tuple(k.name for k in machines[name].keys) == keys


@pytest.mark.parametrize("name", ["PartitionProducer", "ProducerClient", "StreamsTask"])
def test_every_state_event_and_variable_is_documented(machines: dict[str, ir.Machine], name: str) -> None:
    m = machines[name]
    assert m.doc.strip()
    assert [s.name for s in m.states if not s.doc.strip()] == []
    assert [e.name for e in m.events if not e.doc.strip()] == []
    assert [v.name for v in m.variables if not v.doc.strip()] == []


def test_state_names_are_kafkas(pp: ir.Machine, pc: ir.Machine, st: ir.Machine) -> None:
    assert [s.name for s in pp.states] == ["Unknown", "Known", "Ongoing", "Expired"]
    assert [s.name for s in pc.states] == ["Uninitialized", "Initializing", "Ready", "InTransaction",
                                           "CommittingTransaction", "AbortingTransaction", "AbortableError",
                                           "FatalError"]
    assert [s.name for s in st.states] == ["Created", "Restoring", "Running", "Suspended", "Closed"]
    assert pc.initial.name == "Uninitialized" and pc.state("FatalError").final
    assert st.initial.name == "Created"
    assert pp.initial.name == "Unknown" and pp.state("Expired").final


@pytest.mark.parametrize("table", [producer_client_table, streams_task_table], ids=lambda t: t.MACHINE)
def test_valid_previous_equals_kafkas(machines: dict[str, ir.Machine], table: ModuleType) -> None:
    m = machines[table.MACHINE]
    assert {s.name for s in m.states} == set(table.VALID_PREVIOUS)
    ours = {s.name: m.valid_previous(s.name) for s in m.states}
    assert ours == table.VALID_PREVIOUS, table.SOURCE


def test_streams_task_must_suspend_before_closing(st: ir.Machine) -> None:
    assert ("Running", "Closed") not in st.edges
    assert ("Restoring", "Closed") not in st.edges
    assert ("Closed", "Created") in st.edges


# ---------------------------------------------------------------- PartitionProducer scenarios


def append(epoch: int, first_seq: int, last_seq: int, *, transactional: bool = False, is_duplicate: bool = False,
           verification_ok: bool = False, verification_lowest_seq: int = -1, first_offset: int = 0,
           timestamp_ms: int = 1_000) -> dict[str, Any]:
    return {"epoch": epoch, "first_seq": first_seq, "last_seq": last_seq, "transactional": transactional,
            "is_duplicate": is_duplicate, "verification_ok": verification_ok,
            "verification_lowest_seq": verification_lowest_seq, "first_offset": first_offset,
            "timestamp_ms": timestamp_ms}


def marker(result: str, epoch: int, coordinator_epoch: int, timestamp_ms: int = 2_000) -> dict[str, Any]:
    return {"result": result, "epoch": epoch, "marker_coordinator_epoch": coordinator_epoch,
            "timestamp_ms": timestamp_ms}


def fresh_producer(pp: ir.Machine) -> State:
    return initial_state(pp, {"partition": "orders-0", "producer_id": 4000})


def test_idempotent_sequence_rules(pp: ir.Machine) -> None:
    s = accept(pp, fresh_producer(pp), "Append", "Known", **append(0, 0, 4))
    assert (s["producer_epoch"], s["last_sequence"]) == (0, 4)
    s = accept(pp, s, "Append", "Known", **append(0, 5, 9, first_offset=5))
    reject(pp, s, "Append", "OUT_OF_ORDER_SEQUENCE_NUMBER", **append(0, 12, 14))  # a gap
    reject(pp, s, "Append", "OUT_OF_ORDER_SEQUENCE_NUMBER", **append(0, 9, 9))  # overlaps, not cached
    reject(pp, s, "Append", "NONE", **append(0, 5, 9, is_duplicate=True))  # a cached retry: nothing changes
    reject(pp, s, "Append", "NONE", **append(0, 0, 4, is_duplicate=True))
    reject(pp, s, "Append", "OUT_OF_ORDER_SEQUENCE_NUMBER", **append(1, 3, 3))  # a bump must start at 0
    s = accept(pp, s, "Append", "Known", **append(1, 0, 2, first_offset=10))
    assert (s["producer_epoch"], s["last_sequence"]) == (1, 2)
    reject(pp, s, "Append", "INVALID_PRODUCER_EPOCH", **append(0, 10, 10))  # never PRODUCER_FENCED
    reject(pp, s, "Append", "INVALID_PRODUCER_EPOCH", **append(0, 3, 3))  # even when in sequence


def test_unknown_producer_accepts_any_epoch_and_sequence(pp: ir.Machine) -> None:
    s = accept(pp, fresh_producer(pp), "Append", "Known", **append(7, 42, 50))
    assert (s["producer_epoch"], s["last_sequence"]) == (7, 50)


def test_sequence_wraps_after_int_max(pp: ir.Machine) -> None:
    s = accept(pp, fresh_producer(pp), "Append", "Known", **append(0, MAX_SEQ - 9, MAX_SEQ))
    reject(pp, s, "Append", "OUT_OF_ORDER_SEQUENCE_NUMBER", **append(0, 1, 3))
    s = accept(pp, s, "Append", "Known", **append(0, 0, 3))
    assert s["last_sequence"] == 3
    s = accept(pp, fresh_producer(pp), "Append", "Known", **append(0, MAX_SEQ - 1, 1))  # a batch across the wrap
    s = accept(pp, s, "Append", "Known", **append(0, 2, 2))


def test_checks_run_in_kafkas_order(pp: ir.Machine) -> None:
    s = accept(pp, fresh_producer(pp), "Append", "Known", **append(3, 0, 0))
    # verification before the epoch: an unverified transactional batch from an old epoch is INVALID_TXN_STATE
    reject(pp, s, "Append", "INVALID_TXN_STATE", **append(2, 1, 1, transactional=True))
    # the epoch before the sequence
    reject(pp, s, "Append", "INVALID_PRODUCER_EPOCH", **append(2, 17, 17))
    # a sequence above the pending verification's lowest one waits for it
    reject(pp, s, "Append", "OUT_OF_ORDER_SEQUENCE_NUMBER",
           **append(3, 1, 1, transactional=True, verification_ok=True, verification_lowest_seq=0))
    s = accept(pp, s, "Append", "Ongoing",
               **append(3, 1, 1, transactional=True, verification_ok=True, verification_lowest_seq=1, first_offset=8))
    # the sequence before the transaction state: a non-transactional batch out of sequence is out of order
    reject(pp, s, "Append", "OUT_OF_ORDER_SEQUENCE_NUMBER", **append(3, 9, 9))
    reject(pp, s, "Append", "INVALID_TXN_STATE", **append(3, 2, 2))


def test_transaction_opened_by_a_batch_and_closed_by_commit(pp: ir.Machine) -> None:
    s = accept(pp, fresh_producer(pp), "Append", "Known", **append(0, 0, 0))
    reject(pp, s, "Append", "INVALID_TXN_STATE", **append(0, 1, 1, transactional=True))  # not verified
    s = accept(pp, s, "Append", "Ongoing", **append(0, 1, 3, transactional=True, verification_ok=True, first_offset=20))
    assert s["current_txn_first_offset"] == 20
    s = accept(pp, s, "Append", "Ongoing", **append(0, 4, 4, transactional=True, first_offset=30))  # no guard needed
    assert s["current_txn_first_offset"] == 20
    reject(pp, s, "Append", "INVALID_TXN_STATE", **append(0, 5, 5))  # non-transactional during the transaction
    reject(pp, s, "Expire", "NONE", now_ms=10**12, expiration_ms=1)  # an open transaction never expires
    s = accept(pp, s, "WriteMarker", "Known", **marker("COMMIT", 0, 3))  # TV1: same epoch
    assert (s["current_txn_first_offset"], s["txn_coordinator_epoch"], s["last_sequence"]) == (-1, 3, 4)
    s = accept(pp, s, "Append", "Known", **append(0, 5, 5, first_offset=40))  # the sequence continues
    reject(pp, s, "WriteMarker", "TRANSACTION_COORDINATOR_FENCED", **marker("ABORT", 0, 2))  # a zombie coordinator


def test_bumped_marker_restarts_sequences_and_fences_old_epochs(pp: ir.Machine) -> None:
    s = accept(pp, fresh_producer(pp), "Append", "Ongoing",
               **append(4, 0, 9, transactional=True, verification_ok=True, first_offset=100))
    s = accept(pp, s, "WriteMarker", "Known", **marker("ABORT", 5, 1))  # TV2 / fence: the marker carries epoch + 1
    assert (s["producer_epoch"], s["last_sequence"], s["current_txn_first_offset"]) == (5, -1, -1)
    reject(pp, s, "Append", "OUT_OF_ORDER_SEQUENCE_NUMBER", **append(5, 10, 10))  # must restart at 0
    reject(pp, s, "Append", "INVALID_PRODUCER_EPOCH", **append(4, 10, 10, transactional=True, verification_ok=True))
    reject(pp, s, "WriteMarker", "INVALID_PRODUCER_EPOCH", **marker("ABORT", 4, 0))  # epoch is checked first
    reject(pp, s, "WriteMarker", "TRANSACTION_COORDINATOR_FENCED", **marker("ABORT", 5, 0))
    s = accept(pp, s, "Append", "Known", **append(5, 0, 0))


def test_coordinator_writes_check_epoch_and_verification_only(pp: ir.Machine) -> None:
    args = {"epoch": 2, "verification_ok": False, "first_offset": 7, "timestamp_ms": 5}
    reject(pp, fresh_producer(pp), "CoordinatorAppend", "INVALID_TXN_STATE", **args)
    s = accept(pp, fresh_producer(pp), "CoordinatorAppend", "Ongoing", **{**args, "verification_ok": True})
    assert (s["last_sequence"], s["current_txn_first_offset"]) == (-1, 7)
    s = accept(pp, s, "CoordinatorAppend", "Ongoing", **{**args, "first_offset": 9})
    reject(pp, s, "CoordinatorAppend", "INVALID_PRODUCER_EPOCH", **{**args, "epoch": 1})
    s = accept(pp, s, "WriteMarker", "Known", **marker("COMMIT", 2, 0))
    assert s["current_txn_first_offset"] == -1


def test_idle_producer_expires(pp: ir.Machine) -> None:
    s = accept(pp, fresh_producer(pp), "Append", "Known", **append(0, 0, 0, timestamp_ms=1_000))
    reject(pp, s, "Expire", "NONE", now_ms=1_000 + 86_400_000 - 1, expiration_ms=86_400_000)  # not due yet
    s = accept(pp, s, "Expire", "Expired", now_ms=1_000 + 86_400_000, expiration_ms=86_400_000)
    assert s["producer_epoch"] == 0  # the epoch is kept on the last row: the monotonic trace property sees it
    assert pp.rows_for("Expired", "Append") == ()


def test_partition_declares_the_epoch_trace_property(pp: ir.Machine) -> None:
    assert [(t.form, t.subject, t.per) for t in pp.traces] == [("monotonic", ("producer_epoch",), ("producer_id",))]


# ---------------------------------------------------------------- ProducerClient scenarios


def fresh_client(pc: ir.Machine, transactional_id: str = "payments") -> State:
    return initial_state(pc, {"transactional_id": transactional_id})


def init_pid(error: str, producer_id: int = -1, epoch: int = -1) -> dict[str, Any]:
    return {"error": error, "new_producer_id": producer_id, "new_epoch": epoch}


def end_txn(error: str, *, can_bump_epoch: bool = True, epoch_bump_required: bool = False) -> dict[str, Any]:
    return {"error": error, "can_bump_epoch": can_bump_epoch, "epoch_bump_required": epoch_bump_required}


def ready_client(pc: ir.Machine, producer_id: int = 7, epoch: int = 0) -> State:
    s = accept(pc, fresh_client(pc), "InitTransactions", "Initializing")
    return accept(pc, s, "InitProducerIdResponse", "Ready", **init_pid("NONE", producer_id, epoch))


def test_client_happy_path(pc: ir.Machine) -> None:
    s = accept(pc, fresh_client(pc), "InitTransactions", "Initializing")
    reject(pc, s, "InitTransactions", "NONE")  # retried after a timeout: the pending result
    reject(pc, s, "InitProducerIdResponse", "NONE", **init_pid("COORDINATOR_NOT_AVAILABLE"))  # retried
    reject(pc, s, "InitProducerIdResponse", "NONE", **init_pid("CONCURRENT_TRANSACTIONS"))
    s = accept(pc, s, "InitProducerIdResponse", "Ready", **init_pid("NONE", 7, 0))
    assert (s["producer_id"], s["producer_epoch"], s["last_error"]) == (7, 0, "NONE")
    reject(pc, s, "Send", "IllegalStateException", p="orders-0")  # only inside a transaction
    s = accept(pc, s, "BeginTransaction", "InTransaction")
    reject(pc, s, "Send", "NONE", p="orders-0")
    reject(pc, s, "AddPartitionsResponse", "NONE", error="CONCURRENT_TRANSACTIONS", can_bump_epoch=True)
    reject(pc, s, "AddPartitionsResponse", "NONE", error="NONE", can_bump_epoch=True)
    s = accept(pc, s, "CommitTransaction", "CommittingTransaction")
    reject(pc, s, "EndTxnResponse", "NONE", **end_txn("NOT_COORDINATOR"))
    s = accept(pc, s, "EndTxnResponse", "Ready", **end_txn("NONE"))
    # a transaction that added nothing completes without an EndTxn
    s = accept(pc, s, "BeginTransaction", "InTransaction")
    s = accept(pc, s, "CommitTransaction", "CommittingTransaction")
    s = accept(pc, s, "EndTxnNotSent", "Ready", epoch_bump_required=False)
    assert (s["producer_id"], s["producer_epoch"]) == (7, 0)


def test_client_abortable_error_recovers_with_an_epoch_bump(pc: ir.Machine) -> None:
    s = accept(pc, ready_client(pc), "BeginTransaction", "InTransaction")
    s = accept(pc, s, "AddPartitionsResponse", "AbortableError", error="UNKNOWN_PRODUCER_ID", can_bump_epoch=True)
    assert s["last_error"] == "UNKNOWN_PRODUCER_ID"
    s = accept(pc, s, "TransitionToAbortableError", "AbortableError", error="OTHER")  # a second error: self-edge
    reject(pc, s, "CommitTransaction", "KafkaException")  # maybeFailWithError: the application must abort
    reject(pc, s, "BeginTransaction", "KafkaException")
    reject(pc, s, "Send", "KafkaException", p="orders-0")
    reject(pc, s, "InitTransactions", "KafkaException")
    no_row(pc, s, "ResetAfterAuthorizationError")  # only for authorisation errors
    s = accept(pc, s, "AbortTransaction", "AbortingTransaction")
    assert s["last_error"] == "NONE"
    reject(pc, s, "TransitionToAbortableError", "NONE", error="TRANSACTION_ABORTABLE")  # skipped while aborting
    reject(pc, s, "EndTxnResponse", "NONE", **end_txn("TRANSACTION_ABORTABLE"))
    s = accept(pc, s, "EndTxnResponse", "Initializing", **end_txn("NONE", epoch_bump_required=True))
    s = accept(pc, s, "InitProducerIdResponse", "Ready", **init_pid("NONE", 7, 1))
    assert (s["producer_id"], s["producer_epoch"]) == (7, 1)
    s = accept(pc, s, "BeginTransaction", "InTransaction")
    s = accept(pc, s, "AbortTransaction", "AbortingTransaction")
    accept(pc, s, "EndTxnNotSent", "Ready", epoch_bump_required=False)


def test_client_unknown_producer_id_is_fatal_without_epoch_bump_support(pc: ir.Machine) -> None:
    s = accept(pc, ready_client(pc), "BeginTransaction", "InTransaction")
    s = accept(pc, s, "AddPartitionsResponse", "FatalError", error="UNKNOWN_PRODUCER_ID", can_bump_epoch=False)
    assert s["last_error"] == "UNKNOWN_PRODUCER_ID"
    assert pc.rows_for("FatalError", "AbortTransaction") == ()


def test_client_fenced_on_commit(pc: ir.Machine) -> None:
    s = accept(pc, ready_client(pc), "BeginTransaction", "InTransaction")
    s = accept(pc, s, "CommitTransaction", "CommittingTransaction")
    s = accept(pc, s, "EndTxnResponse", "FatalError", **end_txn("INVALID_PRODUCER_EPOCH"))
    assert s["last_error"] == "PRODUCER_FENCED"  # an old coordinator's INVALID_PRODUCER_EPOCH means fenced
    assert all(pc.rows_for("FatalError", e.name) == () for e in pc.events)


def test_client_commit_turns_abortable(pc: ir.Machine) -> None:
    s = accept(pc, ready_client(pc), "BeginTransaction", "InTransaction")
    s = accept(pc, s, "CommitTransaction", "CommittingTransaction")
    s = accept(pc, s, "EndTxnResponse", "AbortableError", **end_txn("TRANSACTION_ABORTABLE"))
    accept(pc, s, "AbortTransaction", "AbortingTransaction")


def test_client_authorization_error_resets_to_uninitialized(pc: ir.Machine) -> None:
    s = accept(pc, fresh_client(pc), "InitTransactions", "Initializing")
    s = accept(pc, s, "InitProducerIdResponse", "AbortableError", **init_pid("TRANSACTIONAL_ID_AUTHORIZATION_FAILED"))
    s = accept(pc, s, "ResetAfterAuthorizationError", "Uninitialized")
    assert s["last_error"] == "NONE"
    s = accept(pc, s, "InitTransactions", "Initializing")
    accept(pc, s, "InitProducerIdResponse", "FatalError", **init_pid("PRODUCER_FENCED"))


def test_idempotent_producer_resets_its_id_when_the_epoch_is_exhausted(pc: ir.Machine) -> None:
    s = fresh_client(pc, "")
    reject(pc, s, "InitTransactions", "IllegalStateException")  # ensureTransactional: transactional only
    s = accept(pc, s, "InitIdempotentProducerId", "Initializing")
    s = accept(pc, s, "InitProducerIdResponse", "Ready", **init_pid("NONE", 12, 0))
    for call in ("BeginTransaction", "CommitTransaction", "AbortTransaction", "InitTransactions"):
        reject(pc, s, call, "IllegalStateException")
    reject(pc, s, "Send", "NONE", p="orders-3")
    reject(pc, s, "BumpIdempotentEpoch", "NONE", epoch=41)  # a local bump, no state change
    s = accept(pc, s, "BumpIdempotentEpoch", "Uninitialized", epoch=32767)
    assert (s["producer_id"], s["producer_epoch"]) == (-1, -1)
    accept(pc, s, "InitIdempotentProducerId", "Initializing")
    no_row(pc, ready_client(pc), "BumpIdempotentEpoch", epoch=32767)  # never for a transactional producer


def test_client_misuse_throws_illegal_state_and_changes_nothing(pc: ir.Machine) -> None:
    """KAFKA-14831: an application call with an invalid transition throws IllegalStateException, not poisoning."""
    s = fresh_client(pc)
    for call in ("BeginTransaction", "CommitTransaction", "AbortTransaction"):
        reject(pc, s, call, "IllegalStateException")
    reject(pc, s, "Send", "IllegalStateException", p="orders-0")  # before initTransactions completed
    s = accept(pc, s, "InitTransactions", "Initializing")
    reject(pc, s, "Send", "IllegalStateException", p="orders-0")
    s = ready_client(pc)
    reject(pc, s, "InitTransactions", "IllegalStateException")  # initTransactions is called once
    reject(pc, s, "CommitTransaction", "IllegalStateException")
    s = accept(pc, s, "BeginTransaction", "InTransaction")
    reject(pc, s, "BeginTransaction", "IllegalStateException")  # no nested transactions
    committing = accept(pc, s, "CommitTransaction", "CommittingTransaction")
    reject(pc, committing, "AbortTransaction", "IllegalStateException")  # the pending commit must be retried
    reject(pc, committing, "Send", "IllegalStateException", p="orders-0")
    aborting = accept(pc, s, "AbortTransaction", "AbortingTransaction")
    reject(pc, aborting, "CommitTransaction", "IllegalStateException")
    reject(pc, aborting, "InitTransactions", "IllegalStateException")


def test_client_abortable_error_rethrows_an_old_epoch_as_itself(pc: ir.Machine) -> None:
    s = accept(pc, ready_client(pc), "BeginTransaction", "InTransaction")
    s = accept(pc, s, "TransitionToAbortableError", "AbortableError", error="INVALID_PRODUCER_EPOCH")
    for call in ("BeginTransaction", "CommitTransaction", "InitTransactions"):
        reject(pc, s, call, "InvalidProducerEpochException")
    reject(pc, s, "Send", "InvalidProducerEpochException", p="orders-0")  # the send's future fails with it
    accept(pc, s, "AbortTransaction", "AbortingTransaction")


def test_client_late_responses(pc: ir.Machine) -> None:
    """Responses handled on the Sender thread: no-ops are NONE anywhere; an invalid transition poisons the client."""
    s = accept(pc, fresh_client(pc), "InitTransactions", "Initializing")
    s = accept(pc, s, "TransitionToAbortableError", "AbortableError", error="OTHER")  # while InitProducerId in flight
    aborting = accept(pc, s, "AbortTransaction", "AbortingTransaction")
    late = accept(pc, aborting, "InitProducerIdResponse", "Ready", **init_pid("NONE", 9, 0))  # READY is valid
    assert (late["producer_id"], late["producer_epoch"], late["last_error"]) == (9, 0, "NONE")
    poisoned = accept(pc, s, "InitProducerIdResponse", "FatalError", **init_pid("NONE", 9, 0))
    assert poisoned["last_error"] == "OTHER", "an IllegalStateException: no error code"
    ready = ready_client(pc)
    reject(pc, ready, "AddPartitionsResponse", "NONE", error="NONE", can_bump_epoch=True)
    reject(pc, ready, "AddPartitionsResponse", "NONE", error="NOT_COORDINATOR", can_bump_epoch=True)
    poisoned = accept(pc, ready, "AddPartitionsResponse", "FatalError", error="TOPIC_AUTHORIZATION_FAILED",
                      can_bump_epoch=True)
    assert poisoned["last_error"] == "OTHER"
    reject(pc, ready, "EndTxnResponse", "NONE", **end_txn("CONCURRENT_TRANSACTIONS"))
    assert accept(pc, ready, "EndTxnResponse", "FatalError", **end_txn("NONE"))["last_error"] == "OTHER"
    fenced = accept(pc, ready, "EndTxnResponse", "FatalError", **end_txn("PRODUCER_FENCED"))
    assert fenced["last_error"] == "PRODUCER_FENCED"
    s = accept(pc, ready, "BeginTransaction", "InTransaction")
    s = accept(pc, s, "CommitTransaction", "CommittingTransaction")
    # completeTransaction cannot go to Initializing from CommittingTransaction
    assert accept(pc, s, "EndTxnResponse", "FatalError", **end_txn("NONE", epoch_bump_required=True))["last_error"] \
        == "OTHER"
    s = accept(pc, s, "AddPartitionsResponse", "AbortableError", error="TRANSACTION_ABORTABLE", can_bump_epoch=True)
    s = accept(pc, s, "EndTxnResponse", "AbortableError", **end_txn("TRANSACTION_ABORTABLE"))  # the self-edge
    assert s["last_error"] == "TRANSACTION_ABORTABLE"


# ---------------------------------------------------------------- StreamsTask scenarios


def test_task_lifecycle_with_revive(st: ir.Machine) -> None:
    s = initial_state(st, {"task_id": "0_1"})
    s = accept(st, s, "InitializeIfNeeded", "Restoring")
    reject(st, s, "InitializeIfNeeded", "NONE")
    s = accept(st, s, "CompleteRestoration", "Running")
    reject(st, s, "CompleteRestoration", "NONE")
    reject(st, s, "CloseClean", "IllegalStateException", commit_needed=False)  # RUNNING cannot go straight to CLOSED
    reject(st, s, "CloseDirty", "IllegalStateException")
    reject(st, s, "PrepareRecycle", "IllegalStateException", commit_needed=False)
    reject(st, s, "Revive", "IllegalStateException")  # only a closed task is revived
    s = accept(st, s, "Suspend", "Suspended")
    reject(st, s, "Suspend", "NONE")
    s = accept(st, s, "Resume", "Restoring")
    reject(st, s, "CloseDirty", "IllegalStateException")  # nor RESTORING
    s = accept(st, s, "Suspend", "Suspended")
    s = accept(st, s, "CloseDirty", "Closed")
    assert s["closed_as"] == "DIRTY"
    reject(st, s, "CloseDirty", "NONE")
    reject(st, s, "CloseClean", "NONE", commit_needed=False)  # close() skips a closed task
    for call in ("Resume", "Suspend", "CompleteRestoration"):
        reject(st, s, call, "IllegalStateException")
    reject(st, s, "InitializeIfNeeded", "NONE")  # only a Created task initialises
    s = accept(st, s, "Revive", "Created")  # CLOSED -> CREATED: a corrupted task starts over
    assert s["closed_as"] == "OPEN"
    s = accept(st, s, "Suspend", "Suspended")  # CREATED -> SUSPENDED
    reject(st, s, "CompleteRestoration", "IllegalStateException")  # not restoring
    reject(st, s, "CloseClean", "TaskMigratedException", commit_needed=True)  # validateClean: the caller closes dirty
    s = accept(st, s, "CloseClean", "Closed", commit_needed=False)
    assert s["closed_as"] == "CLEAN"


def test_task_recycle(st: ir.Machine) -> None:
    s = accept(st, initial_state(st, {"task_id": "1_0"}), "InitializeIfNeeded", "Restoring")
    reject(st, s, "PrepareRecycle", "IllegalStateException", commit_needed=False)
    s = accept(st, s, "Suspend", "Suspended")
    reject(st, s, "PrepareRecycle", "TaskMigratedException", commit_needed=True)  # validateClean comes first
    s = accept(st, s, "PrepareRecycle", "Closed", commit_needed=False)
    assert s["closed_as"] == "RECYCLED"
    reject(st, s, "PrepareRecycle", "IllegalStateException", commit_needed=False)
    reject(st, s, "CloseClean", "TaskMigratedException", commit_needed=True)  # even when closed: validateClean first


# ---------------------------------------------------------------- small-domain exploration


def _states(machine: ir.Machine, domains: Mapping[str, tuple[Any, ...]], key: Mapping[str, Any]) -> Iterator[State]:
    names = sorted(domains)
    for st_ in machine.states:
        if st_.final:
            continue
        for values in itertools.product(*(domains[n] for n in names)):
            s = {**key, **dict(zip(names, values, strict=True)), "state": st_.name}
            if all(EV.holds(inv.expr, s) for inv in machine.invariants):
                yield s


def _args(event: ir.Event, domains: Mapping[str, tuple[Any, ...]]) -> Iterator[dict[str, Any]]:
    names = [p.name for p in event.params]
    for values in itertools.product(*(domains[n] for n in names)):
        yield {**dict(zip(names, values, strict=True)), "pending": False}


def explore(machine: ir.Machine, var_domains: Mapping[str, tuple[Any, ...]],
            arg_domains: Mapping[str, tuple[Any, ...]], key: Mapping[str, Any], total: frozenset[str]) -> int:
    """Rows disjoint everywhere, total for the events in `total`, invariants and steps kept; returns cases seen."""
    seen = 0
    for pre in _states(machine, var_domains, key):
        for event in machine.events:
            for args in _args(event, arg_domains):
                if not EV.holds(event.requires, pre, args):
                    continue
                seen += 1
                rows = EV.enabled_rows(machine, pre, event.name, args)
                assert len(rows) <= 1, f"{event.name}{args} in {pre}: {[r.label for r in rows]}"
                assert rows or event.name not in total, f"{event.name}{args} in {pre}: no row"
                if rows and isinstance(rows[0], ir.Transition):
                    post = EV.fire(rows[0], pre, args)
                    for inv in machine.invariants:
                        assert EV.holds(inv.expr, post), f"{inv.name} broken by {rows[0].label} from {pre} {args}"
                    for prop in machine.steps:
                        assert EV.holds(prop.expr, pre, args, post), f"{prop.name} broken by {rows[0].label}"
    return seen


def test_partition_producer_rows_are_disjoint_total_and_safe(pp: ir.Machine) -> None:
    seqs = (-1, 0, 4, MAX_SEQ)
    var_domains = {"producer_epoch": (-1, 0, 1), "last_sequence": seqs, "txn_coordinator_epoch": (-1, 2),
                   "current_txn_first_offset": (-1, 10), "last_timestamp_ms": (-1, 100)}
    arg_domains = {"epoch": (0, 1, 2), "first_seq": (0, 1, 5), "last_seq": (0, 5), "transactional": (False, True),
                   "is_duplicate": (False, True), "verification_ok": (False, True),
                   "verification_lowest_seq": (-1, 0), "first_offset": (20,), "timestamp_ms": (200,),
                   "marker_coordinator_epoch": (1, 2, 3), "result": ("COMMIT", "ABORT"), "now_ms": (100, 200),
                   "expiration_ms": (100,)}
    key = {"partition": "p-0", "producer_id": 1}
    total = frozenset({"Append", "CoordinatorAppend", "WriteMarker"})
    assert explore(pp, var_domains, arg_domains, key, total) > 10_000


def test_producer_client_rows_are_disjoint_total_and_safe(pc: ir.Machine) -> None:
    errors = tuple(pc.enums[0].members)
    var_domains = {"producer_id": (-1, 7), "producer_epoch": (-1, 0, 32767), "last_error": errors}
    arg_domains = {"error": errors, "new_producer_id": (-1, 7), "new_epoch": (-1, 3), "can_bump_epoch": (False, True),
                   "epoch_bump_required": (False, True), "p": ("t-0",), "epoch": (5, 32767)}
    calls = frozenset(e.name for e in pc.events if not e.internal)
    for key in ({"transactional_id": "payments"}, {"transactional_id": ""}):
        assert explore(pc, var_domains, arg_domains, key, calls) > 1_000


def test_streams_task_rows_are_disjoint_total_and_safe(st: ir.Machine) -> None:
    modes = tuple(st.enums[0].members)
    calls = frozenset(e.name for e in st.events)
    assert explore(st, {"closed_as": modes}, {"commit_needed": (False, True)}, {"task_id": "0_0"}, calls) > 20

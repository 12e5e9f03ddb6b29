"""`decide` on generated tables: the runtime's only view of the spec."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcoord.impl.errors import IllegalStateError
from kcoord.impl.statemachine import MachineTable
from kcoord.model import ir
from kcoord.model.loader import bundled_machines
from kcoord.model.pyexpr import PythonEvaluator

TX = MachineTable.load("transaction")


def init_args(**over: Any) -> dict[str, Any]:
    args = dict(expected_producer_id=-1, expected_epoch=-1, timeout_ms=60000, max_timeout_ms=900000,
                new_producer_id=1000, now_ms=1)
    args.update(over)
    return args


def test_fresh_instance_has_defaults_and_key() -> None:
    inst = TX.fresh({"transactional_id": "t"})
    assert inst["state"] == "Empty" and inst["producer_id"] == -1 and inst["partitions"] == frozenset()
    with pytest.raises(IllegalStateError):
        TX.fresh({})


def test_decide_never_mutates_and_returns_the_post_state() -> None:
    inst = TX.fresh({"transactional_id": "t"})
    before = dict(inst)
    d = TX.decide(inst, "InitProducerId", init_args(), strict=True)
    assert inst == before
    assert d.accepted and d.error == "NONE" and (d.from_state, d.to_state) == ("Empty", "Empty")
    assert d.post is not None and d.post["producer_id"] == 1000 and d.post["producer_epoch"] == 0


def test_lazy_argument_is_computed_only_when_a_row_reads_it() -> None:
    calls: list[int] = []

    def allocate() -> int:
        calls.append(1)
        return 2000

    inst = TX.decide(TX.fresh({"transactional_id": "t"}), "InitProducerId", init_args()).post
    assert inst is not None
    d = TX.decide(inst, "InitProducerId", init_args(new_producer_id=allocate))  # a plain bump: no new id needed
    assert calls == [] and d.post is not None and d.post["producer_epoch"] == 1


def test_pending_state_always_sees_pending() -> None:
    inst = TX.fresh({"transactional_id": "t"}) | {"state": "PrepareEpochFence", "producer_id": 5,
                                                   "producer_epoch": 1, "partitions": frozenset({"a-0"}),
                                                   "txn_start_timestamp_ms": 0}
    d = TX.decide(inst, "AddPartitions", dict(pid=5, epoch=1, parts=frozenset({"a-1"}), txn_version=0, now_ms=1))
    assert d.error == "CONCURRENT_TRANSACTIONS" and d.post is None


def test_no_matching_row_is_an_internal_error() -> None:
    inst = TX.fresh({"transactional_id": "t"})
    with pytest.raises(IllegalStateError, match="no row answers"):
        TX.decide(inst, "CompleteTxn", {"now_ms": 1})  # internal event that cannot fire in Empty


def test_violated_precondition_is_an_internal_error() -> None:
    with pytest.raises(IllegalStateError, match="precondition"):
        TX.decide(TX.fresh({"transactional_id": "t"}), "InitProducerId", init_args(now_ms=-5))


def test_out_of_range_post_state_is_an_internal_error() -> None:
    inst = TX.fresh({"transactional_id": "t"}) | {"producer_id": 5, "producer_epoch": 32767,
                                                   "previous_producer_id": 5}
    # Empty at the maximum epoch breaks an invariant, so nothing in the spec leads here; decide still refuses to
    # produce an epoch outside int16 rather than wrap like Java would.
    assert TX.violated_invariants(inst) == ["idle_epoch_usable"]
    d = TX.decide(inst, "InitProducerId", init_args())
    assert d.post is not None and d.post["producer_id"] == 1000 and d.post["producer_epoch"] == 0  # rotation


# ---------------------------------------------------------------- differential: generated code vs the IR evaluator

MACHINE = bundled_machines()["Transaction"]
EPOCHS = st.sampled_from([-1, 0, 1, 5, 32765, 32766, 32767])
PIDS = st.sampled_from([-1, 7, 8, 1000])
PARTS = st.frozensets(st.sampled_from(["a-0", "a-1", "b-0"]), max_size=3)


@st.composite
def transaction_instances(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "transactional_id": "t", "state": draw(st.sampled_from([s.name for s in MACHINE.states if not s.final])),
        "producer_id": draw(PIDS), "previous_producer_id": draw(PIDS), "next_producer_id": draw(PIDS),
        "producer_epoch": draw(EPOCHS), "last_producer_epoch": draw(EPOCHS),
        "txn_timeout_ms": draw(st.sampled_from([0, 1000, 60000])), "partitions": draw(PARTS),
        "txn_start_timestamp_ms": draw(st.sampled_from([-1, 0, 50])),
        "txn_last_update_timestamp_ms": draw(st.sampled_from([-1, 0, 50])),
        "client_txn_version": draw(st.sampled_from([0, 1, 2])), "has_failed_epoch_fence": draw(st.booleans()),
    }


def arg_strategy(event: ir.Event) -> st.SearchStrategy[dict[str, Any]]:
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for p in event.params:
        t = p.type
        if isinstance(t, ir.SetType):
            fields[p.name] = PARTS
        elif isinstance(t, ir.StringType):
            fields[p.name] = st.sampled_from(["a-0", "b-0"])
        elif isinstance(t, ir.EnumType):
            fields[p.name] = st.sampled_from(list(t.members))
        elif p.name.endswith("epoch"):
            fields[p.name] = EPOCHS
        elif "producer_id" in p.name or p.name == "pid":
            fields[p.name] = PIDS if p.name != "new_producer_id" else st.just(1000)
        elif isinstance(t, ir.IntType) and t.hi <= 2:
            fields[p.name] = st.integers(t.lo, t.hi)
        else:
            fields[p.name] = st.sampled_from([0, 1, 60000, 900000])
    return st.fixed_dictionaries(fields)


@settings(max_examples=400, deadline=None)
@given(data=st.data(), instance=transaction_instances(), pending=st.booleans())
def test_generated_table_agrees_with_the_model_evaluator(data: st.DataObject, instance: dict[str, Any],
                                                         pending: bool) -> None:
    event = data.draw(st.sampled_from(MACHINE.events))
    args = data.draw(arg_strategy(event))
    ev = PythonEvaluator()
    env = dict(args, pending=pending or instance["state"] in TX.pending_states)
    if not ev.holds(event.requires, instance, env):
        return
    model_rows = ev.enabled_rows(MACHINE, instance, event.name, env)
    if len(model_rows) != 1:
        with pytest.raises(IllegalStateError):
            TX.decide(instance, event.name, args, pending=pending, strict=True)
        return
    try:
        decision = TX.decide(instance, event.name, args, pending=pending, strict=True)
    except IllegalStateError as e:
        assert "outside" in str(e)  # the evaluator has unbounded ints; the runtime refuses to overflow
        return
    assert decision.row.index == model_rows[0].index
    if isinstance(model_rows[0], ir.Transition):
        assert decision.post == ev.fire(model_rows[0], instance, env)


def test_replaced_edges_reach_decide() -> None:
    """The mutation tool replaces `valid_previous`: decide's precomputed edge test must follow it."""
    table = MachineTable.load("transaction")
    inst = table.fresh({"transactional_id": "t"})
    assert table.decide(inst, "InitProducerId", init_args()).to_state == "Empty"
    table.valid_previous = {**table.valid_previous, "Empty": frozenset()}  # no edge into Empty any more
    for strict in (False, True):
        with pytest.raises(IllegalStateError, match="Empty -> Empty is not in the table"):
            table.decide(inst, "InitProducerId", init_args(), strict=strict)


PRODUCER = MachineTable.load("partition_producer")
_SMALL_INTS = st.sampled_from((-2, -1, 0, 1, 2, 3, 32766, 32767))


def _producer_instances() -> st.SearchStrategy[dict[str, Any]]:
    """PartitionProducer instances with every variable (all integers) and the state drawn freely: most break some
    invariant or step property, some none."""
    fields = {v.name: _SMALL_INTS for v in PRODUCER.variables}
    return st.fixed_dictionaries({**fields, "state": st.sampled_from(PRODUCER.states), "partition": st.just("t-0"),
                                  "producer_id": st.sampled_from((1, 2))})


@settings(max_examples=400, deadline=None)
@given(_producer_instances(), _producer_instances())
def test_properties_hold_is_no_violated_invariant_or_step(pre: dict[str, Any], post: dict[str, Any]) -> None:
    """The compiled `properties_hold` (what an applied partition-producer change asks) answers exactly as the lists
    `violated_invariants` and `violated_steps` it replaces on that path."""
    broken = PRODUCER.violated_invariants(post) + PRODUCER.violated_steps(pre, post)
    assert PRODUCER.properties_hold(pre, post) is (not broken)
    assert PRODUCER.properties_hold(post, post) is (not PRODUCER.violated_invariants(post)
                                                    + PRODUCER.violated_steps(post, post))

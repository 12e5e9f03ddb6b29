"""The differential fuzzer's pieces without a broker: steps as data, the normalization of answers (ids by order of
first appearance, shapes, the fields never compared), where two answers differ, and the known deviations."""

from __future__ import annotations

import datetime
import time
import uuid

import pytest
from kio.schema.consumer_group_heartbeat.v1.response import ConsumerGroupHeartbeatResponse
from kio.schema.errors import ErrorCode
from kio.schema.init_producer_id.v4.response import InitProducerIdResponse
from kio.schema.join_group.v7.response import JoinGroupResponse, JoinGroupResponseMember
from kio.schema.types import ProducerId
from kio.static.primitive import i16, i32

from kcoord.conformance.differential import run
from kcoord.conformance.differential.deviations import known
from kcoord.conformance.differential.lockstep import ProgramResult, leaf_differences
from kcoord.conformance.differential.normalize import NOT_COMPARED, Canon, normalize
from kcoord.conformance.differential.steps import KINDS, Step


def test_steps_are_checked_data_that_print_as_python() -> None:
    step = Step("produce", 2, value=5, flag=True)
    assert repr(step) == "Step('produce', 2, value=5, flag=True)" and eval(repr(step)) == step
    assert repr(Step("wait")) == "Step('wait', 0)"
    with pytest.raises(ValueError, match="unknown step kind"):
        Step("nope")
    with pytest.raises(ValueError, match="actor 3 out of range"):
        Step("cg_join", 3)
    assert "wait" in KINDS and len(KINDS) == 22


def _join(member: str, leader: str, members: tuple[str, ...]) -> JoinGroupResponse:
    return JoinGroupResponse(throttle_time=datetime.timedelta(0), error_code=ErrorCode.none,
                    generation_id=i32(3), protocol_type="consumer", protocol_name="range", leader=leader,
                    member_id=member, members=tuple(JoinGroupResponseMember(member_id=m, group_instance_id=None,
                                                                            metadata=b"m") for m in members))


def test_ids_compare_by_order_of_first_appearance_and_member_lists_by_content() -> None:
    ours, theirs = Canon(), Canon()
    a = normalize(_join("kc-1", "kc-1", ("kc-2", "kc-1")), ours)
    b = normalize(_join("kafka-x", "kafka-x", ("kafka-x", "kafka-y")), theirs)
    assert a == b and a["member_id"] == "member#1" and a["generation_id"] == 3
    # the same entity must keep its number: a broker that names another member leader differs
    c = normalize(_join("kafka-y", "kafka-x", ()), theirs)
    assert c["member_id"] == "member#2" and c["leader"] == "member#1"
    pid = InitProducerIdResponse(throttle_time=datetime.timedelta(0), error_code=ErrorCode.none,
                                 producer_id=ProducerId(4004),
                                 producer_epoch=i16(2))
    assert normalize(pid, Canon()) == {"error_code": "NONE", "producer_id": "pid#1", "producer_epoch": 2}


def test_the_fields_kept_apart_on_purpose_are_not_compared() -> None:
    refused = ConsumerGroupHeartbeatResponse(throttle_time=datetime.timedelta(0),
                                             error_code=ErrorCode.invalid_request, error_message="MemberId can't be "
                                             "empty.", member_id=None, member_epoch=i32(0),
                                             heartbeat_interval=datetime.timedelta(0), assignment=None)
    shown = normalize(refused, Canon(topic_names={uuid.uuid4(): "t"}))
    assert shown["error_message"] == NOT_COMPARED and shown["error_code"] == "INVALID_REQUEST"


def test_leaf_differences_name_the_paths() -> None:
    a = [{"groups": [{"state": "Stable", "members": [1, 2]}], "x": 1}]
    b = [{"groups": [{"state": "Dead", "members": [1]}], "x": 1}]
    assert leaf_differences(a, b) == [("[0].groups[0].members", [1, 2], [1]), ("[0].groups[0].state", "Stable",
                                                                              "Dead")]
    assert leaf_differences(a, a) == []


def test_the_known_deviation_matches_only_its_own_shape() -> None:
    def described(state: str, members: list[object]) -> tuple[object, ...]:
        return ({"groups": [{"error_code": "NONE", "group_state": state, "members": members}]},)

    assert known("describe_group", described("CompletingRebalance", [{}]), described("Dead", [])) is not None
    assert known("describe_group", described("Dead", []), described("Stable", [{}])) is None
    assert known("cg_describe", described("Stable", [{}]), described("Dead", [])) is None


class _SlowLockstep:
    """`Lockstep` without brokers: each program 'runs' for 30 ms and every answer is equal."""

    def __init__(self, *_: object) -> None:
        self.ran = 0

    def run(self, steps: list[Step]) -> ProgramResult:
        time.sleep(0.03)
        self.ran += 1
        return ProgramResult(steps_run=len(steps), answers_compared=len(steps), requests_sent=len(steps))


def test_the_fuzzers_time_budget_stops_starting_programs_but_runs_the_minimum(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run, "Lockstep", _SlowLockstep)
    unbounded = run.fuzz(None, None, 12, seed_value=3)  # type: ignore[arg-type]
    assert (unbounded.totals.programs, unbounded.totals.skipped) == (12, 0)
    started = time.monotonic()
    bounded = run.fuzz(None, None, 40, seed_value=3, seconds=0.2, at_least=2)  # type: ignore[arg-type]
    assert 2 <= bounded.totals.programs < 40 and bounded.totals.programs + bounded.totals.skipped == 40
    assert time.monotonic() - started < 0.2 + 5 * 0.03 + 2  # (drawing the skipped programs costs little)
    assert "not run (time budget spent)" in bounded.totals.summary()
    floor = run.fuzz(None, None, 20, seed_value=3, seconds=1e-9, at_least=5)  # type: ignore[arg-type]
    assert floor.totals.programs == 5

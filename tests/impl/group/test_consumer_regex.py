"""KIP-848 regular-expression subscriptions resolved by the coordinator, as Kafka 4.0.2's GroupMetadataManager does
(maybeUpdateRegularExpressions, refreshRegularExpressions, handleRegularExpressionsResult): the records, the group
epochs, the assignment, the refresh on new topics and the load from the log."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from kcoord.impl.assignors.server import TopicMetadata
from kcoord.impl.group.consumer.regex import is_valid, resolve
from kcoord.impl.group.messages import ConsumerGroupHeartbeatRequest
from kcoord.impl.storage import group_log_schema as schema

from .helpers import T1, T2, Harness, parts

T3 = uuid.UUID(int=0x3333)


def join_regex(h: Harness, member: str, regex: str = "^ord.*") -> Any:
    """An epoch-0 heartbeat subscribing by regular expression only (no topic names)."""
    return h.c.consumer_group_heartbeat(ConsumerGroupHeartbeatRequest(
        "cg", member, 0, rebalance_timeout_ms=30_000, subscribed_topic_names=None, topic_partitions=(),
        subscribed_topic_regex=regex)).result()


def regex_records(h: Harness, since: int = 0) -> list[tuple[str, tuple[str, ...] | None]]:
    return [(k.regular_expression, None if v is None else v.topics) for k, v in h.records_since(since)
            if isinstance(k, schema.ConsumerGroupRegularExpressionKey)]


def test_re2_syntax_and_full_match() -> None:
    assert is_valid("^ord.*") and is_valid(r"\pL+") and is_valid("(?P<n>a)")
    assert not is_valid("(a") and not is_valid("(?=x)") and not is_valid(r"\1"), "RE2: no look-around, no backref"
    assert resolve(frozenset({"ord", "^ord.*", "pay"}), ["orders", "payments", "ord"]) == {
        "ord": frozenset({"ord"}), "^ord.*": frozenset({"orders", "ord"}), "pay": frozenset()}


def test_a_new_regex_joins_without_topics_then_its_resolution_bumps_the_epoch(h: Harness) -> None:
    r = join_regex(h, "a")
    assert (r.error, r.member_epoch, r.assignment) == ("NONE", 1, ()), "nothing is resolved inside the heartbeat"
    g = h.consumer_group("cg")
    assert (g["group_epoch"], g["assignment_epoch"], g["regexes"], g["resolved"]) == (1, 1, {"^ord.*"}, set())
    mark = h.mark()
    h.advance(100)  # the asynchronous resolution runs, then writes its result
    assert regex_records(h, mark) == [("^ord.*", ("orders",))]
    g = h.consumer_group("cg")
    assert (g["state"], g["group_epoch"], g["resolved"]) == ("Assigning", 2, {"^ord.*"})
    r = h.cg("cg", "a", 1, owned=())
    assert (r.error, r.member_epoch, parts(r)) == ("NONE", 2, {(T1, p) for p in range(6)})


def test_a_resolved_regex_bumps_at_once_for_the_next_member(h: Harness) -> None:
    join_regex(h, "a")
    h.advance(100)
    h.cg("cg", "a", 1, owned=())
    epoch = h.consumer_group("cg")["group_epoch"]
    mark = h.mark()
    r = join_regex(h, "b")
    assert r.error == "NONE" and h.consumer_group("cg")["group_epoch"] == epoch + 1
    assert regex_records(h, mark) == [], "no new resolution: the expression is resolved already"
    target = h.c.snapshot(0)["consumer"]["cg"]["target"]
    assert sum(len(ps) for ps in target["b"].values()) == 3, "b's half of orders is its target at once"
    assert parts(r) == set(), "still owned by a: b waits until a revoked them"


def test_an_invalid_regex_is_refused_and_nothing_is_written(h: Harness) -> None:
    join_regex(h, "a")
    mark = h.mark()
    assert join_regex(h, "b", "(unclosed").error == "INVALID_REGULAR_EXPRESSION"
    assert h.records_since(mark) == [] and set(h.consumer_group("cg")["members"]) == {"a"}
    assert join_regex(h, "c", "^ord.*").error == "NONE", "an expression the group has is not compiled again"


def test_a_member_moving_away_from_its_regex_tombstones_the_resolution(h: Harness) -> None:
    join_regex(h, "a")
    h.advance(100)
    h.cg("cg", "a", 1, owned=())
    mark = h.mark()
    r = h.cg("cg", "a", 2, owned=((T1, tuple(range(6))),), topics=("payments",), subscribed_topic_regex="")
    assert r.error == "NONE"
    assert regex_records(h, mark) == [("^ord.*", None)]
    g = h.consumer_group("cg")
    assert (g["regexes"], g["resolved"]) == (set(), set())


def test_the_last_subscriber_leaving_tombstones_the_resolution_and_group_delete_too(h: Harness) -> None:
    join_regex(h, "a")
    join_regex(h, "b", "^pay.*")
    h.advance(100)
    assert regex_records(h) == [("^ord.*", ("orders",))], \
        "b joined while a's resolution was in flight: its expression waits for the next one"
    h.advance(10_000)
    assert h.cg("cg", "b", 1, owned=()).error == "NONE"
    h.advance(100)
    assert len(regex_records(h)) == 1, "exactly 10 s after the last resolution is not later than 10 s"
    mark = h.mark()
    assert h.cg("cg", "b", 1, owned=()).error == "NONE", "b joined at epoch 1, without a bump; now 10.1 s"
    h.advance(100)
    assert sorted(regex_records(h, mark)) == [("^ord.*", ("orders",)), ("^pay.*", ("payments",))], \
        "a refresh resolves every expression of the group"
    mark = h.mark()
    assert h.cg("cg", "a", -1).error == "NONE"
    leave = h.records_since(mark)
    assert regex_records(h, mark) == [("^ord.*", None)]
    kinds = [type(k).__name__ for k, _ in leave]
    assert kinds.index("ConsumerGroupRegularExpressionKey") > kinds.index("ConsumerGroupMemberMetadataKey"), \
        "member tombstones, then the resolution's, then metadata and epoch (consumerGroupFenceMembers)"
    assert h.consumer_group("cg")["resolved"] == {"^pay.*"}


def test_topics_created_later_are_picked_up_at_most_every_10_s(h: Harness) -> None:
    join_regex(h, "a")
    h.advance(100)
    h.cg("cg", "a", 1, owned=())
    h.topics["orders-eu"] = TopicMetadata(T3, "orders-eu", 2)
    h.c.topics_changed()
    mark = h.mark()
    h.cg("cg", "a", 2, owned=((T1, tuple(range(6))),))
    h.advance(100)
    assert regex_records(h, mark) == [], "the last resolution is less than 10 s old"
    h.advance(10_000)
    h.cg("cg", "a", 2, owned=((T1, tuple(range(6))),))
    h.advance(100)
    assert regex_records(h, mark) == [("^ord.*", ("orders", "orders-eu"))]
    r = h.cg("cg", "a", 2, owned=((T1, tuple(range(6))),))
    assert (r.member_epoch, parts(r)) == (h.consumer_group("cg")["group_epoch"],
                                         {(T1, p) for p in range(6)} | {(T3, 0), (T3, 1)})


def test_names_and_regex_together_are_a_union(h: Harness) -> None:
    r = h.c.consumer_group_heartbeat(ConsumerGroupHeartbeatRequest(
        "cg", "a", 0, rebalance_timeout_ms=30_000, subscribed_topic_names=("payments",), topic_partitions=(),
        subscribed_topic_regex="^ord.*")).result()
    assert parts(r) == {(T2, p) for p in range(4)}
    h.advance(100)
    r = h.cg("cg", "a", 1, owned=((T2, tuple(range(4))),))
    assert parts(r) == {(T2, p) for p in range(4)} | {(T1, p) for p in range(6)}


def test_resolutions_are_loaded_back(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    join_regex(h, "a")
    h.advance(100)
    h.cg("cg", "a", 1, owned=())
    before = h.c.snapshot(0)["instances"]["ConsumerGroup"]
    h.c.close()
    h2 = Harness(tmp_path)
    after = h2.c.snapshot(0)["instances"]["ConsumerGroup"]
    assert after == before and after[("cg",)]["resolved"] == {"^ord.*"}
    shard = h2.shard("cg")
    assert shard.spec.consumer["cg"].resolved["^ord.*"].topics == {"orders"}


@pytest.mark.parametrize("value", [schema.ConsumerGroupRegularExpressionValue(("a", "b"), 7, 123),
                                   schema.ConsumerGroupRegularExpressionValue((), 0, -1)])
def test_regular_expression_record_round_trip(value: schema.ConsumerGroupRegularExpressionValue) -> None:
    key = schema.ConsumerGroupRegularExpressionKey("g", "^x.*")
    raw_key, raw_value = schema.encode_key(key), schema.encode_value(value)
    assert raw_key[:2] == b"\x00\x10", "record type 16"
    assert schema.decode_record(raw_key, raw_value) == (key, value)

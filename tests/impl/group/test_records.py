"""The record layer of the group coordinator: the load's fast OffsetCommit reader agrees with the schema's decoder on
every version it claims (and declines the others), and a record that does not describe its decision is caught."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcoord.impl.errors import IllegalStateError
from kcoord.impl.group import records
from kcoord.impl.group.offsets.store import OffsetEntry
from kcoord.impl.group.shard_state import fast_offset_commit
from kcoord.impl.runtime.shard import Change
from kcoord.impl.storage import group_log_schema as schema

from .helpers import Harness

names = st.text(min_size=0, max_size=12)
int64 = st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=200, derandomize=True)
@given(group=names, topic=names, partition=st.integers(-(2**31), 2**31 - 1), offset=int64,
       leader_epoch=st.integers(-(2**31), 2**31 - 1), metadata=st.text(max_size=30), commit=int64, expire=int64,
       version=st.sampled_from([0, 1, 2, 3, 4]), record_offset=st.integers(0, 2**40))
def test_fast_offset_reader_matches_the_schema(group: str, topic: str, partition: int, offset: int, leader_epoch: int,
                                               metadata: str, commit: int, expire: int, version: int,
                                               record_offset: int) -> None:
    value = schema.OffsetCommitValue(offset, metadata, commit, leader_epoch if version >= 3 else -1,
                                     expire if version == 1 else -1)
    key, raw = schema.encode_key(schema.OffsetCommitKey(group, topic, partition)), schema.encode_value(value, version)
    fast = fast_offset_commit(key, raw, record_offset)
    if version not in (1, 3):
        assert fast is None
        return
    assert fast == (group, topic, partition, OffsetEntry.of(value, record_offset))
    assert fast_offset_commit(key, None, record_offset) == (group, topic, partition, None)


def test_fast_offset_reader_declines_malformed_bytes() -> None:
    key = schema.encode_key(schema.OffsetCommitKey("g", "t", 0))
    value = schema.encode_value(schema.OffsetCommitValue(1, "m", 2))
    assert fast_offset_commit(key + b"x", value, 0) is None
    assert fast_offset_commit(key, value + b"x", 0) is None
    assert fast_offset_commit(key[:-2], value, 0) is None


def test_a_record_that_does_not_describe_its_decision_is_caught(h: Harness) -> None:
    (a,) = h.stable_group("g", 1)
    shard = h.shard("g")
    table = h.c.ctx.tables.classic
    d = table.decide(shard.get("ClassicGroup", ("g",)), "LeaveGroupMember",
                     {"member_id": a, "instance_id": "", "mapped_member": "", "next_leader": ""})
    wrong = records.group_tombstone("g")
    with pytest.raises(IllegalStateError):
        shard.spec.check_record(Change(table, ("g",), d, {}), wrong)

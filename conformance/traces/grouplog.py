"""A `__consumer_offsets` partition → the rows its records make, record type by record type.

Owns: `GroupLog` (one folder, fed entry by entry in offset order):
- GroupMetadata (type 2): a ClassicGroup `load` row per value, as a load installs it (Stable with members, else
  Empty; a tombstone ends the group), through `kcoord.impl.group.shard_state.classic_from_record`;
- the KIP-848 records (types 3-8, and 16: a regular expression's resolution): replayed into the groups loaded so far
  with the group coordinator's own load code (`replay_consumer_group_record`), and at the end of each batch the
  ConsumerGroup and ConsumerGroupMember instances a load up to that offset would install (`consumer_group_instances`)
  become `load` rows — one for each instance the batch changed; a member whose records were tombstoned is Removed
  (epoch -1, holding nothing), a deleted group Dead. So a group's state is only read at batch boundaries: Kafka writes
  each request's records in one batch;
- OffsetCommit (types 0, 1): decoded (a bad one is quarantined); a transactional batch of them is the group
  coordinator's `CoordinatorAppend` for its producer, and a transaction marker its `WriteMarker`
  (`kcoord.conformance.traces.producerlog`): KAFKA-17507's ordering is checked on those rows;
- share-group records (types 9-15): decoded, counted, no machine.
Must not import: pyspark, kcoord.cli.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kcoord.model import ir

from .logrecords import Entry
from .producerlog import ProducerRows

Row = dict[str, Any]


@dataclass(slots=True)
class ConsumerRows:
    """The KIP-848 instances of one folder, rebuilt at batch boundaries."""

    group_machine: Any  # logs._Machine of ConsumerGroup
    member_machine: Any  # logs._Machine of ConsumerGroupMember
    loaded: dict[str, Any] = field(default_factory=dict)  # group id -> LoadedConsumerGroup
    touched: set[str] = field(default_factory=set)
    shown_groups: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    shown_members: dict[str, dict[str, Mapping[str, Any]]] = field(default_factory=dict)
    names: Any = None

    def __post_init__(self) -> None:
        from kcoord.impl.group.state import PartitionNames

        self.names = PartitionNames()

    def record(self, rtype: int, key: Any, value: Any) -> None:
        from kcoord.impl.group.shard_state import replay_consumer_group_record

        self.touched.add(replay_consumer_group_record(self.loaded, rtype, key, value))

    def replaced(self, group_id: str) -> None:
        """A classic group record took the id: the consumer group (an empty one) is gone."""
        if self.loaded.pop(group_id, None) is not None:
            self.touched.add(group_id)

    def batch_end(self, ts_ms: int, epoch: int) -> Iterator[Row]:
        from kcoord.impl.group.context import Tables
        from kcoord.impl.group.shard_state import consumer_group_instances

        tables = _tables(Tables)
        for group_id in sorted(self.touched):
            loaded = self.loaded.get(group_id)
            members: Mapping[str, Mapping[str, Any]] = {}
            if loaded is None:
                group = None
            else:
                group, members, _ = consumer_group_instances(tables, self.names, group_id, loaded)
            yield from self._member_rows(group_id, members, ts_ms, epoch)
            before = self.shown_groups.get(group_id)
            if group is None and before is not None:
                yield self.group_machine.row(group_id, None, ts_ms, epoch)
                del self.shown_groups[group_id]
            elif group is not None and group != before:
                yield self.group_machine.row(group_id, group, ts_ms, epoch)
                self.shown_groups[group_id] = group
        self.touched.clear()

    def _member_rows(self, group_id: str, members: Mapping[str, Mapping[str, Any]], ts_ms: int,
                     epoch: int) -> Iterator[Row]:
        shown = self.shown_members.setdefault(group_id, {})
        for member_id in sorted(set(shown) | set(members)):
            key = f"{group_id}/{member_id}"
            now = members.get(member_id)
            if now is None:
                gone = {**shown.pop(member_id), "state": "Removed", "member_epoch": -1, "assigned": frozenset(),
                        "pending_revocation": frozenset(), "held": frozenset()}
                yield self.member_machine.row(key, gone, ts_ms, epoch)
            elif now != shown.get(member_id):
                shown[member_id] = now
                yield self.member_machine.row(key, now, ts_ms, epoch)


_TABLES: list[Any] = []


def _tables(tables_type: Any) -> Mapping[str, Any]:
    if not _TABLES:
        _TABLES.append(tables_type.load().by_name())
    return _TABLES[0]  # type: ignore[no-any-return]


@dataclass(slots=True)
class GroupLog:
    """One `__consumer_offsets` folder's rows (besides the ClassicGroup rows `logs` makes)."""

    consumer: ConsumerRows | None
    producers: ProducerRows | None
    skipped: dict[str, int]

    @classmethod
    def of(cls, machines: Mapping[str, ir.Machine], partition: str, skipped: dict[str, int],
           machine_of: Any) -> GroupLog:
        consumer = None
        if "ConsumerGroup" in machines and "ConsumerGroupMember" in machines:
            consumer = ConsumerRows(machine_of(machines["ConsumerGroup"]), machine_of(machines["ConsumerGroupMember"]))
        producers = ProducerRows.of(machines["PartitionProducer"], partition, True) \
            if "PartitionProducer" in machines else None
        return cls(consumer, producers, skipped)

    def entry(self, e: Entry) -> Iterator[Row]:
        """The rows of one record other than GroupMetadata's (decoding errors propagate to the caller)."""
        from kcoord.impl.storage import group_log_schema as schema

        if self.producers is not None:
            row = self.producers.entry(e)
            if row is not None:
                yield row
        if e.control:
            return
        if e.key is None:
            raise ValueError("a __consumer_offsets record without a key")
        rtype = schema.record_type(e.key)
        if rtype == 2:
            return
        key = schema.decode_any_key(e.key)
        value = schema.decode_any_value(rtype, e.value)
        if rtype <= 1:
            self._count("offset commits (decoded; no machine of their own: a transactional batch of them is its "
                        "producer's CoordinatorAppend row)")
        elif (rtype <= 8 or rtype == 16) and self.consumer is not None:
            self.consumer.record(rtype, key, value)
        else:
            self._count(f"{type(value).__name__ if value is not None else 'tombstone'} records of type {rtype} "
                        "(share groups: read, no machine)")

    def batch_end(self, e: Entry) -> Iterator[Row]:
        if self.consumer is not None and e.last_in_batch:
            yield from self.consumer.batch_end(e.place.ts_ms, e.leader_epoch)

    def _count(self, what: str) -> None:
        self.skipped[what] = self.skipped.get(what, 0) + 1

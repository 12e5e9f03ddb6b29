"""A partition's log → the PartitionProducer transitions it shows: every transactional batch and every transaction
marker is one append the partition leader accepted, so it is one transition row of the producer's instance
(`<partition>/<producer id>`), checked like any recorded transition (guards, effects, frame, steps, the epoch and
coordinator-epoch properties, and with the transaction coordinator's log KAFKA-17507's `commit_after_markers`).

Owns: `ProducerRows` (one partition folder's rows, in offset order). What each batch says:
- a client's transactional data batch (any data partition): `Append(epoch, first_seq, last_seq, transactional=true,
  is_duplicate=false, verification_ok=true, verification_lowest_seq=-1, first_offset, timestamp_ms)` — it was
  appended, so it was neither a duplicate nor unverified;
- the group coordinator's transactional offsets (`__consumer_offsets`): `CoordinatorAppend(epoch,
  verification_ok=true, first_offset, timestamp_ms)`;
- a COMMIT/ABORT control batch: `WriteMarker(result, epoch, marker_coordinator_epoch, timestamp_ms)`.
The post-state is what the batch shows (its epoch, its last sequence, the marker's coordinator epoch, the first offset
of the open transaction) and, for what a batch does not carry, the spec row's effect. A producer's first batch in a
partition whose earlier offsets were removed (retention, compaction) has no known pre-state: it is a `load` row.
Non-transactional (idempotent) batches are not read.
Must not import: pyspark, kcoord.cli.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kcoord.model import ir
from kcoord.model.pyexpr import PythonEvaluator

from .checks import LOAD_EVENT, Spec
from .logrecords import Entry
from .readers import columns

MACHINE = "PartitionProducer"
Row = dict[str, Any]


@dataclass(slots=True)
class ProducerRows:
    spec: Spec
    partition: str  # the folder's name: `orders-0`, `__consumer_offsets-3`
    coordinator: bool  # `__consumer_offsets`: the group coordinator's writes
    last: dict[int, Row] = field(default_factory=dict)  # producer id -> its latest row
    ev: PythonEvaluator = field(default_factory=PythonEvaluator)

    @classmethod
    def of(cls, m: ir.Machine, partition: str, coordinator: bool) -> ProducerRows:
        return cls(Spec.of(m), partition, coordinator)

    def entry(self, e: Entry) -> Row | None:
        """The row of the batch `e` starts (its first record), or of the marker `e` is; None for anything else."""
        batch = e.batch
        if batch is None or not e.transactional or e.producer_id < 0:
            return None
        if e.control:
            from kcoord.impl.storage.batch import RecordFormatError, decode_end_txn_marker

            try:
                marker = decode_end_txn_marker(e.record)
            except RecordFormatError:
                return None  # a control record that is no marker (none today): not a producer's transition
            args = {"result": marker.control_type.name, "epoch": e.producer_epoch,
                    "marker_coordinator_epoch": marker.coordinator_epoch, "timestamp_ms": e.place.ts_ms}
            return self._row(e, "WriteMarker", args)
        if e.record is not batch.records[0]:
            return None  # one transition per batch
        if self.coordinator:
            args = {"epoch": e.producer_epoch, "verification_ok": True, "first_offset": batch.base_offset,
                    "timestamp_ms": batch.max_timestamp_ms}
            return self._row(e, "CoordinatorAppend", args)
        last_seq = batch.base_sequence + batch.last_offset_delta if batch.base_sequence >= 0 else -1
        args = {"epoch": e.producer_epoch, "first_seq": batch.base_sequence, "last_seq": last_seq,
                "transactional": True, "is_duplicate": False, "verification_ok": True, "verification_lowest_seq": -1,
                "first_offset": batch.base_offset, "timestamp_ms": batch.max_timestamp_ms}
        return self._row(e, "Append", args)

    # ------------------------------------------------------------ rows

    def _pre(self, pid: int) -> dict[str, Any]:
        found = self.last.get(pid)
        if found is not None:
            out = {v.name: _value(found[v.name]) for v in self.spec.machine.variables}
            out["state"] = found["to_state"]
        else:
            out = dict(self.spec.defaults)
            out["state"] = self.spec.initial
        out.update(partition=self.partition, producer_id=pid)
        return out

    def _row(self, e: Entry, event: str, args: dict[str, Any]) -> Row:
        pid = e.producer_id
        pre = self._pre(pid)
        target = "Known" if event == "WriteMarker" else "Ongoing"
        spec_row = next((t for t in self.spec.machine.transitions
                         if t.event == event and pre["state"] in t.sources and t.target == target), None)
        post = dict(pre)
        if spec_row is not None:  # what the batch does not carry follows the row's effect
            for ef in spec_row.effects:
                with contextlib.suppress(TypeError, KeyError, ValueError):  # then the batch says it (below)
                    post[ef.var] = self.ev.eval(ef.value, pre, {**args, "pending": False})
        post.update(self._observed(e, event, pre, args))
        post["state"] = target
        known_history = pid in self.last or e.dense
        row = self._new_row(pid, e, post)
        if known_history:
            row.update(kind="transition", event=event, row=spec_row.index if spec_row is not None else -2,
                       from_state=pre["state"])
            row.update({f"arg_{k}": v for k, v in args.items()})
        else:  # earlier offsets are gone: this state is all we know (a snapshot)
            row.update(kind="load", event=LOAD_EVENT, row=-1, from_state=self.spec.initial)
        self.last[pid] = row
        return row

    def _observed(self, e: Entry, event: str, pre: Mapping[str, Any], args: Mapping[str, Any]) -> dict[str, Any]:
        """The post-state fields the batch itself shows."""
        batch = e.batch
        if event == "WriteMarker":
            return {"producer_epoch": e.producer_epoch, "txn_coordinator_epoch": args["marker_coordinator_epoch"],
                    "current_txn_first_offset": -1, "last_timestamp_ms": e.place.ts_ms}
        first = pre["current_txn_first_offset"] if pre["state"] == "Ongoing" else batch.base_offset
        last_seq = args.get("last_seq", -1)
        return {"producer_epoch": e.producer_epoch, "current_txn_first_offset": first,
                "last_sequence": last_seq, "last_timestamp_ms": batch.max_timestamp_ms}

    def _new_row(self, pid: int, e: Entry, post: Mapping[str, Any]) -> Row:
        m = self.spec.machine
        row: Row = {name: None for name, _ in columns(m)}
        for f in (*m.keys, *m.variables):
            value = post.get(f.name, self.spec.defaults.get(f.name))
            row[f.name] = sorted(value) if isinstance(value, frozenset | set) else value
        previous = self.last.get(pid)
        row.update(machine=m.name, key=f"{self.partition}/{pid}", seq=previous["seq"] + 1 if previous else 0,
                   ts_ms=e.place.ts_ms, node=0, coordinator_epoch=e.leader_epoch, error="NONE",
                   to_state=post["state"], pending=False)
        return row


def _value(v: Any) -> Any:
    return frozenset(v) if isinstance(v, list) else v

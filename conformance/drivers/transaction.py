"""Driver for the Transaction machine: spec events → `TransactionCoordinator`'s public API, in a one-node `Cluster`.

Request events are the coordinator's APIs (InitProducerId, AddPartitionsToTxn, the verify-only AddPartitionsToTxn
a partition leader sends, EndTxn v4 / v5, DescribeTransactions) for one transactional id. Internal events happen the
way they happen in the broker:
- CompleteTxn: the marker channel runs (markers are otherwise held back, so a test can look at Prepare*),
- TimeoutExpired (then FenceAbort): the clock passes the transaction timeout and the abort task runs,
- Expire: the clock passes transactional.id.expiration.ms and the expiration task runs,
- FenceFailed: the fence's PrepareAbort append fails (`fail_next_append`), then the fence is retried by the client,
- FenceAbort: fired by the coordinator right after InitProducerId or TimeoutExpired enter PrepareEpochFence.
`pending` (a write in flight) is `Concurrent(first, then)`: `first` is appended but not yet durable when `then` is
handled. Environment steps: `Reload` (the `__transaction_state` partition is unloaded and loaded again: the load
path, with marker re-sends) and `FastForward(epoch)` — the log gets the transaction's latest record again with only
the producer epoch changed, then the partition is reloaded; it stands for the ~32 000 InitProducerId bumps that
exhaust an epoch (Kafka's tests set the epoch directly the same way).

Arguments the coordinator chooses (a fresh producer id, the time, the server's limits) are read back from the trace;
the driver checks that the trace carries the request's own arguments, that every answer is the spec's (with the
producer id and epoch the spec's post-state has), that the `__transaction_state` records written are exactly the
spec's post-states (decoded with Kafka's schema, not the coordinator's codec), and KAFKA-17507's order: a Complete*
record only after every partition of the transaction, `__consumer_offsets` included, applied its marker.
Must not import: kcoord.cli.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from kcoord.impl.cluster import ClusterConfig
from kcoord.impl.group.config import GroupConfig
from kcoord.impl.interfaces import TopicPartition
from kcoord.impl.runtime.completion import Completion
from kcoord.impl.storage.log import PartitionLog, partition_dir_name
from kcoord.impl.storage.txn_log_schema import (
    TransactionLogKey,
    TransactionStatus,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    value_version,
)
from kcoord.impl.txn.config import TxnConfig
from kcoord.model import ir

from ..argsolver import NONEMPTY, Avoid
from ..explore import Context, single_key_candidates
from ..reference_model import Fired
from .base import HELD_DURABILITY, Action, ClusterDriver, Key, Outcome, TraceRow, Values
from .partitions import partition_producer_instances

TXN_ID = "s1"
TOPIC = "t"
TOPIC_PARTITIONS = 6
OFFSETS_PARTITION = "__consumer_offsets-0"
MACHINE = "Transaction"
#: Kafka's TransactionState ids (TransactionState.java), restated independently of the coordinator's codec
STATE_OF_STATUS = {TransactionStatus.EMPTY: "Empty", TransactionStatus.ONGOING: "Ongoing",
                   TransactionStatus.PREPARE_COMMIT: "PrepareCommit", TransactionStatus.PREPARE_ABORT: "PrepareAbort",
                   TransactionStatus.COMPLETE_COMMIT: "CompleteCommit",
                   TransactionStatus.COMPLETE_ABORT: "CompleteAbort"}
NEVER_WRITTEN = frozenset({"PrepareEpochFence"})
NO_RECORD_EVENTS = frozenset({"FenceFailed"})
REQUEST_EVENTS = ("InitProducerId", "AddPartitions", "VerifyPartition", "EndTxnV1", "EndTxnV2", "Describe")


_ONE_VERSION = ("the driver's coordinator runs at transaction.version 2, and a coordinator never changes its version: "
                "the rows of the other versions are tested in tests/impl/txn (test_init_producer_id, test_timers)")
#: rows the implementation never takes with this driver (see `coverage.declared_unreachable`)
UNREACHABLE = {"Transaction": (
    (55, "FenceAbort", "PrepareAbort", ("PrepareEpochFence",), _ONE_VERSION),
    (56, "FenceAbort", "PrepareAbort", ("PrepareEpochFence",),
     "has_failed_epoch_fence is set only by a FenceFailed below transaction.version 2; " + _ONE_VERSION),
    (58, "FenceFailed", "Ongoing", ("Ongoing",), _ONE_VERSION),
)}


def txn_config() -> TxnConfig:
    """The driven coordinator's configuration. Its Complete* record is applied once durable (`complete_when_written`
    off), as Kafka applies it once appended: the driver holds it in flight (`HoldComplete`) to send the requests Kafka
    answers while it is pending; `kcoord serve`'s default applies it once written, a window of no loop turn."""
    return TxnConfig(num_partitions=1, offsets_num_partitions=1, abort_interval_ms=1_000,
                     expiration_interval_ms=10_000, id_expiration_ms=100_000, complete_when_written=False)


class TransactionDriver(ClusterDriver):
    machines = ("Transaction", "PartitionProducer")
    main = MACHINE
    unreachable = UNREACHABLE

    def __init__(self, *, workdir: Path | None = None) -> None:
        config = ClusterConfig(nodes=1, txn=txn_config(), groups=GroupConfig(num_partitions=1),
                               durability=HELD_DURABILITY)
        super().__init__(config, workdir=workdir, topics=[(TOPIC, TOPIC_PARTITIONS)])
        self.txn = self.node.txn
        self._log_mark = 0
        self._submitted: list[tuple[str, int]] = []  # (request event, clock) of the action's requests

    # ------------------------------------------------------------ reading the implementation

    @property
    def shard(self) -> Any:
        return self.txn.runtime.shards[0]

    def instances(self, machine: str) -> Mapping[Key, Values]:
        if machine == MACHINE:
            return {k: dict(v) for k, v in self.shard.instances[MACHINE].items()}
        return partition_producer_instances(self.cluster)

    def instance(self) -> Values | None:
        found = self.shard.instances[MACHINE].get((TXN_ID,))
        return dict(found) if found is not None else None

    # ------------------------------------------------------------ performing actions

    def perform(self, action: Action) -> Outcome:
        self._log_mark = self.shard.log.log_end_offset
        self._submitted = []
        responses = self._perform(action)
        return Outcome(responses, self.take_rows())

    def _perform(self, action: Action) -> list[Any]:
        name, a = action.name, action.args
        if name == "Concurrent":
            first, then = Action.from_json(a["first"]), Action.from_json(a["then"])
            held = self._hold(first)
            answer = self._submit(then)
            self.settle()
            return [*[c.result() for c in held], answer.result()]
        if name in REQUEST_EVENTS or name in ("AddOffsets", "FenceFailed"):
            if name == "FenceFailed":
                self.shard.log.fail_next_append()
            return [self.wait(self._submit(action))]
        if name == "CompleteTxn":
            self.settle(markers=True)
            return []
        if name == "TimeoutExpired":
            inst = self.instance() or {}
            due = inst.get("txn_start_timestamp_ms", 0) + inst.get("txn_timeout_ms", 0) - self.clock.now_ms()
            self.advance(max(due, 0) + 2 * self.config.txn.abort_interval_ms, step_ms=self.config.txn.abort_interval_ms)
            return []
        if name == "Expire":
            inst = self.instance() or {}
            due = inst.get("txn_last_update_timestamp_ms", 0) + self.config.txn.id_expiration_ms - self.clock.now_ms()
            interval = self.config.txn.expiration_interval_ms
            self.advance(max(due, 0) + 2 * interval, step_ms=interval)
            return []
        if name == "Reload":
            self._reload()
            return []
        if name == "FastForward":
            self._fast_forward(int(a["epoch"]))
            self._log_mark = self.shard.log.log_end_offset  # the driver's own record is not the coordinator's
            return []
        raise ValueError(f"the Transaction driver has no action {name!r}")

    def _submit(self, action: Action) -> Completion[Any]:
        a, txn = action.args, self.txn
        event = "InitProducerId" if action.name == "FenceFailed" else action.name
        event = "AddPartitions" if event == "AddOffsets" else event
        self._submitted.append((event, self.clock.now_ms()))
        if action.name in ("InitProducerId", "FenceFailed"):
            return txn.init_producer_id(TXN_ID, int(a["timeout_ms"]), int(a.get("expected_producer_id", -1)),
                                        int(a.get("expected_epoch", -1)))
        if action.name == "AddPartitions":
            parts = [TopicPartition.parse(p) for p in sorted(a["parts"])]
            return txn.add_partitions(TXN_ID, int(a["pid"]), int(a["epoch"]), parts, int(a.get("txn_version", 0)))
        if action.name == "AddOffsets":
            return txn.add_offsets(TXN_ID, int(a["pid"]), int(a["epoch"]), str(a["group"]),
                                   int(a.get("txn_version", 0)))
        if action.name == "VerifyPartition":
            return txn.verify_partition(TXN_ID, int(a["pid"]), int(a["epoch"]), TopicPartition.parse(str(a["p"])))
        if action.name in ("EndTxnV1", "EndTxnV2"):
            version = 4 if action.name == "EndTxnV1" else 5
            result: Literal["COMMIT", "ABORT"] = "COMMIT" if a["result"] == "COMMIT" else "ABORT"
            return txn.end_txn(TXN_ID, int(a["pid"]), int(a["epoch"]), result, version)
        if action.name == "Describe":
            return txn.describe_transactions([TXN_ID])
        raise ValueError(f"{action.name} is not a request")

    def _hold(self, first: Action) -> list[Completion[Any]]:
        """Start `first` and leave its write in flight (appended, not durable)."""
        if first.name == "HoldComplete":
            for _ in range(100):
                if self.shard.in_flight:
                    return []
                self.cluster.partitions.poll()
                self.cluster.partitions.flush()
                self.node.groups.poll()
                self.node.groups.flush()
                self.txn.channel.poll()
                self.txn.runtime.poll()
            raise AssertionError("the Complete record of the transaction was never appended")
        done = self._submit(first)
        if not self.shard.in_flight:
            raise AssertionError(f"{first.render()} wrote nothing, so nothing is in flight")
        return [done]

    def _reload(self) -> None:
        self.settle()
        self.txn.unload(0)
        self.txn.load(0)
        self.settle()

    def _fast_forward(self, epoch: int) -> None:
        """Append the latest record of the transaction again with `epoch`, then reload (see the module doc)."""
        self.settle()
        self.txn.unload(0)
        path = self.workdir / partition_dir_name("__transaction_state", 0)
        log = PartitionLog.open(path)
        try:
            latest = None
            for batch in log.read(0):
                for record in batch.records:
                    if record.key is not None and decode_key(record.key).transactional_id == TXN_ID:
                        latest = record.value
            if latest is None:
                raise AssertionError("FastForward needs a transaction with a record")
            value = decode_value(latest)
            assert value is not None
            changed = dataclasses.replace(value, producer_epoch=epoch)
            log.append([(encode_key(TransactionLogKey(TXN_ID)), encode_value(changed, value_version(latest)))],
                       timestamp_ms=self.clock.now_ms())
            log.flush()
        finally:
            log.close()
        self.txn.load(0)
        self.settle()

    # ------------------------------------------------------------ checks

    def check(self, action: Action, fired: Sequence[Fired], outcome: Outcome) -> list[str]:
        txn_rows = [f for f in fired if f.machine == MACHINE]
        problems = self._check_answers(action, txn_rows, outcome)
        problems += self._check_args(txn_rows)
        problems += self._check_records(txn_rows)
        problems += self._check_marker_order(outcome.rows)
        return problems

    def _requests(self, action: Action) -> list[Action]:
        if action.name == "Concurrent":
            first = Action.from_json(action.args["first"])
            return [*([] if first.name == "HoldComplete" else [first]), Action.from_json(action.args["then"])]
        return [action] if action.name in (*REQUEST_EVENTS, "AddOffsets", "FenceFailed") else []

    def _decision_of(self, request: Action, rows: Sequence[Fired], concurrent: bool, first: bool) -> Fired | None:
        event = {"FenceFailed": "FenceFailed", "AddOffsets": "AddPartitions"}.get(request.name, request.name)
        for f in rows:
            if f.event == event and (not concurrent or f.args.get("pending") is (not first)):
                return f
        return None

    def _check_answers(self, action: Action, rows: Sequence[Fired], outcome: Outcome) -> list[str]:
        requests = self._requests(action)
        concurrent = action.name == "Concurrent"
        problems = []
        for i, (request, response) in enumerate(zip(requests, outcome.responses, strict=False)):
            decision = self._decision_of(request, rows, concurrent, i == 0 and len(requests) == 2)
            if decision is None:
                problems.append(f"{request.render()}: the implementation decided nothing for it")
                continue
            problems += [f"{request.render()}: {p}" for p in self._answer_problems(request, decision, rows,
                                                                                      response)]
        return problems

    def _answer_problems(self, request: Action, d: Fired, rows: Sequence[Fired], response: Any) -> list[str]:
        expected = d.answer
        if request.name == "FenceFailed":
            expected = "NOT_COORDINATOR"  # a local storage failure (KAFKA_STORAGE_ERROR), as appendTransactionToLog
        got = _error_of(response)
        if got is not None and got != expected:
            return [f"answered {got}, the spec answers {expected}"]
        post = rows[-1].post if d.accepted else d.pre
        if request.name == "InitProducerId" and expected == "NONE" and \
                (response.producer_id, response.producer_epoch) != (post["producer_id"], post["producer_epoch"]):
            return [f"answered producer ({response.producer_id}, {response.producer_epoch}), the spec's is "
                        f"({post['producer_id']}, {post['producer_epoch']})"]
        if request.name == "EndTxnV2" and d.accepted:
            want = (post["next_producer_id"], 0) if post["next_producer_id"] != -1 else \
                (post["producer_id"], post["producer_epoch"])
            if (response.producer_id, response.producer_epoch) != want:
                return [f"answered producer ({response.producer_id}, {response.producer_epoch}), expected {want}"]
        if request.name == "Describe" and expected == "NONE":
            (desc,) = response
            seen = (desc.state, desc.producer_id, desc.producer_epoch, desc.timeout_ms, desc.start_timestamp_ms,
                    frozenset(str(p) for p in desc.partitions))
            want_d = (d.pre["state"], d.pre["producer_id"], d.pre["producer_epoch"], d.pre["txn_timeout_ms"],
                      d.pre["txn_start_timestamp_ms"], d.pre["partitions"])
            if seen != want_d:
                return [f"described {seen}, the instance is {want_d}"]
        return []

    def _check_args(self, rows: Sequence[Fired]) -> list[str]:
        """The decision rows carry the arguments the requests sent and the coordinator's own limits."""
        problems = []
        cfg = self.config.txn
        for f in rows:
            if f.event == "InitProducerId" and f.args.get("max_timeout_ms") != cfg.max_timeout_ms:
                problems.append(f"InitProducerId carried max_timeout_ms {f.args.get('max_timeout_ms')}, the "
                                f"coordinator's limit is {cfg.max_timeout_ms}")
            if f.event in ("FenceAbort", "FenceFailed") and f.args.get("server_txn_version") != cfg.server_txn_version:
                problems.append(f"{f.event} carried server_txn_version {f.args.get('server_txn_version')}")
            if f.event == "Expire" and f.args.get("expiration_ms") != cfg.id_expiration_ms:
                problems.append(f"Expire carried expiration_ms {f.args.get('expiration_ms')}")
            now = f.args.get("now_ms")
            if now is not None and now != self.clock.now_ms() and f.event in REQUEST_EVENTS:
                problems.append(f"{f.event} carried now_ms {now}, the clock said {self.clock.now_ms()}")
        return problems

    def _check_records(self, rows: Sequence[Fired]) -> list[str]:
        """The records appended to `__transaction_state` are the spec's post-states, in order."""
        expected = [f.post for f in rows if f.accepted and f.to_state not in NEVER_WRITTEN
                    and f.event not in NO_RECORD_EVENTS]
        written = [(r.key, r.value) for b in self.shard.log.read(self._log_mark) for r in b.records
                   if r.offset >= self._log_mark]
        if len(written) != len(expected):
            return [f"{len(written)} records written to __transaction_state, the spec's transitions need "
                    f"{len(expected)}"]
        problems = []
        for (key, value), post in zip(written, expected, strict=True):
            if key is None or decode_key(key).transactional_id != post["transactional_id"]:
                problems.append(f"a record for key {key!r}, expected {post['transactional_id']}")
                continue
            problems += record_problems(value, post)
        return problems

    def _check_marker_order(self, rows: Sequence[TraceRow]) -> list[str]:
        """KAFKA-17507: a Complete* row only after every partition of the transaction applied its marker."""
        problems = []
        trace = self.sink.all_rows()
        for row in rows:
            if row["machine"] != MACHINE or row["event"] != "CompleteTxn" or row["kind"] == "reject":
                continue
            at = next(i for i, r in enumerate(trace) if r is row)
            prepared = max((i for i, r in enumerate(trace[:at]) if r["machine"] == MACHINE and r["key"] == row["key"]
                            and r["kind"] == "transition" and r["from_state"] != r["to_state"]
                            and r["to_state"] in ("PrepareCommit", "PrepareAbort")), default=-1)
            if prepared < 0:
                continue
            before = trace[prepared]
            marked = {r["partition"] for r in trace[prepared + 1:at] if r["machine"] == "PartitionProducer"
                      and r["event"] == "WriteMarker" and r["kind"] != "reject"
                      and r["producer_id"] == before["producer_id"]}
            missing = sorted(set(before["partitions"]) - marked)
            if missing:
                problems.append(f"CompleteTxn was written before the markers of {missing} were applied "
                                "(KAFKA-17507: the coordinator moved on before those partitions materialised)")
        return problems


def record_problems(value: bytes | None, post: Mapping[str, Any]) -> list[str]:
    """A `__transaction_state` value against the spec's post-state (Kafka's persisted fields only)."""
    if post["state"] == "Dead":
        return [] if value is None else ["a value written for Dead, which must be a tombstone"]
    decoded = decode_value(value)
    if decoded is None:
        return [f"a tombstone written for state {post['state']}"]
    seen = {"state": STATE_OF_STATUS.get(decoded.transaction_status, str(decoded.transaction_status)),
            "producer_id": decoded.producer_id, "producer_epoch": decoded.producer_epoch,
            "txn_timeout_ms": decoded.transaction_timeout_ms,
            "partitions": frozenset(f"{p.topic}-{i}" for p in decoded.transaction_partitions or () for i in
                                    p.partition_ids),
            "txn_last_update_timestamp_ms": decoded.transaction_last_update_timestamp_ms,
            "txn_start_timestamp_ms": decoded.transaction_start_timestamp_ms,
            "previous_producer_id": decoded.previous_producer_id, "next_producer_id": decoded.next_producer_id,
            "client_txn_version": decoded.client_transaction_version}
    return [f"the record says {k} = {v!r}, the spec's post-state {post[k]!r}" for k, v in seen.items() if post[k] != v]


def _error_of(response: Any) -> str | None:
    if isinstance(response, str):
        return response
    if isinstance(response, Mapping):
        errors = set(response.values())
        if not errors:
            return None  # AddPartitionsToTxn naming no partition: the answer has no place for an error
        return errors.pop() if len(errors) == 1 else f"mixed {sorted(errors)}"
    if isinstance(response, list):
        return str(response[0].error)
    return str(response.error)


# ---------------------------------------------------------------------------------------------- search hooks


class TransactionSearch:
    """How the path search drives this machine: which arguments the environment fixes, what to prefer, and how a
    spec event with arguments becomes an action."""

    machine = MACHINE
    key: Key = (TXN_ID,)

    def __init__(self, config: TxnConfig | None = None) -> None:
        self.config = config or txn_config()

    def candidates(self, ctx: Context) -> list[Action]:
        return single_key_candidates(ctx, MACHINE, self.key, self)

    def strings(self, pre: Mapping[str, Any]) -> list[str]:
        return []

    def pins(self, event: str, pre: Mapping[str, Any], now_ms: int) -> dict[str, Any]:
        pins: dict[str, Any] = {}
        if event == "InitProducerId":
            pins["max_timeout_ms"] = self.config.max_timeout_ms
        if event in REQUEST_EVENTS and event != "Describe" and event != "VerifyPartition":
            pins["now_ms"] = now_ms
        if event == "VerifyPartition":
            pins["p"] = Avoid(("",))  # the API takes a TopicPartition: there is no empty name
        return pins

    def prefer(self, event: str, pre: Mapping[str, Any]) -> dict[str, Any]:
        known = pre["producer_id"] != -1
        ids = {"pid": pre["producer_id"], "epoch": pre["producer_epoch"]} if known else {}
        return {"InitProducerId": {"timeout_ms": 60_000, "expected_producer_id": -1, "expected_epoch": -1,
                                   "pending": False},
                "AddPartitions": {**ids, "parts": NONEMPTY, "txn_version": 0, "pending": False},
                "VerifyPartition": {**ids, "pending": False},
                "EndTxnV1": {**ids, "pending": False},
                "EndTxnV2": {**ids, "pending": False}}.get(event, {"pending": False})

    def action_for(self, row: ir.Row, args: Mapping[str, Any], pre: Mapping[str, Any]) -> Action | None:
        event = row.event
        target = self._request(event, args, pre)
        if target is None:
            return None
        if event in REQUEST_EVENTS and args.get("pending"):
            hold = self._hold_action(pre)
            if hold is None:
                return None
            return Action("Concurrent", {"first": hold.to_json(), "then": target.to_json()})
        return target

    def _request(self, event: str, a: Mapping[str, Any], pre: Mapping[str, Any]) -> Action | None:
        if event == "InitProducerId":
            return Action(event, {"timeout_ms": a["timeout_ms"], "expected_producer_id": a["expected_producer_id"],
                                  "expected_epoch": a["expected_epoch"]})
        if event == "AddPartitions":
            return Action(event, {"pid": a["pid"], "epoch": a["epoch"], "parts": sorted(a["parts"]),
                                  "txn_version": a["txn_version"]})
        if event == "VerifyPartition":
            return Action(event, {"pid": a["pid"], "epoch": a["epoch"], "p": a["p"]})
        if event in ("EndTxnV1", "EndTxnV2"):
            return Action(event, {"pid": a["pid"], "epoch": a["epoch"], "result": a["result"]})
        if event == "Describe":
            return Action(event)
        if event in ("CompleteTxn", "TimeoutExpired", "Expire"):
            return Action(event)
        if event == "FenceFailed":
            return Action(event, {"timeout_ms": 60_000, "expected_producer_id": -1, "expected_epoch": -1})
        return None  # FenceAbort: fired by the coordinator itself

    def _hold_action(self, pre: Mapping[str, Any]) -> Action | None:
        """A write for this transaction that can be left in flight from `pre`."""
        state = pre["state"]
        if state in ("Empty", "CompleteCommit", "CompleteAbort") and pre["producer_id"] != -1 \
                and pre["producer_epoch"] < 32766:
            return Action("InitProducerId", {"timeout_ms": 60_000, "expected_producer_id": -1, "expected_epoch": -1})
        if state == "Ongoing":
            free = sorted({f"{TOPIC}-{i}" for i in range(TOPIC_PARTITIONS)} - set(pre["partitions"]))
            if free:
                return Action("AddPartitions", {"pid": pre["producer_id"], "epoch": pre["producer_epoch"],
                                                "parts": [free[0]], "txn_version": pre["client_txn_version"]})
        if state in ("PrepareCommit", "PrepareAbort"):
            return Action("HoldComplete")
        return None

    def extra_actions(self, pre: Mapping[str, Any]) -> list[Action]:
        """Environment steps worth trying from `pre`: exhausting the epoch, and reloading the partition."""
        if pre["producer_id"] == -1 or pre["state"] not in ("Empty", "CompleteCommit", "CompleteAbort", "Ongoing"):
            return []
        return [Action("FastForward", {"epoch": e}) for e in (32765, 32766) if pre["producer_epoch"] < e]

"""Kafka's own Java client (4.0.2, the harness in conformance/reference/harness) runs Transactions V2 against
`kcoord serve` and against the reference Apache Kafka, and both brokers give the same outcomes, compared in one test:
commits and aborts (an epoch bump on every EndTxn), a fenced zombie, a producer restarted mid-transaction,
consume-transform-produce with sendOffsetsToTransaction (no AddOffsetsToTxn under V2), markers written with the
bumped epoch (DescribeProducers' epochs), and read_committed readers seeing exactly the committed records. A client
that stays on Transactions V1 (`--transaction-version 1`, as a pre-4.0 client) is compared too. Producer ids are
normalised (kcoord and Kafka hand out different ones); epochs, values and error types are not. Then groups of the
Java consumer, KIP-848 and classic with cooperative-sticky, joining and leaving: the same phases on both brokers.
"""

from __future__ import annotations

import contextlib
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import pytest
from served_cluster import ServedCluster

from kcoord.conformance.reference.clients import JavaHarness, ToolRun
from kcoord.conformance.reference.dump_log import compare_log_dirs, coordinator_dirs, summary
from kcoord.conformance.wire.raw import api_versions, split_bootstrap
from kcoord.conformance.wire.target import Target, wait_until

pytestmark = [pytest.mark.wire, pytest.mark.kafka, pytest.mark.slow]

TV2_APIS = {0: "Produce", 22: "InitProducerId", 24: "AddPartitionsToTxn", 25: "AddOffsetsToTxn", 26: "EndTxn",
            28: "TxnOffsetCommit"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCluster]:
    with ServedCluster(tmp_path_factory.mktemp("served-java"), 3, trace=False) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def harness() -> JavaHarness:
    return JavaHarness()


@pytest.fixture(scope="module")
def brokers(served: ServedCluster, reference_kafka: Any) -> Iterator[dict[str, Target]]:
    targets = {"kcoord": Target(served.bootstrap, timeout_s=60.0), "kafka": Target(reference_kafka.bootstrap,
                                                                                   timeout_s=60.0)}
    yield targets
    for t in targets.values():
        t.close()


T = TypeVar("T")
R = TypeVar("R")


def _on_both(fn: Callable[[T], R], over: dict[str, T]) -> dict[str, R]:
    """`fn` on each broker's value at the same time, a thread each: the brokers share nothing, and the harness's
    JVMs (one per call) mostly wait for a group to settle or a transaction to time out. A failure on either is
    raised here."""
    with ThreadPoolExecutor(len(over), thread_name_prefix="java-clients") as pool:
        futures = {name: pool.submit(fn, value) for name, value in over.items()}
        return {name: future.result() for name, future in futures.items()}


def _features(bootstrap: str, version: int) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]], int,
                                                      dict[int, int]]:
    """(supported, finalized, finalized epoch, max versions) from a raw ApiVersions of `version` (3 or 4)."""
    import importlib

    from kcoord.conformance.wire.raw import RawConnection

    schema = importlib.import_module(f"kio.schema.api_versions.v{version}")
    with RawConnection(split_bootstrap(bootstrap)[0]) as conn:
        r = conn.request(schema.ApiVersionsRequest(client_software_name="kcoord-test", client_software_version="1"))
    supported = {f.name: (int(f.min_version), int(f.max_version)) for f in r.supported_features}
    finalized = {f.name: (int(f.min_version_level), int(f.max_version_level)) for f in r.finalized_features}
    return supported, finalized, int(r.finalized_features_epoch), {int(k.api_key): int(k.max_version)
                                                                  for k in r.api_keys}


def test_api_versions_offer_transactions_v2_as_kafka_does(brokers: dict[str, Target]) -> None:
    """What Kafka 4.0.2 advertises in a raw ApiVersions v4: transaction.version 0-2 finalized at 2 (listed as min = max
    = 2) and group.version 0-1 finalized at 1, with a finalized epoch a client accepts (>= 0); a v3 answer leaves out
    every supported feature whose minimum is 0 (KAFKA-17492) but keeps the finalized levels; and the TV2 versions of
    the transaction APIs. kcoord advertises the same for these two features and APIs."""
    seen = {(name, v): _features(t.bootstrap, v) for name, t in brokers.items() for v in (3, 4)}
    for (name, v), (supported, finalized, epoch, _) in seen.items():
        wanted = {"transaction.version": (0, 2), "group.version": (0, 1)} if v == 4 else {}
        assert {k: supported.get(k) for k in wanted} == wanted and not \
            {"transaction.version", "group.version"} & (set(supported) - set(wanted)), (name, v, supported)
        assert finalized["transaction.version"] == (2, 2) and finalized["group.version"] == (1, 1), (name, v)
        assert epoch >= 0, name
    kc, kafka = seen["kcoord", 4][3], seen["kafka", 4][3]
    assert {TV2_APIS[k]: kc[k] for k in TV2_APIS} == {TV2_APIS[k]: kafka[k] for k in TV2_APIS}
    assert api_versions(split_bootstrap(brokers["kcoord"].bootstrap)[0])[26] == (0, 5)


def _normal(value: Any, run: str, names: dict[int, str]) -> Any:
    """`value` with the run's prefix (topic and transactional id names, upper-cased too by consume-transform-produce)
    written RUN, and producer ids named in order of appearance (`p0`, `p1`, ...)."""
    if isinstance(value, str):
        return value.replace(run, "RUN").replace(run.upper(), "RUN")
    if isinstance(value, list | tuple):
        return type(value)(_normal(v, run, names) for v in value)
    if isinstance(value, dict):
        return {_normal(k, run, names): (names.setdefault(v, f"p{len(names)}")
                                         if k == "producer_id" and isinstance(v, int) else _normal(v, run, names))
                for k, v in value.items()}
    return value


def _producers(target: Target, topic: str, partitions: int, pids: dict[int, str]
               ) -> dict[int, list[tuple[str, int, int]]]:
    """DescribeProducers per partition: (producer, epoch, last sequence) — the latest marker's epoch, and under TV2
    no sequence (the marker's bumped epoch resets it)."""
    from kafka.structs import TopicPartition

    states = target.admin().describe_producers([TopicPartition(topic, p) for p in range(partitions)])
    return {tp.partition: sorted((pids.get(s.producer_id, "other"), s.producer_epoch, s.last_sequence)
                                 for s in state.active_producers) for tp, state in states.items()}


def _workload(harness: JavaHarness, target: Target, version: int) -> dict[str, Any]:
    """Every transactional flow of the harness on fresh topics of `target` (one JVM); what each client and reader
    saw, with the run's names and the producer ids normalised."""
    run = f"j{uuid.uuid4().hex[:6]}"
    topic, source, sink = f"{run}-data", f"{run}-in", f"{run}-out"
    for name in (topic, source, sink):
        target.create_topic(name, 3)
    common = {"bootstrap": target.bootstrap, "transaction_version": version}
    producer, zombie, restart, committed, everything, src, ctp, sunk = harness.batch([
        ("producer", {"topic": topic, "transactional_id": f"{run}-p", "ops": "commit:3,abort:2,commit:2", **common}),
        ("zombie", {"topic": topic, "transactional_id": f"{run}-z", **common}),
        ("restart", {"topic": topic, "transactional_id": f"{run}-r", **common}),
        ("read", {"bootstrap": target.bootstrap, "topic": topic, "isolation": "read_committed"}),
        ("read", {"bootstrap": target.bootstrap, "topic": topic, "isolation": "read_uncommitted"}),
        ("producer", {"topic": source, "transactional_id": f"{run}-src", "ops": "commit:6,abort:3,commit:3", **common}),
        ("ctp", {"input": source, "output": sink, "group": f"{run}-g", "transactional_id": f"{run}-ctp", "expect": 9,
                 "abort_first": True, "protocol": "consumer", **common}),
        ("read", {"bootstrap": target.bootstrap, "topic": sink, "isolation": "read_committed"}),
    ])
    pids: dict[int, str] = {}
    out: dict[str, Any] = _normal({"producer": producer, "zombie": zombie, "restart": restart}, run, pids)
    out["producers"] = _producers(target, topic, 3, pids)
    out["read_committed"] = sorted((r["partition"], r["value"]) for r in committed[-1]["records"])
    out["read_uncommitted"] = sorted(r["value"] for r in everything[-1]["records"])
    out["source"] = src
    out["ctp"] = {"transaction_versions": sorted({e["transaction_version"] for e in ctp if "transaction_version" in e}),
                  "aborted_first": ctp[1]["event"] == "abort",
                  "committed_records": sum(e["records"] for e in ctp if e["event"] == "commit"),
                  "offsets": ctp[-1]["offsets"]}
    out["ctp_output"] = sorted((r["partition"], r["value"]) for r in sunk[-1]["records"])
    return _normal(out, run, pids)


def _committed_values(events: list[dict[str, Any]]) -> list[str]:
    return [v for e in events if e["event"] == "commit" for v in e["values"]]


@pytest.mark.parametrize("version", [2, 1])
def test_the_java_client_gets_the_same_outcomes_from_kcoord_and_kafka(harness: JavaHarness,
                                                                      brokers: dict[str, Target],
                                                                      version: int) -> None:
    outcomes = _on_both(lambda target: _workload(harness, target, version), brokers)
    kc = outcomes["kcoord"]
    assert kc == outcomes["kafka"]
    bump = 1 if version == 2 else 0  # TV2: every EndTxn bumps the epoch; TV1: never
    assert [(e["event"], e["epoch"], e["transaction_version"]) for e in kc["producer"]] == \
        [("init", 0, version), ("commit", bump, version), ("abort", 2 * bump, version), ("commit", 3 * bump, version)]
    committed = [v for part in ("producer", "zombie", "restart") for v in _committed_values(kc[part])]
    assert sorted(v for _, v in kc["read_committed"]) == sorted(committed)  # exactly the committed records
    assert {"RUN-p/1/0", "zombie/before/0", "lost/0"} <= set(kc["read_uncommitted"])  # the aborted ones are there
    # a restart mid-transaction: the fence and its abort bump once (4.0.2), the new producer's retry once more
    assert [e["epoch"] for e in kc["restart"] if e["event"] in ("open", "init-after-restart")] == [0, 2]
    assert kc["zombie"][2] == {"event": "zombie", "errors": ["ExecutionException: InvalidProducerEpochException"]}
    # every marker carries an epoch the client was told after an EndTxn (under TV2 a bumped one, which resets the
    # partition's sequence)
    told: dict[str, set[int]] = {}
    for part in ("producer", "zombie", "restart"):
        for e in kc[part]:
            if e["event"] in ("commit", "abort"):
                told.setdefault(e["producer_id"], set()).add(e["epoch"])
    for partition, producers in kc["producers"].items():
        for producer, epoch, sequence in producers:
            assert epoch in told[producer] and (sequence == -1) == (version == 2), (partition, producer)
    assert kc["ctp"] == {"transaction_versions": [version], "aborted_first": True, "committed_records": 9,
                         "offsets": {"RUN-in-0": 6, "RUN-in-1": 6, "RUN-in-2": 6}}  # past each partition's last record
    assert sorted(v for _, v in kc["ctp_output"]) == sorted(v.upper() for v in _committed_values(kc["source"]))


def _raw_batched_adds(target: Target) -> list[Any]:
    """A broker's AddPartitionsToTxn v5 (KIP-890's batched form) to the coordinator, raw: add a partition (TV2),
    verify it and one never added, end the transaction with EndTxn v5, verify again."""
    import datetime

    from kio.schema.add_partitions_to_txn.v5 import request as add
    from kio.schema.end_txn.v5 import EndTxnRequest
    from kio.schema.find_coordinator.v4 import FindCoordinatorRequest
    from kio.schema.init_producer_id.v5 import InitProducerIdRequest
    from kio.static.primitive import i8, i16, i32, i32Timedelta, i64

    from kcoord.conformance.wire.raw import RawConnection

    txn, topic = f"raw-{uuid.uuid4().hex[:6]}", f"raw-{uuid.uuid4().hex[:6]}"
    target.create_topic(topic, 2)
    found: list[Any] = []

    def coordinator_known() -> bool:  # a new cluster makes __transaction_state on the first lookup
        with RawConnection(split_bootstrap(target.bootstrap)[0]) as conn:
            found[:] = conn.request(FindCoordinatorRequest(key_type=i8(1), coordinator_keys=(txn,))).coordinators
        return found[0].error_code.name == "none"

    inits: list[Any] = []

    def initialised() -> bool:  # (and its partition loaded: a new cluster's coordinator answers
        wait_until(coordinator_known, 30, f"a coordinator for {txn}", interval_s=0.5)  # NOT_COORDINATOR a while)
        with RawConnection((found[0].host, int(found[0].port))) as conn:
            inits[:] = [conn.request(InitProducerIdRequest(
                transactional_id=txn, transaction_timeout=i32Timedelta.parse(datetime.timedelta(seconds=60)),
                producer_id=i64(-1), producer_epoch=i16(-1)))]
        return inits[0].error_code.name == "none"

    wait_until(initialised, 30, f"InitProducerId for {txn}", interval_s=0.5)
    (coordinator,) = found
    pid, epoch = inits[0].producer_id, inits[0].producer_epoch
    with RawConnection((coordinator.host, int(coordinator.port))) as conn:

        def batched(verify_only: bool, *partitions: int) -> list[tuple[str, int, str]]:
            answer = conn.request(add.AddPartitionsToTxnRequest(transactions=(add.AddPartitionsToTxnTransaction(
                transactional_id=txn, producer_id=pid, producer_epoch=epoch, verify_only=verify_only,
                topics=(add.AddPartitionsToTxnTopic(name=topic, partitions=tuple(i32(p) for p in partitions)),)),)))
            assert answer.error_code.name == "none"
            return sorted((t.transactional_id.replace(txn, "TXN"), p.partition_index, p.partition_error_code.name)
                          for t in answer.results_by_transaction for r in t.topic_results
                          for p in r.results_by_partition)  # (Kafka answers in its map's order)

        out: list[Any] = [batched(False, 0), batched(True, 0, 1)]
        end = conn.request(EndTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=epoch, committed=True))
        out.append((end.error_code.name, end.producer_epoch - epoch))
        out.append(batched(True, 0))  # the old epoch: fenced
    return out


def test_batched_add_partitions_v5_answers_as_kafka(brokers: dict[str, Target]) -> None:
    """AddPartitionsToTxn v4+ is what partition leaders send the coordinator (Kafka advertises it to everyone): an add
    at client version 2, a verify-only per partition, each transaction answered on its own."""
    answers = {name: _raw_batched_adds(target) for name, target in brokers.items()}
    assert answers["kcoord"] == answers["kafka"]
    assert answers["kcoord"] == [[("TXN", 0, "none")], [("TXN", 0, "none"), ("TXN", 1, "transaction_abortable")],
                                 ("none", 1), [("TXN", 0, "producer_fenced")]]


def _group(harness: JavaHarness, target: Target, protocol: str) -> dict[str, Any]:
    """Two members of one group (KIP-848, or classic with the cooperative-sticky assignor) over committed records:
    the first joins alone, the second joins, the first leaves; the partitions each phase settles on, what the group
    read, and what it committed."""
    from kafka.structs import TopicPartition

    run = f"g{uuid.uuid4().hex[:6]}"
    topic, group = f"{run}-data", f"{run}-{protocol}"
    target.create_topic(topic, 3)
    source, events = harness.batch([
        ("producer", {"bootstrap": target.bootstrap, "topic": topic, "transactional_id": f"{run}-p",
                      "ops": "commit:6,abort:3,commit:3"}),
        ("group", {"bootstrap": target.bootstrap, "topic": topic, "group": group, "members": 2, "protocol": protocol,
                   "assignor": "cooperative-sticky", "expect": 9}),
    ])
    phases = [e["assignments"] for e in events if e["event"] == "phase"]
    committed = target.admin().list_group_offsets({group: [TopicPartition(topic, p) for p in range(3)]})[group]
    return {
        "phases": [sorted((len(ps), tuple(ps) if len(owners) == 1 else ()) for ps in owners.values())
                   for owners in phases],
        "owners_by_phase": [sorted(owners) for owners in phases],
        "union": [sorted(p for ps in owners.values() for p in ps) for owners in phases],
        "read": sorted(v.replace(run, "RUN") for e in events if e["event"] == "consumed" for v in e["values"]),
        "committed": {tp.partition: om.offset for tp, om in committed.items()},
        "errors": [e for e in events if e["event"] in ("member-error", "error")],
        "written": sorted(v.replace(run, "RUN") for e in source if e["event"] == "commit" for v in e["values"]),
    }


@pytest.mark.parametrize("protocol", ["consumer", "classic"])
def test_a_group_of_the_java_client_settles_alike_on_kcoord_and_kafka(harness: JavaHarness,
                                                                      brokers: dict[str, Target],
                                                                      protocol: str) -> None:
    """KIP-848's consumer protocol (the broker assigns) and the classic protocol with the cooperative-sticky assignor
    (the client assigns, in two rounds): the same phases, the group reads exactly the committed records (read_committed)
    and commits past each partition's last one."""
    outcomes = _on_both(lambda target: _group(harness, target, protocol), brokers)
    kc = outcomes["kcoord"]
    assert kc == outcomes["kafka"]
    assert kc["owners_by_phase"] == [["0"], ["0", "1"], ["1"]]
    assert kc["union"] == [[0, 1, 2]] * 3 and kc["phases"][1] == [(1, ()), (2, ())]
    assert kc["read"] == kc["written"] and len(kc["read"]) == 9 and kc["errors"] == []
    assert kc["committed"] == {0: 7, 1: 7, 2: 7}  # the position past the last commit marker (control records skipped)


# ---------------------------------------------------------------- Kafka reads kcoord's logs, kcoord reads Kafka's


def _log_workload(harness: JavaHarness, target: Target) -> None:
    """What makes a coordinator write every record type it has: committed, aborted and left-open transactions of a
    Transactions V2 and a V1 client; a KIP-848 group with a classic member and static members, one subscribed to a
    regular expression (KIP-848 resolves it: record type 16), a classic group; offsets committed by each as they
    leave; one group deleted (tombstones)."""
    run = f"l{uuid.uuid4().hex[:6]}"
    topic, b = f"{run}-logs", ("--bootstrap-server", target.bootstrap)
    for name in (topic, f"{run}-out", f"{run}-open"):
        target.create_topic(name, 3)
    common = {"bootstrap": target.bootstrap, "topic": topic}
    harness.batch([("producer", {**common, "transactional_id": f"{run}-v2", "ops": "commit:3,abort:1"}),
                   ("producer", {**common, "transactional_id": f"{run}-v1", "ops": "commit:2,abort:1",
                                 "transaction_version": 1}),
                   ("ctp", {"bootstrap": target.bootstrap, "input": topic, "output": f"{run}-out",
                            "group": f"{run}-ctp", "transactional_id": f"{run}-ctp", "expect": 5,
                            "protocol": "consumer"}),  # transactional offsets: markers in __consumer_offsets
                   ("producer", {**common, "topic": f"{run}-open", "transactional_id": f"{run}-open",
                                 "ops": "commit:1,open:1"})])  # (read_committed stops before an open transaction)
    groups = {"mixed": {"protocols": "consumer,classic", "static": True}, "regex": {"protocol": "consumer",
                                                                                   "pattern": f"{run}-lo.*"},
              "classic": {"protocol": "classic", "assignor": "cooperative-sticky"}}
    for name, options in groups.items():
        with harness.hold(**common, group=f"{run}-{name}", members=2, **options):
            pass
    (deleted,) = harness.tools([ToolRun("kafka-consumer-groups", (*b, "--delete", "--group", f"{run}-classic"))])
    assert deleted.exit_code == 0, deleted.stderr


def _snapshot(source: Path, copy: Path) -> Path:
    """The segments of every coordinator partition under `source`, copied when their sizes stopped changing (a
    broker still running: a batch being written is not read half)."""
    def sizes() -> dict[Path, int]:
        return {f: f.stat().st_size for d in coordinator_dirs(source) for f in d.glob("*.log")}

    def settled() -> bool:
        before = sizes()
        time.sleep(0.5)
        return sizes() == before

    wait_until(settled, 30.0, "the coordinator logs to settle")
    for d in coordinator_dirs(source):
        (copy / d.name).mkdir(parents=True)
        for f in d.glob("*.log"):
            with contextlib.suppress(FileNotFoundError):  # (Kafka's cleaner swapped it meanwhile)
                shutil.copy2(f, copy / d.name / f.name)
    return copy


#: what the workload has each broker write: record type and value version (offsets v3, classic group metadata v3 with
#: static members, KIP-848's types 3-8 and the resolved regular expression, 16), tombstones, TransactionLogValue v1 of
#: both client versions (Kafka 4.0.2 writes v1 with ClientTransactionVersion 0 for a V1 client too, as kcoord does),
#: and the markers of transactional offset commits
REQUIRED_KINDS = {"consumer_offsets key 1 value 3", "consumer_offsets key 1 tombstone",
                  "consumer_offsets key 2 value 3", "consumer_offsets key 2 tombstone",
                  *(f"consumer_offsets key {t} value 0" for t in (3, 4, 5, 6, 7, 8, 16)),
                  "transaction value 1 client version 2", "transaction value 1 client version 0", "marker"}


def test_kafka_decodes_kcoords_coordinator_logs_and_kcoord_reads_kafkas(
        harness: JavaHarness, brokers: dict[str, Target], served: ServedCluster, reference_kafka: Any,
        tmp_path: Path) -> None:
    """Kafka 4.0.2's kafka-dump-log (--offsets-decoder, --transaction-log-decoder) decodes every segment of every
    coordinator partition kcoord wrote, and every field it prints equals what kcoord's reader gives (the record each
    side sees at each offset, its type and version, every key and value field, a marker's type and coordinator epoch).
    The same comparison on the reference broker's own coordinator partitions (one replica: node 0) is kcoord reading
    every record Kafka 4.0.2 wrote, none refused. Both brokers ran the same workload first, so each wrote every record
    type a group and a transaction coordinator write."""
    _on_both(lambda target: _log_workload(harness, target), brokers)
    roots = {"kcoord": (served.data_dir, tmp_path / "kcoord"),
             "kafka": (reference_kafka.options.data_dir / "node-0", tmp_path / "kafka")}
    compared = _on_both(lambda dirs: compare_log_dirs(harness, _snapshot(*dirs)), roots)
    for name, c in compared.items():
        missing = sorted(REQUIRED_KINDS - set(c.kinds))
        assert (c.problems[:10], missing) == ([], []), (name, ", ".join(summary(c.kinds)))
        assert c.records == sum(c.kinds.values()) and c.segments >= 2, name

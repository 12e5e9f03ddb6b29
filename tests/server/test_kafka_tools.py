"""Kafka's own command-line tools (4.0.2, run through the harness: many runs to one JVM) against `kcoord serve` and
against the reference Apache Kafka: the same commands, the same kind of answer. kafka-topics (--create, --list,
--describe), kafka-console-producer and -consumer (read_committed), kafka-get-offsets, kafka-consumer-groups (--list,
--describe with and without members, --members --verbose, --state, --reset-offsets --execute, --delete-offsets,
--delete) for a classic and a KIP-848 group, and kafka-transactions (list, describe, describe-producers,
find-hanging, abort of an open transaction). Each output is normalised before the comparison: the run's names,
topic and member ids, producer ids, timestamps, hosts, which broker leads what, column widths, and the order of
rows that have none; a topic's Configs column is left out (the reference's server.properties sets
min.insync.replicas, kcoord's defaults show nothing).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from served_cluster import ServedCluster

from kcoord.conformance.reference.clients import JavaHarness, ToolResult, ToolRun

pytestmark = [pytest.mark.wire, pytest.mark.kafka, pytest.mark.slow]



@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCluster]:
    with ServedCluster(tmp_path_factory.mktemp("served-tools"), 3, trace=False) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def harness() -> JavaHarness:
    return JavaHarness()


@pytest.fixture(scope="module")
def brokers(served: ServedCluster, reference_kafka: Any) -> dict[str, str]:
    return {"kcoord": served.bootstrap, "kafka": reference_kafka.bootstrap}


def _lines(result: ToolResult, run: str, *, ordered: bool = True, keep: Callable[[str], bool] = lambda _: True,
           members: tuple[str, ...] = ()) -> list[str]:
    """The tool's output (stdout then stderr) as normalised lines (`members`: member ids to mask)."""
    out = []
    for line in (result.stdout + result.stderr).splitlines():
        for member in members:
            line = line.replace(member, "MEMBER")
        if members:  # which member gets which partitions is the assignor's choice, by member ids (random)
            line = re.sub(r"(-a):[\d,]+", r"\1:P", line)
        line = line.replace(run, "RUN")
        line = re.sub(r"TopicId: \S+", "TopicId: ID", line)
        line = re.sub(r"Configs: .*", "Configs: -", line)
        line = re.sub(r"Leader: \d+\tReplicas: \d+\tIsr: \d+", "Leader: N Replicas: N Isr: N", line)
        line = re.sub(r"127\.0\.0\.1:\d+\s+\(\d+\)", "HOST (N)", line)
        line = re.sub(r"-m\d\b", "-mX", line)
        line = re.sub(r"Epoch: \d+", "Epoch: N", line)
        line = re.sub(r"[ \t]+", " ", line).strip()
        if line and keep(line):
            out.append(line)
    return [f"exit {result.exit_code}", *(out if ordered else sorted(out))]


def _table(result: ToolResult, run: str, producers: dict[str, str]) -> list[str]:
    """A kafka-transactions table (tab-separated): producer ids named in order of appearance, coordinators,
    timestamps and durations masked, rows sorted."""
    rows = [line.split("\t") for line in result.stdout.splitlines() if line.strip()]
    if not rows:
        return [f"exit {result.exit_code}"]
    header, body = [c.strip() for c in rows[0] if c.strip()], rows[1:]
    masked = []
    for row in body:
        cells = dict(zip(header, (c.strip().replace(run, "RUN") for c in row), strict=False))
        if "ProducerId" in cells:
            cells["ProducerId"] = producers.setdefault(cells["ProducerId"], f"p{len(producers)}")
        if "TopicPartitions" in cells:  # (Kafka lists them in its hash set's order)
            cells["TopicPartitions"] = ",".join(sorted(cells["TopicPartitions"].split(",")))
        for name in ("Coordinator", "CoordinatorId", "LastTimestamp", "CurrentTransactionStartTimeMs",
                     "TransactionDurationMs", "Duration(min)", "LatestCoordinatorEpoch", "CoordinatorEpoch"):
            if name in cells:
                cells[name] = "-"
        masked.append(" ".join(f"{k}={v}" for k, v in cells.items()))
    return [f"exit {result.exit_code}", " ".join(header), *sorted(masked)]


def _diff(kcoord: Any, kafka: Any) -> str:
    """kcoord's normalised answers against Kafka's, as a unified diff (what a failure shows)."""
    import difflib
    import json

    return "\n".join(difflib.unified_diff(json.dumps(kafka, indent=1).splitlines(),
                                          json.dumps(kcoord, indent=1).splitlines(), "kafka", "kcoord", lineterm=""))


def _run(harness: JavaHarness, *runs: ToolRun) -> list[ToolResult]:
    return harness.tools(list(runs), timeout_s=45)


def _topics_and_offsets(harness: JavaHarness, bootstrap: str, run: str) -> dict[str, Any]:
    """kafka-topics, the console producer and consumer, kafka-get-offsets, and a group with no member left."""
    b, topic, group = ("--bootstrap-server", bootstrap), f"{run}-a", f"{run}-g1"
    keyed = "".join(f"k{i}:v{i}\n" for i in range(6))
    r = _run(harness,
             ToolRun("kafka-topics", (*b, "--create", "--topic", topic, "--partitions", "3")),
             ToolRun("kafka-topics", (*b, "--create", "--topic", f"{run}-c", "--partitions", "3")),
             ToolRun("kafka-topics", (*b, "--list")),
             ToolRun("kafka-topics", (*b, "--describe", "--topic", topic)),
             ToolRun("kafka-console-producer", (*b, "--topic", topic, "--property", "parse.key=true",
                                                "--property", "key.separator=:"), stdin=keyed),
             ToolRun("kafka-console-consumer", (*b, "--topic", topic, "--group", group, "--from-beginning",
                                                "--isolation-level", "read_committed", "--max-messages", "6",
                                                "--timeout-ms", "20000", "--property", "print.key=true")),
             ToolRun("kafka-get-offsets", (*b, "--topic", topic)),
             ToolRun("kafka-get-offsets", (*b, "--topic", topic, "--time", "-2")),
             ToolRun("kafka-consumer-groups", (*b, "--list")),
             ToolRun("kafka-consumer-groups", (*b, "--describe", "--group", group)),
             ToolRun("kafka-consumer-groups", (*b, "--describe", "--group", group, "--state")),
             ToolRun("kafka-configs", (*b, "--describe", "--entity-type", "topics", "--entity-name", topic)),
             ToolRun("kafka-features", (*b, "describe")))
    ours = lambda line: "RUN" in line  # noqa: E731  (other tests' topics and groups share the brokers)
    # (kcoord's finalized features are these two; Kafka's KRaft ones, metadata.version and kraft.version, it has not)
    coordinators = lambda line: line.startswith(("Feature: group.version", "Feature: transaction.version"))  # noqa: E731
    return {
        "create": [_lines(x, run) for x in r[:2]], "list": _lines(r[2], run, ordered=False, keep=ours),
        "describe": _lines(r[3], run), "produce": _lines(r[4], run),
        "consume": _lines(r[5], run, ordered=False),
        "latest": _lines(r[6], run, ordered=False), "earliest": _lines(r[7], run, ordered=False),
        "groups": _lines(r[8], run, ordered=False, keep=ours),
        "group": _lines(r[9], run, ordered=False), "state": _lines(r[10], run),
        "configs": _lines(r[11], run), "features": _lines(r[12], run, ordered=False, keep=coordinators),
    }


def _held(harness: JavaHarness, bootstrap: str, run: str, protocol: str) -> dict[str, Any]:
    """kafka-consumer-groups on a group whose two members are running, then once they left."""
    b, topic, group = ("--bootstrap-server", bootstrap), f"{run}-a", f"{run}-{protocol}"
    with harness.hold(bootstrap=bootstrap, topic=topic, group=group, members=2, protocol=protocol,
                      commit=False) as events:  # (what a member has read by the time of a describe is timing)
        members = tuple(events[-1]["member_ids"].values())
        live = _run(harness,
                    ToolRun("kafka-consumer-groups", (*b, "--describe", "--group", group, "--members", "--verbose")),
                    ToolRun("kafka-consumer-groups", (*b, "--describe", "--group", group)),
                    ToolRun("kafka-consumer-groups", (*b, "--describe", "--group", group, "--state")),
                    ToolRun("kafka-consumer-groups", (*b, "--delete", "--group", group)))
    after = _run(harness,
                 ToolRun("kafka-consumer-groups", (*b, "--reset-offsets", "--group", group, "--topic", topic,
                                                   "--to-earliest", "--execute")),
                 ToolRun("kafka-consumer-groups", (*b, "--describe", "--group", group)),
                 ToolRun("kafka-consumer-groups", (*b, "--delete-offsets", "--group", group, "--topic", topic)),
                 ToolRun("kafka-consumer-groups", (*b, "--describe", "--group", group, "--state")),
                 ToolRun("kafka-consumer-groups", (*b, "--delete", "--group", group)),
                 ToolRun("kafka-consumer-groups", (*b, "--list")))
    ours = lambda line: "RUN" in line  # noqa: E731
    return {"live": [_lines(x, run, ordered=False, members=members) for x in live],
            "after": [*(_lines(x, run, ordered=False) for x in after[:5]), _lines(after[5], run, keep=ours)]}


def _transactions(harness: JavaHarness, bootstrap: str, run: str) -> dict[str, Any]:
    """kafka-transactions on a finished transactional id and on an open transaction, which is then aborted."""
    b, topic = ("--bootstrap-server", bootstrap), f"{run}-c"
    harness.batch([("producer", {"bootstrap": bootstrap, "topic": topic, "transactional_id": f"{run}-x",
                                 "ops": "commit:2,abort:1"}),
                   ("producer", {"bootstrap": bootstrap, "topic": topic, "transactional_id": f"{run}-y",
                                 "ops": "commit:1,open:2"})])
    before = _run(harness,
                  ToolRun("kafka-transactions", (*b, "list")),
                  ToolRun("kafka-transactions", (*b, "describe", "--transactional-id", f"{run}-x")),
                  ToolRun("kafka-transactions", (*b, "describe", "--transactional-id", f"{run}-y")),
                  *(ToolRun("kafka-transactions", (*b, "describe-producers", "--topic", topic, "--partition", str(p)))
                    for p in range(3)),
                  ToolRun("kafka-transactions", (*b, "find-hanging", "--topic", topic, "--max-transaction-timeout",
                                                 "0")),
                  ToolRun("kafka-console-consumer", (*b, "--topic", topic, "--from-beginning", "--isolation-level",
                                                     "read_committed", "--timeout-ms", "3000")))
    open_at = [line.split("\t") for line in before[3].stdout.splitlines()[1:]]
    start = next(cells[5].strip() for cells in open_at if cells[5].strip() != "None")
    after = _run(harness,
                 ToolRun("kafka-transactions", (*b, "abort", "--topic", topic, "--partition", "0", "--start-offset",
                                                start)),
                 ToolRun("kafka-transactions", (*b, "describe-producers", "--topic", topic, "--partition", "0")),
                 ToolRun("kafka-console-consumer", (*b, "--topic", topic, "--from-beginning", "--isolation-level",
                                                    "read_committed", "--timeout-ms", "3000")))
    producers = {cells[2].strip(): f"pid({cells[0].strip().replace(run, 'RUN')})"  # named by transactional id
                 for cells in (line.split("\t") for line in before[0].stdout.splitlines()) if run in cells[0]}
    tables = [_table(x, run, producers) for x in before[:7]]
    tables[0] = [row for row in tables[0] if "RUN" in row or not row.startswith("TransactionalId=")]
    return {"before": tables, "read_before": _lines(before[7], run, ordered=False),
            "abort": _lines(after[0], run), "after": _table(after[1], run, producers),
            "read_after": _lines(after[2], run, ordered=False)}


def _outcome(harness: JavaHarness, bootstrap: str) -> dict[str, Any]:
    run = f"t{uuid.uuid4().hex[:6]}"
    return {"topics": _topics_and_offsets(harness, bootstrap, run),
            **{protocol: _held(harness, bootstrap, run, protocol) for protocol in ("classic", "consumer")},
            "transactions": _transactions(harness, bootstrap, run)}


@pytest.fixture(scope="module")
def outcomes(harness: JavaHarness, brokers: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Both brokers' answers, each broker driven from a thread of its own at the same time: the tools' JVMs mostly
    wait (for a group to settle, a console consumer's timeout), and the brokers share nothing (~80 -> ~45 s)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(brokers), thread_name_prefix="kafka-tools") as pool:
        futures = {name: pool.submit(_outcome, harness, bootstrap) for name, bootstrap in brokers.items()}
        return {name: future.result() for name, future in futures.items()}


def test_kafka_topics_console_clients_and_get_offsets_answer_as_on_kafka(outcomes: dict[str, dict[str, Any]]) -> None:
    kc = outcomes["kcoord"]["topics"]
    assert kc == outcomes["kafka"]["topics"], _diff(kc, outcomes["kafka"]["topics"])
    assert kc["create"] == [["exit 0", "Created topic RUN-a."], ["exit 0", "Created topic RUN-c."]]
    assert kc["list"] == ["exit 0", "RUN-a", "RUN-c"]
    assert kc["describe"][1].startswith("Topic: RUN-a TopicId: ID PartitionCount: 3 ReplicationFactor: 1")
    assert sorted(line for line in kc["consume"] if line.startswith("k")) == [f"k{i} v{i}" for i in range(6)]
    assert sum(int(line.rsplit(":", 1)[1]) for line in kc["latest"][1:]) == 6
    assert any(line.endswith("Empty 0") for line in kc["state"])
    assert kc["configs"] == ["exit 0", "Dynamic configs for topic RUN-a are:"]
    assert kc["features"] == ["exit 0", "Feature: group.version SupportedMinVersion: 0 SupportedMaxVersion: 1 "
                                        "FinalizedVersionLevel: 1 Epoch: N",
                              "Feature: transaction.version SupportedMinVersion: 0 SupportedMaxVersion: 2 "
                              "FinalizedVersionLevel: 2 Epoch: N"]


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_kafka_consumer_groups_answers_as_on_kafka(outcomes: dict[str, dict[str, Any]], protocol: str) -> None:
    kc = outcomes["kcoord"][protocol]
    assert kc == outcomes["kafka"][protocol], _diff(kc, outcomes["kafka"][protocol])
    members, _, state, refused = kc["live"]
    assert len([line for line in members if line.startswith("RUN")]) == 2
    assert any(line.endswith("Stable 2") for line in state) and "GroupNotEmptyException" in " ".join(refused)
    reset, _, deleted, emptied, gone, listed = kc["after"]
    assert [line.rsplit(" ", 1)[1] for line in reset if line.startswith("RUN")] == ["0", "0", "0"]
    assert "Successful" in " ".join(deleted) and any(line.endswith("Empty 0") for line in emptied)
    assert "was successful" in " ".join(gone) and listed == ["exit 0", "RUN-g1"]  # (the tools test's own group)


def test_kafka_transactions_answers_as_on_kafka(outcomes: dict[str, dict[str, Any]]) -> None:
    kc = outcomes["kcoord"]["transactions"]
    assert kc == outcomes["kafka"]["transactions"], _diff(kc, outcomes["kafka"]["transactions"])
    listed, finished, open_txn = kc["before"][:3]
    assert {row.split()[0] for row in listed[2:]} == {"TransactionalId=RUN-x", "TransactionalId=RUN-y"}
    assert "TransactionState=CompleteAbort" in finished[2] and "TransactionState=Ongoing" in open_txn[2]
    assert kc["before"][6] == ["exit 0", "Topic Partition ProducerId ProducerEpoch CoordinatorEpoch StartOffset "
                                         "LastTimestamp Duration(min)"]  # open, but the coordinator knows it
    assert kc["abort"] == ["exit 0"]
    assert "CurrentTransactionStartOffset=None" in " ".join(kc["after"])


def _raw_topic_and_config_answers(bootstrap: str) -> dict[str, Any]:
    """DescribeTopicPartitions (paged by a cursor) and DescribeConfigs (topics, brokers, refusals), raw, to node 0."""
    from kio.schema.describe_configs.v4 import request as configs
    from kio.schema.describe_topic_partitions.v0 import request as topics
    from kio.static.primitive import i8, i32

    from kcoord.conformance.wire.raw import RawConnection, split_bootstrap
    from kcoord.conformance.wire.target import Target

    topic = f"raw-{uuid.uuid4().hex[:6]}"
    target = Target(bootstrap)
    target.create_topic(topic, 3)
    target.close()
    with RawConnection(split_bootstrap(bootstrap)[0]) as conn:
        def page(limit: int, cursor: tuple[str, int] | None, *names: str) -> list[Any]:
            answer = conn.request(topics.DescribeTopicPartitionsRequest(
                topics=tuple(topics.TopicRequest(name=n) for n in names), response_partition_limit=i32(limit),
                cursor=None if cursor is None else topics.Cursor(topic_name=cursor[0],
                                                                  partition_index=i32(cursor[1]))))
            shown = [(t.name.replace(topic, "T"), t.error_code.name, [p.partition_index for p in t.partitions])
                     for t in answer.topics]
            nxt = answer.next_cursor
            return [shown, None if nxt is None else (nxt.topic_name.replace(topic, "T"), nxt.partition_index)]

        def describe(kind: int, name: str) -> tuple[str, str | None, bool]:
            (result,) = conn.request(configs.DescribeConfigsRequest(resources=(configs.DescribeConfigsResource(
                resource_type=i8(kind), resource_name=name, configuration_keys=None),), include_synonyms=True,
                include_documentation=False)).results
            return result.error_code.name, result.error_message, bool(result.configs)

        return {
            "pages": [page(2, None, topic, "nope-" + topic), page(2, (topic, 2), topic)],
            "configs": [describe(2, topic), describe(2, "nope-" + topic), describe(2, "bad name"), describe(4, "0"),
                        describe(4, "1"), describe(4, "x"), describe(4, ""), describe(99, "any")],
            "segment_bytes": _config_value(conn, topic, "segment.bytes"),
        }


def _config_value(conn: Any, topic: str, name: str) -> tuple[str | None, int, list[tuple[str, int]]]:
    from kio.schema.describe_configs.v4 import request as configs
    from kio.static.primitive import i8

    (result,) = conn.request(configs.DescribeConfigsRequest(resources=(configs.DescribeConfigsResource(
        resource_type=i8(2), resource_name=topic, configuration_keys=(name,)),), include_synonyms=True,
        include_documentation=False)).results
    (entry,) = result.configs
    return entry.value, int(entry.config_source), [(s.name, int(s.source)) for s in entry.synonyms]


def test_describe_topic_partitions_and_describe_configs_answer_as_kafka(brokers: dict[str, str]) -> None:
    """What kafka-topics --describe asks, raw: the paging of DescribeTopicPartitions (KIP-966) and each refusal of
    DescribeConfigs, with Kafka's messages; a topic's segment.bytes with its broker synonym."""
    answers = {name: _raw_topic_and_config_answers(bootstrap) for name, bootstrap in brokers.items()}
    assert answers["kcoord"] == answers["kafka"], _diff(answers["kcoord"], answers["kafka"])
    assert answers["kcoord"]["pages"] == [[[("nope-T", "unknown_topic_or_partition", []), ("T", "none", [0, 1])],
                                           ("T", 2)], [[("T", "none", [2])], None]]  # (in name order)
    assert answers["kcoord"]["configs"][4] == (
        "invalid_request", "Unexpected broker id, expected 0 or empty string, but received 1", False)

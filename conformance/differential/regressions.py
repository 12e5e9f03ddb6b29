"""Programs on which kcoord once answered differently from Apache Kafka 4.0.2, shrunk by the fuzzer; each is replayed
on both brokers by the tests and must show no difference now.

Owns: `Regression` (a name, what Kafka does that kcoord did not, and the steps) and `REGRESSIONS`.
Must not import: `kcoord.impl`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .steps import Step


@dataclass(frozen=True, slots=True)
class Regression:
    name: str
    kafka_does: str
    steps: tuple[Step, ...]


REGRESSIONS: tuple[Regression, ...] = (
    Regression("describe-unknown-consumer-group",
               "ConsumerGroupDescribe of a group that does not exist: GROUP_ID_NOT_FOUND with an empty state (kcoord "
               "said Dead, as DescribeGroups does)",
               (Step("cg_describe", 0),)),
    Regression("describe-member-without-regex",
               "ConsumerGroupDescribe shows a member subscribed by topic names with SubscribedTopicRegex \"\", not "
               "null",
               (Step("cg_join", 0), Step("cg_describe", 0))),
    Regression("produce-sequence-gap-message",
               "Produce with a sequence gap: OUT_OF_ORDER_SEQUENCE_NUMBER with a null error message (kcoord named "
               "the spec row that refused)",
               (Step("init_pid", 2, value=2), Step("produce", 2, value=2))),
    Regression("fence-abort-keeps-the-epoch",
               "InitProducerId on an open transaction (a TV1 client) fences it at epoch + 1 and answers "
               "CONCURRENT_TRANSACTIONS until the abort is written; the abort keeps that epoch (KAFKA-19367, in "
               "4.0.2 at transaction.version 2), so the retry gets epoch + 2 (kcoord's spec bumped once more: + 3)",
               (Step("init_pid", 0), Step("add_partitions", 0, value=1), Step("produce", 0, value=1, flag=True),
                Step("init_pid", 1))),
    Regression("produce-fenced-epoch-message",
               "Produce at an epoch the coordinator has since bumped: INVALID_PRODUCER_EPOCH with a null message",
               (Step("init_pid", 0), Step("add_partitions", 0, value=1), Step("produce", 0, value=1, flag=True),
                Step("init_pid", 1), Step("produce", 0, value=1, flag=True))),
    Regression("leave-unknown-group",
               "LeaveGroup of a group that does not exist: no top-level error, UNKNOWN_MEMBER_ID for each member",
               (Step("sync", 0), Step("leave", 1))),
    Regression("produce-verification-fenced-message",
               "A transactional Produce at an epoch the coordinator fenced, verified by the coordinator: "
               "INVALID_PRODUCER_EPOCH with a null message",
               (Step("init_pid", 0, value=1), Step("restart_producer", 0), Step("init_pid", 1, value=1),
                Step("init_pid", 0, value=1), Step("produce", 1, value=10, flag=True))),
    Regression("describe-assignment-while-rebalancing",
               "DescribeGroups of a classic group in PreparingRebalance shows each member's assignment from the "
               "last generation (no metadata): ClassicGroupMember.describeNoMetadata",
               (Step("join", 0), Step("sync", 0), Step("join", 1), Step("describe_group", 0))),
    Regression("txn-offset-commit-not-added",
               "TxnOffsetCommit v3 before AddOffsetsToTxn: the verification's TRANSACTION_ABORTABLE reaches this "
               "client version as INVALID_TXN_STATE",
               (Step("init_pid", 1), Step("add_partitions", 1, value=1), Step("txn_commit_offsets", 1, value=3))),
    Regression("txn-offset-commit-fenced",
               "TxnOffsetCommit at an epoch a newer producer fenced: INVALID_PRODUCER_EPOCH, not PRODUCER_FENCED",
               (Step("init_pid", 1), Step("init_pid", 0), Step("txn_commit_offsets", 1, value=3))),
    Regression("produce-not-added",
               "A transactional Produce to a partition never added to the transaction: INVALID_TXN_STATE with "
               "\"Partition was not added to the transaction\" and no log start offset, answered before the log",
               (Step("init_pid", 2, value=1), Step("produce", 2, value=6, flag=True))),
    Regression("timed-out-producer-recovers",
               "A transaction that times out is aborted at epoch + 1 with the last epoch the old one (TV2 server), "
               "so the producer's InitProducerId with its old epoch is a retry: NONE at epoch + 1 (kcoord answered "
               "PRODUCER_FENCED: its abort left the last epoch unknown)",
               (Step("init_pid", 0), Step("add_partitions", 0, value=1), Step("produce", 0, value=1, flag=True),
                Step("wait"), Step("end_txn", 0, flag=True), Step("init_pid", 0, flag=True))),
)

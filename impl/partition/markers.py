"""WriteTxnMarkers on a broker: one `MarkerTarget` that sends each partition to whoever holds it.

Owns `BrokerMarkerTarget` (Kafka's `KafkaApis.handleWriteTxnMarkersRequest`): a marker's data partitions go to the
partition manager (control batches); partitions of an internal topic with a registered owner (`__consumer_offsets`
→ the group coordinator, which materialises or drops the producer's transactional offsets before it answers) go
there. Each marker is answered once all its partitions are, in the marker's partition order; the group
coordinator's COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS and NOT_COORDINATOR become
NOT_LEADER_OR_FOLLOWER, so the transaction coordinator's marker channel retries them. A front-door answer of our own:
a marker with a negative producer id or epoch (no control batch can carry it) is INVALID_REQUEST on every one of its
partitions and reaches no holder.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ..errors import Errors, KafkaError
from ..interfaces import MarkerResult, MarkerTarget, TopicPartition, TxnMarker
from ..runtime.completion import Completion

_COORDINATOR_ERRORS = frozenset({Errors.COORDINATOR_NOT_AVAILABLE, Errors.COORDINATOR_LOAD_IN_PROGRESS,
                                 Errors.NOT_COORDINATOR})


class BrokerMarkerTarget:
    """`data` answers for every topic not in `internal` (topic name → the component that holds its partitions)."""

    def __init__(self, data: MarkerTarget, internal: Mapping[str, MarkerTarget] | None = None) -> None:
        self.data = data
        self.internal = dict(internal or {})

    def register(self, topic: str, target: MarkerTarget) -> None:
        """Plug in the holder of an internal topic (e.g. the group coordinator for `__consumer_offsets`)."""
        self.internal[topic] = target

    def write_txn_markers(self, markers: Sequence[TxnMarker]) -> Completion[list[MarkerResult]]:
        out: Completion[list[MarkerResult]] = Completion()
        answers: list[dict[TopicPartition, str]] = [{} for _ in markers]
        parts: dict[int, list[tuple[int, TxnMarker]]] = {}  # id(target) -> (marker index, marker restricted to it)
        targets: dict[int, tuple[MarkerTarget, bool]] = {}
        for i, marker in enumerate(markers):
            if marker.producer_id < 0 or marker.producer_epoch < 0:
                answers[i] = dict.fromkeys(marker.partitions, Errors.INVALID_REQUEST)
                continue
            for target, internal, tps in self._split(marker):
                targets[id(target)] = (target, internal)
                # (the constructor, not `dataclasses.replace`: ~2x cheaper, twice per commit)
                parts.setdefault(id(target), []).append((i, TxnMarker(
                    marker.producer_id, marker.producer_epoch, marker.result, marker.coordinator_epoch, tuple(tps))))
        remaining = [len(parts)]

        def answered() -> list[MarkerResult]:
            return [{tp: answers[i][tp] for tp in m.partitions} for i, m in enumerate(markers)]

        def finish() -> None:
            remaining[0] -= 1
            if remaining[0] == 0:
                out.set(answered())

        if not parts:  # nothing to send (no markers, or only refused ones)
            out.set(answered())
        for key, sent in parts.items():
            target, internal = targets[key]
            self._send(target, sent, internal, answers, finish)
        return out

    def _send(self, target: MarkerTarget, sent: list[tuple[int, TxnMarker]], internal: bool,
              answers: list[dict[TopicPartition, str]], finish: Callable[[], None]) -> None:
        def collect(done: Completion[list[MarkerResult]]) -> None:
            self._collect(done, sent, internal, answers, finish)

        target.write_txn_markers([m for _, m in sent]).then(collect)

    def _split(self, marker: TxnMarker) -> list[tuple[MarkerTarget, bool, list[TopicPartition]]]:
        groups: dict[int, tuple[MarkerTarget, bool, list[TopicPartition]]] = {}
        for tp in marker.partitions:
            owner = self.internal.get(tp.topic)
            target, internal = (owner, True) if owner is not None else (self.data, False)
            groups.setdefault(id(target), (target, internal, []))[2].append(tp)
        return list(groups.values())

    @staticmethod
    def _collect(done: Completion[list[MarkerResult]], sent: list[tuple[int, TxnMarker]], internal: bool,
                 answers: list[dict[TopicPartition, str]], finish: Callable[[], None]) -> None:
        try:
            results = done.result()
        except KafkaError as e:
            results = [dict.fromkeys(m.partitions, e.name) for _, m in sent]
        except OSError:  # the holder's disk failed: Kafka's answer to a failed log append
            results = [dict.fromkeys(m.partitions, Errors.KAFKA_STORAGE_ERROR) for _, m in sent]
        for (i, marker), result in zip(sent, results, strict=True):
            for tp in marker.partitions:
                error = result.get(tp, Errors.UNKNOWN_SERVER_ERROR)
                answers[i][tp] = Errors.NOT_LEADER_OR_FOLLOWER if internal and error in _COORDINATOR_ERRORS else error
        finish()

"""Valid requests with odd values, to every served API of a real node: no handler fails, every answer reads back, and
what the node holds afterwards is what it reloads from its logs.

test_bad_input sends bytes that do not decode to a served request. This module sends ones that do. Each request is
drawn by hypothesis from kio's schema of a served API and version (every served pair), or, for about a third, is a
request a real client sent (the wire corpus: a JoinGroup with a real subscription, a KIP-848 heartbeat, ...); then
most of its strings and integers are swapped for values the node has used — ids, names, epochs and offsets that
earlier answers gave in fields of the same name, and edge values (-1, 0, Int32 bounds) — so that requests reach the
coordinators' state rather than stop at "unknown group". The node starts with real state made by a real client (a
group with offsets, a committed and an open transaction). Oracles, for each request:
- no handler raises and no answer fails to encode: either would be logged at ERROR and answered
  UNKNOWN_SERVER_ERROR, and no error code anywhere in the answer may be UNKNOWN_SERVER_ERROR;
- the answer decodes with the schema of the API and version asked.
Then the node is restarted, and every transaction, offset, KIP-848 group, quiescent classic group, record log and
producer state it held must be what it loaded (Kafka's own rule: all of that is in the logs before it is answered).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import itertools
import json
import logging
import os
import pprint
import random
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, seed, settings
from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode
from kio.serial.errors import OutOfBoundValue
from kio.static.primitive import Records
from node_state import make_state
from served_cluster import ServedCluster

from kcoord.impl.server.apis import SERVED, node_registry
from kcoord.impl.server.broker import BrokerContext
from kcoord.impl.server.codec import decode_request, decode_response, encode_request
from kcoord.impl.server.dispatch import ConnectionInfo, Dispatcher, NoReply, Reply
from kcoord.impl.server.nullability import null_field

pytestmark = [pytest.mark.wire, pytest.mark.slow]

st.register_type_strategy(Records, st.binary(max_size=40).map(Records))  # opaque to the request schema

TOPIC, GROUP, TXN = "odd-t", "odd-g", "odd-tx"
KEYS = sorted((key, v) for key, served in SERVED.items() for v in range(served.min_version, served.max_version + 1))
# a longer hunt: KCOORD_FUZZ_REQUESTS=20000 KCOORD_FUZZ_SEED=7 pytest tests/server/test_valid_requests.py
REQUESTS = int(os.environ.get("KCOORD_FUZZ_REQUESTS", "1500"))
REAL_SHARE = 0.35  # of the requests sent, the share taken from real clients' requests rather than drawn
CORPUS = Path(__file__).parents[1] / "impl" / "server" / "corpus" / "client_frames.json"
SEED = int(os.environ.get("KCOORD_FUZZ_SEED", "20261126"))
WAIT_S = 0.5  # a request still parked after this (a long poll, a join waiting for a rebalance) is left to run
EDGE_INTS = (-(1 << 31), -2, -1, 0, 1, 2, 3, 100, (1 << 31) - 1)
QUIESCENT = ("Empty", "Stable", "Dead")
UNSETTLED = "unsettled classic groups"  # in a rebalance or with pending members: compared as their records say
HARVESTED = frozenset({  # answer fields whose values later requests reuse
    "name", "topic", "topic_id", "group_id", "member_id", "group_instance_id", "leader", "transactional_id",
    "producer_id", "producer_epoch", "generation_id", "member_epoch", "coordinator_epoch", "leader_epoch",
    "partition_index", "partitions", "protocol_type", "protocol_name", "offset", "committed_offset",
    "high_watermark", "last_stable_offset", "log_start_offset", "node_id", "key"})
INT_BOUNDS = {"int8": (-(1 << 7), (1 << 7) - 1), "int16": (-(1 << 15), (1 << 15) - 1),
              "int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1),
              "uint16": (0, (1 << 16) - 1), "uint32": (0, (1 << 32) - 1)}


class Pool:
    """Values seen in the node's answers, by the name of the field that held them, to put into later requests: a
    `member_id` an answer gave goes into later requests' `member_id` fields, a `generation_id` into theirs. Only
    ids, names, epochs and offsets are kept (no clock readings), each pool in the order first seen, so that a run
    makes the same choices as the last, though member and topic ids are new each run."""

    def __init__(self) -> None:
        self.named: dict[str, list[Any]] = {"group_id": [GROUP, "odd-g2"], "transactional_id": [TXN, "odd-tx2"],
                                            "topic": [TOPIC], "name": [TOPIC, "__consumer_offsets", GROUP]}
        self.strings: list[str] = [TOPIC, GROUP, TXN, "", "consumer", "range", "uniform", "__consumer_offsets"]
        self.ints: list[int] = list(EDGE_INTS)
        self.uuids: list[uuid.UUID] = []

    def harvest(self, value: Any, name: str = "") -> None:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                self.harvest(getattr(value, f.name), f.name)
            return
        if isinstance(value, tuple | list):
            for item in value:
                self.harvest(item, name)
            return
        if name not in HARVESTED or isinstance(value, bool) or value is None:
            return
        _add(self.named.setdefault(name, []), value, 50)
        if isinstance(value, str):
            _add(self.strings, value, 500)
        elif isinstance(value, int):
            _add(self.ints, int(value), 500)
        elif isinstance(value, uuid.UUID):
            _add(self.uuids, value, 500)

    def bias(self, value: Any, rnd: random.Random, name: str = "", kafka_type: str = "", keep: float = 0.25) -> Any:
        """`value` with most of its strings, integers, ids and durations swapped: for one the answers gave a field of
        the same `name`, or any pool value of its type (`kafka_type`: the schema's type, which bounds an integer)."""
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            changes = {f.name: self.bias(getattr(value, f.name), rnd, f.name, f.metadata.get("kafka_type", ""), keep)
                       for f in dataclasses.fields(value)}
            return dataclasses.replace(value, **changes)
        if isinstance(value, tuple):
            return tuple(self.bias(item, rnd, name, kafka_type, keep) for item in value)
        if isinstance(value, bool) or value is None or rnd.random() < keep:
            return value
        same_name = [v for v in self.named.get(name, ()) if _kind(v) == _kind(value)]
        if isinstance(value, str):
            return rnd.choice(same_name) if same_name and rnd.random() < 0.8 else rnd.choice(self.strings)
        if isinstance(value, int) and kafka_type in INT_BOUNDS:
            low, high = INT_BOUNDS[kafka_type]
            candidates = [i for i in same_name if low <= i <= high] if rnd.random() < 0.8 else []
            return type(value)(rnd.choice(candidates or [i for i in self.ints if low <= i <= high]))
        if isinstance(value, uuid.UUID) and self.uuids:
            return rnd.choice(self.uuids)
        if isinstance(value, datetime.timedelta):  # timeouts, waits: mostly short
            return type(value)(milliseconds=rnd.choice([0, 1, 50, 300]))
        return value


def _add(pool: list[Any], value: Any, most: int) -> None:
    if len(pool) < most and value not in pool:
        pool.append(value)


def _kind(value: Any) -> type:
    return str if isinstance(value, str) else uuid.UUID if isinstance(value, uuid.UUID) else int


def unknown_server_errors(value: Any, path: str = "") -> list[str]:
    """The paths of `error_code` fields holding UNKNOWN_SERVER_ERROR in an answer."""
    found = []
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            if f.name == "error_code" and item == ErrorCode.unknown_server_error:
                found.append(f"{path}.{f.name}")
            found += unknown_server_errors(item, f"{path}.{f.name}")
    elif isinstance(value, tuple):
        for i, item in enumerate(value):
            found += unknown_server_errors(item, f"{path}[{i}]")
    return found


def differences(before: Any, after: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """Where two nested values differ: (path, before, after) at the deepest mapping or tuple level that differs."""
    if before == after:
        return []
    if isinstance(before, dict) and isinstance(after, dict):
        return [d for k in sorted(before.keys() | after.keys(), key=repr)
                for d in differences(before.get(k, "<absent>"), after.get(k, "<absent>"), f"{path}/{k!r}")]
    if isinstance(before, tuple) and isinstance(after, tuple) and len(before) == len(after):
        return [d for i, (x, y) in enumerate(zip(before, after, strict=True))
                for d in differences(x, y, f"{path}[{i}]")]
    return [(path, before, after)]


def held(cluster: Any) -> dict[str, Any]:
    """What the node holds that Kafka keeps in its logs: every transaction (but its epoch before the last bump, which
    the transaction log does not hold: Kafka loads it as -1, `TransactionLog.readTxnRecordValue`, and so does
    kcoord, `impl/txn/records.py`); per offsets partition its offsets and
    KIP-848 groups, and its classic groups that are not in a rebalance (a rebalance's joins are never written; see
    `settled`) and were ever written (a group made by a first JoinGroup that was told MEMBER_ID_REQUIRED is not),
    without their pending member ids (never written either); per data
    partition its offsets and producer states. A producer that a load may expire is left out: no open transaction
    and a latest timestamp (the batch's, which the client sets) more than producer.id.expiration.ms old, give or take
    a minute (Kafka's load drops those, and the running node only at its next expiration check). Read on the
    server's loop."""
    expired_before = time.time() * 1000 - cluster.partitions.config.producer_id_expiration_ms + 60_000

    def kept(producers: dict[Any, Any]) -> dict[Any, Any]:
        return {k: dict(v) for k, v in producers.items()
                if v["current_txn_first_offset"] != -1 or v["last_timestamp_ms"] > expired_before}

    out: dict[str, Any] = {"topics": cluster.partitions.topic_names()}
    for node in cluster.nodes:
        for p in sorted(node.txn.runtime.shards):
            out[f"txn-{p}"] = {k: {f: x for f, x in v.items() if f != "last_producer_epoch"}
                               for k, v in node.txn.runtime.shards[p].instances["Transaction"].items()}
        for p in sorted(node.groups.runtime.shards):
            snap = node.groups.snapshot(p)
            classic = {k: {**v, "pending_members": frozenset()}  # never written (MEMBER_ID_REQUIRED's ids)
                       for k, v in snap["instances"]["ClassicGroup"].items()
                       if v["state"] in QUIESCENT and (v["generation"] > 0 or v["members"] or k in snap["offsets"][0])}
            unsettled = {k for k, v in snap["instances"]["ClassicGroup"].items() if v["state"] not in QUIESCENT}
            out[f"groups-{p}"] = {
                "classic": classic, "classic-side": {g: snap["classic"].get(g) for (g,) in classic},
                UNSETTLED: unsettled,
                "offsets": snap["offsets"], "consumer": snap["consumer"],
                "ConsumerGroup": snap["instances"]["ConsumerGroup"],
                "ConsumerGroupMember": snap["instances"]["ConsumerGroupMember"],
                "PartitionProducer": kept(snap["instances"]["PartitionProducer"])}
    for part in cluster.partitions.partitions():
        out[f"log-{part.tp}"] = (part.log_end_offset, part.high_watermark, part.last_stable_offset,
                                 kept(dict(part.states.instances())))
    return out


def settled(before: dict[str, Any], after: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """`before` and `after` without the classic groups that were in a rebalance before: a rebalance's joins are never
    written (Kafka writes a classic group at the end of a rebalance only), so such a group reloads as its last record
    says, e.g. Empty when members were joining an Empty group. `held` leaves them out of `before`; here they are
    left out of `after` too (they used to be compared when the last requests' rebalance was still running: a flake
    of CI, an Empty group 'odd-g' absent before the restart, present after)."""
    before, after = dict(before), dict(after)
    for part, groups in list(before.items()):
        if not part.startswith("groups-"):
            continue
        unsettled = groups[UNSETTLED]
        for side in (before, after):
            if part in side:
                side[part] = {**side[part], UNSETTLED: None,
                              "classic": {k: v for k, v in side[part]["classic"].items() if k not in unsettled},
                              "classic-side": {g: v for g, v in side[part]["classic-side"].items()
                                               if (g,) not in unsettled}}
    return before, after


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCluster]:
    with ServedCluster(tmp_path_factory.mktemp("odd-requests"), 1, trace=False) as s:
        open_txn = make_state(s.bootstrap, TOPIC, GROUP, TXN)
        yield s
        open_txn.close(timeout=5)


def drawn_requests() -> list[tuple[int, int, Any]]:
    """REQUESTS requests, each of a served API and version, as hypothesis draws them from kio's schemas (the same
    ones for the same SEED). Drawn before any is sent: the node's answers feed the requests through
    `Pool.bias`, and hypothesis wants draws that do not depend on state outside it.

    The APIs take turns (each alike, however many versions it has; a version picked by a seeded `random.Random`):
    hypothesis draws only the bodies. When it also drew the API (`st.sampled_from`), its choices were far from even
    and moved with what else the worker had run — in two CI runs of 2026-11-29 (fresh clones, two xdist workers) not
    one DeleteGroups was among 1,500 requests, while a run of this module alone had many."""
    versions = random.Random(f"{SEED}:versions")
    apis = sorted(SERVED)
    plan = [(key, versions.randint(SERVED[key].min_version, SERVED[key].max_version))
            for key in (apis[i % len(apis)] for i in range(REQUESTS))]
    bodies = {pair: itertools.cycle(_bodies(*pair, plan.count(pair))) for pair in sorted(set(plan))}
    return [(key, version, next(bodies[key, version])) for key, version in plan]


def _bodies(key: int, version: int, count: int) -> list[Any]:
    """Up to `count` bodies of the request, as hypothesis draws them (fewer when it has drawn every one there is).
    Valid ones only: a body with None in a field Kafka declares non-nullable is not a valid request (the node closes
    the connection, as Kafka's readers refuse it: tests/impl/server/test_null_fields.py) — CI18 (2026-11-29) drew a
    FetchRequest v15 whose replica_state.replica_epoch was None, in a full run only."""
    out: list[Any] = []

    @settings(max_examples=count, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(body=st.from_type(load_request_schema(key, version)))
    @seed(SEED)
    def draw(body: Any) -> None:
        assume(null_field(body) is None)
        out.append(body)

    draw()
    assert out, f"no valid body of API {key} v{version} drawn"
    return out


def client_requests() -> list[tuple[int, int, Any]]:
    """The requests kafka-python, aiokafka and librdkafka sent in their normal flows (the wire corpus), decoded."""
    out = []
    for entry in json.loads(CORPUS.read_text()):
        decoded = decode_request(bytes.fromhex(entry["frame_hex"]))
        served = SERVED.get(decoded.api_key)
        if served is not None and decoded.api_version in served:
            out.append((decoded.api_key, decoded.api_version, decoded.body))
    return out


def test_every_served_api_version_is_sent() -> None:
    assert len(KEYS) >= 100 and {key for key, _ in KEYS} == set(SERVED)
    assert len({key for key, _, _ in client_requests()}) >= 20


def planned_requests() -> list[tuple[int, int, Any, bool]]:
    """The requests the test sends, in order, before `Pool.bias` swaps values: each drawn one, or REAL_SHARE of the
    time a real client's in its place (True). Picked by a generator of their own, so the same every run: the one
    `Pool.bias` draws from draws more or less as the pool harvested answers, which depends on timing (a request parked
    past WAIT_S harvests nothing)."""
    which, real = random.Random(f"{SEED}:which"), client_requests()
    out = []
    for key, version, drawn in drawn_requests():
        if which.random() < REAL_SHARE:
            out.append((*which.choice(real), True))
        else:
            out.append((key, version, drawn, False))
    return out


def test_the_planned_requests_reach_every_served_api() -> None:
    """Every API kcoord serves is among the requests sent, whatever the machine's load."""
    assert {key for key, _, _, _ in planned_requests()} == set(SERVED)


def test_valid_requests_with_odd_values_fail_no_handler_and_survive_a_restart(
        served: ServedCluster, caplog: pytest.LogCaptureFixture) -> None:
    dispatcher = served.call(lambda: Dispatcher(node_registry(BrokerContext(served.server.shared, 0))))
    pool, parked = Pool(), []
    sent: dict[int, int] = {}
    caplog.set_level(logging.ERROR)

    def errors() -> list[str]:
        """kcoord's ERROR records: the dispatcher logs every handler that raised and every answer it could not
        encode (the server's thread logs into the same capture)."""
        return [r.getMessage() for r in caplog.records if r.name.startswith("kcoord") and r.levelno >= logging.ERROR]

    rnd = random.Random(SEED)
    for step, (key, version, planned, real) in enumerate(planned_requests()):
        # a real client's request gets fewer of its values swapped: deeper protocol paths
        request = pool.bias(planned, rnd, keep=0.6) if real else pool.bias(planned, rnd)
        frame = encode_request(request, correlation_id=step, client_id=rnd.choice(["odd-1", "odd-2"]))
        connection = ConnectionInfo(connection_id=rnd.randrange(4), client_host="127.0.0.1", client_port=1)

        async def send(frame: bytes, connection: ConnectionInfo) -> Any:
            task = asyncio.ensure_future(dispatcher.dispatch(frame, connection))
            done, _ = await asyncio.wait({task}, timeout=WAIT_S)
            if not done:
                parked.append(task)
                return None
            return task.result()

        outcome = served.thread.run(send(frame, connection), 60)  # type: ignore[union-attr]
        assert not errors(), (request, errors())
        sent[key] = sent.get(key, 0) + 1
        if outcome is None:
            continue
        if key == 0 and request.acks == 0:  # Kafka sends nothing back to a Produce with acks=0
            assert isinstance(outcome, NoReply), (request, outcome)
            continue
        assert isinstance(outcome, Reply), (request, outcome)
        try:
            _, answer = decode_response(key, version, outcome.payload)
        except OutOfBoundValue as e:
            # Kafka's "none" timestamp (-1 ms, e.g. the start of a transaction that is not open), which kio's
            # reader will not turn into a datetime; the bytes are what Kafka sends
            assert "negative timestamp" in str(e), (request, e)
            continue
        assert not unknown_server_errors(answer), (request, answer)
        pool.harvest(answer)

    assert set(sent) == set(SERVED), sorted(set(SERVED) - set(sent))
    assert len(pool.strings) > 20 and len(pool.ints) > 20  # answers fed later requests

    for task in parked:
        task.cancel()
    # What the node holds once it stops serving (its listeners closed and its timers stopped, so nothing changes it
    # between this look and its last flush), against what it then loads.
    cluster, before = served.server.cluster, {}
    flush = cluster.flush

    def look_then_flush() -> None:
        before.update(held(cluster))
        flush()

    cluster.flush = look_then_flush
    served.restart()
    after = served.call(lambda: held(served.server.cluster))
    assert before
    differ = differences(*settled(before, after))
    assert not differ, pprint.pformat(differ[:10], width=200)

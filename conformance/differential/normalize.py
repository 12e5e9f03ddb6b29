"""A response as the differential comparison sees it: the broker's own choices made comparable.

Owns: `Canon` (one broker's ids in order of first appearance: member ids become `member#1`, producer ids `pid#1`, so
that two brokers compare equal when each gives the same entity the same id throughout, whatever the id is) and
`normalize` (a kio response body as plain nested data, with these rules by field name:
- error codes by name (`NONE`, `REBALANCE_IN_PROGRESS`);
- member ids (`member_id`, `leader`) and producer ids through the `Canon`, -1 and "" kept as they are;
- topic ids as their topic's name on that broker;
- node ids, hosts, ports, timestamps and error messages by shape (a message given or not: the words are the
  broker's own), throttle times dropped;
- a JoinGroup's member list sorted (the order is the broker's); everything else exactly, in the order answered;
- the fields `DEVIATIONS` lists (kcoord answers them differently on purpose, DEVIATIONS.md says why) not at all).
Must not import: `kcoord.impl`.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

from kcoord.conformance.wire.observe import shape

_DROPPED = frozenset({"throttle_time", "throttle_time_ms"})
_BY_SHAPE = frozenset({"node_id", "host", "port", "error_message", "log_append_time", "log_start_offset_time",
                       "last_timestamp", "transaction_start_time", "rack", "client_host", "current_leader",
                       "node_endpoints", "coordinator_epoch"})
_MEMBER_IDS = frozenset({"member_id", "leader"})
_PRODUCER_IDS = frozenset({"producer_id"})


@dataclass(slots=True)
class Canon:
    """One broker's ids, numbered by first appearance."""

    topic_names: Mapping[uuid.UUID, str] = field(default_factory=dict)
    members: dict[str, str] = field(default_factory=dict)
    producers: dict[int, str] = field(default_factory=dict)

    def member(self, raw: str) -> str:
        if not raw:
            return raw
        return self.members.setdefault(raw, f"member#{len(self.members) + 1}")

    def producer(self, raw: int) -> int | str:
        if raw < 0:
            return raw
        return self.producers.setdefault(raw, f"pid#{len(self.producers) + 1}")


#: (api key, field) -> why kcoord answers it differently on purpose (DEVIATIONS.md): not compared
DEVIATIONS: dict[tuple[int, str], str] = {
    (68, "error_message"): "ConsumerGroupHeartbeat refusals carry Kafka's error code without its sentence "
                           "(DEVIATIONS.md: error messages of the spec's checks)",
}
NOT_COMPARED = "(not compared: DEVIATIONS.md)"


def normalize(body: Any, canon: Canon) -> Any:
    out = _value("", body, canon)
    api_key = int(getattr(body, "__api_key__", -1))
    if isinstance(out, dict):
        for (key, name), _ in DEVIATIONS.items():
            if key == api_key and name in out:
                out[name] = NOT_COMPARED
    return out


def _value(name: str, value: Any, canon: Canon) -> Any:
    if name in _BY_SHAPE:
        return shape(_plain(value))
    if isinstance(value, ErrorCode):
        return value.name.upper()
    if name == "error_code" and isinstance(value, int):
        return ErrorCode(value).name.upper()
    if name in _MEMBER_IDS and isinstance(value, str):
        return canon.member(value)
    if name in _PRODUCER_IDS and isinstance(value, int):
        return canon.producer(int(value))
    if isinstance(value, uuid.UUID):
        return canon.topic_names.get(value, shape(str(value)))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _value(f.name, getattr(value, f.name), canon) for f in dataclasses.fields(value)
                if f.name not in _DROPPED}
    if isinstance(value, tuple | list):
        items = [_value(name, v, canon) for v in value]
        return sorted(items, key=repr) if name == "members" else items
    return _plain(value)


def _plain(value: Any) -> Any:
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, bool | str | bytes) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value

"""KIP-848 regular-expression subscriptions as Kafka 4.0.2 resolves them on the broker (GroupMetadataManager's
maybeUpdateRegularExpressions, refreshRegularExpressions, handleRegularExpressionsResult).

A member subscribes to at most one regular expression (SubscribedTopicRegex). The coordinator compiles one that no
member of the group subscribes to yet (RE2/J in Kafka; RE2 here, the same syntax: no look-around, no
back-references) and refuses it with INVALID_REGULAR_EXPRESSION. The expressions are never resolved inside the
heartbeat: a resolution of all of the group's expressions is scheduled (at most one in flight per group, at most one
every 10 s) when a member brings an expression nobody resolved yet or topics were created since the last one; it
matches every topic name in full (`Matcher.matches`) against the topics at that moment, then applies its result as
one write of its own (`regexes_resolved`): a ConsumerGroupRegularExpression record per expression still subscribed
to, and a group-epoch bump when some expression's topics or the subscription metadata changed.

Owns: `is_valid`, `maybe_refresh` (the scheduling rules) and `regexes_resolved` (the result's records and the
ConsumerGroup's RegexesResolved decision). Must not import: `kcoord.model`.
"""

from __future__ import annotations

import functools
from typing import Any

import re2

from ..._generated.consumer_group import Event as ConsumerGroupEvent
from ..._generated.consumer_group import State as ConsumerGroupState
from .. import records
from ..shard_state import GroupShardState
from ..state import ResolvedRegex
from .group import ConsumerTxn, submit_internal

#: REGEX_BATCH_REFRESH_INTERVAL_MS: a group's expressions are resolved again at most this often
REFRESH_INTERVAL_MS = 10_000
_NEVER = -(1 << 63)  # Long.MIN_VALUE: no resolution yet

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused expression is the client's error, not ours to log


@functools.lru_cache(maxsize=1024)
def _compiled(regex: str) -> Any | None:
    try:
        return re2.compile(regex, _OPTIONS)
    except re2.error:
        return None


def is_valid(regex: str) -> bool:
    """throwIfRegularExpressionIsInvalid: whether RE2 compiles `regex`."""
    return _compiled(regex) is not None


def resolve(regexes: frozenset[str], topic_names: list[str]) -> dict[str, frozenset[str]]:
    """refreshRegularExpressions: for each expression, the topics whose whole name it matches (an expression that
    does not compile, which validation prevents, resolves to nothing)."""
    out: dict[str, frozenset[str]] = {}
    for regex in sorted(regexes):
        pattern = _compiled(regex)
        out[regex] = frozenset(t for t in topic_names if pattern is not None and pattern.fullmatch(t) is not None)
    return out


def refresh_key(group_id: str) -> tuple[str, str]:
    return ("regex-refresh", group_id)


def maybe_refresh(t: ConsumerTxn, old_regex: str, new_regex: str, counts: dict[str, int]) -> None:
    """maybeUpdateRegularExpressions' refresh rules, once the heartbeat's member update is decided. `counts` are the
    group's subscribed expressions before the update (ConsumerGroup.subscribedRegularExpressions)."""
    require = old_regex != new_regex and new_regex != "" and counts.get(new_regex, 0) == 0
    if not require and not counts:
        return  # 0. the group subscribes to no regular expression
    state: GroupShardState = t.state
    if t.group_id in state.regex_refreshing:
        return  # 1. a resolution is in flight
    resolved = t.view.resolved
    last_ms = min((r.timestamp_ms for r in resolved.values()), default=_NEVER)
    if t.now_ms <= last_ms + REFRESH_INTERVAL_MS:
        return  # 2. the last resolution is less than 10 s old
    after = dict(counts)
    if old_regex != new_regex:
        if old_regex:
            after[old_regex] = after.get(old_regex, 0) - 1
        if new_regex:
            after[new_regex] = after.get(new_regex, 0) + 1
    subscribed = frozenset(r for r, n in after.items() if n > 0)
    require = require or len(subscribed) != len(resolved)  # 3. an expression is not resolved yet
    last_version = min((r.version for r in resolved.values()), default=0)
    require = require or last_version < t.ctx.new_topics_version  # 4. topics were created since
    if require and subscribed:
        _schedule(t, subscribed)


def _schedule(t: ConsumerTxn, regexes: frozenset[str]) -> None:
    """executor.schedule: the resolution runs after this write, against the topics of the metadata as it is now,
    then applies its result as a write of its own."""
    ctx, shard, state, group_id = t.ctx, t.shard, t.state, t.group_id
    state.regex_refreshing.add(group_id)

    def run() -> None:
        version, started_ms = ctx.metadata_version, ctx.now_ms()
        matched = resolve(regexes, sorted(ctx.topic_names()))
        results = {r: ResolvedRegex(topics, version, started_ms) for r, topics in matched.items()}
        done = submit_internal(ctx, shard, state, group_id, lambda c: regexes_resolved(c, results))
        done.then(lambda _: state.regex_refreshing.discard(group_id))

    t.then(lambda: shard.schedule(refresh_key(group_id), ctx.now_ms(), run))


def regexes_resolved(t: ConsumerTxn, results: dict[str, ResolvedRegex]) -> None:
    """handleRegularExpressionsResult: a record per expression still subscribed to, the subscription metadata
    recomputed with the new resolutions, and a group-epoch bump if either changed. Nothing when the group is gone
    (deleted, or converted to a classic group)."""
    if t.shard.get("ConsumerGroup", t.gkey) is None or not t.group["group_epoch"]:
        return
    counts = t.view.regex_counts()
    kept = {r: v for r, v in results.items() if counts.get(r, 0) > 0}
    if not kept:
        return
    data = t.data
    topics_changed = any(data.resolved.get(r, _EMPTY).topics != v.topics for r, v in kept.items())
    data.resolved.update(kept)
    regex_records = [records.regular_expression(t.group_id, r, v) for r, v in sorted(kept.items())]
    metadata = t.subscription_metadata()
    metadata_changed = metadata != data.subscription_metadata
    d = t.decide_group(ConsumerGroupEvent.RegexesResolved, {
        "refreshed": frozenset(kept), "topics_changed": topics_changed, "metadata_changed": metadata_changed})
    for rec in regex_records:
        t.b.write_for_last(rec)
    if metadata_changed:
        data.subscription_metadata = metadata
        t.b.write(records.partition_metadata(t.group_id, metadata))
    if d.to_state == ConsumerGroupState.Assigning and d.pre["group_epoch"] != t.group["group_epoch"]:
        t.b.write_for_last(records.consumer_group_epoch(t.group_id, t.group["group_epoch"]))
        data.metadata_refresh_deadline_ms = t.now_ms + t.ctx.config.consumer_metadata_refresh_interval_ms


_EMPTY = ResolvedRegex(frozenset(), -1, -1)


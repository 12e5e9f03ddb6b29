"""The coordinator machines whose generated conformance suite does not reach 100% yet, and why.

Kept apart from `coverage` (whose source is an input of the generated files): editing this list never makes the
generated files stale. The test run prints a listed machine's shortfall as a known gap instead of failing;
tests/conformance/test_generated.py expects the listed machines to be incomplete (strict xfail), so an entry must be
removed once its suite is complete.
Must not import: kcoord.cli.
"""

from __future__ import annotations

from collections.abc import Mapping

#: the KIP-848 migration (issue 27, branch i27b) added rows the drivers do not reach yet; they are tested by
#: tests/impl/group/test_consumer_migration.py, test_consumer_regex.py and the wire scenarios regex-subscription,
#: invalid-regex and migration[...] (on kcoord serve and on Apache Kafka 4.0.2)
KNOWN_GAPS: Mapping[str, str] = {
    "ConsumerGroup": "the ConsumerGroup driver drives no classic-protocol member (JoinGroup to a consumer group: 15 "
                     "ClassicJoin items) and few regular-expression subscriptions (MemberJoined 9, SubscriptionChanged "
                     "7, RegexesResolved 7 items: a new expression, its resolution, a refused one)",
    "ConsumerGroupMember": "the ConsumerGroup driver drives no classic-protocol member (ClassicSync 35, "
                           "ClassicHeartbeat 30, Heartbeat's classic_join 2 items; OffsetFetch's classic row in 5 "
                           "states)",
}

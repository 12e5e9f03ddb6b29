"""Protocol bookkeeping of a classic group (ClassicGroup.supportsProtocols, selectProtocol, computeSubscribedTopics):
the facts the ClassicGroup spec takes as parameters (`common_protocol`, `selected_protocol`, `protocol_unchanged`).

Must not import: `kcoord.model`.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...assignors._java import string_hash_map_order
from ...assignors.consumer_protocol import ConsumerProtocolError, decode_subscription
from ..messages import Protocols
from ..state import ClassicGroupData

CONSUMER_PROTOCOL_TYPE = "consumer"


def common_protocol(data: ClassicGroupData, protocols: Protocols) -> bool:
    """The request lists a protocol and one every current member supports (a group without members — an Empty one,
    say — supports anything, as Kafka's counting does)."""
    if not protocols:
        return False
    if not data.members:
        return True
    candidates = data.candidate_protocols()
    return any(name in candidates for name, _ in protocols)


def select_protocol(data: ClassicGroupData, members: Iterable[str]) -> str:
    """Each member votes for its first protocol that all of `members` support; most votes wins. Ties go to the
    first in Java HashMap<String, Integer> iteration order (Stream.max keeps the first maximum)."""
    chosen = list(members)
    candidates = data.candidate_protocols(chosen)
    votes: dict[str, int] = {}
    for member_id in chosen:
        name = data.members[member_id].vote(candidates)
        votes[name] = votes.get(name, 0) + 1
    best, best_votes = "", -1
    for name in string_hash_map_order(votes):
        if votes[name] > best_votes:
            best, best_votes = name, votes[name]
    return best


def subscribed_topics(protocol_type: str, protocol: str, data: ClassicGroupData) -> frozenset[str] | None:
    """The topics the members subscribe to, when the group uses the consumer protocol and its metadata parses; None
    when the coordinator cannot know (computeSubscribedTopics)."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE:
        return None
    if not data.members:
        return frozenset()
    if not protocol:
        return None
    topics: set[str] = set()
    try:
        for member in data.members.values():
            topics.update(decode_subscription(member.metadata(protocol)).topics)
    except (ConsumerProtocolError, ValueError):
        return None
    return frozenset(topics)

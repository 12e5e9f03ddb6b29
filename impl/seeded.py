"""The seeded bugs: known Kafka coordinator bugs (and protocol mistakes) that the coordinators can be told to
re-introduce, so that the trace checkers and the generated conformance suite can be shown to catch them
(`kcoord.conformance.bugs` says, for each, what it is, where it is described and how a simulation makes it fire).

Owns: `SeededBug`, the one kind of switch. The ones on are a set: `ClusterConfig.seeded_bugs`, handed to each
coordinator (`seeded_bugs=`), which applies its own through one hook module at construction (`txn/seeded.py`,
`group/seeded.py`) and ignores the others. All are off by default, and no handler holds a trace of them.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import enum


class SeededBug(enum.Enum):
    """A re-introduced bug; its value is the name `kcoord simulate --bug` takes."""

    #: group coordinator: a COMMIT marker for __consumer_offsets is answered before the producer's offsets are
    #: materialised (the old Scala coordinator's order), which then materialises every pending offset of it
    KAFKA_17507 = "KAFKA-17507"
    #: group coordinator: a KIP-848 member's target partition is handed to it while another member still holds it
    #: (the other members' holdings are not looked at)
    KAFKA_16147 = "KAFKA-16147"
    #: transaction coordinator: a fence whose append failed keeps the bumped epoch but does not remember the failure
    KAFKA_9666 = "KAFKA-9666"
    #: transaction coordinator: a fence (InitProducerId or a timeout on an open transaction) keeps the epoch
    FENCE_WITHOUT_BUMP = "fence-without-bump"
    #: transaction coordinator, Transactions V2: an EndTxn retry of the previous transaction (its epoch one behind)
    #: ends the transaction open now
    ENDTXN_RETRY_COMMITS_LATER = "endtxn-retry-commits-later"
    #: transaction coordinator: an exhausted epoch is bumped to the maximum on the same producer id instead of
    #: rotating to a new one
    EPOCH_OVERFLOW_NO_ROTATION = "epoch-overflow-no-rotation"


NO_BUGS: frozenset[SeededBug] = frozenset()

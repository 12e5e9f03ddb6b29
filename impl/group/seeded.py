"""The group coordinator's seeded bugs (`kcoord.impl.seeded.SeededBug`), put in place when the coordinator is built.

Owns the one hook, in two parts: `tables` (the machine tables the handlers decide with) and `marker_order` (what a
durable `__consumer_offsets` marker does next). Without this coordinator's bugs both are the plain ones; the
handlers hold no trace of the bugs, and the trace shows the deviation for the checkers to find.

- KAFKA-16147: a ConsumerGroupMember decision is told only the member's own holdings as `held_in_group` (the other
  members' holdings of its target are not looked at), so a partition still owned or pending revocation elsewhere is
  handed to it at once and two members hold it together.
- KAFKA-17507: a marker is answered as soon as it is durable, its offsets materialised afterwards (on the next poll,
  or when `materialize_hook` runs the step) and with every pending offset of the producer, those it wrote after the
  marker too; the producer's next TxnOffsetCommit does not wait (nothing is materialising).
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..errors import Errors
from ..seeded import SeededBug
from ..statemachine import Decision, MachineTable
from .context import Tables
from .offsets.markers import MarkerOrder, Settlement, settle_then_answer


def tables(plain: Tables, bugs: frozenset[SeededBug]) -> Tables:
    """The tables the handlers decide with: `plain`, or with KAFKA-16147 a member table that ignores the others."""
    if SeededBug.KAFKA_16147 not in bugs:
        return plain
    return replace(plain, member=_OwnHoldingsOnly(plain.member.module))


def marker_order(bugs: frozenset[SeededBug]) -> MarkerOrder:
    return answer_then_settle if SeededBug.KAFKA_17507 in bugs else settle_then_answer


class _OwnHoldingsOnly(MachineTable):
    """KAFKA-16147: `held_in_group` is the member's own holdings (a lazy probe that must not be read stays one)."""

    def decide(self, instance: Mapping[str, Any], event: str, args: Mapping[str, Any], *,
               pending: bool = False, strict: bool = False, lazy: bool | None = None) -> Decision:
        held = args.get("held_in_group")
        if held is not None and not callable(held):
            args = {**args, "held_in_group": instance["held"]}
        return super().decide(instance, event, args, pending=pending, strict=strict, lazy=lazy)


def answer_then_settle(s: Settlement) -> None:
    """KAFKA-17507: the old order (answer first, materialise later, every pending offset of the producer)."""
    s.answer.set(Errors.NONE)
    step = functools.partial(s.materialise, None)
    hook = s.ctx.materialize_hook
    if hook is not None:
        hook(step)
    else:
        s.shard.schedule(("materialize", s.marker.producer_id, s.marker_offset), s.ctx.now_ms(), step)

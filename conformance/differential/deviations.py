"""Differences the fuzzer knows and does not stop at: kcoord answers so on purpose, and DEVIATIONS.md says why.

Owns: `KnownDeviation` (a name, the DEVIATIONS.md entry it stands for, and the test on a `Difference`) and
`KNOWN_DEVIATIONS`. A difference that matches one is counted under its name and the program goes on (each of them is
an answer to a read, so both brokers' clients are still in the same state). Field-level deviations (a field never
compared) are `normalize.DEVIATIONS`.
Must not import: `kcoord.impl`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class KnownDeviation:
    name: str
    entry: str  # the heading of its DEVIATIONS.md entry
    matches: Callable[[str, tuple[Any, ...], tuple[Any, ...]], bool]  # (step kind, tested answers, reference answers)


def _described(answers: tuple[Any, ...]) -> dict[str, Any] | None:
    if len(answers) != 1 or not isinstance(answers[0], dict) or len(answers[0].get("groups", ())) != 1:
        return None
    group: dict[str, Any] = answers[0]["groups"][0]
    return group


def _group_not_yet_visible(kind: str, tested: tuple[Any, ...], reference: tuple[Any, ...]) -> bool:
    """DescribeGroups: Kafka shows no group (Dead, no member, no error) where kcoord shows the group a JoinGroup
    made; Kafka reads at the last committed offset, and the group has not been written yet."""
    ours, theirs = _described(tested), _described(reference)
    return (kind == "describe_group" and ours is not None and theirs is not None
            and (theirs["error_code"], theirs["group_state"], theirs["members"]) == ("NONE", "Dead", [])
            and ours["group_state"] != "Dead")


KNOWN_DEVIATIONS: tuple[KnownDeviation, ...] = (
    KnownDeviation("group-not-yet-visible", "Reads see the coordinator's latest state", _group_not_yet_visible),
)


def known(kind: str, tested: tuple[Any, ...], reference: tuple[Any, ...]) -> KnownDeviation | None:
    return next((d for d in KNOWN_DEVIATIONS if d.matches(kind, tested, reference)), None)

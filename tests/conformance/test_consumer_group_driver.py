"""The ConsumerGroup driver's classic-protocol and migration steps: their answer checks fail on a wrong answer of the
implementation (patched in process, never on disk), `Migrate` is a program's first step only, and a consumer group
converted back to a classic group takes its members with it in the lockstep too."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kcoord.conformance.drivers.base import Action
from kcoord.conformance.drivers.consumer_group import ConsumerGroupDriver, heartbeat
from kcoord.conformance.lockstep import Divergence
from kcoord.conformance.runner import Session, run_case
from kcoord.conformance.suite import GENERATED
from kcoord.impl.group.consumer import classic_members

CASES = {c["id"]: c for c in json.loads((GENERATED / "consumer_group.json").read_text(encoding="utf-8"))["cases"]}


def test_a_sync_that_answers_another_assignment_fails_its_case(monkeypatch: pytest.MonkeyPatch) -> None:
    case = CASES["rejection-ClassicSync!NONE#49-in-Stable"]
    run_case("ConsumerGroup", case, Session())
    serialized = classic_members._serialized
    monkeypatch.setattr(classic_members, "_serialized",
                        lambda t, assigned, metadata: serialized(t, frozenset(), metadata))
    with pytest.raises(Divergence, match="synced assignment \\[\\], the spec's is"):
        run_case("ConsumerGroup", case, Session())


def test_a_join_that_answers_another_generation_fails_its_case(monkeypatch: pytest.MonkeyPatch) -> None:
    case = CASES["transition-Heartbeat#14-in-Absent"]
    finish = classic_members.finish_join

    def off_by_one(t: Any, req: Any, member_id: str, generation: int, out: Any) -> None:
        finish(t, req, member_id, generation + 1, out)

    monkeypatch.setattr(classic_members, "finish_join", off_by_one)
    with pytest.raises(Divergence, match="answered generation 3, the spec's member epoch is 2"):
        run_case("ConsumerGroup", case, Session())


def test_migrate_is_refused_once_a_group_exists() -> None:
    with ConsumerGroupDriver() as driver:
        driver.perform(heartbeat("a", 0))
        with pytest.raises(ValueError, match="first step"):
            driver.perform(Action("Migrate"))


def test_a_downgrade_case_runs_in_lockstep_and_leaves_no_member() -> None:
    """The last consumer-protocol member's leave converts the group back (MembersRemoved -> Dead): the
    implementation drops the members' instances, and the lockstep (the driver's `dropped_with`) with it."""
    case = next(c for c in CASES.values() if c["item"] == ["transition", "ConsumerGroup", 44, "Stable"])
    report = run_case("ConsumerGroup", case, Session())
    assert any(f.event == "MembersRemoved" and f.to_state == "Dead" for f in report.fired)
    assert [a["action"] for a in case["path"][:2]] == ["Migrate", "ClassicGroupStable"]

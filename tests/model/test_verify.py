"""`kcoord verify`: every bundled machine verifies; every broken fixture fails with the right obligation and the
golden counterexample; z3 agrees with exhaustive enumeration on the fixtures; the report formats are well formed.

Golden files: `tests/model/verify_fixtures/<name>.expected` hold the text report of the failures (no timings).
Run with `KCOORD_UPDATE_GOLDEN=1` to rewrite them after an intended change, then read the diff.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kcoord.model.explicit import explore
from kcoord.model.loader import bundled_machines, load
from kcoord.model.verify import verify_machine
from kcoord.model.verify_report import exit_code, render_json, render_junit, render_sarif, render_text
from kcoord.model.verify_result import Result

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "verify_fixtures"


@pytest.fixture(autouse=True)
def _from_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spec paths in messages are relative to the working directory; golden files assume the repo root."""
    monkeypatch.chdir(ROOT)

#: fixture -> (obligation kind, words in the failing obligation's title) it must fail with
EXPECTED = {
    "abort_keeps_partitions": ("consecution", "idle_has_no_partitions preserved by Complete"),
    "fence_without_bump": ("step", "fence_bumps holds for InitProducerId"),
    "stable_without_members": ("consecution", "stable_has_members preserved by Leave"),
    "epoch_decreases": ("step", "epoch_never_decreases holds for Retry"),
    "unreachable_state": ("reachability", "Overflow is reachable"),
    "deadlock": ("deadlock", "Waiting is not a deadlock"),
    "allowed_and_rejected": ("overlap", "EndTxn in Ongoing: both allowed and rejected"),
    "initial_violates": ("initiation", "initial state satisfies every invariant"),
    "epoch_overflow": ("bounds", "keeps epoch within 0..3"),
    "not_total": ("totality", "Commit is answered in Ongoing"),
    "nondeterministic": ("overlap", "Join in Empty: two transitions can fire"),
    "rotation_keeps_epoch": ("step", "new_producer_id_starts_at_zero holds for InitProducerId"),
}


def fixture(name: str) -> Path:
    return FIXTURES / f"{name}.sm"


def results_of(name: str) -> list[Result]:
    (machine,) = load([fixture(name)])
    return verify_machine(machine)


def test_every_fixture_is_listed() -> None:
    assert {p.stem for p in FIXTURES.glob("*.sm")} == set(EXPECTED)
    assert len(EXPECTED) >= 10


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_broken_fixture_fails_with_the_right_obligation_and_golden_counterexample(name: str) -> None:
    results = results_of(name)
    kind, words = EXPECTED[name]
    failed = [r for r in results if r.status == "fails"]
    assert any(r.kind == kind and words in r.title for r in failed), [(r.kind, r.title) for r in failed]
    assert exit_code(results) == (1 if any(r.failed for r in results) else 0)
    text = render_text(failed, timings=False) + "\n"
    golden = FIXTURES / f"{name}.expected"
    if os.environ.get("KCOORD_UPDATE_GOLDEN") == "1":
        golden.write_text(text)
    assert golden.exists(), f"no golden file {golden.name}; run with KCOORD_UPDATE_GOLDEN=1"
    assert text == golden.read_text()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_z3_agrees_with_exhaustive_enumeration(name: str) -> None:
    """On small instances, enumerating every state and argument with the Python evaluator finds exactly the
    consecution, step and bounds failures z3 reports (and nothing z3 says holds)."""
    (machine,) = load([fixture(name)])
    seen = explore(machine)
    results = verify_machine(machine)
    rows = {t.label: t.index for t in machine.transitions}

    def failing(kind: str) -> set[tuple[str, int]]:
        out = set()
        for r in results:
            if r.kind == kind and r.status == "fails":
                subject = r.title.split()[1]  # "invariant NAME preserved by EVENT#i" / "step NAME holds for ..."
                if kind == "bounds":  # "EVENT#i keeps VAR within T"
                    subject = r.title.split()[2]
                out.add((subject, rows[next(w for w in r.title.split() if w in rows)]))
        return out

    assert seen.states > 0
    assert failing("consecution") == seen.consecution
    assert failing("step") == seen.steps
    assert failing("bounds") == seen.bounds


@pytest.fixture(scope="module")
def bundled() -> dict[str, list[Result]]:
    """Every bundled machine's verification, once for the tests that read it (Transaction's alone is ~10 s of z3)."""
    with pytest.MonkeyPatch.context() as monkeypatch:  # (from the repo root, as `_from_repo_root` has the tests)
        monkeypatch.chdir(ROOT)
        return {name: verify_machine(machine) for name, machine in bundled_machines().items()}


def test_every_bundled_machine_verifies(bundled: dict[str, list[Result]]) -> None:
    machines = bundled_machines()
    assert set(bundled) == set(machines)
    for name, results in bundled.items():
        problems = [f"{r.title}: {r.detail}" for r in results if r.failed or r.status == "unknown"]
        assert problems == [], name
        assert any(r.kind == "consecution" for r in results) or not machines[name].invariants


def test_trace_properties_are_listed_not_dropped(bundled: dict[str, list[Result]]) -> None:
    machine = bundled_machines()["Transaction"]
    results = bundled["Transaction"]
    listed = {r.title for r in results if r.status == "trace-only"}
    assert listed == {f"trace property {p.name}" for p in machine.traces}
    assert all("checked on traces only" in r.detail for r in results if r.status == "trace-only")


def test_report_formats_are_well_formed() -> None:
    results = results_of("abort_keeps_partitions")
    data = json.loads(render_json(results))
    assert data["exit_code"] == 1 and any(r["status"] == "fails" for r in data["results"])
    sarif = json.loads(render_sarif(results))
    assert sarif["version"] == "2.1.0"
    (run,) = sarif["runs"]
    errors = [r for r in run["results"] if r["level"] == "error"]
    assert errors and errors[0]["locations"][0]["physicalLocation"]["region"]["startLine"] > 0
    suites = ET.fromstring(render_junit(results))
    (suite,) = suites.findall("testsuite")
    assert int(suite.get("failures", "0")) == sum(1 for r in results if r.failed)
    assert suite.findall("testcase/failure")


def test_exit_code_rule() -> None:
    from kcoord.model.diagnostics import NO_SPAN

    ok = Result("M", "consecution", "t", "holds", NO_SPAN)
    unknown = Result("M", "consecution", "t", "unknown", NO_SPAN)
    fail = Result("M", "consecution", "t", "fails", NO_SPAN)
    warning = Result("M", "totality", "t", "fails", NO_SPAN, severity="warning")
    assert exit_code([ok, warning]) == 0
    assert exit_code([ok, unknown]) == 3
    assert exit_code([unknown, fail]) == 1


def test_a_deadlock_goal_the_incremental_solver_gives_up_on_is_decided_all_the_same(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The incremental solver first gets `QUICK_DEADLOCK_MS` for a quantified deadlock goal (after some obligations
    it spends any time it is given); when it gives up, a fresh solver decides. With 1 ms it gives up on the spot:
    every deadlock obligation of a real machine still holds, and a deadlocked fixture still fails."""
    from kcoord.model import verify_states

    monkeypatch.setattr(verify_states, "QUICK_DEADLOCK_MS", 1)
    deadlocks = [r for r in verify_machine(bundled_machines()["ConsumerGroupMember"]) if r.kind == "deadlock"]
    assert deadlocks and all(r.status == "holds" for r in deadlocks), [
        (r.title, r.status, r.detail) for r in deadlocks if r.status != "holds"]
    failed = [r for r in results_of("deadlock") if r.status == "fails"]
    assert any(r.kind == "deadlock" and "Waiting is not a deadlock" in r.title for r in failed)

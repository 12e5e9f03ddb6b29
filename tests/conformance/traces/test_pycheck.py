"""The reference checker: valid traces are clean, and each check finds what it is meant to find."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import pytest

from kcoord.conformance.traces.checks import Spec
from kcoord.conformance.traces.generate import Options, generate
from kcoord.conformance.traces.mutations import MUTATIONS, mutate_every
from kcoord.conformance.traces.pycheck import Options as PyOptions
from kcoord.conformance.traces.pycheck import Result, check_paths
from kcoord.conformance.traces.writers import write_jsonl, write_parquet
from kcoord.model import ir
from kcoord.model.loader import bundled_machines

from .helpers import BOX, FENCED, GROUP_LEASE, LEASE_WITH_FENCED, acquire, box_rows, break_partway, lease_rows

Rows = list[dict[str, Any]]


def found(tmp_path: Path, traces: dict[str, Rows], machines: dict[str, ir.Machine] | None = None,
          parquet: bool = False) -> set[tuple[str, str, str, int]]:
    machines = machines or {"GroupLease": GROUP_LEASE}
    root = tmp_path / "traces"
    (write_parquet(traces, machines, str(root)) if parquet else write_jsonl(traces, str(root)))
    result = check_paths([str(root)], machines)
    assert_same_from_disk(root, machines, result)
    return {(v.check, v.name, v.key, v.seq) for v in result.violations}


def assert_same_from_disk(root: Path, machines: dict[str, ir.Machine], in_memory: Result) -> None:
    """Checked bucket by bucket from spill files (at most 3 rows in memory; one bucket, and 3, each split again when
    it holds more than 3 rows), the same traces give the same violations, messages and witnesses as in memory."""
    assert in_memory.spilled == {}
    for buckets in (1, 3):
        spilled = check_paths([str(root)], machines, options=PyOptions(max_rows_in_memory=3, buckets=buckets))
        assert set(spilled.spilled) == {m for m, n in in_memory.rows_read.items() if n > 3}
        if buckets == 1:  # the one bucket holds more than 3 rows: it is split again by key
            assert all(parts > 1 for parts in spilled.spilled.values()), spilled.spilled
        assert spilled.rows_read == in_memory.rows_read
        assert spilled.not_checked == in_memory.not_checked
        assert spilled.violations == in_memory.violations


@pytest.mark.parametrize("seed", [3, 4])
def test_mutated_traces_give_the_same_violations_from_spill_files(tmp_path: Path, seed: int) -> None:
    machines = dict(bundled_machines())
    traces, _ = generate(machines, seed, Options(keys=12, rows=200))
    rng = random.Random(seed)
    traces = mutate_every(traces, machines, rng)
    root = tmp_path / "traces"
    write_parquet(traces, machines, str(root))
    in_memory = check_paths([str(root)], machines)
    assert len({v.check for v in in_memory.violations}) >= 5, {v.check for v in in_memory.violations}
    spilled = check_paths([str(root)], machines, options=PyOptions(max_rows_in_memory=50, buckets=5))
    assert set(spilled.spilled) == set(machines)
    assert spilled.violations == in_memory.violations


def test_the_three_formats_give_the_same_violations(tmp_path: Path) -> None:
    """The same mutated traces as JSON Lines, v1 Parquet, the typed format (v2), and the three mixed in one folder:
    the reference checker reads the same rows from each and finds the same violations, witnesses included."""
    from .helpers import write_mixed

    machines = dict(bundled_machines())
    traces, _ = generate(machines, 5, Options(keys=6, rows=120))
    rng = random.Random(5)
    traces = mutate_every(traces, machines, rng)
    write_jsonl(traces, str(tmp_path / "jsonl"))
    write_parquet(traces, machines, str(tmp_path / "v1"), typed=False)
    write_parquet(traces, machines, str(tmp_path / "v2"))
    write_mixed(traces, machines, tmp_path / "mixed")
    results = [check_paths([str(tmp_path / f)], machines) for f in ("jsonl", "v1", "v2", "mixed")]
    assert results[0].violations and len({v.check for v in results[0].violations}) >= 5
    for r in results[1:]:
        assert r.rows_read == results[0].rows_read and r.quarantine.counts == {}
        assert r.violations == results[0].violations


@pytest.mark.parametrize("seed", [1, 2])
def test_generated_traces_of_every_bundled_machine_are_clean(tmp_path: Path, seed: int) -> None:
    machines = dict(bundled_machines())
    traces, _ = generate(machines, seed, Options(keys=8, rows=250))
    assert all(len(rows) >= 200 for rows in traces.values()), {k: len(v) for k, v in traces.items()}
    assert found(tmp_path, traces, machines, parquet=seed == 2) == set()


def test_a_scripted_lease_is_clean(tmp_path: Path) -> None:
    rows = lease_rows("g1", [acquire("m1", {"p1"}, 100), ("Release", {"m": "m1", "gen": 0}, 200)])
    assert [r["to_state"] for r in rows] == ["Held", "Free"]
    assert found(tmp_path, {"GroupLease": rows}) == set()


@pytest.mark.parametrize(("mutation", "check"), [
    ("drop_row", "discontinuity"), ("duplicate_row", "discontinuity"), ("swap_rows", "discontinuity"),
    ("non_edge_target", "illegal_transition"), ("change_error", "wrong_error"),
])
def test_each_mutation_is_found_by_its_check(tmp_path: Path, mutation: str, check: str) -> None:
    machines = dict(bundled_machines())
    traces, _ = generate(machines, 5, Options(keys=5, rows=120))
    rng = random.Random(9)
    traces = {n: MUTATIONS[mutation](rows, Spec.of(machines[n]), rng) for n, rows in traces.items()}
    checks = {c for c, _, _, _ in found(tmp_path, traces, machines)}
    assert check in checks


def test_corrupting_a_variable_breaks_the_effect_frame_or_an_invariant(tmp_path: Path) -> None:
    rows = lease_rows("g1", [acquire("m1", {"p1"}, 100), acquire("m1", {"p2"}, 150)])
    rows[0] = rows[0] | {"generation": 5}
    got = found(tmp_path, {"GroupLease": rows})
    assert ("effect_mismatch", "generation", "g1", 0) in got
    # the next row recorded the right value, but its pre-state is row 0's (5): the frame rule says it changed
    assert ("frame_mismatch", "generation", "g1", 1) in got


def test_guard_false_and_wrong_error(tmp_path: Path) -> None:
    rows = lease_rows("g1", [acquire("m1", {"p1"}, 100), ("Release", {"m": "m2", "gen": 0}, 200)])
    assert rows[1]["error"] == "UNKNOWN_MEMBER_ID"
    rows[1] = rows[1] | {"error": "NONE"}
    rows[0] = rows[0] | {"arg_parts": []}  # the grant's own guard (parts != {}) no longer holds
    got = found(tmp_path, {"GroupLease": rows})
    assert {c for c, *_ in got} >= {"guard_false", "wrong_error", "effect_mismatch"}


def test_a_rejection_that_changes_a_variable(tmp_path: Path) -> None:
    rows = lease_rows("g1", [acquire("m1", {"p1"}, 100), ("Release", {"m": "m2", "gen": 0}, 200)])
    rows[1] = rows[1] | {"deadline_ms": 7}
    assert ("reject_changed_state", "deadline_ms", "g1", 1) in found(tmp_path, {"GroupLease": rows})


def test_seq_gaps_count_only_within_one_coordinator_epoch(tmp_path: Path) -> None:
    rows = lease_rows("g1", [acquire("m1", {"p1"}, 100), acquire("m1", {"p2"}, 150), acquire("m1", {"p3"}, 160)])
    rows[1] = rows[1] | {"seq": 5}
    rows[2] = rows[2] | {"seq": 9, "coordinator_epoch": 1}
    assert found(tmp_path, {"GroupLease": rows}) == {("discontinuity", "", "g1", 5)}


def test_orphans_are_checked_against_the_error_table_only(tmp_path: Path) -> None:
    ok = lease_rows("ghost", [("Release", {"m": "m1", "gen": 3}, 100)])[0] | {"seq": -1}
    bad = ok | {"key": "ghost2", "group_id": "ghost2", "error": "NONE"}
    assert found(tmp_path, {"GroupLease": [ok, bad]}) == {("wrong_error", "Release!ILLEGAL_GENERATION#6", "ghost2",
                                                           -1)}


def test_a_seq_below_minus_one_is_quarantined_not_checked(tmp_path: Path) -> None:
    """seq is -1 (a row about no instance) or a position: a lower one is out of range, like any bad value (the Spark
    reader applies the same rule: tests/conformance/traces/test_spark_checker.py)."""
    ok = lease_rows("ghost", [("Release", {"m": "m1", "gen": 3}, 100)])[0] | {"seq": -1}
    root = tmp_path / "traces"
    write_jsonl({"GroupLease": [ok, ok | {"key": "ghost2", "group_id": "ghost2", "seq": -2}]}, str(root))
    result = check_paths([str(root)], {"GroupLease": GROUP_LEASE})
    assert dict(result.quarantine.counts) == {"out_of_range": 1}
    assert result.rows_read == {"GroupLease": 1} and not result.violations


def test_a_parquet_file_broken_partway_keeps_the_rows_before_the_break(tmp_path: Path) -> None:
    """A sound footer but a broken page header in the second row group: the first group's rows are checked, the rest
    of the file is one `unreadable_file` row with pyarrow's reason (the Spark reader fails such a read instead)."""
    rows = lease_rows("g1", [acquire("m1", {"p1"}, 100), ("Release", {"m": "m1", "gen": 0}, 200)])
    root = tmp_path / "traces"
    write_parquet({"GroupLease": rows}, {"GroupLease": GROUP_LEASE}, str(root))
    (path,) = (root / "GroupLease").glob("*.parquet")
    break_partway(path)
    result = check_paths([str(root)], {"GroupLease": GROUP_LEASE})
    assert result.rows_read == {"GroupLease": 1}
    assert dict(result.quarantine.counts) == {"unreadable_file": 1}


def test_a_first_load_row_has_no_pre_state(tmp_path: Path) -> None:
    held = lease_rows("g1", [acquire("m1", {"p1"}, 100)])[0]
    load = held | {"kind": "load", "event": "Load", "row": -1, "from_state": "Held", "seq": 40, "arg_m": None,
                   "arg_parts": None, "arg_now_ms": None, "arg_session_ms": None}
    # no pre-state: nothing about guards, steps or continuity; it enters Held without any Acquire, though
    assert found(tmp_path, {"GroupLease": [load]}) == {("before", "granted_after_acquire", "g1", 40)}
    assert ("illegal_transition", "", "g1", 40) in found(tmp_path, {"GroupLease": [load | {"from_state": "Dead"}]})


def test_exclusive_monotonic_within_before(tmp_path: Path) -> None:
    g1 = lease_rows("g1", [acquire("m1", {"p1", "p2"}, 100), ("Release", {"m": "m1", "gen": 0}, 500)])
    g2 = lease_rows("g2", [acquire("m1", {"p2"}, 300), ("Release", {"m": "m1", "gen": 0}, 450)])  # overlaps g1
    g3 = lease_rows("g3", [acquire("m1", {"p2"}, 500)])  # g1 released p2 at 500: no overlap
    late = lease_rows("g4", [acquire("m2", {"x"}, 100, 1), acquire("m3", {"y"}, 200), ("RevokeDone", {}, 40_000)])
    assert late[1]["to_state"] == "Revoking"
    hang = lease_rows("g5", [acquire("m4", {"z"}, 100, 1), acquire("m5", {"y"}, 200)])
    first = lease_rows("g6", [acquire("m6", {"w"}, 100)])
    back = [*first, first[0] | {"seq": 1, "ts_ms": 150, "generation": -1}]
    got = found(tmp_path, {"GroupLease": g1 + g2 + g3 + late + hang + back})
    assert ("exclusive", "one_group_per_partition", "g2", 0) in got
    assert not any(c == "exclusive" and k == "g3" for c, _, k, _ in got)
    assert ("within", "revocation_finishes", "g4", 1) in got
    assert ("within", "revocation_finishes", "g5", 1) in got  # never reached Free; the trace went on to 40000
    assert ("monotonic", "generations_monotonic", "g6", 1) in got
    # a rejection changes nothing: its (older) value takes no part in `monotonic`
    refused = [r | {"key": "g8", "group_id": "g8"} for r in first]
    refused.append(refused[0] | {"seq": 1, "ts_ms": 150, "generation": -1, "kind": "reject"})
    got = found(tmp_path, {"GroupLease": refused})
    assert not any(c == "monotonic" for c, _, _, _ in got)
    loaded = g1[0] | {"kind": "load", "event": "Load", "row": -1, "key": "g7", "group_id": "g7", "seq": 3}
    got = found(tmp_path, {"GroupLease": [*g1, loaded]})
    assert ("before", "granted_after_acquire", "g7", 3) in got


def monotonic_loads() -> tuple[list[dict[str, Any]], tuple[str, str, str, int]]:
    """Three instances of one group: ra reaches generation 1 at ts 140; rb's load at ts 200 restates its own
    generation 0 (older than ra's: allowed, a load restates its own log); rc's load goes below its own history."""
    def rows(key: str, steps: list[tuple[str, dict[str, Any], int]]) -> list[dict[str, Any]]:
        return [r | {"key": key} for r in lease_rows("gr", steps)]

    ra = rows("ra", [acquire("m2", {"s2"}, 100), ("Release", {"m": "m2", "gen": 0}, 120), acquire("m2", {"s2"}, 140)])
    rb = rows("rb", [acquire("m1", {"s1"}, 100)])
    rc = rows("rc", [acquire("m3", {"s3"}, 100)])
    assert ra[-1]["generation"] == 1 and rb[0]["generation"] == rc[0]["generation"] == 0
    rb.append(_load(rb[0], seq=1, ts_ms=200, from_state="Held"))
    rc.append(_load(rc[0], seq=1, ts_ms=200, from_state="Held", generation=-1))
    return ra + rb + rc, ("monotonic", "generations_monotonic", "rc", 1)


def test_a_load_is_monotonic_against_its_own_key_only(tmp_path: Path) -> None:
    rows, expected = monotonic_loads()
    assert found(tmp_path, {"GroupLease": rows}) == {expected}
    # the same restating row as a transition is a write below what another instance holds
    rb = [r for r in rows if r["key"] == "rb"]
    moved = rb[0] | {"seq": 1, "ts_ms": 200, "kind": "stay", "event": "Acquire", "from_state": "Held"}
    assert ("monotonic", "generations_monotonic", "rb", 1) in found(tmp_path / "t", {"GroupLease": [
        *(r for r in rows if r["key"] == "ra"), rb[0], moved]})


def test_fenced(tmp_path: Path) -> None:
    assert FENCED in LEASE_WITH_FENCED.traces
    g1 = lease_rows("g1", [acquire("m1", {"p1"}, 100), ("Release", {"m": "m1", "gen": 0}, 200)])
    stale = g1[1] | {"arg_gen": -1, "key": "g1", "ts_ms": 300, "seq": 2, "from_state": "Free", "to_state": "Free"}
    got = found(tmp_path, {"GroupLease": [*g1, stale]}, {"GroupLease": LEASE_WITH_FENCED})
    assert ("fenced", "session_fenced", "g1", 2) in got
    assert not any(c == "fenced" and s != 2 for c, _, _, s in got)


def _load(row: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """`row` as a snapshot: kind load, event Load, no arguments."""
    out = row | {"kind": "load", "event": "Load", "row": -1, "error": "NONE"}
    out.update({k: None for k in row if k.startswith("arg_")})
    return out | changes


def test_a_key_starts_again_after_a_terminal_state(tmp_path: Path) -> None:
    first = box_rows("b", [("Put", {"k": 3}, 100), ("Delete", {}, 110), ("Poke", {}, 120)])
    again = box_rows("b", [("Put", {"k": 2}, 130)], seq=3)
    assert [r["to_state"] for r in first + again] == ["Open", "Gone", "Gone", "Open"] and again[0]["n"] == 2
    machines = {"Box": BOX}
    assert found(tmp_path / "a", {"Box": first + again}, machines) == set()
    carried = again[0] | {"n": 5}  # the new instance does not inherit the deleted one's values
    assert found(tmp_path / "b", {"Box": [*first, carried]}, machines) == {("effect_mismatch", "n", "b", 3)}


def test_a_step_of_one_event_applies_to_that_event_only(tmp_path: Path) -> None:
    rows = box_rows("b", [("Put", {"k": 3}, 100), ("Put", {"k": 1}, 110), ("Delete", {}, 120)])
    rows[1] = rows[1] | {"n": 2}  # Put(1) from 3 must give 4: the effect and the step both fail
    got = found(tmp_path, {"Box": rows}, {"Box": BOX})
    assert ("step", "put_grows", "b", 1) in got and ("effect_mismatch", "n", "b", 1) in got
    assert ("frame_mismatch", "n", "b", 2) in got  # Delete keeps n (now 2 vs 4 before)...
    assert ("step", "put_grows", "b", 2) not in got  # ...but put_grows is not Delete's property


def test_loads_are_snapshots(tmp_path: Path) -> None:
    held = lease_rows("g1", [acquire("m1", {"p1"}, 100)])
    # a coordinator that did not know the key loads it (from the fresh instance): no edge, no continuity needed
    failover = _load(held[0], seq=2**32, coordinator_epoch=1, ts_ms=150, from_state="Free")
    assert found(tmp_path / "a", {"GroupLease": [*held, failover]}) == set()
    # but a snapshot must be reachable from where it starts, and start where the key is (or from scratch)
    first = box_rows("b", [("Put", {"k": 3}, 100), ("Delete", {}, 110)])
    back = _load(first[1], seq=2, ts_ms=120, from_state="Gone", to_state="Open")
    got = found(tmp_path / "b", {"Box": [*first, back]}, {"Box": BOX})
    assert got == {("illegal_transition", "", "b", 2)}


def test_before_needs_the_event_since_the_key_s_previous_row(tmp_path: Path) -> None:
    rows = lease_rows("g1", [acquire("m1", {"p1"}, 100), ("Release", {"m": "m1", "gen": 0}, 200)])
    # entering Held again at 400 by a snapshot: the only Acquire of g1 is at 100, before the key's previous row (200)
    reload = _load(rows[0], seq=2, ts_ms=400, from_state="Free")
    assert found(tmp_path / "a", {"GroupLease": [*rows, reload]}) == {("before", "granted_after_acquire", "g1", 2)}
    fresh_acquire = lease_rows("g1", [acquire("m2", {"p1"}, 300)], seq=9)[0] | {"key": "g1-other"}
    got = found(tmp_path / "b", {"GroupLease": [*rows, reload, fresh_acquire]})
    assert ("before", "granted_after_acquire", "g1", 2) not in got  # an Acquire of g1 at 300, inside (200, 400]


def test_the_before_window_starts_when_the_state_was_entered(tmp_path: Path) -> None:
    rows = lease_rows("g1", [acquire("m1", {"p1"}, 100), ("Release", {"m": "m1", "gen": 0}, 200),
                             ("Release", {"m": "m1", "gen": 0}, 300)])
    assert [r["kind"] for r in rows] == ["transition", "transition", "reject"]  # Free since 200, a rejection at 300
    reload = _load(rows[0], seq=3, ts_ms=400, from_state="Free")
    other = lease_rows("g1", [acquire("m2", {"p2"}, 250)], seq=9)[0] | {"key": "g1-other"}
    got = found(tmp_path, {"GroupLease": [*rows, reload, other]})
    assert not any(c == "before" for c, *_ in got), got  # the Acquire at 250 is after Free was entered (200)


def test_before_matches_the_values_the_entering_row_started_from(tmp_path: Path) -> None:
    """`before ... on K` compares K as it was before the entering row (the obligation belongs to the state being
    left): entering Held by Acquire(m1) starts from holder "", which no Acquire ever leaves behind."""
    by_holder = ir.TraceProperty("acquired_by_holder", "before", ("GroupLease", "Held", "GroupLease", "Acquire"),
                                 ("holder",), span=GROUP_LEASE.traces[0].span)
    lease = dataclasses.replace(GROUP_LEASE, traces=(by_holder,))
    rows = lease_rows("g1", [acquire("m1", {"p1"}, 100)])
    assert rows[0]["holder"] == "m1"  # its own post-state would have matched
    assert found(tmp_path, {"GroupLease": rows}, {"GroupLease": lease}) == {
        ("before", "acquired_by_holder", "g1", 0)}


def test_rows_share_repeated_values_and_read_as_their_post_state() -> None:
    from kcoord.conformance.traces import readers

    shape = readers.RowShape.of(bundled_machines()["Transaction"])
    made = [shape.typed({"key": "t-" + str(i % 3), "to_state": "Ongoing", "ts_ms": 10_000 + i,
                         "producer_id": 5_000 + i % 2, "partitions": ["b", "a"]})
            for i in range(readers._SHARE_PROBE + 10)]
    first, later = made[0], made[3]
    assert first["key"] == later["key"] and first["key"] is later["key"]  # equal values: one object
    assert first["producer_id"] is made[2]["producer_id"]
    assert later["partitions"] == frozenset({"a", "b"}) and later["partitions"] is first["partitions"]
    assert first["state"] == "Ongoing" and "state" not in first  # read as a state, not a column
    with pytest.raises(KeyError):
        first["no_such_column"]
    # ts_ms rarely repeats: after the probe it is no longer kept (an int from a later row is its own object)
    assert "ts_ms" in shape._unshared and "ts_ms" not in shape._shared and "key" in shape._shared

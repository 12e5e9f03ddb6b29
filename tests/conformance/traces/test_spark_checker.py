"""The Spark checker agrees with the reference checker, violation for violation, on random traces and mutations;
malformed rows are quarantined the same way by both engines and never stop a run."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kcoord.conformance.traces import session
from kcoord.conformance.traces.checks import Spec
from kcoord.conformance.traces.generate import Options, generate
from kcoord.conformance.traces.job import Config, UnreadableInput, run, unreadable_input
from kcoord.conformance.traces.mutations import MUTATIONS
from kcoord.conformance.traces.output import read_violations
from kcoord.conformance.traces.sparkcheck import MachinePlan
from kcoord.conformance.traces.writers import write_jsonl, write_parquet
from kcoord.model import ir
from kcoord.model.loader import bundled_machines

from .helpers import GROUP_LEASE, LEASE_WITH_FENCED, write_mixed
from .sparklogs import compiled, fallbacks, watch

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def machines() -> dict[str, ir.Machine]:
    """Every trace-property form (GroupLease) and every bundled machine: the largest expressions (ClassicGroup,
    Transaction), `exclusive` on a real machine, a variable named like a common column (PartitionProducer), enum
    arguments and variables (ProducerClient, StreamsTask); the expression compiler itself is checked on every
    bundled machine in tests/model/test_spark_backend.py."""
    return {"GroupLease": LEASE_WITH_FENCED, **bundled_machines()}


def both(spark: Any, root: Path, ms: dict[str, ir.Machine]) -> tuple[Any, Any, dict[Any, Any], dict[Any, Any]]:
    py = run(Config([str(root)], str(root.parent / "out-python"), engine="python"), ms)
    sp = run(Config([str(root)], str(root.parent / "out-spark"), engine="spark"), ms, spark=spark)
    a = {v.identity: v for v in read_violations(str(root.parent / "out-python" / "violations"))}
    b = {v.identity: v for v in read_violations(str(root.parent / "out-spark" / "violations"))}
    return py, sp, a, b


def py_all(root: Path) -> list[Any]:
    return read_violations(str(root.parent / "out-python" / "violations"))


def _count(violations: list[Any], identity: Any) -> int:
    return sum(1 for v in violations if v.identity == identity)


@settings(max_examples=1, deadline=None, derandomize=True, phases=(Phase.explicit, Phase.generate),
          suppress_health_check=list(HealthCheck))  # one Spark run costs minutes: one derandomized case, every
# mutation kind applied in turn (derandomized, hypothesis starts from its simplest case: seed 0, sorted order); each
# machine's rows in the three formats at once (JSON Lines, v1 Parquet, typed v2 Parquet)
@given(seed=st.integers(0, 10_000), mutations=st.permutations(sorted(MUTATIONS)))
@pytest.mark.parametrize("code", ["generated", "interpreted"])
def test_spark_and_python_report_the_same_violations(spark: Any, tmp_path_factory: pytest.TempPathFactory,
                                                      monkeypatch: pytest.MonkeyPatch, code: str, seed: int,
                                                      mutations: list[str]) -> None:
    """Both ways Spark evaluates the checks (`session.tune` chooses by the input's size): generated code, and
    its interpreted expressions."""
    monkeypatch.setattr(session, "INTERPRETED_ROWS", -1 if code == "generated" else 10**9)
    ms = machines()
    traces, _ = generate(ms, seed, Options(keys=4, rows=60))
    rng = random.Random(seed)
    for name in mutations:
        traces = {m: MUTATIONS[name](rows, Spec.of(ms[m]), rng) for m, rows in traces.items()}
    for rows in traces.values():  # rows about no instance (seq -1) in a state they cannot reach: their witness is
        states = sorted({r["to_state"] for r in rows})  # the row alone, as JSON, nulls included
        for r in [r for r in rows if r["seq"] < 0][:2]:
            r["to_state"] = next(x for x in states if x != r["to_state"])
    root = tmp_path_factory.mktemp("diff") / "traces"
    write_mixed(traces, ms, root)
    with watch(spark) as logged:
        py, sp, a, b = both(spark, root, ms)
    assert fallbacks("\n".join(logged)) == []  # every stage's generated code compiled, none given up
    generated = sum("Code generated in" in line for line in logged)  # (Janino's compilations, as Spark logs them)
    assert generated > 100 if code == "generated" else generated < 10, generated
    assert set(a) == set(b)
    assert a, "the mutations broke nothing"
    assert {k: v.message for k, v in a.items()} == {k: v.message for k, v in b.items()}
    assert {k: v.location for k, v in a.items()} == {k: v.location for k, v in b.items()}
    unique = {k for k in a if _count(py_all(root), k) == 1}  # a duplicated row gives one identity twice
    shown = {k: (v.witness, v.witness_rows) for k, v in b.items() if v.witness and k in unique}
    assert shown and all((a[k].witness, a[k].witness_rows) == w for k, w in shown.items()), \
        next((k, a[k].witness_rows, w[1]) for k, w in shown.items() if (a[k].witness, a[k].witness_rows) != w)
    assert any(k[4] == -1 for k in shown), "no witness of a row about no instance (seq -1) compared"
    assert py.summary.violations == sp.summary.violations and py.summary.rows_read == sp.summary.rows_read
    assert py.exit_code == sp.exit_code == 1


BAD_LINES = [
    '{"machine": "GroupLease", "seq": "7"}',  # wrong type
    '{"machine": "GroupLease"',  # not JSON
    "[1, 2]",  # not an object
]


def dictionary_encode(path: Path, names: tuple[str, ...]) -> None:
    """Rewrite a Parquet file with these string columns dictionary-encoded, as writers do for few distinct values
    (both engines must read them as strings)."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    for name in names:
        i = table.schema.get_field_index(name)
        table = table.set_column(i, name, table.column(name).dictionary_encode())
    pq.write_table(table, path)


def narrow(path: Path, types: dict[str, str]) -> None:
    """Rewrite a Parquet file with these integer columns in narrower types (both engines widen them)."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    for name, typ in types.items():
        i = table.schema.get_field_index(name)
        table = table.set_column(i, name, table.column(name).cast(typ))
    pq.write_table(table, path)


TEXT_KEYED_ROWS = 3  # valid rows `add_malformed` writes too (string columns holding numbers, objects, arrays)


def add_malformed(root: Path, good: dict[str, Any]) -> dict[str, int]:
    """Malformed rows of every kind beside the valid ones; returns the quarantine counts they must give."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    variants = [good | {"event": "Nope"}, good | {"to_state": "Gone"}, good | {"machine": "Other"},
                {k: v for k, v in good.items() if k != "generation"},
                good | {"last_release": "LATER"}, good | {"owned": ["a", None]}, good | {"owned": [None]},
                good | {"generation": 2**40},
                good | {"seq": -2}]
    lines = [*BAD_LINES, *(json.dumps({k: sorted(v) if isinstance(v, frozenset) else v for k, v in r.items()})
                           for r in variants)]
    (root / "GroupLease" / "bad.jsonl").write_text("\n".join(lines) + "\n")
    nope, _, other, no_generation = lines[len(BAD_LINES):len(BAD_LINES) + 4]  # variants 0-3 as JSON
    not_utf8 = nope.encode().replace(b'"Nope"', b'"No\xff\xfepe"')
    assert b"\xff" in not_utf8
    # what Spark's JSON reader (Jackson) does with a line, mirrored by the Python reader: bytes that are not UTF-8
    # make it malformed; a byte order mark opening it is skipped; its first value counts and what follows is
    # ignored; an array of objects is a row per object, [] none; any other array, or an element of the wrong type,
    # makes the whole line malformed
    odd = [not_utf8, b"\xef\xbb\xbf" + no_generation.encode(), nope.encode() + b" trailing",
           f"[{other}, {other}]".encode(), b"[]", f"[{other}, 1]".encode(),
           ("[" + json.dumps(json.loads(other) | {"seq": "x"}) + "]").encode()]
    # a string column holding a number, object or array takes its text as written (1e2 stays 1e2, spaces kept),
    # and an escaped surrogate without its pair is a `?`: valid rows whose keys and holders only that reading
    # names alike in both engines
    acquire = json.loads(nope) | {"event": "Acquire", "to_state": "Dead"}  # Free -Acquire-> Dead: not an edge
    for key, holder in (("1e2", "[1.50, -0]"), ('{"k": [1,  2]}', "true"), ('"a\\ud83d"', '"\\udc00"')):
        row = json.dumps(acquire | {"key": "K", "group_id": "K", "holder": "H"})
        odd.append(row.replace('"K"', key).replace('"H"', holder).encode())
    (root / "GroupLease" / "odd.jsonl").write_bytes(b"\n".join(odd) + b"\n")
    pq.write_table(pa.table({"seq": pa.array(["x"])}), root / "GroupLease" / "wrong.parquet")
    torn = pa.table({"seq": pa.array([1, 2], pa.int64())})  # a crash mid-write: the footer is cut off
    pq.write_table(torn, root / "GroupLease" / "torn.parquet")
    (root / "GroupLease" / "torn.parquet").write_bytes((root / "GroupLease" / "torn.parquet").read_bytes()[:-20])
    (root / "Unknown").mkdir()
    (root / "Unknown" / "a.jsonl").write_text('{"machine": "Unknown"}\n')
    (root / "Unknown" / "b.parquet").write_bytes(b"PAR1 not parquet")
    # (a null argument is not malformed: the runtime records null for an argument it never computed)
    return {"malformed": 6, "unknown": 3, "wrong_machine": 3, "missing": 2, "unknown_member": 1,
            "null_element": 2, "out_of_range": 2, "bad_file_schema": 1, "unknown_machine": 1, "unreadable_file": 2}


def test_clean_traces_and_the_hand_made_cases_agree(spark: Any, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """One Spark run: unmutated random traces (Parquet, in a partition folder) give nothing; the hand-made cases of
    test_pycheck beside them (JSON Lines: loads as snapshots, a key starting again after a terminal state, a step of
    one event, the `before` window, loads under `monotonic`) give exactly their violations; malformed rows of every
    kind are quarantined with the same reasons and never stop the run — the same in both engines. The row
    violations are planned only for the machines whose pass flagged a row (`MachinePlan.flagged`)."""
    from .helpers import BOX, acquire, box_rows, lease_rows
    from .test_pycheck import _load, monotonic_loads

    gone = box_rows("b1", [("Put", {"k": 3}, 100), ("Delete", {}, 110), ("Poke", {}, 120)])
    again = box_rows("b1", [("Put", {"k": 2}, 130)], seq=3)
    carried = box_rows("b2", [("Put", {"k": 3}, 100), ("Delete", {}, 110)])
    carried += [box_rows("b2", [("Put", {"k": 2}, 130)], seq=2)[0] | {"n": 5}]
    stepped = box_rows("b3", [("Put", {"k": 3}, 100), ("Put", {"k": 1}, 110), ("Delete", {}, 120)])
    stepped[1] = stepped[1] | {"n": 2}
    back = box_rows("b4", [("Put", {"k": 3}, 100), ("Delete", {}, 110)])
    back.append(_load(back[1], seq=2, ts_ms=120, from_state="Gone", to_state="Open"))
    held = lease_rows("g1", [acquire("m1", {"p1"}, 100)])
    held.append(_load(held[0], seq=2**32, coordinator_epoch=1, ts_ms=150, from_state="Free"))
    window = lease_rows("g2", [acquire("m1", {"q1"}, 100), ("Release", {"m": "m1", "gen": 0}, 200)])
    window.append(_load(window[0], seq=2, ts_ms=400, from_state="Free"))
    entered = lease_rows("g3", [acquire("m1", {"r1"}, 100), ("Release", {"m": "m1", "gen": 0}, 200),
                                ("Release", {"m": "m1", "gen": 0}, 300)])
    entered.append(_load(entered[0], seq=3, ts_ms=400, from_state="Free"))
    entered.append(lease_rows("g3", [acquire("m2", {"r2"}, 250)], seq=9)[0] | {"key": "g3-other"})
    ms = {"Box": BOX, **machines()}
    root = tmp_path / "traces"
    clean, _ = generate(machines(), 11, Options(keys=5, rows=80))
    write_parquet(clean, ms, str(root), partition="day=1", typed=False)  # (v1: names as strings)
    dictionary_encode(root / "ConsumerGroupMember" / "day=1" / "part-0.parquet", ("kind", "event", "to_state"))
    narrow(root / "PartitionProducer" / "day=1" / "part-0.parquet", {"seq": "int32", "node": "uint8",
                                                                      "ts_ms": "uint32"})
    reloaded, _ = monotonic_loads()  # a load is compared with its own key's rows only
    hand_made = {"Box": gone + again + carried + stepped + back, "GroupLease": held + window + entered + reloaded}
    write_jsonl(hand_made, str(root))
    # (which row this is follows the generator's random stream, which any change of a bundled spec shifts)
    good = next(r for r in clean["GroupLease"] if r["event"] == "Acquire")
    expected = add_malformed(root, good)
    planned = []
    row_violations = MachinePlan.row_violations
    monkeypatch.setattr(MachinePlan, "row_violations", lambda plan: planned.append(plan.m.name) or row_violations(plan))
    py, sp, a, b = both(spark, root, ms)
    assert sorted(planned) == ["Box", "GroupLease"]  # (the others' traces are clean)
    assert py.summary.quarantined == sp.summary.quarantined == expected
    assert any((root.parent / "out-spark" / "quarantine").glob("*.json"))
    lines = (root.parent / "out-python" / "quarantine" / "part-python.jsonl").read_text()
    assert lines.count("\n") == sum(expected.values())
    unreadable = [r for r in map(json.loads, lines.splitlines()) if r["reason"] == "unreadable_file"]
    assert sorted(Path(r["source"]).name for r in unreadable) == ["b.parquet", "torn.parquet"]
    assert all("Parquet" in r["raw"] for r in unreadable), unreadable  # pyarrow's reason, e.g. no magic bytes
    rows = sum(len(r) for r in clean.values()) + sum(len(r) for r in hand_made.values()) + TEXT_KEYED_ROWS
    assert sum(sp.summary.rows_read.values()) == sum(py.summary.rows_read.values()) == rows
    assert set(a) == set(b) and {k: v.message for k, v in a.items()} == {k: v.message for k, v in b.items()}
    found = {(m, c, k, s) for m, k, c, _, s in a}
    text_keys = {"1e2", '{"k": [1,  2]}', "a?"}  # the text-keyed rows: Acquire into Dead, never an edge
    assert {f for f in found if f[2] not in text_keys} == {
        ("Box", "effect_mismatch", "b2", 2), ("Box", "effect_mismatch", "b3", 1), ("Box", "step", "b3", 1),
        ("Box", "frame_mismatch", "b3", 2), ("Box", "illegal_transition", "b4", 2),
        ("GroupLease", "before", "g2", 2), ("GroupLease", "monotonic", "rc", 1)}
    assert {(k, s) for _, c, k, s in found if c == "illegal_transition" and k in text_keys} == \
        {(k, good["seq"]) for k in text_keys}


def test_a_parquet_file_broken_partway_stops_spark_with_its_name(spark: Any, tmp_path: Path) -> None:
    """Spark cannot skip the rest of a file whose pages break after a sound footer: the run stops with an error that
    names the file and the reader's reason (the CLI's exit code 2), instead of a Java stack trace."""
    from .helpers import acquire, break_partway, lease_rows

    rows = lease_rows("g1", [acquire("m1", {"p1"}, 100), ("Release", {"m": "m1", "gen": 0}, 200)])
    root = tmp_path / "traces"
    write_parquet({"GroupLease": rows}, {"GroupLease": GROUP_LEASE}, str(root))
    (path,) = (root / "GroupLease").glob("*.parquet")
    break_partway(path)
    with pytest.raises(UnreadableInput, match=rf"Spark cannot read {re.escape(str(path))}: java\.io\.IOException: "
                                              r"can not read class org\.apache\.parquet\.format\.PageHeader"):
        run(Config([str(root)], str(tmp_path / "out")), {"GroupLease": GROUP_LEASE}, spark=spark)
    assert unreadable_input(RuntimeError("[DIVIDE_BY_ZERO] Division by zero.")) is None


def test_rejections_that_start_a_run_are_kept_for_the_trace_properties(spark: Any, tmp_path: Path) -> None:
    """Without an `exclusive` or own `fenced` property, the Spark checker persists only the rejections a trace
    property can read (`MachinePlan.needs_row`). A clean rejection that starts a run — the first row of a key
    starting again after a final state — is one: here the Free it starts is the state a snapshot into Held leaves,
    so `before`'s window begins at it (ts 300), not at the run before (Dead, ts 250)."""
    from .helpers import acquire, lease_rows
    from .test_pycheck import _load

    lease = dataclasses.replace(GROUP_LEASE, traces=tuple(p for p in GROUP_LEASE.traces if p.form != "exclusive"))
    rows = lease_rows("g1", [acquire("m1", {"p1"}, 100), ("Release", {"m": "m1", "gen": 0}, 200),
                             ("Expire", {"now_ms": 250}, 250), ("Release", {"m": "m1", "gen": -1}, 300)])
    assert [(r["kind"], r["to_state"]) for r in rows] == [("transition", "Held"), ("transition", "Free"),
                                                          ("transition", "Dead"), ("reject", "Free")]
    rows.append(_load(rows[0], seq=4, ts_ms=400, from_state="Free"))
    root = tmp_path / "traces"
    write_jsonl({"GroupLease": rows}, str(root))
    _, _, a, b = both(spark, root, {"GroupLease": lease})
    messages = {k: v.message for k, v in a.items()}
    assert [m for m in messages.values() if "without a GroupLease.Acquire" in m] == [
        "entered Held at ts 400 without a GroupLease.Acquire on group_id since ts 300"]
    assert messages == {k: v.message for k, v in b.items()}


def test_nothing_checked_because_every_row_was_quarantined_is_exit_2(spark: Any, tmp_path: Path) -> None:
    """Traces of machines the spec does not have (the wrong --spec) and lines that are all malformed: both engines
    check no row, quarantine every one with its reason (written, nothing lost) and the outcome is exit 2, not a
    clean 0 a CI job would take for a pass."""
    traces, _ = generate({"Transaction": bundled_machines()["Transaction"]}, 3, Options(keys=2, rows=30))
    write_jsonl(traces, str(tmp_path / "t"))
    (tmp_path / "t" / "GroupLease").mkdir()
    (tmp_path / "t" / "GroupLease" / "part-0.jsonl").write_text("not json\n{\"seq\": \"x\"}\n")
    rows = sum(len(r) for r in traces.values()) + 2
    for engine in ("python", "spark"):
        out = tmp_path / f"out-{engine}"
        outcome = run(Config([str(tmp_path / "t")], str(out), engine=engine), {"GroupLease": GROUP_LEASE},
                      spark=spark)
        assert outcome.summary.quarantined_total == rows and not sum(outcome.summary.rows_read.values()), engine
        assert outcome.exit_code == 2, engine
        assert f"nothing was checked: all {rows} rows were quarantined" in outcome.report, outcome.report
        quarantined = [json.loads(line) for p in (out / "quarantine").glob("part-*.json*") for line in p.open()]
        assert len(quarantined) == rows, engine
        assert {q["reason"].split(":")[0] for q in quarantined} >= {"unknown_machine", "malformed"}, engine


def test_the_checker_s_rule_exclusions_keep_the_session_s_own(spark: Any) -> None:
    """Under `spark-submit --conf spark.sql.optimizer.excludedRules=...` the user's exclusions stay, ours are added
    once (running `tune` again changes nothing)."""
    from kcoord.conformance.traces.session import AQE_EXCLUDED_RULES, EXCLUDED_RULES, tune

    setting = "spark.sql.optimizer.excludedRules"
    before = spark.conf.get(setting)
    mine = "org.apache.spark.sql.catalyst.optimizer.ConvertToLocalRelation"
    try:
        spark.conf.set(setting, mine)
        tune(spark)
        tune(spark)
        assert spark.conf.get(setting).split(",") == [mine, *EXCLUDED_RULES]
        aqe = spark.conf.get("spark.sql.adaptive.optimizer.excludedRules").split(",")
        assert aqe == list(AQE_EXCLUDED_RULES)
    finally:
        spark.conf.set(setting, before)


def test_the_codegen_watch_sees_a_fallback(spark: Any) -> None:
    """The watch the differential test relies on can fail: a whole-stage method over a 100-byte limit is given up,
    and Spark's report of it is caught."""
    from kcoord.conformance.traces.session import tune

    tune(spark)  # generated code, as a run of a large input (an earlier test's small one leaves it interpreted)
    limit = spark.conf.get("spark.sql.codegen.hugeMethodLimit")
    try:
        spark.conf.set("spark.sql.codegen.hugeMethodLimit", "100")
        with watch(spark) as logged:
            spark.range(10).selectExpr("id * 3 + 1 AS x").where("x % 2 = 0").count()
    finally:
        spark.conf.set("spark.sql.codegen.hugeMethodLimit", limit)
    assert any("Found too long generated codes" in line for line in fallbacks("\n".join(logged))), logged


def test_the_tasks_class_loader_compiles_each_whole_stage_code_once(spark: Any) -> None:
    """Spark's compile cache is keyed on the code and the thread's context class loader: in a local session the
    driver (planning the stage) and the task (running it) compile each whole-stage code once each, unless the
    driver's thread has the tasks' loader (`session.tasks_class_loader`, as `job.run_spark` does)."""
    from kcoord.conformance.traces.session import tasks_class_loader, tune

    tune(spark)  # generated code, as a run of a large input (an earlier test's small one leaves it interpreted)

    def sources(factor: int, shared: bool) -> list[str]:  # (a literal of its own: no class cached from before)
        with watch(spark, "DEBUG") as logged, tasks_class_loader(spark) if shared else contextlib.nullcontext():
            spark.range(0, 100, 1, 2).selectExpr(f"id * {factor} AS x").where("x % 3 = 0").count()
        return [s for s in compiled(logged) if "GeneratedIteratorForCodegenStage" in s and f"{factor}L" in s]

    salt = random.randrange(10**6, 10**9)
    apart, shared = sources(salt, False), sources(salt + 1, True)
    assert len(apart) == 2 and len(set(apart)) == 1, apart  # (Spark 4.3's behaviour: the stage's code twice)
    assert len(shared) == 1, shared


def test_python_workers_of_a_local_session_run_this_interpreter(spark: Any) -> None:
    """A local session's Python workers run the interpreter of the venv (PYSPARK_PYTHON, which the SparkContext reads
    when it starts), not the python3 on PATH: `spark.pyspark.python` alone left them on PATH's python3."""
    import sys

    ran = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("sys").executable).collect()
    assert ran == [sys.executable]


def test_python_workers_of_a_local_session_are_forked_from_the_preloading_daemon(spark: Any) -> None:
    """A local session's Python workers are forked from `sparkdaemon` (`spark.python.daemon.module`): the worker's
    `__main__` is that module, run by Spark, and what it preloads is imported before the task imports anything."""
    from kcoord.conformance.traces.sparkdaemon import PRELOADED

    def seen(_: Any) -> tuple[str, list[str]]:  # (in the worker: only `sys`, which every Python has loaded)
        import sys

        return sys.modules["__main__"].__spec__.name, sorted(m for m in PRELOADED if m in sys.modules)

    ran = spark.sparkContext.parallelize([0, 1], 2).map(seen).collect()
    assert ran == [(session.DAEMON_MODULE, sorted(PRELOADED))] * 2, ran
    assert spark.sparkContext.getConf().get("spark.python.daemon.module") == session.DAEMON_MODULE


def test_a_python_that_does_not_find_the_daemon_keeps_pyspark_s_own(tmp_path: Path) -> None:
    """The daemon is set only when the workers' Python finds it: this interpreter does; the same one without its
    site-packages (`-S`: no editable or installed kcoord) does not, nor a path that is no program."""
    import sys

    bare = tmp_path / "python-without-site"
    bare.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    bare.chmod(0o755)
    assert session.preloading_daemon(sys.executable)
    assert not session.preloading_daemon(str(bare))
    assert not session.preloading_daemon(str(tmp_path / "no-such-python"))


def test_the_c1_only_driver_keeps_the_tiered_code_cache(spark: Any) -> None:
    """The shared session's driver runs C1 only (`jit_options`); HotSpot would then give it a client VM's 48 MB code
    cache, which the suite's many generated stages filled until the JVM died (`Out of space in CodeCache for method
    handle intrinsic`, exit code 50: CI18)."""
    jvm = spark.sparkContext._jvm
    diagnostic = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
    assert diagnostic.getVMOption("TieredStopAtLevel").getValue() == "1"
    assert int(diagnostic.getVMOption("ReservedCodeCacheSize").getValue()) >= 240 * 1024 * 1024

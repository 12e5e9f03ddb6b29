"""`duckprops`' trace properties in DuckDB against the Python reference checker: on every bundled machine's generated
traces with every mutation (and with a proposed `fenced` property, which no bundled spec declares yet), the same
violations of every trace property — as sets of (machine, key, check, name, seq), and the same messages — with the
staged rows computed per unit of whole keys (three units, as Spark's tasks would) and checked together; and none on
clean generated traces, where rows were staged and checked."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import duckdb
import pytest

from kcoord.conformance.traces.checks import ACCEPTED_KINDS, TRACE_FORMS
from kcoord.conformance.traces.duckcheck import pass_query
from kcoord.conformance.traces.duckprops import (
    expression_plans,
    not_checked,
    staged_all,
    staged_from,
    trace_end,
    violations,
)
from kcoord.conformance.traces.generate import Options, generate
from kcoord.conformance.traces.mutations import mutate_every
from kcoord.conformance.traces.pycheck import check_paths
from kcoord.conformance.traces.sparkprops import needs
from kcoord.conformance.traces.writers import write_parquet
from kcoord.model import ir
from kcoord.model import sqltree as q

SEEDS = (7, 1)
Found = tuple[str, str, str, str, int, str]  # machine, key, check, name, seq, message
#: a `fenced` property (no bundled spec declares one yet: tests/conformance/traces/test_runtime_traces.py proposes
#: it), added to the bundled specs so that every form of trace property is compared
FENCED = {"partition_producer.sm": """
  trace no_fenced_writes "no data batch is accepted from an epoch the transaction coordinator has already fenced":
    fenced PartitionProducer.Append.epoch by Transaction.producer_epoch on producer_id
"""}


def with_fenced() -> dict[str, ir.Machine]:
    from kcoord.model.diagnostics import SourceFile
    from kcoord.model.loader import bundled_spec_files, load_sources

    sources = [SourceFile(str(p), p.read_text().rstrip("\n") + "\n" + FENCED.get(p.name, ""))
               for p in bundled_spec_files()]
    machines, diags = load_sources(sources)
    assert not diags.has_errors, diags.render()
    return {m.name: m for m in machines}


def column_types(m: ir.Machine) -> dict[str, object]:
    """`m`'s key, variable and argument columns, with their types."""
    out: dict[str, object] = {f.name: f.type for f in (*m.keys, *m.variables)}
    return out | {f"arg_{p.name}": p.type for e in m.events for p in e.params}


def property_columns(machines: Mapping[str, ir.Machine], m: ir.Machine) -> list[str]:
    """The columns of `m` the trace properties of every machine read (their K, V, event arguments) and ts_ms."""
    names = set(column_types(m))
    read = {c for other in machines.values() for p in other.traces
            for c in (*p.per, *(s for s in p.subject if isinstance(s, str)),
                      *(f"arg_{s}" for s in p.subject if isinstance(s, str)))}
    return ["ts_ms", *sorted(names & read)]


def scramble(machines: Mapping[str, ir.Machine], rows: dict[str, list[dict[str, Any]]], rng: random.Random,
             share: float = 0.03) -> dict[str, list[dict[str, Any]]]:
    """Breaks the trace properties across keys (the row mutations break keys one at a time): in `share` of the rows
    of each machine, one column a trace property reads takes the value of a row of any machine with that column."""
    out = {}
    for name, rs in sorted(rows.items()):
        columns = property_columns(machines, machines[name])
        # (a column's values from every machine that has it: K shared across machines, for `before` and `fenced`)
        types = column_types(machines[name])
        pools = {c: [r[c] for other in sorted(rows) for r in rows[other]
                     if c == "ts_ms" or column_types(machines[other]).get(c) == types[c]] for c in columns}
        new = [dict(r) for r in rs]
        for r in new:
            if rng.random() < share:
                c = rng.choice(columns)
                r[c] = rng.choice(pools[c])
        out[name] = _held_twice(machines[name], _into_states(machines[name], _as_events(machines, name, new, rows,
                                                                                          rng), rng), rng)
    return out


def _into_states(m: ir.Machine, rows: list[dict[str, Any]], rng: random.Random,
                 share: float = 0.1) -> list[dict[str, Any]]:
    """`share` of the accepted rows end in a state a `within` or `before` property of `m` names (the generated
    traces seldom enter them)."""
    states = sorted({s for p in m.traces if p.form == "within" for s in (*p.states_from, *p.states_to)}
                    | {p.subject[1] for p in m.traces if p.form == "before"})
    for r in rows:
        if states and r["kind"] in ACCEPTED_KINDS and rng.random() < share:
            r["to_state"] = rng.choice(states)
    return rows


def _held_twice(m: ir.Machine, rows: list[dict[str, Any]], rng: random.Random,
                share: float = 0.05) -> list[dict[str, Any]]:
    """`exclusive V per K`: in `share` of the rows, K and elements of V become those of another row with a V."""
    for p in m.traces:
        if p.form != "exclusive":
            continue
        (var,) = p.subject
        holders = [r for r in rows if r[var]]
        for r in rows:
            if holders and rng.random() < share:
                other = rng.choice(holders)
                r |= {k: other[k] for k in p.per} | {var: r[var] | other[var]}
    return rows


def _as_events(machines: Mapping[str, ir.Machine], name: str, rows: list[dict[str, Any]],
               others: Mapping[str, list[dict[str, Any]]], rng: random.Random,
               share: float = 0.1) -> list[dict[str, Any]]:
    """`share` of the accepted rows become rows of an event a `fenced` or `before` property reads from this machine,
    with the K of a row of the property's other machine (and the arguments of a row of that event): the generated
    traces have few such rows, and their K rarely meet."""
    m = machines[name]
    for prop in sorted((p for other in machines.values() for p in other.traces), key=lambda p: p.name):
        if prop.form == "fenced" and prop.subject[0] == name:
            event, counterpart = prop.subject[1], prop.subject[3]
        elif prop.form == "before" and prop.subject[2] == name:
            event, counterpart = prop.subject[3], prop.subject[0]
        else:
            continue
        params = [f"arg_{p.name}" for p in next(e for e in m.events if e.name == event).params]
        pools = {c: [r[c] for r in rows if r["event"] == event and r[c] is not None] for c in params}
        # (each K of the other machine as likely as another: most of a machine's rows may share one, its default)
        theirs = sorted({tuple(r[k] for k in prop.per) for r in others.get(counterpart, [])}, key=repr)
        held = [t for t in others.get(counterpart, []) if prop.form == "fenced" and t[prop.subject[4]] is not None]
        for r in rows:
            if r["kind"] in ACCEPTED_KINDS and theirs and rng.random() < share:
                r["event"] = event
                r |= dict(zip(prop.per, rng.choice(theirs), strict=True))
                for c in params:
                    if r[c] is None and pools[c]:
                        r[c] = rng.choice(pools[c])
                if held and rng.random() < 0.5:  # `fenced`: a stale argument, one below a V the other machine held
                    t = rng.choice(held)
                    r |= {k: t[k] for k in prop.per} | {"ts_ms": t["ts_ms"] + rng.randint(0, 1000),
                                                        f"arg_{prop.subject[2]}": t[prop.subject[4]] - 1}
    return rows


def generated(machines: Mapping[str, ir.Machine], seed: int) -> dict[str, list[dict[str, Any]]]:
    """The traces `traces` starts from: every machine's generated rows of `seed`."""
    rows, _ = generate(dict(machines), seed, Options(keys=40, rows=3_000))
    return rows


def traces(machines: Mapping[str, ir.Machine], seed: int, root: Path, mutate: bool,
           made: Mapping[str, list[dict[str, Any]]] | None = None) -> set[Found]:
    """Generated traces of every machine (every mutation 3 times, in sorted order, then `scramble`, if `mutate`)
    written as typed Parquet under `root`; the Python checker's trace-property violations of them. `made`:
    `generated(machines, seed)` made before (copied here: the mutations change rows in place)."""
    source = made if made is not None else generated(machines, seed)
    rows = {name: [dict(r) for r in rs] for name, rs in source.items()}
    rng = random.Random(seed)
    if mutate:
        rows = scramble(machines, mutate_every(rows, machines, rng, rounds=3), rng)
    write_parquet(rows, dict(machines), str(root))
    return {(v.machine, v.key, v.check, v.name, v.seq, v.message)
            for v in check_paths([str(root)], dict(machines)).violations if v.check in TRACE_FORMS}


def duckdb_violations(machines: Mapping[str, ir.Machine], root: Path, units: int = 3,
                      fused: bool = False) -> tuple[set[Found], int]:
    """The trace properties in DuckDB: each machine's rows staged per unit of whole keys (`hash(key) % units`; with
    `fused`, from the row pass's relation: `staged_from`), the units' staged rows put together, then every property
    checked over them. Also: how many rows were staged."""
    plans = expression_plans(machines)
    wants = needs(plans)
    con = duckdb.connect(config={"threads": 1})
    try:
        sources = {m: f"read_parquet({q.DUCKDB.string(str(root / m / '*.parquet'))})" for m in machines
                   if (root / m).is_dir()}
        tables: dict[str, str] = {}
        for name in sources:
            for u in range(units):
                source = f"(SELECT * FROM {sources[name]} WHERE hash(key) % {units} = {u})"
                sql = staged_from(plans[name], wants[name], f"({pass_query(machines[name], source)[0]})") if fused \
                    else staged_all(machines, {name: source}).get(name)
                if sql is None:
                    break
                table = q.DUCKDB.quote(f"staged_{name}")
                con.execute(f"CREATE TABLE {table} AS {sql}" if u == 0 else f"INSERT INTO {table} {sql}")
                tables[name] = table
        out: set[Found] = set()
        for name, source in sources.items():
            (end,) = con.execute(trace_end(source)).fetchone() or (None,)
            sql = violations(plans, plans[name], tables, end)
            if sql is not None:
                out |= {(m, k, c, n, int(s), msg) for m, k, c, n, s, msg, _ in con.execute(sql).fetchall()}
        staged = sum(int((con.execute(f"SELECT count(*) FROM {t}").fetchone() or (0,))[0]) for t in tables.values())
    finally:
        con.close()
    return out, staged


@pytest.fixture(scope="module")
def machines() -> dict[str, ir.Machine]:
    return with_fenced()


@pytest.fixture(scope="module")
def mutated(machines: dict[str, ir.Machine], mutated_traces: Callable[[int], tuple[Path, frozenset[Found]]]
            ) -> dict[int, tuple[set[Found], set[Found], int]]:
    """Per seed: the Python checker's and DuckDB's trace-property violations of the mutated traces (the session's:
    conftest), and how many rows DuckDB staged."""
    out = {}
    for seed in SEEDS:
        root, python = mutated_traces(seed)
        out[seed] = (set(python), *duckdb_violations(machines, root))
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_duckdb_finds_the_trace_property_violations_the_python_checker_finds(
        mutated: dict[int, tuple[set[Found], set[Found], int]], seed: int) -> None:
    python, duck, staged = mutated[seed]
    assert duck == python, (f"DuckDB alone: {sorted(duck - python)}; Python alone: {sorted(python - duck)}")
    assert staged > 0


def test_the_staged_rows_from_the_row_pass_give_the_same_violations(
        machines: dict[str, ir.Machine], mutated_traces: Callable[[int], tuple[Path, frozenset[Found]]]) -> None:
    """`staged_from` over the row pass's relation (one window per task) finds what the Python checker finds."""
    root, python = mutated_traces(SEEDS[0])
    duck, staged = duckdb_violations(machines, root, fused=True)
    assert duck == python, (f"DuckDB alone: {sorted(duck - python)}; Python alone: {sorted(python - duck)}")
    assert staged > 0 and python


@pytest.mark.parametrize("seed", SEEDS)
def test_the_mutations_reach_every_form(machines: dict[str, ir.Machine],
                                        mutated: dict[int, tuple[set[Found], set[Found], int]], seed: int) -> None:
    """Every form of trace property has violations to compare in each seed, and every property in one of them, so
    none is compared only on zero."""
    python, _, _ = mutated[seed]
    assert {c for _, _, c, _, _, _ in python} == set(TRACE_FORMS)
    reached = {(m, n) for python, _, _ in mutated.values() for m, _, _, n, _, _ in python}
    assert reached == {(m.name, p.name) for m in machines.values() for p in m.traces}


@pytest.mark.parametrize("seed", SEEDS)
def test_no_trace_property_violation_on_clean_traces(
        machines: dict[str, ir.Machine], seed: int, tmp_path: Path,
        generated_traces: Callable[[int], Mapping[str, list[dict[str, Any]]]]) -> None:
    python = traces(machines, seed, tmp_path, mutate=False, made=generated_traces(seed))
    duck, staged = duckdb_violations(machines, tmp_path)
    assert python == set() and duck == set(), (sorted(duck), sorted(python))
    assert staged > 0, "no row was staged: nothing was checked"


def test_a_property_of_a_machine_with_no_rows_is_not_checked(machines: dict[str, ir.Machine]) -> None:
    plans = expression_plans(machines)
    assert not_checked(plans["Transaction"], {"Transaction": 1}) == [
        "Transaction.commit_after_markers: no PartitionProducer rows in the input"]
    only = violations(plans, plans["Transaction"], {"Transaction": "staged_Transaction"}, None)
    assert only is not None and "commit_after_markers" not in only and "epochs_monotonic" in only


def test_a_fenced_event_with_a_null_argument_is_compared_with_nothing(machines: dict[str, ir.Machine],
                                                                      tmp_path: Path) -> None:
    """An accepted `Append` of a producer id the transaction coordinator holds at a higher epoch, its `epoch`
    argument null (one the runtime never computed): no violation in either checker (the Python checker raised a
    TypeError comparing None with the epoch), and the same one with the argument set."""
    rows, _ = generate(dict(machines), 7, Options(keys=16, rows=600))
    held = next(r for r in rows["Transaction"] if r["producer_id"] >= 0 and r["producer_epoch"] > 0)
    append = next(r for r in rows["PartitionProducer"] if r["kind"] in ACCEPTED_KINDS)
    append |= {"event": "Append", "producer_id": held["producer_id"], "ts_ms": held["ts_ms"] + 5, "arg_epoch": None}
    for epoch, found in ((None, set()), (held["producer_epoch"] - 1, {("fenced", append["key"], append["seq"])})):
        append["arg_epoch"] = epoch
        root = tmp_path / f"epoch-{epoch}"
        write_parquet(rows, dict(machines), str(root))
        python = {(v.check, v.key, v.seq) for v in check_paths([str(root)], dict(machines)).violations
                  if v.check == "fenced"}
        duck, _ = duckdb_violations(machines, root)
        assert python == {(c, k, s) for _, k, c, _, s, _ in duck} == found

"""The trace properties (`exclusive`, `monotonic`, `within`, `before`, `fenced`; see `checks`) as DuckDB SQL, in two
phases: per unit of whole keys (a Spark task's DuckDB; keys that cross units: `duckstage`), the *staged rows* —
only the rows and columns the properties of every machine read from one machine (`sparkprops.needs`), with the
values that need the key's whole sequence (pre-state, position, the run's start, the key's timeline, each
`within`'s deadline, each `before`'s K) computed there; then, over all the units' staged rows together (the
driver's DuckDB), each property's violations.

Owns: `staged` (phase 1: one machine's staged rows from its typed rows; `staged_from`: the same from the row pass's
relation, one window per task for both; `windowed`, `windowed_from`, `kept` and `columns_read`: their parts, which
`duckstage` stages keys that cross work units with), `trace_end` (phase 1: the latest `ts_ms` of the rows, which
`within` compares its deadlines with: the driver takes the maximum over the units), `violations` (phase 2: one row per
violation of every trace property of one machine: machine, key, check, name, seq, message, as the Python checker's
`Violation`s, and the row's `pos`), `not_checked` and `expression_plans`. The conditions and the values staged
are the Spark checker's trees (`sparkprops.needs` and `entering`, `sparkcheck.MachinePlan`: its pre-state, codes and
names), rendered in `sqltree`'s DuckDB dialect; only the SELECT/WINDOW/JOIN plumbing is text of this module. This
module builds SQL text; the caller runs it (a DuckDB connection of its own).
Must not import: duckdb (this module builds SQL text; the caller runs it), kcoord.cli.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import fields

from kcoord.model import ir
from kcoord.model import sqltree as q

from .checks import ACCEPTED_KINDS, NEVER, other_machine
from .duckcheck import expression_plan, window_order
from .sparkcheck import MachinePlan, Needs
from .sparkprops import entering, needs

DUCKDB = q.DUCKDB
#: the columns every staged row keeps (besides those `Needs` names): what the properties' plumbing reads
STAGED = ("key", "seq", "pos", "ts_ms", "kind", "event", "to_state", "pre_known", "pre_state", "p_to_state")
#: one row per violation, as `checks.Violation` identifies it (machine, key, check, name, seq), its message and its
#: row's place among its key's rows (`pos`, the staged row's: the witness is cut around it)
VIOLATION_COLUMNS = ("machine", "key", "check", "name", "seq", "message", "pos")


def expression_plans(machines: Mapping[str, ir.Machine]) -> dict[str, MachinePlan]:
    """Each machine's plan, for its trees only (no session, no rows)."""
    return {name: expression_plan(m) for name, m in machines.items()}


def _r(e: q.Expr | q.Aliased) -> str:
    return DUCKDB.render(e)


def _q(name: str) -> str:
    return DUCKDB.quote(name)


# ---------------------------------------------------------------- phase 1: per unit of whole keys


def staged(plan: MachinePlan, need: Needs, source: str) -> str | None:
    """The rows of `plan`'s machine in `source` (whole keys) that the trace properties of every machine read
    (`need`, from `sparkprops.needs`), with the columns they read: the key's window (ordered as the checker orders
    a key's rows: seq, then every typed column), the pre-state (`MachinePlan.pre_stages`), the key's timeline (for
    `exclusive`: the running maximum of ts_ms and the next row's), the values `Needs` computes. None when no
    property reads this machine."""
    if not need.rows:
        return None
    return _narrowed(need, windowed(plan, need, source))


def windowed(plan: MachinePlan, need: Needs, source: str, partition: Sequence[str] = ()) -> str:
    """Every row of `source` with the columns `staged` keeps and the window's `_rn` (the row's position in its
    window partition, 1 for the first), unfiltered; the window is partitioned by key, seq < 0 and the columns
    `partition` (`duckstage`: a unit's rows, or pairs of rows across units)."""
    m = plan.m
    # (only the pre-state values the properties read: `before`'s K; a lag per variable would double the cost)
    read = columns_read([*need.rows, *(a.expr for a in need.computed)])
    variables = [v.name for v in m.variables if f"pre_{v.name}" in read]
    first, second = plan.pre_stages()
    second = [a for a in second if a.name in ("pre_state", "pos") or a.name in read]
    lags = dict.fromkeys(["to_state", *variables])
    by = "".join(f", {_q(c)}" for c in partition)
    # (the row pass's window: nulls first)
    window = f"PARTITION BY key, seq < 0{by} ORDER BY seq, {window_order(m)}"
    cols = [*(f"lag({_q(c)}) OVER w AS {_q('p_' + c)}" for c in lags), "row_number() OVER w AS _rn"]
    if need.timeline:
        cols += [f"max(ts_ms) OVER ({window} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS t_start",
                 "lead(ts_ms) OVER w AS next_ts"]
    sql = f"SELECT *, {', '.join(cols)} FROM {source} WINDOW w AS ({window})"
    for stage in [first, second, list(need.computed)]:
        if stage:
            sql = f"SELECT *, {', '.join(_r(a) for a in stage)} FROM ({sql}) s"
    return sql


def staged_from(plan: MachinePlan, need: Needs, passed: str) -> str | None:
    """`staged`, over `passed`: a relation holding the row pass's columns (`duckcheck.pass_query`: the window's
    position and lags, the pre-state), so that a task runs one window for its row checks and its staged rows; only
    the values `Needs` computes, `exclusive`'s timeline (a second window, ordered by the pass's row number) and the
    filter are added."""
    if not need.rows:
        return None
    return _narrowed(need, windowed_from(need, passed))


def windowed_from(need: Needs, passed: str, partition: Sequence[str] = ()) -> str:
    """Every row of `passed` (as `staged_from` reads it) with the values `Needs` computes and the timeline,
    unfiltered; `partition`: more columns the pass's window was partitioned by."""
    cols = [_r(a) for a in need.computed]
    if need.timeline:
        w = f"PARTITION BY key, seq < 0{''.join(f', {_q(c)}' for c in partition)} ORDER BY _rn"
        cols += [f"max(ts_ms) OVER ({w} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS t_start",
                 f"lead(ts_ms) OVER ({w}) AS next_ts"]
    return f"SELECT *{''.join(', ' + c for c in cols)} FROM {passed} s"


def _narrowed(need: Needs, sql: str) -> str:
    """The rows of `sql` a property reads, with only the columns they read."""
    where = q.and_(q.binary(">=", q.col("seq"), q.lit(0)), q.or_(*need.rows))
    return f"SELECT {', '.join(_q(c) for c in kept(need))} FROM ({sql}) s WHERE {_r(where)}"


def kept(need: Needs) -> list[str]:
    """The columns of a machine's staged rows (what phase 2 reads), in order."""
    return list(dict.fromkeys([*STAGED, *sorted(need.columns), *(a.name for a in need.computed),
                               *(("t_start", "next_ts") if need.timeline else ())]))


def columns_read(trees: Iterable[object]) -> set[str]:
    """The names of the columns `trees` read."""
    out: set[str] = set()
    for t in trees:
        if isinstance(t, q.Col):
            out.add(t.name.split("\0")[0])
        elif isinstance(t, tuple):
            out |= columns_read(t)
        elif isinstance(t, q.Expr):
            out |= columns_read(getattr(t, f.name) for f in fields(t))  # type: ignore[arg-type]
    return out


def trace_end(source: str) -> str:
    """The latest `ts_ms` of `source`'s rows (every row read: `within`'s end of the trace, as the checkers take it)."""
    return f"SELECT max(ts_ms) AS trace_end FROM {source}"


def staged_all(machines: Mapping[str, ir.Machine], sources: Mapping[str, str]) -> dict[str, str]:
    """Phase 1 for every machine of `sources` (machine → its typed rows): machine → its staged rows' query."""
    plans = expression_plans(machines)
    wants = needs(plans)
    out = {}
    for name, source in sources.items():
        sql = staged(plans[name], wants[name], source)
        if sql is not None:
            out[name] = sql
    return out


# ---------------------------------------------------------------- phase 2: over all the staged rows


def violations(plans: Mapping[str, MachinePlan], plan: MachinePlan, staged_rows: Mapping[str, str],
               end: int | None) -> str | None:
    """One row per violation of every trace property of `plan`'s machine (`VIOLATION_COLUMNS`), over the staged
    rows of every machine (`staged_rows`: machine → a relation of its staged rows from every unit, a table's name or
    a parenthesised query); `end` is the machine's `trace_end` over all its rows. None when the machine has no
    property to check here."""
    if plan.m.name not in staged_rows:
        return None
    parts = []
    for i in range(len(plan.m.traces)):
        found = property_violations(plans, plan, staged_rows, i, end)
        if found is not None:
            parts.append(found)
    return " UNION ALL ".join(f"SELECT * FROM ({p}) p{i}" for i, p in enumerate(parts)) or None


def property_violations(plans: Mapping[str, MachinePlan], plan: MachinePlan, staged_rows: Mapping[str, str], i: int,
                        end: int | None) -> str | None:
    """`violations` of `plan`'s machine's property `i` alone (None: it has nothing to check here)."""
    prop = plan.m.traces[i]
    return _FORMS[prop.form](plans, plan, staged_rows, prop, i, end)


def not_checked(plan: MachinePlan, present: Mapping[str, object]) -> list[str]:
    """The `before`/`fenced` properties whose other machine has no rows in the input (reported, never passed)."""
    out = []
    for prop in plan.m.traces:
        other = other_machine(prop) if prop.form in ("before", "fenced") else plan.m.name
        if other != plan.m.name and other not in present:
            out.append(f"{plan.m.name}.{prop.name}: no {other} rows in the input")
    return out


def _found(plan: MachinePlan, prop: ir.TraceProperty, rows: str, message: q.Expr, where: str = "true") -> str:
    head = ", ".join([f"{DUCKDB.string(plan.m.name)} AS machine", "key", f"{DUCKDB.string(prop.form)} AS {_q('check')}",
                      f"{DUCKDB.string(prop.name)} AS name", "seq", f"{_r(message)} AS message", "pos"])
    return f"SELECT {head} FROM {rows} WHERE {where}"


def _relation(staged_rows: Mapping[str, str], machine: str) -> str:
    return staged_rows[machine]


def _exclusive(plans: Mapping[str, MachinePlan], plan: MachinePlan, staged_rows: Mapping[str, str],
               prop: ir.TraceProperty, i: int, end: int | None) -> str:
    """Each (K, element)'s intervals in (start, key, seq, end) order: one that starts before the latest end before it
    (an interval ends at the key's next row's start, or never; final states and empty intervals hold nothing); one
    violation per row, with the least element it shares."""
    (var,) = prop.subject
    per = [_q(k) for k in prop.per]
    finals = q.in_(q.col("to_state"), plan.states(plan.spec.final_states))
    t_end = q.when(q.IsNull(q.col("next_ts")), q.lit(NEVER), q.fn("greatest", q.col("t_start"), q.col("next_ts")))
    held = q.and_(q.not_(finals), q.binary(">", q.col("t_end"), q.col("t_start")),
                  q.binary(">", q.fn("size", q.col(var)), q.lit(0)))
    rows = f"(SELECT *, {_r(q.Aliased(t_end, 't_end'))} FROM {_relation(staged_rows, plan.m.name)} s) s"
    elements = f"(SELECT key, seq, pos, t_start, t_end, {', '.join(per)}, unnest({_q(var)}) AS x FROM {rows} " \
               f"WHERE {_r(held)}) e"
    latest = f"max(t_end) OVER (PARTITION BY {', '.join([*per, 'x'])} ORDER BY t_start, key, seq, t_end " \
             "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
    overlapping = f"(SELECT key, seq, pos, min(x) AS x FROM (SELECT *, {latest} AS latest FROM {elements}) o " \
                  "WHERE t_start < latest GROUP BY key, seq, pos) v"
    message = q.concat(f"{var} element ", q.col("x"),
                       f" is also held by another instance with equal {', '.join(prop.per)}")
    return _found(plan, prop, overlapping, message)


def _monotonic(plans: Mapping[str, MachinePlan], plan: MachinePlan, staged_rows: Mapping[str, str],
               prop: ir.TraceProperty, i: int, end: int | None) -> str:
    """Rows (no rejection) whose V is below the maximum V before them (ts_ms, seq, key order) among the rows with
    equal K — a load's among its own key's rows only."""
    (var,) = prop.subject
    per = [_q(k) for k in prop.per]

    def before(*partition: str) -> str:
        return f"max({_q(var)}) OVER (PARTITION BY {', '.join(partition)} ORDER BY ts_ms, seq, key, {_q(var)} " \
               "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"

    load = q.eq(q.col("kind"), q.lit(plan.kind("load")))
    top = f"CASE WHEN {_r(load)} THEN {before(*per, 'key')} ELSE {before(*per)} END"
    accepted = q.ne(q.col("kind"), q.lit(plan.kind("reject")))
    rows = f"(SELECT *, {top} AS top FROM {_relation(staged_rows, plan.m.name)} s WHERE {_r(accepted)}) s"
    where = q.when(load, q.lit(", held before by this instance (a load)"),
                   q.lit(f", seen before for equal {', '.join(prop.per)}"))
    message = q.concat(f"{var} = ", q.text(q.col(var)), " is below ", q.text(q.col("top")), where)
    return _found(plan, prop, rows, message, _r(q.binary("<", q.col(var), q.col("top"))))


def _within(plans: Mapping[str, MachinePlan], plan: MachinePlan, staged_rows: Mapping[str, str],
            prop: ir.TraceProperty, i: int, end: int | None) -> str:
    """Rows entering A whose key reaches B (the first row at or after it, in the key's order, in B) after the
    deadline, or never while the trace goes on past the deadline; or whose deadline cannot be evaluated."""
    reached = q.in_(q.col("to_state"), plan.states(prop.states_to))
    hit = q.when(reached, q.struct(ts_ms=q.col("ts_ms"), seq=q.col("seq")))
    enter = entering(plan, prop.states_from)
    rows = f"(SELECT *, {_r(q.Aliased(hit, '_hit'))}, {_r(q.Aliased(enter, '_entering'))} " \
           f"FROM {_relation(staged_rows, plan.m.name)} s WHERE {_r(q.or_(reached, enter))}) s"
    following = "first_value(_hit IGNORE NULLS) OVER (PARTITION BY key ORDER BY pos " \
                "ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)"
    rows = f"(SELECT *, {following} AS _next_b FROM {rows}) s"
    deadline = q.col(f"_deadline_{i}")
    next_ts = q.nested("_next_b", "ts_ms")
    late = q.and_(q.IsNull(next_ts, negated=True), q.binary(">", next_ts, deadline))
    hanging = q.and_(q.IsNull(q.col("_next_b")), q.binary(">", q.lit(end), deadline)) if end is not None else q.FALSE
    entered = q.concat("entered ", plan.name_of("to_state"), " at ts ", q.text(q.col("ts_ms")), ", deadline ",
                       q.text(deadline))
    message = q.case([(q.IsNull(deadline), q.lit("the bound cannot be evaluated")),
                      (late, q.concat(entered, f", reached {', '.join(prop.states_to)} at ", q.text(next_ts)))],
                     q.concat(entered, f", not reached by the end of the trace ({end})"))
    return _found(plan, prop, rows, message, _r(q.and_(q.col("_entering"), q.or_(q.IsNull(deadline), late, hanging))))


def _before(plans: Mapping[str, MachinePlan], plan: MachinePlan, staged_rows: Mapping[str, str],
            prop: ir.TraceProperty, i: int, end: int | None) -> str | None:
    """Rows entering S with no accepted row of N.E of equal K (the entering row's K as before it) at or after the
    time the instance entered the state it leaves (the first row of that run; none for a key's first row) and at
    or before the row."""
    rows = before_entering(plans, plan, staged_rows, prop)
    if rows is None:
        return None
    return before_missing(plans, plan, prop, i, f"({rows}) s", _relation(staged_rows, prop.subject[2]))


def before_entering(plans: Mapping[str, MachinePlan], plan: MachinePlan, staged_rows: Mapping[str, str],
                    prop: ir.TraceProperty) -> str | None:
    """`before`'s first half, over each key's rows (a window by key): the rows entering S, each with `_since` (when
    the instance entered the state it leaves; null for a key's first row). None when N has no staged rows."""
    state, other = prop.subject[1], prop.subject[2]
    if plans.get(other) is None or other not in staged_rows:
        return None
    run = q.when(q.or_(q.IsNull(q.col("p_to_state")), q.ne(q.col("p_to_state"), q.col("to_state"))), q.col("ts_ms"))
    enter = entering(plan, (state,))
    rows = f"(SELECT *, {_r(q.Aliased(run, '_run'))}, {_r(q.Aliased(enter, '_entering'))} " \
           f"FROM {_relation(staged_rows, plan.m.name)} s) s WHERE _run IS NOT NULL OR _entering"
    entered = "last_value(_run IGNORE NULLS) OVER (PARTITION BY key ORDER BY pos " \
              "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
    rows = f"(SELECT *, lag(_entered) OVER (PARTITION BY key ORDER BY pos) AS _since " \
           f"FROM (SELECT *, {entered} AS _entered FROM {rows}) s) s"
    return f"SELECT * FROM {rows} WHERE _entering"


def before_missing(plans: Mapping[str, MachinePlan], plan: MachinePlan, prop: ir.TraceProperty, i: int,
                   rows: str, events: str) -> str:
    """`before`'s second half, over the entering rows of equal K (`rows`: `before_entering`'s, as a relation) and N's
    staged rows (`events`, a relation): one violation per entering row with no accepted N.E of equal K in its
    window."""
    state, other, event = prop.subject[1], prop.subject[2], prop.subject[3]
    theirs = plans[other]
    known = event in {e.name for e in theirs.m.events}  # (an event N does not have: no row of N is one)
    wanted = q.and_(q.eq(q.col("event"), q.lit(theirs.event(event))), theirs.is_kind(*ACCEPTED_KINDS)) if known \
        else q.FALSE
    keys = ", ".join(f"{_q(k)} AS {_q('_e_' + k)}" for k in prop.per)
    events = f"(SELECT {keys}, ts_ms AS _e_ts FROM {events} s WHERE {_r(wanted)})"
    # K equal as the Python checker compares them (a null K equals a null K)
    same = [_r(q.same(q.col(f"_bk_{i}_{k}"), q.nested("e", f"_e_{k}"))) for k in prop.per]
    window = "e._e_ts <= s.ts_ms AND (s._since IS NULL OR e._e_ts >= s._since)"
    missing = f"_entering AND NOT EXISTS (SELECT 1 FROM {events} e WHERE {' AND '.join([*same, window])})"
    since = q.when(q.IsNull(q.col("_since")), q.lit("before it"), q.concat("since ts ", q.text(q.col("_since"))))
    message = q.concat(f"entered {state} at ts ", q.text(q.col("ts_ms")),
                       f" without a {other}.{event} on {', '.join(prop.per)} ", since)
    return _found(plan, prop, rows, message, missing)


def _fenced(plans: Mapping[str, MachinePlan], plan: MachinePlan, staged_rows: Mapping[str, str],
            prop: ir.TraceProperty, i: int, end: int | None) -> str | None:
    """Accepted rows of M.E whose argument p is below the latest N.v of equal K among N's rows before it (ts_ms,
    then N's rows before M's in one millisecond, then seq, key, value)."""
    event, param, other, var = prop.subject[1], prop.subject[2], prop.subject[3], prop.subject[4]
    if other not in plans or other not in staged_rows:
        return None
    per = [_q(k) for k in prop.per]
    mine = q.and_(q.eq(q.col("event"), q.lit(plan.event(event))), plan.is_kind(*ACCEPTED_KINDS))
    union = f"SELECT {', '.join(per)}, ts_ms, 0 AS flag, seq, key, {_q('arg_' + param)} AS value, pos " \
            f"FROM {_relation(staged_rows, plan.m.name)} s WHERE {_r(mine)} UNION ALL " \
            f"SELECT {', '.join(per)}, ts_ms, 1 AS flag, seq, key, {_q(var)} AS value, pos " \
            f"FROM {_relation(staged_rows, other)} s"
    latest = f"last_value(CASE WHEN flag = 1 THEN value END IGNORE NULLS) OVER (PARTITION BY {', '.join(per)} " \
             "ORDER BY ts_ms, flag, seq, key, value ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
    rows = f"(SELECT *, {latest} AS latest FROM ({union}) u) s"
    message = q.concat(f"{event}.{param} = ", q.text(q.col("value")), f" is below the latest {other}.{var} = ",
                       q.text(q.col("latest")))
    return _found(plan, prop, rows, message, "flag = 0 AND latest IS NOT NULL AND value < latest")


_FORMS: dict[str, Callable[[Mapping[str, MachinePlan], MachinePlan, Mapping[str, str], ir.TraceProperty, int,
                            int | None], str | None]] = {
    "exclusive": _exclusive, "monotonic": _monotonic, "within": _within, "before": _before, "fenced": _fenced}

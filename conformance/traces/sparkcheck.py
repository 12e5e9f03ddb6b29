"""The Spark checker: every check of `checks`, compiled from a machine's IR into Spark SQL (no Python UDFs).

Owns: `MachinePlan` (one machine's rows → its violations DataFrame) with one method per check, named as in
`checks.CHECKS` and in the reference checker `pycheck`, and `witness_segments` (the rows around chosen violations).

The evaluation strategy, per machine (what makes it fast is doing each expensive thing once):

1. One shuffle and one window pass (`windowed`): the rows partitioned by key (rows with a negative seq in partitions
   of their own) and ordered by seq; per row the previous row, the position, the running maximum of ts_ms, the next
   ts_ms, per `within` property the next row reaching its target states (`lead ... IGNORE NULLS`: one forward
   scan, never a frame up to UNBOUNDED FOLLOWING, which is quadratic per key) and, for `before`, the time the
   instance entered its current state. Every frame is bounded by the current row or unbounded before it, so the
   pass is linear in the rows of a key.
2. The pre-state columns (`with_pre`), and the result persisted on local disk (`checked`, never in memory); one
   small aggregate over it (`stats`) materialises it and gives the row count and the trace's latest ts_ms.
3. The row checks: one broadcast join with the table of legal (from_state, event, to_state, row, kind), then one
   projection computing the large per-row values once (the spec row's guard and `assumes`, the variables differing
   from the effects, the frame, as `CASE row WHEN i THEN ... END` over the spec's rows, compiled by
   `kcoord.model.spark_backend`; only the branch of the row's own spec row is evaluated), then one filter keeping
   the rows with at least one violation (an array of the violated checks, without lambdas so that whole-stage code
   generation covers it); only those rows are exploded.
4. Each trace property is a small plan of its own over the persisted rows (a window per K, or an aggregate and a
   join), reading only the columns it needs.
Must not import: kcoord.cli.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from kcoord.model import ir
from kcoord.model.spark_backend import Columns, SparkCompiler, quote, string_literal
from kcoord.model.spark_backend import _literal as sql_literal

from .checks import ACCEPTED_KINDS, NEVER, ROW_CHECKS, Spec, location
from .readers import columns

VIOLATION_COLUMNS = ("machine", "key", "check", "name", "seq", "seq_from", "seq_to", "location", "message", "pos",
                     "row_json")
FOUND_TYPE = "STRUCT<check: STRING, name: STRING, message: STRING>"
ORPHAN_CHECKS = ("illegal_transition", "discontinuity", "reject_changed_state", "wrong_error")
PRE = Columns(pending="eff_pending")  # guards and effects read the effective `pending` (true in pending states)


def _in(values: Mapping[str, object] | list[str] | tuple[str, ...] | frozenset[str], col: str) -> str:
    items = sorted(values)
    return f"({col} IN ({', '.join(string_literal(str(v)) for v in items)}))" if items else "false"


def _map(pairs: Mapping[int, str]) -> str:
    if not pairs:
        return "map()"
    return "map(" + ", ".join(f"{k}, {string_literal(v)}" for k, v in sorted(pairs.items())) + ")"


@dataclass(slots=True)
class MachinePlan:
    spark: SparkSession
    spec: Spec
    rows: DataFrame  # validated rows (readers' columns, sets normalised)
    others: Mapping[str, DataFrame]  # validated rows of the other machines in the run
    _checked: DataFrame | None = None
    _stats: tuple[int, int | None] | None = None

    @property
    def m(self) -> ir.Machine:
        return self.spec.machine

    # ------------------------------------------------------------ the window pass (once, persisted)

    def order(self) -> list[Column]:
        names = [n for n, _ in columns(self.m) if n != "seq"]
        return [F.col("seq"), *[F.col(n) for n in names]]

    def windowed(self) -> DataFrame:
        """Every row with its previous row, position and the running values the checks need. The key sequences
        (seq >= 0) are windows per key ordered as `checks` says; rows with a negative seq are windowed apart (their
        own partition of the same shuffle) and get no previous row and position -1."""
        w = Window.partitionBy("key", "_neg").orderBy(*self.order())
        prev = F.struct(*[F.col(c) for c in ("to_state", "seq", "coordinator_epoch", "ts_ms")],
                        *[F.col(v.name).alias(f"v_{v.name}") for v in self.m.variables])
        in_sequence = F.col("seq") >= 0
        cols = [F.when(in_sequence, F.lag(prev, 1).over(w)).alias("prev"),
                F.when(in_sequence, F.row_number().over(w) - 1).otherwise(F.lit(-1)).alias("pos"),
                F.max("ts_ms").over(w.rowsBetween(Window.unboundedPreceding, Window.currentRow)).alias("t_start"),
                F.lead("ts_ms", 1).over(w).alias("next_ts")]
        hits = []
        for i, prop in enumerate(p for p in self.m.traces if p.form == "within"):
            # the first row at or after this one reaching B: this row, else the next non-null one (`lead ... IGNORE
            # NULLS` is one forward scan; a frame up to UNBOUNDED FOLLOWING would cost quadratic time per key)
            hit = f"CASE WHEN {_in(prop.states_to, 'to_state')} THEN named_struct('ts_ms', ts_ms, 'seq', seq) END"
            hits.append(f"{hit} AS _hit_{i}")
            cols.append(F.coalesce(F.col(f"_hit_{i}"), F.expr(f"lead(_hit_{i}, 1) IGNORE NULLS").over(w))
                        .alias(f"next_b_{i}"))
        df = self.rows.selectExpr("*", "seq < 0 AS _neg", *hits).select("*", *cols)
        if any(p.form == "before" for p in self.m.traces):
            # the time the instance entered the state the row leaves (`before`'s window): same window, no shuffle
            df = df.select("*", F.when(F.col("prev").isNull() | (F.col("prev.to_state") != F.col("to_state")),
                                       F.col("ts_ms")).alias("_run"))
            df = df.select("*", F.last("_run", ignorenulls=True).over(
                w.rowsBetween(Window.unboundedPreceding, Window.currentRow)).alias("_entered"))
            df = df.select("*", F.lag("_entered", 1).over(w).alias("_since"))
        return df

    def checked(self) -> DataFrame:
        """The windowed rows with their pre-state, computed once per run and persisted on local disk (never in
        memory), so the row checks, the trace properties and the witnesses read one shuffle's result."""
        if self._checked is None:
            self._checked = self.with_pre(self.windowed()).persist(StorageLevel.DISK_ONLY)
        return self._checked

    def stats(self) -> tuple[int, int | None]:
        """(rows read, latest ts_ms): one small job over the persisted rows, which also materialises them."""
        if self._stats is None:
            r = self.checked().agg(F.count(F.lit(1)).alias("n"), F.max("ts_ms").alias("end")).collect()[0]
            self._stats = (int(r["n"]), None if r["end"] is None else int(r["end"]))
        return self._stats

    def release(self) -> None:
        """Drop the persisted rows (after the violations and witnesses are written)."""
        if self._checked is not None:
            self._checked.unpersist()
            self._checked, self._stats = None, None

    def with_pre(self, df: DataFrame) -> DataFrame:
        """The pre-state columns (`pre_state`, `pre_<var>`), `fresh`, `pre_known` and the effective `pending`."""
        finals = _in(self.spec.final_states, "prev.to_state")
        terminals = _in(self.spec.terminal_states, "prev.to_state")
        initial = string_literal(self.spec.initial)
        fresh = f"(prev IS NULL OR {finals} OR ({terminals} AND from_state = {initial}))"
        known = f"NOT ({fresh} AND kind = 'load')"
        pre = [f"{fresh} AS fresh", f"{known} AS pre_known",
               f"CASE WHEN NOT {known} THEN NULL WHEN {fresh} THEN {initial} ELSE prev.to_state END AS pre_state"]
        for v in self.m.variables:
            default = sql_literal(v.default, v.type) if v.default is not None else "NULL"
            pre.append(f"CASE WHEN NOT {known} THEN NULL WHEN {fresh} THEN {default} "
                       f"ELSE prev.{quote('v_' + v.name)} END AS {quote('pre_' + v.name)}")
        df = df.selectExpr("*", *pre)
        pending = _in(self.spec.pending_states, "pre_state")
        return df.withColumn("eff_pending", F.expr(f"pending OR coalesce({pending}, false)"))

    def legal(self, df: DataFrame) -> DataFrame:
        """`legal` is true for rows whose (from_state, event, to_state, row, kind) is in the table (broadcast join)."""
        table = self.spark.createDataFrame(sorted(self.spec.table),
                                           "from_state string, event string, to_state string, row int, kind string")
        table = table.withColumn("legal", F.lit(True))
        return df.join(F.broadcast(table), ["from_state", "event", "to_state", "row", "kind"], "left")

    # ------------------------------------------------------------ row checks (one method per check)

    def spec_row_ok(self) -> str:
        """The row's index names a spec row with the row's event and kind."""
        pairs = {i: f"{r.event}|{r.kind}" for i, r in self.spec.rows.items()}
        return f"coalesce(element_at({_map(pairs)}, `row`) = concat(`event`, '|', `kind`), false)"

    def condition_ok(self) -> str:
        """The spec row's guard and `assumes`, on the pre-state and arguments."""
        c = SparkCompiler(PRE)
        cases = " ".join(f"WHEN {r.index} THEN coalesce({c.sql(r.guard)}, false) AND coalesce({c.sql(r.assumes)}, true)"
                         for r in self.m.rows)
        return f"(CASE `row` {cases} ELSE true END)" if cases else "true"

    def label(self) -> str:
        return f"element_at({_map({i: r.label for i, r in self.spec.rows.items()})}, `row`)"

    def illegal_transition(self) -> tuple[str, str, str]:
        msg = "concat(from_state, ' --', event, '#', CAST(`row` AS STRING), ' (', kind, ')--> ', to_state, " \
              "' is not in the table')"
        return "legal IS NULL", "''", msg

    def discontinuity(self) -> tuple[str, str, str]:
        initial = string_literal(self.spec.initial)
        reasons = [
            (f"seq = -1 AND (kind <> 'reject' OR from_state <> {initial})",
             f"'a seq -1 row must be a rejection from {self.spec.initial}'"),
            (f"seq >= 0 AND prev IS NOT NULL AND NOT fresh AND from_state <> prev.to_state "
             f"AND NOT (kind = 'load' AND from_state = {initial})",
             "concat('from_state ', from_state, ' but the previous row ended in ', prev.to_state)"),
            (f"seq >= 0 AND fresh AND kind <> 'load' AND from_state <> {initial}",
             f"concat('a first row starts from ', from_state, ', not {self.spec.initial}')"),
            ("seq >= 0 AND prev IS NOT NULL AND prev.coordinator_epoch = coordinator_epoch AND seq <> prev.seq + 1",
             "concat('seq ', CAST(seq AS STRING), ' follows ', CAST(prev.seq AS STRING), ' in coordinator epoch ', "
             "CAST(coordinator_epoch AS STRING))")]
        cond = " OR ".join(f"({c})" for c, _ in reasons)
        msg = "concat_ws('; ', " + ", ".join(f"CASE WHEN {c} THEN {m} END" for c, m in reasons) + ")"
        return cond, "''", msg

    def prepared(self, df: DataFrame) -> DataFrame:
        """Everything large is computed once per row here (the spec row's match, label, error and condition, the
        variables that differ from the effects, the frame and the pre-state), so the checks below stay small."""
        gate = "_sr_ok AND kind IN ('transition', 'stay') AND pre_known"
        df = df.selectExpr("*", f"{self.spec_row_ok()} AS _sr_ok", f"{self.label()} AS _label",
                           f"{self.expected_error()} AS _expected", f"{self.condition_ok()} AS _cond_ok",
                           f"{self._names(self._effect_bad())} AS _effect_bad",
                           f"{self._names(self._frame_bad())} AS _frame_bad",
                           f"{self._names(self._changed())} AS _changed")
        return df.selectExpr("*", f"CASE WHEN {gate} THEN _effect_bad ELSE '' END AS _effect_names",
                             f"CASE WHEN {gate} THEN _frame_bad ELSE '' END AS _frame_names")

    def guard_false(self) -> tuple[str, str, str]:
        cond = "_sr_ok AND kind IN ('transition', 'stay') AND pre_known AND NOT _cond_ok"
        return cond, "_label", "concat('the guard of ', _label, ' is false on the pre-state')"

    def _assigning(self) -> dict[str, list[ir.Transition]]:
        out: dict[str, list[ir.Transition]] = {v.name: [] for v in self.m.variables}
        for t in self.m.transitions:
            for ef in t.effects:
                out[ef.var].append(t)
        return out

    def _names(self, bad: dict[str, str]) -> str:
        items = ", ".join(f"CASE WHEN {cond} THEN {string_literal(v)} END" for v, cond in bad.items())
        return f"concat_ws(',', {items})" if bad else "''"  # concat_ws skips the nulls

    def _effect_bad(self) -> dict[str, str]:
        c = SparkCompiler(PRE)
        bad: dict[str, str] = {}
        for v in self.m.variables:
            rows = self._assigning()[v.name]
            if rows:
                cases = " ".join(f"WHEN {t.index} THEN {c.equal_sql(_effect(t, v.name), v.name, v.type)}"
                                 for t in rows)
                bad[v.name] = f"(CASE `row` {cases} ELSE true END) = false"
        return bad

    def _frame_bad(self) -> dict[str, str]:
        bad = {}
        for v in self.m.variables:
            assigning = [str(t.index) for t in self._assigning()[v.name]]
            unassigned = f"NOT (`row` IN ({', '.join(assigning)}))" if assigning else "true"
            bad[v.name] = f"{unassigned} AND NOT ({quote(v.name)} <=> {quote('pre_' + v.name)})"
        return bad

    def _changed(self) -> dict[str, str]:
        return {v.name: f"NOT ({quote(v.name)} <=> {quote('pre_' + v.name)})" for v in self.m.variables}

    def expected_error(self) -> str:
        return f"element_at({_map({i: r.error for i, r in self.spec.rows.items()})}, `row`)"

    def effect_mismatch(self) -> tuple[str, str, str]:
        return "_effect_names <> ''", "_effect_names", \
            "concat(_label, ' assigns ', replace(_effect_names, ',', ', '), ' otherwise')"

    def frame_mismatch(self) -> tuple[str, str, str]:
        return "_frame_names <> ''", "_frame_names", \
            "concat(_label, ' does not assign ', replace(_frame_names, ',', ', '), ', yet they changed')"

    def reject_changed_state(self) -> tuple[str, str, str]:
        return "kind = 'reject' AND pre_known AND _changed <> ''", "_changed", \
            "concat('a rejection changed ', replace(_changed, ',', ', '))"

    def wrong_error(self) -> tuple[str, str, str]:
        wrong = "`error` <> _expected"
        false_condition = "kind = 'reject' AND NOT _cond_ok"
        cond = f"_sr_ok AND pre_known AND ({wrong} OR ({false_condition}))"
        msg = (f"concat_ws('; ', CASE WHEN {wrong} THEN concat('error ', `error`, ', but ', _label, ' answers ', "
               f"_expected) END, CASE WHEN {false_condition} THEN concat('the condition of ', _label, "
               f"' is false on the pre-state') END)")
        return cond, "_label", msg

    def invariant(self) -> list[tuple[str, str, str]]:
        post = SparkCompiler(Columns().on_post())
        return [(f"seq >= 0 AND NOT {post.holds_sql(i.expr)}", string_literal(i.name),
                 string_literal(f"invariant {i.name} is false after the row")) for i in self.m.invariants]

    def step(self) -> list[tuple[str, str, str]]:
        c = SparkCompiler()
        def only(s: ir.StepProperty) -> str:
            return "" if s.event is None else f" AND event = {string_literal(s.event)}"

        return [(f"seq >= 0 AND kind NOT IN ('reject', 'load') AND pre_known{only(s)} AND NOT {c.holds_sql(s.expr)}",
                 string_literal(s.name),
                 string_literal(f"step property {s.name} is false on this row")) for s in self.m.steps]

    def row_checks(self) -> list[tuple[str, str, str, str]]:
        """(check, condition, name, message) for every row check, as SQL."""
        out: list[tuple[str, str, str, str]] = []
        for check in ROW_CHECKS:
            method: Callable[[], object] = getattr(self, check)
            found = method()
            items = found if isinstance(found, list) else [found]
            for cond, name, msg in items:  # type: ignore[misc]
                if check not in ORPHAN_CHECKS:
                    cond = f"seq >= 0 AND ({cond})"
                out.append((check, cond, name, msg))
        return out

    def row_violations(self, df: DataFrame) -> DataFrame:
        structs = [f"CASE WHEN coalesce({cond}, false) THEN named_struct('check', {string_literal(check)}, "
                   f"'name', {name}, 'message', {msg}) END" for check, cond, name, msg in self.row_checks()]
        none = f"CAST(NULL AS {FOUND_TYPE})"  # array_except drops it without a lambda (the checks are distinct)
        found = F.expr(f"array_except(array({', '.join(structs)}), array({none}))")
        df = df.select("*", found.alias("_found")).where(F.size("_found") > 0)
        df = df.select("*", F.explode("_found").alias("_v"))
        return df.select(
            F.lit(self.m.name).alias("machine"), "key", F.col("_v.check").alias("check"),
            F.col("_v.name").alias("name"), "seq",
            F.expr("CASE WHEN _v.check = 'discontinuity' AND prev IS NOT NULL THEN prev.seq ELSE seq END")
            .alias("seq_from"), F.col("seq").alias("seq_to"), self.location_column(), F.col("_v.message")
            .alias("message"), "pos", F.to_json(F.struct(*[F.col(n) for n, _ in columns(self.m)])).alias("row_json"))

    def location_column(self) -> Column:
        rows = {i: r.location for i, r in self.spec.rows.items()}
        events = {e.name: location(e.span) for e in self.m.events}
        machine = string_literal(location(self.m.span))
        props = {x.name: location(x.span) for x in self.m.invariants} | \
            {x.name: location(x.span) for x in self.m.steps}
        ev_map = "map(" + ", ".join(f"{string_literal(k)}, {string_literal(v)}" for k, v in sorted(events.items())) \
            + ")" if events else "map()"
        pr_map = "map(" + ", ".join(f"{string_literal(k)}, {string_literal(v)}" for k, v in sorted(props.items())) \
            + ")" if props else "map()"
        row_loc = f"element_at({_map(rows)}, `row`)"
        # the Python twin of this expression is checks.row_check_location
        return F.expr(f"CASE WHEN _v.check IN ('invariant', 'step') THEN element_at({pr_map}, _v.name) "
                      f"WHEN _v.check = 'discontinuity' THEN {machine} "
                      f"WHEN {row_loc} IS NOT NULL THEN {row_loc} "
                      f"WHEN _v.check = 'illegal_transition' THEN coalesce(element_at({ev_map}, event), {machine}) "
                      f"ELSE {machine} END").alias("location")

    # ------------------------------------------------------------ all checks of the machine

    def violations(self) -> DataFrame:
        """Every violation of the machine's rows, as one DataFrame (row checks, then each trace property). Runs one
        job first (`stats`: it materialises the persisted window pass); call `release` once the result is written
        and the witnesses are read."""
        checked = self.checked()
        self.stats()
        base = checked.where("seq >= 0")
        out = self.row_violations(self.prepared(self.legal(checked.where("seq >= -1"))))
        for i, prop in enumerate(self.m.traces):
            found = _TRACE_PLANS[prop.form](self, base, prop, i)
            if found is not None:
                out = out.unionByName(found)
        return out

    def property_rows(self, df: DataFrame, prop: ir.TraceProperty, message: Column) -> DataFrame:
        return df.select(F.lit(self.m.name).alias("machine"), "key", F.lit(prop.form).alias("check"),
                         F.lit(prop.name).alias("name"), "seq", F.col("seq").alias("seq_from"),
                         F.col("seq").alias("seq_to"), F.lit(location(prop.span)).alias("location"),
                         message.alias("message"), "pos", F.lit(None).cast("string").alias("row_json"))

    # ------------------------------------------------------------ trace properties

    def exclusive(self, base: DataFrame, prop: ir.TraceProperty, _: int) -> DataFrame:
        (var,) = prop.subject
        finals = _in(self.spec.final_states, "to_state")
        df = base.selectExpr("*", f"coalesce(greatest(t_start, next_ts), {NEVER}) AS t_end")
        df = df.where(f"NOT {finals} AND t_end > t_start AND size({quote(var)}) > 0")
        df = df.select("key", "seq", "pos", "t_start", "t_end", *prop.per, F.explode(var).alias("x"))
        w = Window.partitionBy(*prop.per, "x").orderBy("t_start", "key", "seq", "t_end") \
            .rowsBetween(Window.unboundedPreceding, -1)
        df = df.select("*", F.max("t_end").over(w).alias("latest")).where("t_start < latest")
        df = df.groupBy("key", "seq", "pos").agg(F.min(F.col("x").cast("string")).alias("x"))
        message = F.concat(F.lit(f"{var} element "), F.col("x"),
                           F.lit(f" is also held by another instance with equal {', '.join(prop.per)}"))
        return self.property_rows(df, prop, message)

    def monotonic(self, base: DataFrame, prop: ir.TraceProperty, _: int) -> DataFrame:
        (var,) = prop.subject
        w = Window.partitionBy(*prop.per).orderBy("ts_ms", "seq", "key", var) \
            .rowsBetween(Window.unboundedPreceding, -1)
        accepted = base.where(F.col("kind") != F.lit("reject"))  # a rejection changes nothing (see checks.py)
        df = accepted.select("*", F.max(var).over(w).alias("top")).where(F.col(var) < F.col("top"))
        message = F.concat(F.lit(f"{var} = "), F.col(var).cast("string"), F.lit(" is below "),
                           F.col("top").cast("string"), F.lit(f", seen before for equal {', '.join(prop.per)}"))
        return self.property_rows(df, prop, message)

    def _entering(self, states: tuple[str, ...]) -> str:
        return f"({_in(states, 'to_state')} AND (NOT pre_known OR NOT {_in(states, 'pre_state')}))"

    def within(self, base: DataFrame, prop: ir.TraceProperty, i: int) -> DataFrame:
        assert prop.bound is not None
        within_index = [p for p in self.m.traces if p.form == "within"].index(prop)
        end = self.stats()[1]
        bound = SparkCompiler(Columns().on_post()).sql(prop.bound)
        nb = f"next_b_{within_index}"
        df = base.where(self._entering(prop.states_from))
        df = df.selectExpr("*", f"CAST(ts_ms AS DECIMAL(38,0)) + CAST({bound} AS DECIMAL(38,0)) AS deadline")
        end_sql = "NULL" if end is None else str(end)
        late = f"{nb} IS NOT NULL AND {nb}.ts_ms > deadline"
        hanging = f"{nb} IS NULL AND {end_sql} > deadline"
        df = df.where(f"deadline IS NULL OR ({late}) OR ({hanging})")
        targets = ", ".join(prop.states_to)
        msg = (f"CASE WHEN deadline IS NULL THEN 'the bound cannot be evaluated' "
               f"WHEN {late} THEN concat('entered ', to_state, ' at ts ', CAST(ts_ms AS STRING), ', deadline ', "
               f"CAST(deadline AS STRING), ', reached {targets} at ', CAST({nb}.ts_ms AS STRING)) "
               f"ELSE concat('entered ', to_state, ' at ts ', CAST(ts_ms AS STRING), ', deadline ', "
               f"CAST(deadline AS STRING), ', not reached by the end of the trace ({end})') END")
        return self.property_rows(df, prop, F.expr(msg))

    def before(self, base: DataFrame, prop: ir.TraceProperty, _: int) -> DataFrame | None:
        state, other, event = prop.subject[1], prop.subject[2], prop.subject[3]
        rows = base if other == self.m.name else self.others.get(other)
        if rows is None:
            return None
        events = rows.where(F.col("event") == event).where(F.col("kind").isin(*ACCEPTED_KINDS)) \
            .where("seq >= 0").select(*[F.col(k).alias(f"_e_{k}") for k in prop.per], F.col("ts_ms").alias("_e_ts"))
        entering = base.where(self._entering((state,)))  # `_since` comes from the window pass
        variables = {v.name for v in self.m.variables}
        cond = [F.expr(f"CASE WHEN pre_known THEN {quote('pre_' + k)} ELSE {quote(k)} END" if k in variables
                       else quote(k)) == F.col(f"_e_{k}") for k in prop.per]
        cond += [F.col("_e_ts") <= F.col("ts_ms"), F.col("_since").isNull() | (F.col("_e_ts") >= F.col("_since"))]
        df = entering.join(events, cond, "left_anti")
        window = F.when(F.col("_since").isNull(), F.lit("before it")) \
            .otherwise(F.concat(F.lit("since ts "), F.col("_since").cast("string")))
        message = F.concat(F.lit(f"entered {state} at ts "), F.col("ts_ms").cast("string"),
                           F.lit(f" without a {other}.{event} on {', '.join(prop.per)} "), window)
        return self.property_rows(df, prop, message)

    def fenced(self, base: DataFrame, prop: ir.TraceProperty, _: int) -> DataFrame | None:
        event, param, other, var = prop.subject[1], prop.subject[2], prop.subject[3], prop.subject[4]
        rows = base if other == self.m.name else self.others.get(other)
        if rows is None:
            return None
        mine = base.where(F.col("event") == event).where(F.col("kind").isin(*ACCEPTED_KINDS)).select(
            *prop.per, "ts_ms", F.lit(0).alias("flag"), "seq", "key", F.col(f"arg_{param}").alias("value"), "pos")
        theirs = rows.where("seq >= 0").select(*prop.per, "ts_ms", F.lit(1).alias("flag"), "seq", "key",
                                               F.col(var).alias("value"), F.lit(-1).alias("pos"))
        w = Window.partitionBy(*prop.per).orderBy("ts_ms", "flag", "seq", "key", "value") \
            .rowsBetween(Window.unboundedPreceding, Window.currentRow)
        df = mine.unionByName(theirs)
        df = df.select("*", F.last(F.when(F.col("flag") == 1, F.col("value")), ignorenulls=True).over(w)
                       .alias("latest"))
        df = df.where("flag = 0 AND latest IS NOT NULL AND value < latest")
        message = F.concat(F.lit(f"{event}.{param} = "), F.col("value").cast("string"),
                           F.lit(f" is below the latest {other}.{var} = "), F.col("latest").cast("string"))
        return self.property_rows(df, prop, message)


_TRACE_PLANS: dict[str, Callable[[MachinePlan, DataFrame, ir.TraceProperty, int], DataFrame | None]] = {
    "exclusive": MachinePlan.exclusive, "monotonic": MachinePlan.monotonic, "within": MachinePlan.within,
    "before": MachinePlan.before, "fenced": MachinePlan.fenced}


def _effect(t: ir.Transition, var: str) -> ir.Expr:
    return next(ef.value for ef in t.effects if ef.var == var)


def not_checked(spec: Spec, others: Mapping[str, DataFrame]) -> list[str]:
    out = []
    for prop in spec.machine.traces:
        if prop.form in ("before", "fenced"):
            other = prop.subject[-2]
            if other != spec.name and other not in others:
                out.append(f"{spec.name}.{prop.name}: no {other} rows in the input")
    return out


# ---------------------------------------------------------------- witnesses


def witness_rows(plan: MachinePlan, wanted: list[tuple[str, int, int]]) -> dict[str, dict[int, dict[str, object]]]:
    """Rows of the key sequences at positions lo..hi for each (key, lo, hi): key → position → row."""
    if not wanted:
        return {}
    spans = plan.spark.createDataFrame(wanted, "w_key string, lo int, hi int")
    df = plan.checked().where("seq >= 0").select(*[n for n, _ in columns(plan.m)], "pos")
    df = df.join(F.broadcast(spans), (F.col("key") == F.col("w_key")) & F.col("pos").between(F.col("lo"),
                                                                                            F.col("hi")))
    out: dict[str, dict[int, dict[str, object]]] = {}
    for r in df.drop("w_key", "lo", "hi").distinct().collect():
        d = r.asDict(recursive=True)
        pos = int(d.pop("pos"))
        out.setdefault(str(d["key"]), {})[pos] = d
    return out

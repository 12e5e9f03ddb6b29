"""The Spark checker: every check of `checks`, compiled from a machine's IR into Spark SQL (no Python UDFs).

Owns: `MachinePlan` (one machine's rows → its violations DataFrame) with one method per check, named as in
`checks.CHECKS` and in the reference checker `pycheck`, and `witness_segments` (the rows around chosen violations).

The evaluation strategy, per machine (what makes it fast is doing each expensive thing once, on as few rows and
columns as the checks need):

0. The rows arrive with an observation on them (`sparkread.Read.counted`): the pass below also counts them and
   finds the trace's latest ts_ms (`tally`), so no pass exists only for that (`stats`).
1. One shuffle and one window operator (`windowed`): the rows partitioned by key (rows with a negative seq in
   partitions of their own) and ordered by seq; per row the previous row, the position, the running maximum of
   ts_ms and the next ts_ms. Every frame is bounded by the current row or unbounded before it, so the pass is linear
   in the rows of a key.
2. In the same pass: the pre-state columns (`with_pre`), one broadcast join with the table of legal (from_state,
   event, to_state, row, kind), one projection computing the large per-row values once as booleans (the spec row's
   guard and `assumes`, whether every variable equals its effect, the frame, as `CASE row WHEN i THEN ... END` over
   the spec's rows, compiled by `kcoord.model.spark_backend`; only the branch of the row's own spec row is
   evaluated), one boolean per row check, and `_found`, the array of the violated checks with their messages, built
   only where one holds (without lambdas, so whole-stage code generation covers it).
3. The result is persisted on local disk (`checked`) with only the columns the trace properties and the messages
   read, and without the rejections no trace property can read (`needs_row`); the row checks' violations are the
   persisted rows with a `_found`, exploded.
4. Each trace property is a small plan of its own over the persisted rows (a window per K, or an aggregate and a
   join), reading only the rows and columns it needs (`within` and `before` window only the rows entering or
   reaching their states).
5. Witnesses window again only the rows of the keys they show.
Must not import: kcoord.cli.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession, Window, WindowSpec
from pyspark.sql import functions as F

from kcoord.model import ir
from kcoord.model.spark_backend import Columns, SparkCompiler, quote, string_literal
from kcoord.model.spark_backend import _literal as sql_literal

from .checks import ACCEPTED_KINDS, NEVER, ROW_CHECKS, Spec, location
from .readers import columns
from .sparkread import Tally

VIOLATION_COLUMNS = ("machine", "key", "check", "name", "seq", "seq_from", "seq_to", "location", "message", "pos",
                     "row_json")
FOUND_TYPE = "STRUCT<check: STRING, name: STRING, message: STRING>"
ORPHAN_CHECKS = ("illegal_transition", "discontinuity", "reject_changed_state", "wrong_error")
PRE = Columns(pending="eff_pending")  # guards and effects read the effective `pending` (true in pending states)


def _in(values: Mapping[str, object] | list[str] | tuple[str, ...] | frozenset[str], col: str) -> str:
    items = sorted(values)
    return f"({col} IN ({', '.join(string_literal(str(v)) for v in items)}))" if items else "false"


def _any(conditions: Mapping[str, str]) -> str:
    """SQL: one of the (non-null) conditions holds; false for none."""
    return "(" + " OR ".join(f"({c})" for c in conditions.values()) + ")" if conditions else "false"


ACCEPTED = _in(ACCEPTED_KINDS, "kind")  # SQL: the row is a transition or a stay


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
    tally: Callable[[], Tally]  # the rows counted by the first action that read them (`sparkread.Read.tally`)
    _checked: DataFrame | None = None
    _materialised: bool = False

    @property
    def m(self) -> ir.Machine:
        return self.spec.machine

    # ------------------------------------------------------------ the window pass (once, persisted)

    def order(self) -> list[Column]:
        names = [n for n, _ in columns(self.m) if n != "seq"]
        return [F.col("seq"), *[F.col(n) for n in names]]

    def windowed(self, rows: DataFrame | None = None) -> DataFrame:
        """Every row (of `rows`, default all) with its previous row, position and the running values the checks
        need: one window operator (every function shares its partitioning, order and a frame bounded by the current
        row). The key sequences (seq >= 0) are windows per key ordered as `checks` says; rows with a negative seq are
        windowed apart (their own partition of the same shuffle) and get no previous row and position -1."""
        w = Window.partitionBy("key", "_neg").orderBy(*self.order())
        prev = F.struct(*[F.col(c) for c in ("to_state", "seq", "coordinator_epoch", "ts_ms")],
                        *[F.col(v.name).alias(f"v_{v.name}") for v in self.m.variables])
        in_sequence = F.col("seq") >= 0
        cols = [F.when(in_sequence, F.lag(prev, 1).over(w)).alias("prev"),
                F.when(in_sequence, F.row_number().over(w) - 1).otherwise(F.lit(-1)).alias("pos"),
                F.max("ts_ms").over(w.rowsBetween(Window.unboundedPreceding, Window.currentRow)).alias("t_start"),
                F.lead("ts_ms", 1).over(w).alias("next_ts")]
        return (self.rows if rows is None else rows).selectExpr("*", "seq < 0 AS _neg").select("*", *cols)

    def checked(self) -> DataFrame:
        """The rows the trace properties read, persisted on local disk (never in memory): the row's own columns,
        its position and running values, the few pre-state columns the properties read, and `_found`, the row
        checks' violations (null for a row without any). The row checks run here, in the pass that persists, so the
        wide intermediate values (the previous row, every pre-state variable) are never written; and unless a
        property reads every row (`needs_every_row`), a rejection is only kept if it has a violation or starts a
        run of its state (see `needs_row`) — rejections are most rows of a busy coordinator's trace."""
        if self._checked is None:
            df = self.found(self.prepared(self.legal(self.with_pre(self.windowed()))))
            if not self.needs_every_row():
                df = df.where(self.needs_row())
            keep = [*(quote(n) for n, _ in columns(self.m)), "_neg", "pos", "t_start", "next_ts",
                    "prev.seq AS prev_seq", "prev.to_state AS prev_state", "pre_state", "pre_known",
                    *(quote("pre_" + v) for v in self._pre_read()), "_found"]
            self._checked = df.selectExpr(*keep).persist(StorageLevel.DISK_ONLY)
        return self._checked

    def needs_every_row(self) -> bool:
        """Whether a trace property reads rejections as such: `exclusive` (each row holds its values until the
        next one, and a conflict is reported on the row holding them) and `fenced` against this machine's own rows
        (every row re-asserts its value at its time)."""
        return any(p.form == "exclusive" or (p.form == "fenced" and p.subject[3] == self.m.name)
                   for p in self.m.traces)

    @staticmethod
    def needs_row() -> str:
        """The rows the other trace properties can read (SQL): every accepted row and load (`monotonic`, `before`'s
        events, `fenced`'s writes), every row with a row-check violation, and every rejection that starts a run of
        its state or follows no row or a final one — the only rejections that can enter a state (`within`'s and
        `before`'s A) or be the first row of a key reaching one (`within`'s B: the row before the first one in B
        is not in B, so that one starts a run) or start the run `before`'s window begins at."""
        return "kind <> 'reject' OR _found IS NOT NULL OR prev IS NULL OR prev.to_state <> to_state OR fresh"

    def _pre_read(self) -> list[str]:
        """The variables whose pre-state a trace property reads after the persist (`before` matches on them)."""
        variables = [v.name for v in self.m.variables]
        wanted = {k for p in self.m.traces if p.form == "before" for k in p.per}
        return [v for v in variables if v in wanted]

    def stats(self) -> tuple[int, int | None]:
        """(rows read, latest ts_ms) of the machine's valid rows, counted by the pass that persists them (the rows
        carry an observation: `sparkread.Read.counted`)."""
        self.materialise()
        t = self.tally()
        return t.rows, t.end

    def materialise(self) -> None:
        """Run the pass that persists the rows (one job, once; the checks' plans read its result)."""
        if not self._materialised:
            self.checked().count()
            self._materialised = True

    def release(self) -> None:
        """Drop the persisted rows (after the violations and witnesses are written)."""
        if self._checked is not None:
            self._checked.unpersist()
            self._checked = None
            self._materialised = False

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

    GATE = f"_sr_ok AND {ACCEPTED} AND pre_known"  # the rows whose guard, effects and frame count

    def prepared(self, df: DataFrame) -> DataFrame:
        """The large per-row values, computed once per row as booleans (the spec row's match, error and condition,
        whether every variable equals its effect, the frame holds, nothing changed); the names of the variables
        that differ and the messages are only built for the rows where a check fails. The effects and the frame
        are only evaluated on accepted rows, the unchanged variables on rejections (`OR` does not evaluate its right
        side when the left one holds)."""
        return df.selectExpr("*", f"{self.spec_row_ok()} AS _sr_ok", f"{self.expected_error()} AS _expected",
                             f"{self.condition_ok()} AS _cond_ok",
                             f"NOT {ACCEPTED} OR NOT {_any(self._effect_bad())} AS _effect_ok",
                             f"NOT {ACCEPTED} OR NOT {_any(self._frame_bad())} AS _frame_ok",
                             f"kind <> 'reject' OR NOT {_any(self._changed())} AS _unchanged")

    def guard_false(self) -> tuple[str, str, str]:
        label = self.label()
        return f"{self.GATE} AND NOT _cond_ok", label, f"concat('the guard of ', {label}, ' is false on the pre-state')"

    def _assigning(self) -> dict[str, list[ir.Transition]]:
        out: dict[str, list[ir.Transition]] = {v.name: [] for v in self.m.variables}
        for t in self.m.transitions:
            for ef in t.effects:
                out[ef.var].append(t)
        return out

    def _names(self, bad: dict[str, str]) -> str:
        """The variables whose condition in `bad` holds, comma-separated (SQL)."""
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
        names = self._names(self._effect_bad())
        return f"{self.GATE} AND NOT _effect_ok", names, \
            f"concat({self.label()}, ' assigns ', replace({names}, ',', ', '), ' otherwise')"

    def frame_mismatch(self) -> tuple[str, str, str]:
        names = self._names(self._frame_bad())
        return f"{self.GATE} AND NOT _frame_ok", names, \
            f"concat({self.label()}, ' does not assign ', replace({names}, ',', ', '), ', yet they changed')"

    def reject_changed_state(self) -> tuple[str, str, str]:
        names = self._names(self._changed())
        return "kind = 'reject' AND pre_known AND NOT _unchanged", names, \
            f"concat('a rejection changed ', replace({names}, ',', ', '))"

    def wrong_error(self) -> tuple[str, str, str]:
        wrong = "`error` <> _expected"
        false_condition = "kind = 'reject' AND NOT _cond_ok"
        cond = f"_sr_ok AND pre_known AND ({wrong} OR ({false_condition}))"
        label = self.label()
        msg = (f"concat_ws('; ', CASE WHEN {wrong} THEN concat('error ', `error`, ', but ', {label}, ' answers ', "
               f"_expected) END, CASE WHEN {false_condition} THEN concat('the condition of ', {label}, "
               f"' is false on the pre-state') END)")
        return cond, label, msg

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

    def found(self, df: DataFrame) -> DataFrame:
        """`_found`: the row's violated checks as an array of (check, name, message), null when it has none. Each
        check's condition is one boolean computed once per row; the array and its messages are only built for the
        few rows where one holds."""
        checks = self.row_checks()
        if not checks:
            return df.selectExpr("*", f"CAST(NULL AS ARRAY<{FOUND_TYPE}>) AS _found")
        flags = [f"coalesce({cond}, false) AS _c{i}" for i, (_, cond, _, _) in enumerate(checks)]
        structs = [f"CASE WHEN _c{i} THEN named_struct('check', {string_literal(check)}, 'name', {name}, "
                   f"'message', {msg}) END" for i, (check, _, name, msg) in enumerate(checks)]
        none = f"CAST(NULL AS {FOUND_TYPE})"  # array_except drops it without a lambda (the checks are distinct)
        found = f"array_except(array({', '.join(structs)}), array({none}))"
        any_found = " OR ".join(f"_c{i}" for i in range(len(checks)))
        return df.selectExpr("*", *flags).selectExpr("*", f"CASE WHEN {any_found} THEN {found} END AS _found")

    def row_violations(self, checked: DataFrame) -> DataFrame:
        """The row checks' violations, one row each, from the persisted rows' `_found`."""
        df = checked.where("_found IS NOT NULL").select("*", F.explode("_found").alias("_v"))
        return df.select(
            F.lit(self.m.name).alias("machine"), "key", F.col("_v.check").alias("check"),
            F.col("_v.name").alias("name"), "seq",
            F.expr("CASE WHEN _v.check = 'discontinuity' AND prev_seq IS NOT NULL THEN prev_seq ELSE seq END")
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
        job first (`materialise`: the pass that persists the rows); call `release` once the result is written."""
        checked = self.checked()
        self.materialise()
        base = checked.where("seq >= 0")
        out = self.row_violations(checked)
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
        # a key's last row holds its value for ever (`greatest` would skip the null next_ts and end it at its start)
        df = base.selectExpr("*", f"CASE WHEN next_ts IS NULL THEN {NEVER} ELSE greatest(t_start, next_ts) END "
                                  "AS t_end")
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

        def before(*partition: str) -> WindowSpec:
            return Window.partitionBy(*partition).orderBy("ts_ms", "seq", "key", var) \
                .rowsBetween(Window.unboundedPreceding, -1)

        accepted = base.where(F.col("kind") != F.lit("reject"))  # a rejection changes nothing (see checks.py)
        load = F.col("kind") == F.lit("load")  # a load is compared with its own key's rows only (see checks.py)
        df = accepted.select("*", F.when(load, F.max(var).over(before(*prop.per, "key")))
                             .otherwise(F.max(var).over(before(*prop.per))).alias("top"))
        df = df.where(F.col(var) < F.col("top"))
        where = F.when(load, F.lit(", held before by this instance (a load)")) \
            .otherwise(F.lit(f", seen before for equal {', '.join(prop.per)}"))
        message = F.concat(F.lit(f"{var} = "), F.col(var).cast("string"), F.lit(" is below "),
                           F.col("top").cast("string"), where)
        return self.property_rows(df, prop, message)

    def _entering(self, states: tuple[str, ...]) -> str:
        return f"({_in(states, 'to_state')} AND (NOT pre_known OR NOT {_in(states, 'pre_state')}))"

    def by_position(self) -> WindowSpec:
        """The key sequences in order, over the persisted rows (`pos` numbers them in the checks' order)."""
        return Window.partitionBy("key", "_neg").orderBy("pos")

    def within(self, base: DataFrame, prop: ir.TraceProperty, _: int) -> DataFrame:
        """Rows entering A whose instance reaches B late or never. The first row at or after each one reaching B
        is found over those rows and the rows in B only (the others cannot be it): this row, else the next one
        (`lead ... IGNORE NULLS`: one forward scan, never a frame up to UNBOUNDED FOLLOWING, quadratic per key)."""
        assert prop.bound is not None
        end = self.stats()[1]
        bound = SparkCompiler(Columns().on_post()).sql(prop.bound)
        reached = _in(prop.states_to, "to_state")
        hit = f"CASE WHEN {reached} THEN named_struct('ts_ms', ts_ms, 'seq', seq) END"
        entering = self._entering(prop.states_from)
        df = base.where(f"{reached} OR {entering}").selectExpr("*", f"{hit} AS _hit", f"{entering} AS _entering")
        df = df.select("*", F.coalesce(F.col("_hit"), F.expr("lead(_hit, 1) IGNORE NULLS").over(self.by_position()))
                       .alias("_next_b")).where("_entering")
        df = df.selectExpr("*", f"CAST(ts_ms AS DECIMAL(38,0)) + CAST({bound} AS DECIMAL(38,0)) AS deadline")
        end_sql = "NULL" if end is None else str(end)
        late = "_next_b IS NOT NULL AND _next_b.ts_ms > deadline"
        hanging = f"_next_b IS NULL AND {end_sql} > deadline"
        df = df.where(f"deadline IS NULL OR ({late}) OR ({hanging})")
        targets = ", ".join(prop.states_to)
        msg = (f"CASE WHEN deadline IS NULL THEN 'the bound cannot be evaluated' "
               f"WHEN {late} THEN concat('entered ', to_state, ' at ts ', CAST(ts_ms AS STRING), ', deadline ', "
               f"CAST(deadline AS STRING), ', reached {targets} at ', CAST(_next_b.ts_ms AS STRING)) "
               f"ELSE concat('entered ', to_state, ' at ts ', CAST(ts_ms AS STRING), ', deadline ', "
               f"CAST(deadline AS STRING), ', not reached by the end of the trace ({end})') END")
        return self.property_rows(df, prop, F.expr(msg))

    def since(self, base: DataFrame, state: str) -> DataFrame:
        """The rows entering `state`, each with `_since`: the time its instance entered the state the row leaves
        (the first row of the run of equal to_states just before it; null for a first row). Computed over the
        rows starting a run and the entering rows only: no other row can start a run."""
        run = "CASE WHEN prev_state IS NULL OR prev_state <> to_state THEN ts_ms END"
        entering = self._entering((state,))
        df = base.selectExpr("*", f"{run} AS _run", f"{entering} AS _entering").where("_run IS NOT NULL OR _entering")
        w = self.by_position()
        df = df.select("*", F.last("_run", ignorenulls=True).over(
            w.rowsBetween(Window.unboundedPreceding, Window.currentRow)).alias("_entered"))
        return df.select("*", F.lag("_entered", 1).over(w).alias("_since")).where("_entering")

    def before(self, base: DataFrame, prop: ir.TraceProperty, _: int) -> DataFrame | None:
        state, other, event = prop.subject[1], prop.subject[2], prop.subject[3]
        rows = base if other == self.m.name else self.others.get(other)
        if rows is None:
            return None
        events = rows.where(F.col("event") == event).where(F.col("kind").isin(*ACCEPTED_KINDS)) \
            .where("seq >= 0").select(*[F.col(k).alias(f"_e_{k}") for k in prop.per], F.col("ts_ms").alias("_e_ts"))
        entering = self.since(base, state)
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
    keys = spans.select(F.col("w_key").alias("key")).distinct()  # only these keys' rows are windowed again
    rows = plan.rows.where("seq >= 0").join(F.broadcast(keys), "key", "left_semi")
    df = plan.windowed(rows).select(*[n for n, _ in columns(plan.m)], "pos")
    df = df.join(F.broadcast(spans), (F.col("key") == F.col("w_key")) & F.col("pos").between(F.col("lo"),
                                                                                            F.col("hi")))
    out: dict[str, dict[int, dict[str, object]]] = {}
    for r in df.drop("w_key", "lo", "hi").distinct().collect():
        d = r.asDict(recursive=True)
        pos = int(d.pop("pos"))
        out.setdefault(str(d["key"]), {})[pos] = d
    return out
